//! bullmq-conformance adapter (docs/ADAPTERS.md) for the community Rust port `bullmq-rs` 2.2.0
//! (crates.io, bogardt), driven only through its public API.
//!
//! Adapter protocol version 2. Each op maps to one public call (`Q` is `bullmq_rs::Queue`, `Job`
//! a `bullmq_rs::Job`):
//!
//! | op                     | bullmq-rs public API                                              |
//! | ---------------------- | ----------------------------------------------------------------- |
//! | add                    | `Q::add(name, data, Some(JobOptions { delay, priority, job_id, deduplication }))` |
//! | moveToActive           | `Q::get_next_job(token)` (a fixed 30 s lock, no limiter, no name) |
//! | promote                | `Q::get_job(id)` + `Job::promote()`                               |
//! | changePriority         | `Q::get_job(id)` + `Job::change_priority(priority)` (no lifo)     |
//! | moveToDelayed          | `Job::change_delay(delay)` on the Job `get_next_job(token)` returned |
//! | pause / resume         | `Q::pause()` / `Q::resume()`; they return `()`, and the port's pause |
//! |                        | script returns nothing: the result is `null`                      |
//! | moveToFinished         | `Job::move_to_completed(value)` / `Job::move_to_failed(reason)` on that Job |
//! | retryJob               | `Job::retry()` on that Job                                        |
//! | extendLock             | `Q::extend_job_locks(&[id], &[token], duration)` (no single-lock call) |
//! | extendLocks            | `Q::extend_job_locks(ids, tokens, duration)`                      |
//! | removeJob              | `Q::remove(id)`                                                   |
//! | updateProgress         | `Q::update_progress(id, progress)`                                |
//! | updateData             | `Q::get_job(id)` + `Job::update_data(data)`                       |
//! | addLog                 | `Q::add_log(id, row)`                                             |
//! | changeDelay, releaseLock, moveStalledJobsToWait, moveJobFromActiveToWait, getRateLimitTtl, |
//! | removeDeduplicationKey | skipped: no public API (the reasons name what exists instead)     |
//!
//! A Job that holds a lock token comes only from `Q::get_next_job(token)` (`Job::lock_token` is
//! `pub(crate)`), so the worker ops run on the Job an earlier `moveToActive` op of the same vector
//! fetched with the op's token; for any other job or token they are skipped.
//!
//! Codes: the port turns script codes into `BullmqError`s; the adapter maps each back to the code
//! the port's own source maps to it (scripts/commands/*.rs), and errors where two codes share one
//! error (`LockMismatch` is -2 or -6).
//!
//! Keys: `QueueBuilder::prefix(profile.prefix)`, and the queue named `{<queue>}` when `hash_tag`.
//! The port keeps its key builder private (`Queue::key` is `pub(crate)`); the adapter checks the
//! suite's `base` against prefix + ":" + `Queue::name()` + ":", the string that builder makes.
//!
//! Clock: the port reads `SystemTime::now()` for the job timestamp (`Job::new`), every script
//! call's time and more; each op with a time runs with the wall clock pinned to it (the `clock` of
//! crate `bullmq-conformance-adapter`, whose `serve` runs the protocol loop), and an op without one
//! that reads the clock is logged. Logs go to stderr only.

use std::collections::HashMap;
use std::time::Duration;

use bullmq_conformance_adapter::clock;
use bullmq_conformance_adapter::serve::{self, Adapter, Failure};
use bullmq_rs::{BullmqError, DeduplicationOptions, Job, JobOptions, Queue, QueueBuilder, RedisConnection};
use serde_json::{json, Map, Value};

const PORT: &str = "bullmq-rs";
const PORT_VERSION: &str = "2.2.0";
/// The adapter protocol version this adapter speaks.
const PROTOCOL: u64 = 2;
/// `Queue::get_next_job` locks for this long (queue.rs:1202).
const PORT_LOCK_MS: i64 = 30_000;

// The port reads `SystemTime::now()`: this executable answers it (see bullmq-conformance-adapter's clock).
bullmq_conformance_adapter::override_clock_gettime!();

type JobQueue = Queue<Value>;

const LOG_NAME: &str = "bullmq-rs adapter";

macro_rules! log {
    ($($arg:tt)*) => { eprintln!("[{LOG_NAME}] {}", format!($($arg)*)) };
}

/// The queue of the current vector, and the Jobs its `moveToActive` ops fetched (by id), each
/// holding the token it was fetched with.
struct Current {
    name: String,
    queue: JobQueue,
    fetched: HashMap<String, (String, Job<Value>)>,
}

struct Session {
    connection: RedisConnection,
    prefix: String,
    hash_tag: bool,
    current: Option<Current>,
}

impl Session {
    async fn current(&mut self, queue: &str, base: Option<&str>) -> Result<&mut Current, Failure> {
        let reuse = matches!(&self.current, Some(c) if c.name == queue);
        if !reuse {
            self.current = None;
            let spelled = if self.hash_tag { format!("{{{queue}}}") } else { queue.to_string() };
            let q = QueueBuilder::new(spelled)
                .connection(self.connection.clone())
                .prefix(self.prefix.clone())
                .build::<Value>()
                .await
                .map_err(|e| Failure::raised("QueueBuilder::build", &e))?;
            self.current = Some(Current { name: queue.to_string(), queue: q, fetched: HashMap::new() });
        }
        let current = self.current.as_mut().expect("set above");
        // The port's key builder (`Queue::key`, scripts/commands/mod.rs `key`) is private: it
        // writes "<prefix>:<name>:<suffix>".
        let port_base = format!("{}:{}:", self.prefix, current.queue.name());
        if let Some(base) = base {
            if base != port_base {
                return Err(Failure::error(format!(
                    "bullmq-rs builds BASE {port_base:?} for queue {queue:?}, but the suite expects {base:?}"
                )));
            }
        }
        Ok(current)
    }
}

// ------------------------------------------------------------------------------------------------
// Reading op fields

fn field<'a>(op: &'a Value, name: &str) -> Option<&'a Value> {
    op.get(name).filter(|v| !v.is_null())
}

fn as_int(v: &Value) -> Option<i64> {
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    let f = v.as_f64()?;
    if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 {
        Some(f as i64)
    } else {
        None
    }
}

fn int_field(op: &Value, name: &str) -> Result<i64, Failure> {
    let v = field(op, name).ok_or_else(|| Failure::error(format!("op has no {name}")))?;
    as_int(v).ok_or_else(|| Failure::error(format!("op field {name} is not an integer: {v}")))
}

fn uint_field(op: &Value, name: &str) -> Result<u64, Failure> {
    let i = int_field(op, name)?;
    u64::try_from(i).map_err(|_| Failure::error(format!("op field {name} is negative: {i}")))
}

fn bool_field(op: &Value, name: &str) -> bool {
    field(op, name).and_then(Value::as_bool).unwrap_or(false)
}

/// A job id, token or deduplication id as the protocol sends it (a string, or a number).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn text_field(op: &Value, name: &str) -> Result<String, Failure> {
    field(op, name).map(text).ok_or_else(|| Failure::error(format!("op has no {name}")))
}

/// The op's token; the protocol's default is "tok".
fn token_of(op: &Value) -> String {
    field(op, "token").map(text).unwrap_or_else(|| "tok".to_string())
}

fn has_fields(op: &Value) -> bool {
    matches!(field(op, "fields"), Some(Value::Object(m)) if !m.is_empty())
}

// ------------------------------------------------------------------------------------------------
// Error codes, as the port's own sources map them

/// The script code behind a port error, where the port's source maps exactly one code to it.
fn code_of(e: &BullmqError, script: &str) -> Option<i64> {
    match e {
        // scripts/commands/*.rs: `code == -1` → JobNotFound.
        BullmqError::JobNotFound(_) => Some(-1),
        // scripts/commands/*.rs: any other code → ScriptError("<script> returned unexpected code: N").
        BullmqError::ScriptError(msg) => {
            let prefix = format!("{script} returned unexpected code: ");
            msg.strip_prefix(&prefix).and_then(|n| n.trim().parse().ok())
        }
        _ => None,
    }
}

fn code_or_error(e: BullmqError, script: &str, call: &str) -> Result<Value, Failure> {
    match code_of(&e, script) {
        Some(code) => Ok(json!(code)),
        None => Err(match e {
            BullmqError::LockMismatch => Failure::Error {
                message: format!(
                    "{call}: {e} (the port maps both script codes -2 and -6 to LockMismatch, so the code is lost)"
                ),
                traceback: format!("{e:?}"),
            },
            other => Failure::raised(call, &other),
        }),
    }
}

// ------------------------------------------------------------------------------------------------
// The Job a moveToActive op fetched

fn fetched_job<'a>(current: &'a mut Current, op: &Value, what: &str) -> Result<&'a mut Job<Value>, Failure> {
    let id = text_field(op, "jobId")?;
    let token = token_of(op);
    match current.fetched.get_mut(&id) {
        Some((held, job)) if *held == token => Ok(job),
        Some((held, _)) => Err(Failure::skip(format!(
            "bullmq-rs {PORT_VERSION} runs {what} only on the Job that Queue::get_next_job(token) returned \
             (Job::lock_token is pub(crate)); job {id} was fetched with token {held:?}, the op holds {token:?}"
        ))),
        None => Err(Failure::skip(format!(
            "bullmq-rs {PORT_VERSION} runs {what} only on the Job that Queue::get_next_job(token) returned \
             (Job::lock_token is pub(crate)); no moveToActive of this vector fetched job {id}"
        ))),
    }
}

/// `Job::from_redis_hash` (job.rs:187) refuses a hash without a `data` or `timestamp` field
/// (`get("data")?` at job.rs:193, `get("timestamp")?` at job.rs:200) with
/// `Other("Missing field '<f>' in job hash")`. Vectors that seed a job by its keys alone (a
/// member of `delayed`/`wait` with no hash, or a hash holding only a few fields) hit it when the
/// port loads that job: a limit of the port's loader, reported as a skip naming it. The call has
/// run by then when it is `Queue::get_next_job` (the script moved the job); `Queue::get_job`
/// fails before the op's own call.
fn unloadable(e: &BullmqError, call: &str) -> Option<Failure> {
    let BullmqError::Other(msg) = e else { return None };
    let missing_field = msg.strip_prefix("Missing field '")?.strip_suffix("' in job hash")?;
    let line = match missing_field {
        "data" => 193,
        "timestamp" => 200,
        _ => return None,
    };
    Some(Failure::skip(format!(
        "bullmq-rs {PORT_VERSION} cannot load a job hash without a {missing_field} field (job.rs:{line}, through {call}); \
         the vector's seeded job has none"
    )))
}

/// `Queue::get_job(id)`: the only way to a Job by id. The port has no call by id for a job
/// without a hash.
async fn job_by_id(queue: &JobQueue, op: &Value, what: &str) -> Result<Job<Value>, Failure> {
    let id = text_field(op, "jobId")?;
    match queue.get_job(&id).await {
        Ok(Some(job)) => Ok(job),
        Ok(None) => Err(Failure::skip(format!(
            "bullmq-rs {PORT_VERSION} has no {what} by job id: it is a method of the Job that \
             Queue::get_job returns, and that is None for job {id}, which has no hash"
        ))),
        Err(e) => Err(unloadable(&e, "Queue::get_job queue.rs:400").unwrap_or_else(|| Failure::raised("Queue::get_job", &e))),
    }
}

// ------------------------------------------------------------------------------------------------
// Ops

fn add_options(op: &Value) -> Result<JobOptions, Failure> {
    let mut options = JobOptions::default();
    let empty = Map::new();
    let opts = match field(op, "opts") {
        None => &empty,
        Some(Value::Object(m)) => m,
        Some(other) => return Err(Failure::error(format!("add opts is not an object: {other}"))),
    };
    for (key, value) in opts {
        if value.is_null() {
            continue;
        }
        match key.as_str() {
            "delay" => {
                let ms = as_int(value)
                    .and_then(|ms| u64::try_from(ms).ok())
                    .ok_or_else(|| Failure::error(format!("opts.delay is not a non-negative integer: {value}")))?;
                options.delay = Some(Duration::from_millis(ms));
            }
            "priority" => {
                let p = as_int(value).ok_or_else(|| Failure::error(format!("opts.priority is not an integer: {value}")))?;
                let p = u32::try_from(p).map_err(|_| {
                    Failure::skip(format!("bullmq-rs {PORT_VERSION}'s JobOptions::priority is a u32; the op's priority is {p}"))
                })?;
                options.priority = Some(p);
            }
            "lifo" => match value.as_bool() {
                Some(false) => {}
                Some(true) => {
                    return Err(Failure::skip(format!(
                        "bullmq-rs {PORT_VERSION} has no lifo add option (JobOptions, types.rs:63)"
                    )))
                }
                None => return Err(Failure::error(format!("opts.lifo is not a boolean: {value}"))),
            },
            "de" => {
                let de = value.as_object().ok_or_else(|| Failure::error(format!("opts.de is not an object: {value}")))?;
                let mut dedup = DeduplicationOptions {
                    id: de.get("id").filter(|v| !v.is_null()).map(text).ok_or_else(|| Failure::error("opts.de has no id"))?,
                    ttl: None,
                };
                for (k, v) in de {
                    if v.is_null() {
                        continue;
                    }
                    match k.as_str() {
                        "id" => {}
                        "ttl" => {
                            let ms = as_int(v)
                                .and_then(|ms| u64::try_from(ms).ok())
                                .ok_or_else(|| Failure::error(format!("opts.de.ttl is not a non-negative integer: {v}")))?;
                            dedup.ttl = Some(Duration::from_millis(ms));
                        }
                        "extend" | "replace" if v.as_bool() == Some(false) => {}
                        other => {
                            return Err(Failure::skip(format!(
                                "bullmq-rs {PORT_VERSION}'s DeduplicationOptions has only id and ttl (types.rs:223); \
                                 the op sets de.{other} = {v}"
                            )))
                        }
                    }
                }
                options.deduplication = Some(dedup);
            }
            other => return Err(Failure::skip(format!("bullmq-rs {PORT_VERSION} adapter: unknown add option {other:?}"))),
        }
    }
    if let Some(id) = field(op, "jobId") {
        options.job_id = Some(text(id));
    }
    Ok(options)
}

async fn op_add(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    let name = field(op, "name").map(text).unwrap_or_default();
    let timestamp = int_field(op, "timestamp")?;
    let data = op.get("data").cloned().unwrap_or(Value::Null);
    let options = add_options(op)?;
    // Job::new takes the job's timestamp from SystemTime::now() (job.rs:111): pinned to the op's.
    let _clock = clock::pinned(timestamp);
    let job = current.queue.add(&name, data, Some(options)).await.map_err(|e| Failure::raised("Queue::add", &e))?;
    Ok(Value::String(job.id))
}

async fn op_move_to_active(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    let now = int_field(op, "now")?;
    let token = token_of(op);
    let lock = int_field(op, "lockDuration")?;
    if lock != PORT_LOCK_MS {
        return Err(Failure::skip(format!(
            "bullmq-rs {PORT_VERSION}'s Queue::get_next_job always locks for {PORT_LOCK_MS} ms (queue.rs:1202); \
             the op asks for {lock}"
        )));
    }
    if field(op, "limiter").is_some() {
        return Err(Failure::skip(format!(
            "bullmq-rs {PORT_VERSION}'s Queue::get_next_job sends no limiter (queue.rs:1205); the worker's \
             limiter is used only inside Worker::start"
        )));
    }
    if field(op, "name").is_some() {
        return Err(Failure::skip(format!("bullmq-rs {PORT_VERSION} sends no worker name on a fetch (moveToActive-11 has no name argument)")));
    }
    let fetched = {
        let _clock = clock::pinned(now);
        current.queue.get_next_job(&token).await.map_err(|e| {
            unloadable(&e, "Queue::get_next_job queue.rs:1212").unwrap_or_else(|| Failure::raised("Queue::get_next_job", &e))
        })?
    };
    match fetched {
        Some(job) => {
            let id = job.id.clone();
            current.fetched.insert(id.clone(), (token, job));
            Ok(json!({"job": id, "ttl": 0, "next": 0}))
        }
        // Option<Job>: no job. The port's script answers nil (moveToActive-11.lua:70-90): no
        // rate-limit wait (get_next_job sends no limiter, so its {0, 0, ttl, 0} cannot come) and
        // no next delayed time, so both are 0.
        None => Ok(json!({"job": null, "ttl": 0, "next": 0})),
    }
}

async fn op_promote(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    let mut job = job_by_id(&current.queue, op, "promote").await?;
    let clock = clock::unpinned();
    let outcome = job.promote().await;
    if clock.reads() > 0 {
        log!("note: Job::promote read the wall clock (job.rs:599) for an op without a time");
    }
    match outcome {
        Ok(()) => Ok(json!(0)),
        // promote.rs: code -1 → Other("Job <id> is not in delayed state").
        Err(BullmqError::Other(msg)) if msg.ends_with("is not in delayed state") => Ok(json!(-1)),
        Err(e) => code_or_error(e, "promote", "Job::promote"),
    }
}

async fn op_change_priority(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    if bool_field(op, "lifo") {
        return Err(Failure::skip(format!(
            "bullmq-rs {PORT_VERSION}'s Job::change_priority(priority) has no lifo (job.rs:568)"
        )));
    }
    let priority = int_field(op, "priority")?;
    let priority = u32::try_from(priority).map_err(|_| {
        Failure::skip(format!("bullmq-rs {PORT_VERSION}'s Job::change_priority takes a u32; the op's priority is {priority}"))
    })?;
    let mut job = job_by_id(&current.queue, op, "changePriority").await?;
    let clock = clock::unpinned();
    let outcome = job.change_priority(priority).await;
    if clock.reads() > 0 {
        log!("note: Job::change_priority read the wall clock (job.rs:571) for an op without a time");
    }
    match outcome {
        Ok(()) => Ok(json!(0)),
        Err(e) => code_or_error(e, "changePriority", "Job::change_priority"),
    }
}

async fn op_move_to_delayed(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    let now = int_field(op, "now")?;
    let delay = uint_field(op, "delay")?;
    if !bool_field(op, "skipAttempt") {
        return Err(Failure::skip(format!(
            "bullmq-rs {PORT_VERSION} has no public moveToDelayed that counts the attempt: the backoff retry is \
             inside Worker::start (worker.rs:1056), and Job::change_delay keeps atm (skipAttempt)"
        )));
    }
    if has_fields(op) {
        return Err(Failure::skip(format!("bullmq-rs {PORT_VERSION}'s Job::change_delay writes no job fields")));
    }
    if bool_field(op, "fetchNext") {
        return Err(Failure::skip(format!("bullmq-rs {PORT_VERSION}'s Job::change_delay does not fetch the next job")));
    }
    let job = fetched_job(current, op, "moveToDelayed (Job::change_delay)")?;
    let outcome = {
        let _clock = clock::pinned(now);
        job.change_delay(delay).await
    };
    match outcome {
        Ok(()) => Ok(json!(0)),
        Err(e) => code_or_error(e, "moveToDelayed", "Job::change_delay"),
    }
}

async fn op_pause(current: &mut Current, resume: bool) -> Result<Value, Failure> {
    let what = if resume { "Queue::resume" } else { "Queue::pause" };
    let clock = clock::unpinned();
    let outcome = if resume { current.queue.resume().await } else { current.queue.pause().await };
    if clock.reads() > 0 {
        log!("warning: {what} read the wall clock {} time(s); the op has no time", clock.reads());
    }
    outcome.map_err(|e| Failure::raised(what, &e))?;
    // `BullmqResult<()>`: the port hands back nothing, and its pause-7.lua returns nothing.
    Ok(Value::Null)
}

async fn op_move_to_finished(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    let now = int_field(op, "now")?;
    let failed = match field(op, "target").and_then(Value::as_str) {
        Some("completed") => false,
        Some("failed") => true,
        other => return Err(Failure::error(format!("moveToFinished target {other:?}"))),
    };
    if has_fields(op) {
        return Err(Failure::skip(format!("bullmq-rs {PORT_VERSION}'s Job::move_to_completed / move_to_failed write no job fields")));
    }
    if bool_field(op, "fetchNext") {
        return Err(Failure::skip(format!(
            "bullmq-rs {PORT_VERSION}'s Job::move_to_completed / move_to_failed never fetch the next job (fetch_next false, job.rs:690)"
        )));
    }
    if let Some(keep) = field(op, "keepJobs") {
        if keep != &json!({"count": -1}) {
            return Err(Failure::skip(format!(
                "bullmq-rs {PORT_VERSION} has no removeOnComplete / removeOnFail (JobOptions, types.rs:63) and sends no \
                 keepJobs; the op keeps {keep}"
            )));
        }
    }
    if field(op, "limiter").is_some() {
        return Err(Failure::skip(format!("bullmq-rs {PORT_VERSION}'s Job::move_to_completed / move_to_failed send no limiter (job.rs:693)")));
    }
    if field(op, "maxMetricsSize").is_some() {
        return Err(Failure::skip(format!(
            "bullmq-rs {PORT_VERSION}'s Job::move_to_completed / move_to_failed collect no metrics (job.rs:694)"
        )));
    }
    let value = field(op, "value").map(text).unwrap_or_else(|| "null".to_string());
    let returned = if failed {
        None
    } else {
        // move_to_completed(serde_json::Value) sends serde_json::to_string of it (job.rs:651).
        let parsed: Value = serde_json::from_str(&value).map_err(|_| {
            Failure::skip(format!("bullmq-rs {PORT_VERSION}'s Job::move_to_completed takes a JSON value; the op's value {value:?} is not JSON"))
        })?;
        let sent = serde_json::to_string(&parsed).unwrap_or_default();
        if sent != value {
            return Err(Failure::skip(format!(
                "bullmq-rs {PORT_VERSION}'s Job::move_to_completed sends {sent:?} for the op's value {value:?}"
            )));
        }
        Some(parsed)
    };
    let job = fetched_job(current, op, "moveToFinished (Job::move_to_completed / move_to_failed)")?;
    let outcome = {
        let _clock = clock::pinned(now);
        match returned {
            Some(v) => job.move_to_completed(v).await,
            None => job.move_to_failed(&value).await,
        }
    };
    match outcome {
        Ok(()) => Ok(json!(0)),
        Err(e) => code_or_error(e, "moveToFinished", if failed { "Job::move_to_failed" } else { "Job::move_to_completed" }),
    }
}

async fn op_retry_job(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    let now = int_field(op, "now")?;
    if bool_field(op, "lifo") {
        return Err(Failure::skip(format!("bullmq-rs {PORT_VERSION}'s Job::retry() has no lifo (job.rs:620)")));
    }
    if has_fields(op) {
        return Err(Failure::skip(format!("bullmq-rs {PORT_VERSION}'s Job::retry() writes no job fields")));
    }
    let job = fetched_job(current, op, "retryJob (Job::retry)")?;
    let outcome = {
        let _clock = clock::pinned(now);
        job.retry().await
    };
    match outcome {
        Ok(()) => Ok(json!(0)),
        Err(e) => code_or_error(e, "retryJob", "Job::retry"),
    }
}

async fn extend(current: &mut Current, ids: Vec<String>, tokens: Vec<String>, duration: u64) -> Result<Vec<String>, Failure> {
    let clock = clock::unpinned();
    let outcome = current.queue.extend_job_locks(&ids, &tokens, Duration::from_millis(duration)).await;
    if clock.reads() > 0 {
        log!("note: Queue::extend_job_locks read the wall clock for an op without a time");
    }
    outcome.map_err(|e| Failure::raised("Queue::extend_job_locks", &e))
}

async fn op_extend_lock(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    let id = text_field(op, "jobId")?;
    let duration = uint_field(op, "duration")?;
    let not_renewed = extend(current, vec![id], vec![token_of(op)], duration).await?;
    Ok(json!(if not_renewed.is_empty() { 1 } else { 0 }))
}

async fn op_extend_locks(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    let list = |name: &str| -> Result<Vec<String>, Failure> {
        match field(op, name) {
            Some(Value::Array(items)) => Ok(items.iter().map(text).collect()),
            None => Ok(Vec::new()),
            Some(other) => Err(Failure::error(format!("{name} is not a list: {other}"))),
        }
    };
    let ids = list("jobIds")?;
    let tokens = list("tokens")?;
    let duration = uint_field(op, "duration")?;
    match extend(current, ids, tokens, duration).await {
        Ok(not_renewed) => Ok(json!(not_renewed)),
        // The port refuses this client-side, before any script runs (queue.rs:1231).
        Err(Failure::Error { message, .. }) if message.ends_with("requires job_ids and tokens of the same length") => {
            Err(Failure::skip(format!(
                "bullmq-rs {PORT_VERSION}'s Queue::extend_job_locks rejects job ids and tokens of different lengths \
                 client-side (queue.rs:1231)"
            )))
        }
        Err(other) => Err(other),
    }
}

async fn op_remove_job(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    if bool_field(op, "removeChildren") {
        return Err(Failure::skip(format!("bullmq-rs {PORT_VERSION}'s Queue::remove always sends removeChildren 0 (queue.rs:609)")));
    }
    let id = text_field(op, "jobId")?;
    let clock = clock::unpinned();
    let outcome = current.queue.remove(&id).await;
    if clock.reads() > 0 {
        log!("note: Queue::remove read the wall clock for an op without a time");
    }
    match outcome {
        Ok(()) => Ok(json!(1)),
        // remove_job.rs: 0 → Other("... locked by another worker"), -8 → Other("... job scheduler ...").
        Err(BullmqError::Other(msg)) if msg.ends_with("because it is locked by another worker") => Ok(json!(0)),
        Err(BullmqError::Other(msg)) if msg.ends_with("belongs to a job scheduler and cannot be removed directly") => {
            Ok(json!(-8))
        }
        Err(e) => Err(Failure::raised("Queue::remove", &e)),
    }
}

async fn op_update_progress(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    let id = text_field(op, "jobId")?;
    let progress = op.get("progress").cloned().unwrap_or(Value::Null);
    let clock = clock::unpinned();
    let outcome = current.queue.update_progress(&id, progress).await;
    if clock.reads() > 0 {
        log!("note: Queue::update_progress read the wall clock for an op without a time");
    }
    match outcome {
        Ok(()) => Ok(json!(0)),
        Err(BullmqError::JobNotFound(_)) => Ok(json!(-1)),
        Err(e) => Err(Failure::raised("Queue::update_progress", &e)),
    }
}

async fn op_update_data(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    let data = op.get("data").cloned().unwrap_or(Value::Null);
    let mut job = job_by_id(&current.queue, op, "updateData").await?;
    let clock = clock::unpinned();
    let outcome = job.update_data(data).await;
    if clock.reads() > 0 {
        log!("note: Job::update_data read the wall clock for an op without a time");
    }
    outcome.map_err(|e| Failure::raised("Job::update_data", &e))?;
    Ok(json!(0))
}

async fn op_add_log(current: &mut Current, op: &Value) -> Result<Value, Failure> {
    if let Some(keep) = field(op, "keepLogs") {
        return Err(Failure::skip(format!(
            "bullmq-rs {PORT_VERSION}'s Queue::add_log / Job::log always send keepLogs 0, unlimited (queue.rs:924); \
             the op keeps {keep}"
        )));
    }
    let id = text_field(op, "jobId")?;
    let row = field(op, "row").map(text).unwrap_or_default();
    let clock = clock::unpinned();
    let outcome = current.queue.add_log(&id, &row).await;
    if clock.reads() > 0 {
        log!("note: Queue::add_log read the wall clock for an op without a time");
    }
    let count = outcome.map_err(|e| Failure::raised("Queue::add_log", &e))?;
    Ok(json!(count))
}

fn missing(op: &str) -> Failure {
    let v = PORT_VERSION;
    Failure::skip(match op {
        "changeDelay" => format!(
            "bullmq-rs {v} has no changeDelay of a delayed job: Job::change_delay (job.rs:527) refuses a job that is \
             not active and moves an active, locked one to delayed (moveToDelayed-8)"
        ),
        "releaseLock" => format!("bullmq-rs {v} has no releaseLock"),
        "moveStalledJobsToWait" => format!(
            "bullmq-rs {v} has no public stall check: moveStalledJobsToWait runs only inside Worker::start (worker.rs:448)"
        ),
        "moveJobFromActiveToWait" => format!(
            "bullmq-rs {v} has no public moveJobFromActiveToWait: it runs only inside Worker::start when a handler \
             returns BullmqError::RateLimited (worker.rs:1007)"
        ),
        "getRateLimitTtl" => format!(
            "bullmq-rs {v} has no getRateLimitTtl (Queue has rate_limit and remove_rate_limit_key only)"
        ),
        "removeDeduplicationKey" => format!("bullmq-rs {v} has no removeDeduplicationKey"),
        other => format!("bullmq-rs {v} adapter does not implement {other:?}"),
    })
}

async fn run_op(session: &mut Session, req: &Value) -> Result<Value, Failure> {
    let op = req.get("op").ok_or_else(|| Failure::error("op request without op"))?;
    let kind = op.get("op").and_then(Value::as_str).unwrap_or("").to_string();
    let queue_name = req.get("queue").and_then(Value::as_str).ok_or_else(|| Failure::error("op request without queue"))?;
    let base = req.get("base").and_then(Value::as_str);
    let current = session.current(queue_name, base).await?;
    match kind.as_str() {
        "add" => op_add(current, op).await,
        "moveToActive" => op_move_to_active(current, op).await,
        "promote" => op_promote(current, op).await,
        "changePriority" => op_change_priority(current, op).await,
        "moveToDelayed" => op_move_to_delayed(current, op).await,
        "pause" => op_pause(current, false).await,
        "resume" => op_pause(current, true).await,
        "moveToFinished" => op_move_to_finished(current, op).await,
        "retryJob" => op_retry_job(current, op).await,
        "extendLock" => op_extend_lock(current, op).await,
        "extendLocks" => op_extend_locks(current, op).await,
        "removeJob" => op_remove_job(current, op).await,
        "updateProgress" => op_update_progress(current, op).await,
        "updateData" => op_update_data(current, op).await,
        "addLog" => op_add_log(current, op).await,
        other => Err(missing(other)),
    }
}

// ------------------------------------------------------------------------------------------------
// Session

async fn start(req: &Value) -> Result<Session, String> {
    let redis = req.get("redis").and_then(Value::as_str).ok_or("start without redis")?.to_string();
    let profile = req.get("profile").cloned().unwrap_or(Value::Null);
    let prefix = profile.get("prefix").and_then(Value::as_str).unwrap_or("bull").to_string();
    let hash_tag = profile.get("hash_tag").and_then(Value::as_bool).unwrap_or(false);
    let connection = RedisConnection::new(redis.clone());
    // QueueBuilder::build opens the connection (and writes nothing): a probe of the URL.
    let probe = QueueBuilder::new("bmqc-adapter-connection-probe").connection(connection.clone()).prefix(prefix.clone());
    match tokio::time::timeout(Duration::from_secs(5), probe.build::<Value>()).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(format!("cannot connect to {redis}: {e}")),
        Err(_) => return Err(format!("cannot connect to {redis}: timed out after 5 s")),
    }
    Ok(Session { connection, prefix, hash_tag, current: None })
}

// ------------------------------------------------------------------------------------------------
// The protocol loop (the shared crate's `serve`), on the adapter's runtime

/// The port as the protocol loop drives it.
struct Port {
    runtime: tokio::runtime::Runtime,
}

impl Adapter for Port {
    const NAME: &'static str = PORT;
    const VERSION: &'static str = PORT_VERSION;
    const PROTOCOL: Option<u64> = Some(PROTOCOL);
    type Session = Session;

    fn start(&mut self, request: &Value) -> Result<Session, String> {
        self.runtime.block_on(start(request))
    }

    fn op(&mut self, session: &mut Session, request: &Value) -> Result<Value, Failure> {
        self.runtime.block_on(run_op(session, request))
    }

    fn stop(&mut self, session: Session) {
        drop(session);
    }
}

fn main() {
    // chrono::Utc::now too (chrono is in the port's tree): it must see the pinned time as well.
    let checked = clock::self_check()
        .and_then(|()| clock::check("chrono::Utc::now()", || chrono::Utc::now().timestamp_millis()));
    if let Err(e) = checked {
        log!("{e}");
        std::process::exit(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            log!("cannot start the tokio runtime: {e}");
            std::process::exit(2);
        }
    };
    // serve exits the process without dropping the runtime, so the port's background tasks
    // never hold the exit up.
    serve::serve(Port { runtime }, LOG_NAME)
}
