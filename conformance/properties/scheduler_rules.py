"""The job scheduler rules of the `properties` state machine: Queue.upsertJobScheduler of an
`every` or a `pattern` scheduler, a worker's next iteration (updateJobScheduler, from the current
iteration or from another job), removeJobScheduler and getJobScheduler, mixed into
`conformance.properties.machine.DifferentialMachine` beside the other halves' rules. Claimed
from `versions.WORKER_SINCE` on, as the `job-schedulers` vectors are.

Few scheduler ids keep upserts of one id frequent. The iterations are fetched like any job in
wait, but no other op is drawn for them (`queue_rules.nameable`: a vector's job ids hold no
':'); they reach the other rules as what they do to the queue (a marker, a place in wait or
delayed, a fetch that takes them first). A pattern's fire times are the client's: the rules
send them, a whole number of minutes ahead of the clock, as a client's cron library would
(cron parity is judged elsewhere).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.properties.queue_rules import MachineState
from reference_impl import versions
from reference_impl.model import QueueModel
from reference_impl.scheduler_ops import (
    AddJobScheduler,
    GetJobScheduler,
    RemoveJobScheduler,
    UpdateJobScheduler,
)
from reference_impl.versions import Version

EVERY_IDS = ("e1", "e2")
PATTERN_IDS = ("p1",)
#: For removal and reads, a scheduler that never exists too.
SCHEDULER_IDS = (*EVERY_IDS, *PATTERN_IDS, "missing")
#: Intervals short enough that the clock steps cross them, and long enough that they do not.
PERIODS = (1000, 5000, 60_000)
#: An offset of none (the fire time's place in its interval is stored), 0, or inside a second.
OFFSETS = (None, 0, 250, 999)
#: How far ahead of the clock a start date lies (None: no start date).
STARTS = (None, 0, 1500, 10_000)
#: A pattern's next fire time, in minutes ahead of the clock (0: due now).
MINUTES_AHEAD = (0, 1, 2)
PATTERN = "0 * * * * *"
#: How late after its fire time a worker picks an iteration up: on time, within an interval,
#: or after missed iterations of each period; None: without waiting for it.
LATE = (None, 0, 5, 999, 1000, 4500, 12_345, 61_000)
#: The ops these rules apply (counted apart in a run's result).
SCHEDULER_TYPES = (AddJobScheduler, UpdateJobScheduler, RemoveJobScheduler, GetJobScheduler)


def _scheduler_protocol(machine: Any) -> bool:
    protocol: Version = machine.ctx.protocol
    return protocol >= versions.WORKER_SINCE


class SchedulerRules(MachineState):
    """Rules for the job scheduler ops."""

    model: QueueModel

    def _current_iteration(self, scheduler_id: str) -> str | None:
        """The scheduler's current iteration id (`repeat:<id>:<fire time>`), as the model
        holds it; None when the scheduler does not exist."""
        score = self.model.store.zscore("repeat", scheduler_id)
        return None if score is None else f"repeat:{scheduler_id}:{int(score)}"

    @precondition(_scheduler_protocol)
    @rule(scheduler_id=st.sampled_from(EVERY_IDS), period=st.sampled_from(PERIODS),
          offset=st.sampled_from(OFFSETS), start=st.sampled_from(STARTS),
          priority=st.sampled_from((None, 2)))
    def upsert_every(self, scheduler_id: str, period: int, offset: int | None,
                     start: int | None, priority: int | None) -> None:
        """Queue.upsertJobScheduler(id, {every, offset?, startDate?}, {opts: {priority?}})."""
        template = {} if priority is None else {"priority": priority}
        self._apply(AddJobScheduler(
            scheduler_id, self.now, "report", every=period, offset=offset,
            start_date=None if start is None else self.now + start,
            template_opts=template, job_opts={"repeat": {"every": period}, **template}))

    @precondition(_scheduler_protocol)
    @rule(scheduler_id=st.sampled_from(PATTERN_IDS), minutes=st.sampled_from(MINUTES_AHEAD))
    def upsert_pattern(self, scheduler_id: str, minutes: int) -> None:
        """Queue.upsertJobScheduler(id, {pattern}) whose client's next fire time is the
        minute `minutes` ahead (now itself for 0: an iteration due now)."""
        fire = self.now if minutes == 0 else (self.now // 60_000 + minutes) * 60_000
        self._apply(AddJobScheduler(
            scheduler_id, self.now, "report", pattern=PATTERN, next_millis=fire,
            job_opts={"repeat": {"pattern": PATTERN}}))

    def _schedulers(self) -> list[str]:
        """The schedulers that exist now, as the model holds them."""
        return [sid for sid in (*EVERY_IDS, *PATTERN_IDS)
                if self.model.store.zscore("repeat", sid) is not None]

    @precondition(lambda self: _scheduler_protocol(self) and bool(self._schedulers()))
    @rule(index=st.integers(0, 2), ref=st.sampled_from((None, None, None, -1, 0, 1)),
          late=st.sampled_from(LATE))
    def next_iteration(self, index: int, ref: int | None, late: int | None) -> None:
        """A worker's updateJobScheduler as it picks up a job: mostly from an existing
        scheduler's current iteration (ref None), else from another known job or a missing one
        (a producer the script refuses). A worker picks an iteration up once it is due: the
        clock moves to its fire time + `late` first, unless `late` is None (a call ahead of
        time, as a client's own)."""
        existing = self._schedulers()
        scheduler_id = existing[index % len(existing)]
        current = self._current_iteration(scheduler_id)
        producer = current if ref is None and current is not None else self._job(ref or 0)
        score = self.model.store.zscore("repeat", scheduler_id)
        if late is not None and score is not None:
            self.now = max(self.now, int(score) + late)
        fire = self.now + 60_000 - self.now % 60_000
        repeat = ({"pattern": PATTERN} if scheduler_id in PATTERN_IDS
                  else {"every": 1000})
        self._apply(UpdateJobScheduler(scheduler_id, self.now, fire, producer,
                                       {"repeat": repeat}))

    @precondition(_scheduler_protocol)
    @rule(scheduler_id=st.sampled_from(SCHEDULER_IDS))
    def remove_scheduler(self, scheduler_id: str) -> None:
        """Queue.removeJobScheduler."""
        self._apply(RemoveJobScheduler(scheduler_id))

    @precondition(_scheduler_protocol)
    @rule(scheduler_id=st.sampled_from(SCHEDULER_IDS))
    def get_scheduler(self, scheduler_id: str) -> None:
        """Queue.getJobScheduler's read."""
        self._apply(GetJobScheduler(scheduler_id))
