"""Pure Python model of the BullMQ 6.x Redis protocol (delayed, priority, promotion, markers).

The model holds exact integers and never talks to Redis. It is the oracle from which the YAML
vectors are generated; `conformance` compares real Redis state against what it predicts.

Public API::

    KeyProfile, PROFILES          key naming (bullmq, echomq, custom prefix)
    scores                        delayed/priority score formulas
    QueueModel                    an in-memory queue that applies ops like the Lua scripts
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reference_impl.keys import PROFILES, KeyProfile
    from reference_impl.model import QueueModel

__all__ = ["PROFILES", "KeyProfile", "QueueModel"]
__version__ = "0.1.0"

# Imported on first use: `bullmq-conformance --version` and `--help` read `__version__` only.
_LAZY = {"PROFILES": "reference_impl.keys", "KeyProfile": "reference_impl.keys",
         "QueueModel": "reference_impl.model"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'reference_impl' has no attribute {name!r}")
