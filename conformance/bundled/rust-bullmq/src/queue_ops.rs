//! The queue half's ops (adapter protocol 1; an add's parent and policy flags are protocol 3's),
//! each through bullmq-official's public API.

use std::time::{Duration, UNIX_EPOCH};

use bullmq::{DeduplicationOptions, Error, Job, JobOptions, ParentOptions};
use bullmq_conformance_adapter::clock;
use serde_json::{json, Value};

use crate::codes::{code_of, script_code};
use crate::flow_ops::with_flags;
use crate::protocol::{AddOpts, Limiter, Map, OpResult, Outcome};
use crate::session::{Session, WorkerSpec};

/// Messages of the SDK's client-side checks in `Queue::add` and `FlowProducer::add`
/// (queue.rs validate_job_options, keys.rs validate_custom_job_id; keys.rs
/// resolve_parent_queue_key, which takes a parent queue only as a bare name or qualified by
/// the queue's own prefix), which refuse inputs the scripts would take.
const CLIENT_VALIDATION: [&str; 4] = [
    "Custom Id cannot be integers",
    "Custom Id cannot contain :",
    "JobId cannot be '0' or start with '0:'",
    "Queue name cannot contain :",
];

/// An SDK error of `what` as the op's outcome: a skip when it is one of the SDK's client-side
/// checks (CLIENT_VALIDATION), a failure otherwise.
pub fn client_rejection(what: &str, err: Error) -> Outcome {
    match err {
        Error::InvalidConfig(message)
            if CLIENT_VALIDATION.iter().any(|m| message.starts_with(m)) =>
        {
            Outcome::Skip(format!(
                "bullmq-official 1.4.4 rejects this {what} client-side: {message}"
            ))
        }
        err => err.into(),
    }
}

/// A priority as the SDK takes it (u32), or a skip when the op's is larger.
pub fn sdk_priority(priority: u64) -> Result<u32, Outcome> {
    u32::try_from(priority).map_err(|_| {
        Outcome::Skip(format!(
            "bullmq-official 1.4.4 takes a priority as u32 (AddJob::priority, \
             JobOptions.priority options.rs:762); the op's priority {priority} is larger"
        ))
    })
}

/// `Queue::add(name, data)` with the op's options as the SDK's `JobOptions`; the op's time is
/// the SDK's own `timestamp` job option, so the add reads no clock. A child's parent is
/// `JobOptions.parent` ({id, queue}: the SDK resolves the qualified queue name,
/// keys.rs:147-156) and its policy flags the options' flags; the SDK returns the script's
/// negative code (-5 no parent, -7 another parent) as `Error::Script`, read back to the code.
pub async fn add(
    session: &mut Session,
    name: &str,
    timestamp: u64,
    data: Value,
    opts: Option<AddOpts>,
    job_id: Option<String>,
) -> OpResult {
    let opts = opts.unwrap_or_default();
    let created = UNIX_EPOCH + Duration::from_millis(timestamp);
    let mut job_opts = JobOptions::new().timestamp(created);
    if let Some(delay) = opts.delay {
        job_opts = job_opts.delay(Duration::from_millis(delay));
    }
    if let Some(priority) = opts.priority {
        job_opts = job_opts.priority(sdk_priority(priority)?);
    }
    // The options can only turn lifo on; off is their default.
    if opts.lifo == Some(true) {
        job_opts = job_opts.lifo();
    }
    if let Some(de) = opts.de {
        job_opts = job_opts.deduplication(DeduplicationOptions {
            id: de.id,
            ttl: de.ttl,
            extend: de.extend,
            replace: de.replace,
            keep_last_if_active: None,
        });
    }
    if let Some(job_id) = job_id {
        job_opts = job_opts.job_id(job_id);
    }
    if let Some(parent) = opts.parent {
        job_opts = job_opts.parent(ParentOptions {
            queue: parent.queue,
            id: parent.id,
            wait_children: None,
        });
    }
    job_opts = with_flags(job_opts, opts.flags);
    let queue = session.queue().await?;
    let add = queue.add(name, data).options(job_opts);
    match clock::without("add", async { add.await }).await {
        Ok(job) => Ok(json!(job.id())),
        Err(err) => match script_code(&err) {
            Some(code) => Ok(json!(code)),
            None => Err(client_rejection("add", err)),
        },
    }
}

/// A worker's manual fetch: `Worker::get_next_job_nonblocking(token)` at `now`, on a Worker
/// built with the op's lockDuration, limiter and name.
///
/// The non-blocking form is the one moveToActive call: the blocking `get_next_job` adds a
/// BZPOPMIN on the marker when the script replies nil, which Node's moveToActive does not do
/// (and moveToActive-11 never replies nil).
pub async fn move_to_active(
    session: &mut Session,
    now: u64,
    token: &str,
    lock_duration: Option<u64>,
    limiter: Option<Limiter>,
    name: Option<String>,
) -> OpResult {
    let spec = WorkerSpec::new(lock_duration, limiter, name);
    let worker = session.worker(&spec).await?;
    let job = clock::at(now, worker.get_next_job_nonblocking(token)).await?;
    match job {
        // moveToActive-11 answers a fetched job with {job, id, 0, 0}: ttl and next are 0.
        Some(job) => {
            let id = job.id().to_string();
            session.hold(token, job);
            Ok(json!({"job": id, "ttl": 0, "next": 0}))
        }
        // The fetch ran, but no public call reports what the script answered: a skip (the
        // API lacks it), not an error (nothing broke) and not invented numbers.
        None => Err(Outcome::Skip(
            "bullmq-official 1.4.4 has no public API for an empty fetch's reply: \
             Worker::get_next_job_nonblocking returns None and drops the moveToActive reply's \
             rate-limit ttl and next delayed timestamp (worker.rs:2189-2191 turns \
             parse_move_to_active_result's RateLimited and NextTimestamp, worker.rs:2214-2219, \
             into Ok(None))"
                .to_string(),
        )),
    }
}

/// A Job loaded by `Queue::get_job`, or a skip naming the API the SDK lacks for a job whose
/// hash does not exist (its Job methods need a loaded Job; the scripts would still answer).
pub async fn loaded(session: &mut Session, job_id: &str, method: &str) -> Result<Job, Outcome> {
    session.load_job(job_id).await?.ok_or_else(|| {
        Outcome::Skip(format!(
            "bullmq-official 1.4.4 reaches {method} only through a Job loaded by \
             Queue::get_job, which returns None for job {job_id:?} (no hash); it has no \
             id-based form"
        ))
    })
}

/// `Job::promote()`.
pub async fn promote(session: &mut Session, job_id: &str) -> OpResult {
    let job = loaded(session, job_id, "Job::promote").await?;
    code_of(clock::without("promote", job.promote()).await)
}

/// `Job::change_delay(delay)` at `now` (the SDK computes the fire time from its clock).
pub async fn change_delay(session: &mut Session, job_id: &str, delay: u64, now: u64) -> OpResult {
    let job = loaded(session, job_id, "Job::change_delay").await?;
    code_of(clock::at(now, job.change_delay(delay)).await)
}

/// `Job::change_priority(priority, lifo)`.
pub async fn change_priority(
    session: &mut Session,
    job_id: &str,
    priority: u64,
    lifo: bool,
) -> OpResult {
    let priority = u32::try_from(priority).map_err(|_| {
        Outcome::Skip(format!(
            "bullmq-official 1.4.4's Job::change_priority takes a u32; the op's priority \
             {priority} is larger"
        ))
    })?;
    let job = loaded(session, job_id, "Job::change_priority").await?;
    code_of(clock::without("changePriority", job.change_priority(priority, lifo)).await)
}

/// `Job::move_to_delayed(now + delay)` at `now`, on the Job this adapter fetched with the op's
/// token: the SDK's only public moveToDelayed, which always skips the attempt.
#[allow(clippy::too_many_arguments)]
pub async fn move_to_delayed(
    session: &mut Session,
    job_id: &str,
    now: u64,
    delay: u64,
    token: &str,
    skip_attempt: bool,
    fields: Option<Map>,
    fetch_next: bool,
) -> OpResult {
    // Every gap is named, the lock token first: it is what most vectors run into.
    let mut gaps = Vec::new();
    if session.held(job_id, token).is_none() {
        gaps.push(no_fetch_with(job_id, token));
    }
    if !skip_attempt {
        gaps.push(
            "its only public moveToDelayed, Job::move_to_delayed, always sends skipAttempt \"1\" \
             (job.rs:1302); the worker's retry with backoff, which sends \"0\", is private \
             (Worker::move_to_delayed_for_retry, worker.rs:2005)"
                .to_string(),
        );
    }
    if fields.as_ref().is_some_and(|f| !f.is_empty()) {
        gaps.push("Job::move_to_delayed sends no job fields to update (job.rs:1303)".to_string());
    }
    if fetch_next {
        gaps.push(
            "Job::move_to_delayed never fetches the next job (fetchNext \"0\", job.rs:1304)"
                .to_string(),
        );
    }
    skip_if_any("Job::move_to_delayed", gaps)?;
    let job = held(session, job_id, token)?;
    // The SDK sends delay = timestamp - now, read from the (pinned) clock.
    code_of(clock::at(now, job.move_to_delayed(now + delay)).await)
}

/// Why a token-bearing Job method cannot run: the SDK's Job methods that act under a lock use
/// the token of the fetch that returned the Job, and a Job gets a token nowhere else.
pub fn no_fetch_with(job_id: &str, token: &str) -> String {
    format!(
        "it acts under the lock token of the Worker::get_next_job fetch that returned the Job \
         (ScriptContext.token is pub(crate), job.rs:29; Job::set_context is pub(crate), \
         job.rs:310), and no fetch in this vector returned job {job_id:?} with token {token:?}"
    )
}

/// A skip naming every gap found, or Ok when there is none.
pub fn skip_if_any(method: &str, gaps: Vec<String>) -> Result<(), Outcome> {
    if gaps.is_empty() {
        Ok(())
    } else {
        Err(Outcome::Skip(format!(
            "bullmq-official 1.4.4 cannot express this {method}: {}",
            gaps.join("; ")
        )))
    }
}

/// The Job fetched in this vector with `token` (callers check [`no_fetch_with`] first).
pub fn held<'a>(
    session: &'a mut Session,
    job_id: &str,
    token: &str,
) -> Result<&'a mut Job, Outcome> {
    session.held(job_id, token).ok_or_else(|| {
        Outcome::Skip(format!(
            "bullmq-official 1.4.4: {}",
            no_fetch_with(job_id, token)
        ))
    })
}

/// `Queue::pause()`: the pause script's pause branch can only answer 0 (pause-7.lua keeps
/// `legacyPausedRemaining = 0` unless resuming), so the SDK's `()` is that 0.
pub async fn pause(session: &mut Session) -> OpResult {
    let queue = session.queue().await?;
    clock::without("pause", queue.pause()).await?;
    Ok(json!(0))
}

/// `Queue::resume()`: it runs the script once and drops its reply (the legacy paused jobs
/// left to migrate), so the result cannot be reported.
pub async fn resume(session: &mut Session) -> OpResult {
    let queue = session.queue().await?;
    clock::without("resume", queue.resume()).await?;
    Err(Outcome::Skip(
        "bullmq-official 1.4.4 has no public API for resume's reply: Queue::resume returns () \
         and drops the pause script's count of legacy paused jobs left to migrate (queue.rs:788 \
         discards script.execute's value)"
            .to_string(),
    ))
}
