//! The job scheduler ops: cron parity's `nextMillis` (adapter protocol 4), a worker's
//! `pickUpIteration` (protocol 5: skipped) and a caller's `upsertJobScheduler` (protocol 6).
//!
//! `nextMillis` is the fire time the SDK's `Queue::upsert_job_scheduler` computes for a pattern
//! before it calls its script.
//!
//! That method (src/queue.rs 2504-2570 of bullmq-official 1.4.4) reads the clock, fails with
//! `InvalidConfig("End date must be greater than current timestamp")` for an `end_date` before
//! now, and takes the fire time from the SDK's public `job_scheduler::next_cron_millis(pattern,
//! now, tz, start_date)` (croner), whose errors it returns as they are. It writes only after
//! that, so this op does those two steps with the op's `now` and writes nothing: `{"next": ms}`,
//! `{"next": null}` when the SDK computes none, and `"invalid"` for an error (the upsert fails).

use bullmq::job_scheduler::RepeatOptions;
use bullmq::types::BackoffStrategy;
use bullmq::JobOptions;
use bullmq_conformance_adapter::clock;
use serde_json::{json, Value};

use crate::protocol::{Map, OpResult, Outcome, UpsertRepeat};
use crate::session::Session;

/// The protocol's answer for a rejected pattern, zone or option.
const INVALID: &str = "invalid";

pub fn next_millis(
    pattern: &str,
    now: u64,
    tz: Option<&str>,
    start_date: Option<u64>,
    end_date: Option<u64>,
) -> OpResult {
    if end_date.is_some_and(|end| end < now) {
        return Ok(Value::from(INVALID));
    }
    Ok(
        match bullmq::job_scheduler::next_cron_millis(pattern, now, tz, start_date) {
            Ok(Some(next)) => json!({ "next": next }),
            Ok(None) => json!({ "next": null }),
            Err(_) => Value::from(INVALID),
        },
    )
}

/// Not at pick-up: the SDK's Worker asks for a scheduler's next iteration only after the job
/// it fetched has finished (src/worker.rs 1160-1183 and 1208-1232 of bullmq-official 1.4.4),
/// where npm bullmq's Worker asks as it picks the job up.
pub fn pick_up_iteration() -> OpResult {
    Err(Outcome::Skip(
        "bullmq-official 1.4.4's Worker asks for a scheduler's next iteration only after the \
         job finished (worker.rs 1160-1183, 1208-1232), not when it picks it up"
            .to_string(),
    ))
}

/// A caller's `Queue::upsert_job_scheduler(id, repeat, name, data, opts)` at `now` (the
/// SDK reads the clock): `{job, delay}` of the job it returns, null when it returns none.
/// Template opts the SDK's `JobOptions` cannot hold are skipped with the option named.
pub async fn upsert_job_scheduler(
    session: &mut Session,
    scheduler_id: &str,
    now: u64,
    repeat: UpsertRepeat,
    name: Option<String>,
    data: Option<Value>,
    opts: Option<Map>,
) -> OpResult {
    let job_opts = match opts {
        Some(opts) => Some(template_options(&opts)?),
        None => None,
    };
    let repeat = RepeatOptions {
        pattern: repeat.pattern,
        every: repeat.every,
        limit: repeat.limit,
        immediately: None,
        offset: repeat.offset,
        start_date: repeat.start_date,
        end_date: repeat.end_date,
        tz: repeat.tz,
        count: None,
    };
    let queue = session.queue().await?;
    let upsert = queue.upsert_job_scheduler(scheduler_id, repeat, name.as_deref(), data, job_opts);
    match clock::at(now, upsert).await? {
        Some(job) => Ok(json!({ "job": job.id(), "delay": job.delay() })),
        None => Ok(Value::Null),
    }
}

/// The template's job opts as the SDK's `JobOptions`: attempts and a fixed or exponential
/// backoff; any other option is skipped with its name.
fn template_options(opts: &Map) -> Result<JobOptions, Outcome> {
    let mut job_opts = JobOptions::new();
    for (name, value) in opts {
        job_opts = match (name.as_str(), value) {
            ("attempts", Value::Number(n)) if attempts_of(n).is_some() => {
                job_opts.attempts(attempts_of(n).unwrap_or(0))
            }
            ("backoff", Value::Object(backoff)) => job_opts.backoff(backoff_of(backoff)?),
            _ => {
                return Err(Outcome::Skip(format!(
                    "the adapter does not map the template option {name} to the SDK's JobOptions"
                )))
            }
        };
    }
    Ok(job_opts)
}

/// A template's attempts, when they fit the SDK's `u32`.
fn attempts_of(n: &serde_json::Number) -> Option<u32> {
    n.as_u64().and_then(|a| u32::try_from(a).ok())
}

fn backoff_of(backoff: &Map) -> Result<BackoffStrategy, Outcome> {
    let delay = backoff.get("delay").and_then(Value::as_u64);
    match (backoff.get("type").and_then(Value::as_str), delay) {
        (Some("fixed"), Some(delay)) if backoff.len() == 2 => Ok(BackoffStrategy::Fixed(delay)),
        (Some("exponential"), Some(delay)) if backoff.len() == 2 => {
            Ok(BackoffStrategy::Exponential(delay))
        }
        _ => Err(Outcome::Skip(format!(
            "the adapter does not map the backoff {} to the SDK's BackoffStrategy",
            Value::Object(backoff.clone())
        ))),
    }
}
