"""Getting a job going again: retryJob-11 and the stall check moveStalledJobsToWait-9."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference_impl.ops import Result
from reference_impl.worker_ops import MoveStalledJobsToWait, RetryJob

if TYPE_CHECKING:
    from reference_impl.queue_core import QueueCore


def retry_job(model: QueueCore, op: RetryJob) -> Result:
    """retryJob-11."""
    raise NotImplementedError("retryJob")


def move_stalled_jobs_to_wait(model: QueueCore, op: MoveStalledJobsToWait) -> Result:
    """moveStalledJobsToWait-9."""
    raise NotImplementedError("moveStalledJobsToWait")
