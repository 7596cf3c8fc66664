"""The queue half's rules of the `properties` state machine: adds of every route with custom ids
from a small pool, clock steps, moveToActive, promote, changeDelay, changePriority and
moveToDelayed with the fetch token, mixed into `conformance.properties.check.DifferentialMachine`
beside the worker half's (`conformance.properties.worker_rules`).

Each rule drives one op through `_apply` (candidate and model, then compare).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from reference_impl.ops import (
    Add,
    ChangeDelay,
    ChangePriority,
    MoveToActive,
    MoveToDelayed,
    Op,
    Promote,
    Result,
)

#: Clock steps: 0 keeps several ops in one millisecond; the others line fire times up.
CLOCK_STEPS = (0, 0, 1, 4, 5, 10, 95, 100, 995, 1000, 4000, 5000)
#: Delays, chosen so that different (now, delay) pairs often share a fire time.
DELAYS = (1, 5, 10, 100, 1000, 5000)
PRIORITIES = (1, 2, 3, 7)
CUSTOM_IDS = ("a", "b", "c")
#: The id used for a job that does not exist.
MISSING_ID = "missing"
ADD_KINDS = ("standard", "lifo", "delayed", "prioritized", "delayed-prioritized")


def nameable(job_id: object) -> bool:
    """Whether a later op may name `job_id`: a vector's job ids hold no ':' (a custom id
    cannot), and a failure is printed as a vector to paste. A job scheduler's iterations
    (`repeat:<id>:<fire time>`) are fetched, but no other op is drawn for them."""
    return isinstance(job_id, str) and ":" not in job_id


class MachineState:
    """What the rules of either half read and call of the machine
    (`conformance.properties.check.DifferentialMachine` provides it)."""

    now: int
    ids: list[str]
    fetched: list[tuple[str, str]]
    fetches: int

    def _apply(self, op: Op, elsewhere: bool = False) -> Result | None:
        raise NotImplementedError

    def _job(self, ref: int) -> str:
        raise NotImplementedError


class QueueRules(MachineState):
    """Rules for the queue half's ops."""

    @rule(step=st.sampled_from(CLOCK_STEPS))
    def tick(self, step: int) -> None:
        """Advance the clock (0 keeps the next ops in the same millisecond)."""
        self.now += step

    @rule(kind=st.sampled_from(ADD_KINDS), delay=st.sampled_from(DELAYS),
          priority=st.sampled_from(PRIORITIES),
          custom=st.one_of(st.none(), st.sampled_from(CUSTOM_IDS)))
    def add(self, kind: str, delay: int, priority: int, custom: str | None) -> None:
        """Queue.add through the route `kind` names, with an auto or custom id."""
        opts: dict[str, Any] = {}
        if kind == "lifo":
            opts["lifo"] = True
        if kind.startswith("delayed"):
            opts["delay"] = delay
        if kind.endswith("prioritized"):
            opts["priority"] = priority
        returned = self._apply(Add("job", self.now, opts=opts, job_id=custom))
        if isinstance(returned, str) and returned not in self.ids:
            self.ids.append(returned)

    @rule()
    def move_to_active(self) -> None:
        """A worker fetch at `now` with a fresh lock token."""
        self.fetches += 1
        token = f"tok-{self.fetches}"
        returned = self._apply(MoveToActive(self.now, token=token))
        if isinstance(returned, dict) and nameable(returned["job"]):
            self.fetched.append((returned["job"], token))

    @rule(ref=st.integers(-1, 7))
    def promote(self, ref: int) -> None:
        """Job.promote on a known (or missing) job."""
        self._apply(Promote(self._job(ref)))

    @rule(ref=st.integers(-1, 7), delay=st.sampled_from((0, *DELAYS)))
    def change_delay(self, ref: int, delay: int) -> None:
        """Job.changeDelay at `now`."""
        self._apply(ChangeDelay(self._job(ref), delay, self.now))

    @rule(ref=st.integers(-1, 7), priority=st.sampled_from((0, *PRIORITIES)),
          lifo=st.booleans())
    def change_priority(self, ref: int, priority: int, lifo: bool) -> None:
        """Job.changePriority({priority, lifo})."""
        self._apply(ChangePriority(self._job(ref), priority, lifo))

    @precondition(lambda self: bool(self.fetched))
    @rule(index=st.integers(0, 7), delay=st.sampled_from((0, *DELAYS)),
          skip_attempt=st.booleans())
    def move_to_delayed(self, index: int, delay: int, skip_attempt: bool) -> None:
        """The worker moves a job it fetched back to delayed, with that fetch's token."""
        job_id, token = self.fetched[index % len(self.fetched)]
        self._apply(MoveToDelayed(job_id, self.now, delay, token=token,
                                  skip_attempt=skip_attempt))
