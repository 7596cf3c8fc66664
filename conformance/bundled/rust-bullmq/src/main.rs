//! bullmq-conformance adapter for the official Rust SDK, crate `bullmq-official` 1.4.4
//! (imported as `bullmq`), speaking adapter protocol version 4 (docs/ADAPTERS.md): the queue
//! half, the worker half, flows and cron parity.
//!
//! The protocol loop (one JSON request per line on stdin, one JSON reply per line on stdout, in
//! order and flushed; logs on stderr) is the shared one of crate `bullmq-conformance-adapter`
//! (`serve`); this file gives it the SDK's start, ops and stop. Every op goes through the SDK's
//! public API (see the module docs of `queue_ops`, `worker_ops` and `flow_ops`); what that
//! API cannot express is answered `skipped` with the missing API named, and a result the SDK
//! drops is answered `errored`, never made up. Times come from the op: the SDK's `timestamp`
//! job option for an add, and the pinned wall clock (the shared crate's `clock`) for the calls
//! that read `SystemTime::now()`.

mod codes;
mod cron_ops;
mod flow_ops;
mod protocol;
mod queue_ops;
mod session;
mod worker_ops;

use bullmq_conformance_adapter::clock;
use bullmq_conformance_adapter::serve::{self, Adapter, Failure};
use serde::Deserialize;
use serde_json::Value;

use protocol::{Op, OpRequest, OpResult, Outcome, Start, PROTOCOL};
use session::Session;

const SDK_NAME: &str = "bullmq-official";
const SDK_VERSION: &str = "1.4.4";
const LOG_NAME: &str = "rust-bullmq adapter";

// The SDK reads `SystemTime::now()`: this executable answers it (see the shared crate's clock).
bullmq_conformance_adapter::override_clock_gettime!();

fn log(message: &str) {
    eprintln!("[{LOG_NAME}] {message}");
}

/// Runs one op on the session's current queue.
async fn run_op(session: &mut Session, queue: &str, base: Option<&str>, op: Value) -> OpResult {
    session.enter(queue, base).await?;
    let op: Op = serde_json::from_value(op)
        .map_err(|err| Outcome::fail(format!("cannot read the op: {err}")))?;
    match op {
        Op::Add {
            name,
            timestamp,
            data,
            opts,
            job_id,
        } => queue_ops::add(session, &name, timestamp, data, opts, job_id).await,
        Op::MoveToActive {
            now,
            token,
            lock_duration,
            limiter,
            name,
        } => queue_ops::move_to_active(session, now, &token, lock_duration, limiter, name).await,
        Op::Promote { job_id } => queue_ops::promote(session, &job_id).await,
        Op::ChangeDelay { job_id, delay, now } => {
            queue_ops::change_delay(session, &job_id, delay, now).await
        }
        Op::ChangePriority {
            job_id,
            priority,
            lifo,
        } => queue_ops::change_priority(session, &job_id, priority, lifo).await,
        Op::MoveToDelayed {
            job_id,
            now,
            delay,
            token,
            skip_attempt,
            fields,
            fetch_next,
        } => {
            queue_ops::move_to_delayed(
                session,
                &job_id,
                now,
                delay,
                &token,
                skip_attempt,
                fields,
                fetch_next,
            )
            .await
        }
        Op::Pause => queue_ops::pause(session).await,
        Op::Resume => queue_ops::resume(session).await,
        Op::MoveToFinished {
            job_id,
            now,
            target,
            value,
            token,
            keep_jobs,
            attempts,
            fields,
            fetch_next,
            max_metrics_size,
        } => {
            worker_ops::move_to_finished(
                session,
                &job_id,
                now,
                &target,
                value,
                &token,
                keep_jobs,
                attempts,
                fields,
                fetch_next,
                max_metrics_size,
            )
            .await
        }
        Op::RetryJob {} => worker_ops::retry_job(),
        Op::ExtendLock {
            job_id,
            token,
            duration,
        } => worker_ops::extend_lock(session, &job_id, &token, duration).await,
        Op::ExtendLocks {} => worker_ops::extend_locks(),
        Op::ReleaseLock {} => worker_ops::release_lock(),
        Op::MoveStalledJobsToWait {} => worker_ops::move_stalled_jobs_to_wait(),
        Op::MoveJobFromActiveToWait { job_id, token } => {
            worker_ops::move_job_from_active_to_wait(session, &job_id, &token).await
        }
        Op::GetRateLimitTtl { max_jobs } => worker_ops::get_rate_limit_ttl(session, max_jobs).await,
        Op::RemoveDeduplicationKey {
            deduplication_id,
            job_id,
        } => worker_ops::remove_deduplication_key(session, &deduplication_id, &job_id).await,
        Op::RemoveJob {
            job_id,
            remove_children,
        } => worker_ops::remove_job(session, &job_id, remove_children).await,
        Op::UpdateProgress { job_id, progress } => {
            worker_ops::update_progress(session, &job_id, progress).await
        }
        Op::UpdateData { job_id, data } => worker_ops::update_data(session, &job_id, data).await,
        Op::AddLog {
            job_id,
            row,
            keep_logs,
        } => worker_ops::add_log(session, &job_id, &row, keep_logs).await,
        Op::AddParentJob {} => flow_ops::add_parent_job(),
        Op::AddFlow { timestamp, flow } => flow_ops::add_flow(session, timestamp, flow).await,
        Op::MoveToWaitingChildren {
            job_id,
            now,
            token,
            child,
        } => flow_ops::move_to_waiting_children(session, &job_id, now, &token, child).await,
        Op::GetDependencyCounts { job_id, types } => {
            flow_ops::get_dependency_counts(session, &job_id, types).await
        }
        Op::RemoveChildDependency { job_id, parent_key } => {
            flow_ops::remove_child_dependency(session, &job_id, &parent_key).await
        }
        Op::RemoveUnprocessedChildren { job_id } => {
            flow_ops::remove_unprocessed_children(session, &job_id).await
        }
        Op::NextMillis {
            pattern,
            now,
            tz,
            start_date,
            end_date,
        } => cron_ops::next_millis(&pattern, now, tz.as_deref(), start_date, end_date),
        Op::PickUpIteration {} => cron_ops::pick_up_iteration(),
        Op::UpsertJobScheduler {
            scheduler_id,
            now,
            repeat,
            name,
            data,
            opts,
        } => {
            cron_ops::upsert_job_scheduler(session, &scheduler_id, now, repeat, name, data, opts)
                .await
        }
    }
}

/// The SDK as the protocol loop drives it, on the adapter's own runtime.
struct Sdk {
    runtime: tokio::runtime::Runtime,
}

impl Adapter for Sdk {
    const NAME: &'static str = SDK_NAME;
    const VERSION: &'static str = SDK_VERSION;
    const PROTOCOL: Option<u64> = Some(PROTOCOL);
    type Session = Session;

    /// A profile or server the SDK cannot use fails the start, with the cause.
    fn start(&mut self, request: &Value) -> Result<Session, String> {
        let start =
            Start::deserialize(request).map_err(|err| format!("malformed start request: {err}"))?;
        self.runtime
            .block_on(Session::start(&start.redis, start.profile))
    }

    fn op(&mut self, session: &mut Session, request: &Value) -> Result<Value, Failure> {
        let request = OpRequest::deserialize(request)
            .map_err(|err| Outcome::fail(format!("malformed op request: {err}")))?;
        let queue = request.queue.as_str();
        let base = request.base.as_deref();
        Ok(self
            .runtime
            .block_on(run_op(session, queue, base, request.op))?)
    }

    fn stop(&mut self, mut session: Session) {
        self.runtime.block_on(session.shutdown());
    }
}

fn main() {
    if let Err(why) = clock::self_check() {
        log(&why);
        std::process::exit(2);
    }
    // One thread: requests come one at a time, and the SDK's connection tasks only run while
    // a request is being served, so nothing moves in Redis between replies.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|err| {
            log(&format!("cannot build the tokio runtime: {err}"));
            std::process::exit(2);
        });
    serve::serve(Sdk { runtime }, LOG_NAME)
}
