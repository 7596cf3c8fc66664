"""moveToFinished-14: completing and failing a job, retention, metrics, fetch-next."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference_impl.ops import Result
from reference_impl.worker_ops import MoveToFinished

if TYPE_CHECKING:
    from reference_impl.queue_core import QueueCore


def move_to_finished(model: QueueCore, op: MoveToFinished) -> Result:
    """moveToFinished-14."""
    raise NotImplementedError("moveToFinished")
