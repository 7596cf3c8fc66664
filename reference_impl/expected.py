"""The state a vector expects: what the model writes, with the tolerances real clients need.

A vector's `expect` block is the model's returns and its Redis state (in vector form), plus
what a client may add that no script writes (the `client-meta` rule). The runner, the diff tool
and the `properties` area compare candidates against this; the generator writes it into files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reference_impl.form import form_to_store, store_to_form
from reference_impl.keys import PROFILES, QUEUE2_REF, QUEUE_REF
from reference_impl.model import QueueModel
from reference_impl.ops import Step, step_parts
from reference_impl.versions import CURRENT, Version
from reference_impl.worker_ops import result_form

#: Stands for the queue name in a vector's `key_names`.
QUEUE_PLACEHOLDER = "<queue>"

#: What a client writes into meta when it opens a queue (see the client-meta rule).
CLIENT_VERSION = r"[A-Za-z0-9_.-]+:[0-9][0-9A-Za-z.+-]*"


def client_meta(meta: dict[str, Any] | None) -> dict[str, Any]:
    """The expected meta hash: what the scripts wrote (`meta`, a form entry or None) plus what a
    client may add when it opens a queue (the client-meta rule)."""
    fields = dict(meta["hash"]) if meta else {}
    fields.setdefault("opts.maxLenEvents", {"optional": "10000"})
    fields["version"] = {"optional": CLIENT_VERSION}
    return {"hash": dict(sorted(fields.items()))}


def expected_keys(written: dict[str, Any]) -> dict[str, Any]:
    """A state in vector form (what the scripts wrote) as `expect.keys`, client tolerances in."""
    return dict(sorted({**written, "meta": client_meta(written.get("meta"))}.items()))


def split_keys(given: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A vector's keys in vector form: its own queue's, and its second queue's (named
    `<q2>:<suffix>`) by suffix."""
    head = f"{QUEUE2_REF}:"
    own = {name: entry for name, entry in given.items() if not name.startswith(head)}
    other = {name[len(head):]: entry for name, entry in given.items() if name.startswith(head)}
    return own, other


def world(protocol: Version, given: Mapping[str, Any] | None = None
          ) -> tuple[QueueModel, QueueModel]:
    """A vector's two queues as models joined in one world (`<q>`, `<q2>`), seeded with
    `given` (`split_keys`)."""
    own, other = split_keys(given or {})
    first = QueueModel(form_to_store(own), protocol)
    second = QueueModel(form_to_store(other), protocol, ref=QUEUE2_REF)
    first.join(second)
    return first, second


def world_keys(first: QueueModel, second: QueueModel | None = None) -> dict[str, Any]:
    """`expected_keys` of a queue, and of a second one (its keys named `<q2>:<suffix>`)."""
    keys = expected_keys(store_to_form(first.store))
    if second is not None:
        keys |= {f"{QUEUE2_REF}:{suffix}": entry
                 for suffix, entry in expected_keys(store_to_form(second.store)).items()}
    return dict(sorted(keys.items()))


def expect_for(given: Mapping[str, Any], when: Iterable[Step], *, profile: str | None = None,
               one_slot: bool = False, protocol: Version = CURRENT) -> dict[str, Any]:
    """Run ops on a seeded queue through the model at `protocol`; return a vector's `expect`.

    `profile` adds the full `key_names` of that key profile; `one_slot` the one-slot check.
    """
    steps = [step_parts(step) for step in when]
    model, second = world(protocol, given)
    models = {QUEUE_REF: model, QUEUE2_REF: second}
    returns = [result_form(models[queue or QUEUE_REF].apply(op)) for queue, op in steps]
    # The second queue's keys are expected only where the vector names it.
    crossing = QUEUE2_REF in repr((given, list(when)))
    keys = world_keys(model, second if crossing else None)
    expect: dict[str, Any] = {"returns": returns, "keys": keys}
    if profile is not None:
        expect["key_names"] = sorted(PROFILES[profile].key(QUEUE_PLACEHOLDER, s)
                                     for s in store_to_form(model.store))
    if one_slot:
        expect["one_slot"] = True
    return expect
