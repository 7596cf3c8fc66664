//! Cron parity's `nextMillis` (adapter protocol 4): the fire time the SDK's
//! `Queue::upsert_job_scheduler` computes for a pattern before it calls its script.
//!
//! That method (src/queue.rs 2504-2570 of bullmq-official 1.4.4) reads the clock, fails with
//! `InvalidConfig("End date must be greater than current timestamp")` for an `end_date` before
//! now, and takes the fire time from the SDK's public `job_scheduler::next_cron_millis(pattern,
//! now, tz, start_date)` (croner), whose errors it returns as they are. It writes only after
//! that, so this op does those two steps with the op's `now` and writes nothing: `{"next": ms}`,
//! `{"next": null}` when the SDK computes none, and `"invalid"` for an error (the upsert fails).

use serde_json::{json, Value};

use crate::protocol::OpResult;

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
