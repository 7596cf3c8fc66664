//! The worker half's ops (adapter protocol 2), each through bullmq-official's public API, or
//! skipped with the public API it lacks.

use bullmq::types::JobProgress;
use bullmq::Error;
use bullmq_conformance_adapter::clock;
use serde_json::{json, Value};

use crate::codes::{code_of, value_or_code};
use crate::protocol::{KeepJobs, Map, OpResult, Outcome};
use crate::queue_ops::{held, loaded, no_fetch_with, skip_if_any};
use crate::session::Session;

/// The keepJobs `Job::move_to_completed` / `move_to_failed` always send (job.rs:1197-1201).
const SDK_KEEP_JOBS: KeepJobs = KeepJobs {
    count: Some(-1),
    age: None,
    limit: None,
};

/// `Job::move_to_completed(value)` / `Job::move_to_failed(value)` at `now`, on the Job this
/// adapter fetched with the op's token: the SDK's public moveToFinished.
#[allow(clippy::too_many_arguments)]
pub async fn move_to_finished(
    session: &mut Session,
    job_id: &str,
    now: u64,
    target: &str,
    value: Option<String>,
    token: &str,
    keep_jobs: Option<KeepJobs>,
    attempts: Option<u64>,
    fields: Option<Map>,
    fetch_next: bool,
    max_metrics_size: Option<u64>,
) -> OpResult {
    let method = match target {
        "completed" => "Job::move_to_completed",
        "failed" => "Job::move_to_failed",
        other => {
            return Err(Outcome::fail(format!(
                "unknown moveToFinished target {other:?}"
            )))
        }
    };
    // Every gap is named, the lock token first: it is what most vectors run into.
    let mut gaps = Vec::new();
    match session.held(job_id, token) {
        None => gaps.push(no_fetch_with(job_id, token)),
        Some(job) => {
            // The SDK sends the attempts of the job's stored opts (job.rs:1205).
            let sent = u64::from(job.opts().attempts.unwrap_or(0));
            if let Some(wanted) = attempts.filter(|a| *a != sent) {
                gaps.push(format!(
                    "it sends the fetched job's opts.attempts ({sent}, job.rs:1205), the op \
                     attempts {wanted}"
                ));
            }
        }
    }
    if fetch_next {
        gaps.push("it never fetches the next job (fetchNext \"0\", job.rs:1223)".to_string());
    }
    if fields.as_ref().is_some_and(|f| !f.is_empty()) {
        gaps.push("it sends no job fields to update (empty ARGV[9], job.rs:1216)".to_string());
    }
    if max_metrics_size.is_some() {
        gaps.push("it sends maxMetricsSize \"\", no metrics (job.rs:1207)".to_string());
    }
    if keep_jobs.as_ref().is_some_and(|k| *k != SDK_KEEP_JOBS) {
        gaps.push(
            "it always sends keepJobs {count: -1}, whatever the job's removeOnComplete / \
             removeOnFail (job.rs:1197-1201)"
                .to_string(),
        );
    }
    let text = value.unwrap_or_else(|| "null".to_string());
    // move_to_completed(&str) stores serde_json::to_string(&str) (job.rs:1185): it can only
    // give a returnvalue that is a JSON string, in serde's spelling.
    let argument = if target == "completed" {
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::String(s)) if serde_json::to_string(&s).ok().as_deref() == Some(&text) => s,
            _ => {
                gaps.push(format!(
                    "it stores its &str argument JSON-encoded as a string (job.rs:1185), and the \
                     op's value {text:?} is not such a string"
                ));
                String::new()
            }
        }
    } else {
        text
    };
    skip_if_any(method, gaps)?;
    let job = held(session, job_id, token)?;
    let result = if target == "completed" {
        clock::at(now, job.move_to_completed(&argument)).await
    } else {
        clock::at(now, job.move_to_failed(&argument)).await
    };
    code_of(result)
}

/// No public retryJob: the immediate retry is private to the Worker.
pub fn retry_job() -> OpResult {
    Err(Outcome::Skip(
        "bullmq-official 1.4.4 has no public API for retryJob (the Worker's immediate retry, \
         Worker::retry_job_immediately, worker.rs:1937, is private; Job::retry runs \
         reprocessJob instead)"
            .to_string(),
    ))
}

/// `Job::extend_lock(token, duration)` on the loaded job: `Ok` is the script's 1, the
/// `JobLocked` error its 0 (extendLock-2.lua answers nothing else).
pub async fn extend_lock(
    session: &mut Session,
    job_id: &str,
    token: &str,
    duration: u64,
) -> OpResult {
    let job = loaded(session, job_id, "Job::extend_lock").await?;
    match clock::without("extendLock", job.extend_lock(token, duration)).await {
        Ok(()) => Ok(json!(1)),
        Err(Error::JobLocked(_)) => Ok(json!(0)),
        Err(err) => Err(err.into()),
    }
}

/// No public extendLocks: lock renewal is private to the Worker.
pub fn extend_locks() -> OpResult {
    Err(Outcome::Skip(
        "bullmq-official 1.4.4 has no public API for extendLocks (the Worker's lock renewal, \
         Worker::start_lock_renewal, worker.rs:2400, is private and calls extendLock per job; \
         the embedded extendLocks-1 script, scripts.rs:197, is never called)"
            .to_string(),
    ))
}

/// No releaseLock at all.
pub fn release_lock() -> OpResult {
    Err(Outcome::Skip(
        "bullmq-official 1.4.4 has no public API for releaseLock (the embedded releaseLock-1 \
         script, scripts.rs:198, is never called)"
            .to_string(),
    ))
}

/// No public stall check.
pub fn move_stalled_jobs_to_wait() -> OpResult {
    Err(Outcome::Skip(
        "bullmq-official 1.4.4 has no public API for moveStalledJobsToWait (the stall check, \
         Worker::check_stalled_jobs, worker.rs:2342, is private and runs only on the Worker's \
         own timer)"
            .to_string(),
    ))
}

/// `Job::move_to_wait(Some(token))`, what a rate-limited worker calls: the limiter's PTTL, or
/// the script's code.
pub async fn move_job_from_active_to_wait(
    session: &mut Session,
    job_id: &str,
    token: &str,
) -> OpResult {
    let job = loaded(session, job_id, "Job::move_to_wait").await?;
    value_or_code(clock::without("moveJobFromActiveToWait", job.move_to_wait(Some(token))).await)
}

/// `Queue::get_rate_limit_ttl(maxJobs)`.
pub async fn get_rate_limit_ttl(session: &mut Session, max_jobs: Option<u64>) -> OpResult {
    let queue = session.queue().await?;
    value_or_code(clock::without("getRateLimitTtl", queue.get_rate_limit_ttl(max_jobs)).await)
}

/// `Queue::remove_deduplication_key(id, jobId)`: true/false as 1/0.
pub async fn remove_deduplication_key(
    session: &mut Session,
    dedup_id: &str,
    job_id: &str,
) -> OpResult {
    let queue = session.queue().await?;
    let removed = clock::without(
        "removeDeduplicationKey",
        queue.remove_deduplication_key(dedup_id, job_id),
    )
    .await?;
    Ok(json!(i64::from(removed)))
}

/// `Queue::remove(id)`, or `Queue::remove_without_children(id)` when the op says
/// removeChildren false (Node's Queue.remove defaults removeChildren to true).
pub async fn remove_job(
    session: &mut Session,
    job_id: &str,
    remove_children: Option<bool>,
) -> OpResult {
    let queue = session.queue().await?;
    let result = if remove_children == Some(false) {
        clock::without("removeJob", queue.remove_without_children(job_id)).await
    } else {
        clock::without("removeJob", queue.remove(job_id)).await
    };
    value_or_code(result.map(i64::from))
}

/// `Queue::update_job_progress(id, progress)`: the SDK's id-based progress update (a JSON
/// number is the SDK's numeric progress, anything else its JSON payload).
pub async fn update_progress(session: &mut Session, job_id: &str, progress: Value) -> OpResult {
    let progress = match progress.as_f64() {
        Some(number) if progress.is_number() => JobProgress::Number(number),
        _ => JobProgress::Object(progress),
    };
    let queue = session.queue().await?;
    code_of(
        clock::without(
            "updateProgress",
            queue.update_job_progress(job_id, progress),
        )
        .await,
    )
}

/// `Job::update_data(data)` on the loaded job.
pub async fn update_data(session: &mut Session, job_id: &str, data: Value) -> OpResult {
    let mut job = loaded(session, job_id, "Job::update_data").await?;
    code_of(clock::without("updateData", job.update_data(data)).await)
}

/// `Job::log(row)` on the loaded job, whose keepLogs comes from the job's stored opts.
pub async fn add_log(
    session: &mut Session,
    job_id: &str,
    row: &str,
    keep_logs: Option<u64>,
) -> OpResult {
    let job = loaded(session, job_id, "Job::log").await?;
    let stored = job.opts().keep_logs.map(u64::from);
    if keep_logs.is_some() && keep_logs != stored {
        return Err(Outcome::Skip(format!(
            "bullmq-official 1.4.4's Job::log takes keepLogs from the Job's opts (job.rs:724), \
             which a loaded Job cannot be given (Job has no opts setter); the loaded job \
             {job_id:?} has keepLogs {stored:?}, the op {keep_logs:?}"
        )));
    }
    let count = clock::without("addLog", job.log(row)).await?;
    // Job::log returns the script's integer as u64 (job.rs:736): -1 comes back as 2^64 - 1,
    // so the cast back restores it.
    Ok(json!(count as i64))
}
