//! bullmq-conformance adapter (docs/ADAPTERS.md) for the community Rust port `bullrs` 0.0.3
//! (crates.io, julianbuettner), driven only through its public API.
//!
//! Adapter protocol version 1: bullrs has no call that runs a worker-half op for a job and lock
//! token chosen by the caller (see `moveToActive` below), so the start reply carries no
//! `protocol`, and the suite sends only the queue half's ops.
//!
//! | op             | bullrs public API                                                        |
//! | -------------- | ------------------------------------------------------------------------ |
//! | add            | `Queue::add_with(name, &data, &JobOptions { delay, priority, lifo, job_id, timestamp })` |
//! | pause / resume | `Queue::pause()` / `Queue::resume()`: they return `()`, and the 5.x pause  |
//! |                | script they run returns nothing, so the result is `null`                 |
//! | moveToActive   | skipped: `Worker::next()` hands out jobs that the worker's background    |
//! |                | task fetched with its own lock token and a fixed 30 s lock                |
//! | promote, changeDelay, changePriority, moveToDelayed | skipped: no such API                |
//!
//! Keys: bullrs spells every key `bull:<queue>:<suffix>` (queue/name.rs:46-118), so only a profile with
//! prefix `bull` can be produced; `hash_tag` is produced by naming the queue `{<queue>}`. The
//! port keeps its key base private (`QueueName::base` is `pub(crate)`); the adapter checks the
//! suite's `base` against `bull:` + `QueueName::as_str()` + `:`, the string `QueueName::base` builds (queue/name.rs:116).
//!
//! Clock: `add` passes the op's time as `JobOptions::timestamp` (the port's own option), and also
//! pins the wall clock to it (the `clock` of crate `bullmq-conformance-adapter`, whose `serve`
//! runs the protocol loop); pause and resume run on the real clock, and a read of it is logged.
//! Logs go to stderr; stdout carries only protocol replies.

use std::time::Duration;

use bullmq_conformance_adapter::clock;
use bullmq_conformance_adapter::serve::{self, Adapter, Failure};
use bullrs::deadpool_redis::{Config, Pool, Runtime};
use bullrs::{JobOptions, Queue, QueueName};
use serde_json::{Map, Value};

const PORT: &str = "bullrs";
const PORT_VERSION: &str = "0.0.3";
/// The prefix bullrs writes before every key (queue/name.rs:46-118).
const PORT_PREFIX: &str = "bull";

// The port reads the wall clock (`SystemTime::now`, `chrono::Utc::now`): this executable answers
// it (see bullmq-conformance-adapter's clock).
bullmq_conformance_adapter::override_clock_gettime!();

type JobQueue = Queue<Value, Value>;

const LOG_NAME: &str = "bullrs adapter";

macro_rules! log {
    ($($arg:tt)*) => { eprintln!("[{LOG_NAME}] {}", format!($($arg)*)) };
}

/// The queue the current vector uses, on a pool of its own. bullrs's `Queue::new` starts a
/// background XREAD (5 s block) on the queue's events stream; the pool is closed when the vector's
/// queue changes, so those readers never hold connections that later queues wait for.
struct Current {
    name: String,
    pool: Pool,
    queue: JobQueue,
}

struct Session {
    redis: String,
    hash_tag: bool,
    current: Option<Current>,
}

impl Session {
    /// The port's queue name for the protocol's queue name under the start profile.
    fn port_queue_name(&self, queue: &str) -> Result<QueueName, Failure> {
        let spelled = if self.hash_tag { format!("{{{queue}}}") } else { queue.to_string() };
        QueueName::new(spelled.clone())
            .map_err(|e| Failure::Skip(format!("bullrs {PORT_VERSION} rejects the queue name {spelled:?}: {e}")))
    }

    async fn queue(&mut self, queue: &str, base: Option<&str>) -> Result<&JobQueue, Failure> {
        let reuse = matches!(&self.current, Some(c) if c.name == queue);
        if !reuse {
            if let Some(old) = self.current.take() {
                drop(old.queue);
                old.pool.close();
            }
            let name = self.port_queue_name(queue)?;
            let pool = new_pool(&self.redis)?;
            let q = JobQueue::new(pool.clone(), name);
            self.current = Some(Current { name: queue.to_string(), pool, queue: q });
        }
        let current = self.current.as_ref().expect("set above");
        // bullrs keeps its key base private; it is "bull:" + the queue name + ":" (queue/name.rs:116).
        let port_base = format!("{PORT_PREFIX}:{}:", current.queue.name().as_str());
        if let Some(base) = base {
            if base != port_base {
                return Err(Failure::error(format!(
                    "bullrs builds BASE {port_base:?} for queue {queue:?}, but the suite expects {base:?}"
                )));
            }
        }
        Ok(&current.queue)
    }
}

fn new_pool(redis: &str) -> Result<Pool, Failure> {
    Config::from_url(redis)
        .create_pool(Some(Runtime::Tokio1))
        .map_err(|e| Failure::raised("creating the deadpool-redis pool", e))
}

// ------------------------------------------------------------------------------------------------
// Reading op fields

fn field<'a>(op: &'a Value, name: &str) -> Option<&'a Value> {
    op.get(name).filter(|v| !v.is_null())
}

/// An integer field (JSON integer, or a float with an integral value).
fn int_field(op: &Value, name: &str) -> Result<i64, Failure> {
    let v = field(op, name).ok_or_else(|| Failure::error(format!("op has no {name}")))?;
    as_int(v).ok_or_else(|| Failure::error(format!("op field {name} is not an integer: {v}")))
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

/// A job id as the protocol sends it (string, or a number spelled as one).
fn id_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

// ------------------------------------------------------------------------------------------------
// Ops

async fn op_add(queue: &JobQueue, op: &Value) -> Result<Value, Failure> {
    let name = field(op, "name").and_then(Value::as_str).unwrap_or("").to_string();
    let timestamp = int_field(op, "timestamp")?;
    let data = op.get("data").cloned().unwrap_or(Value::Null);
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
                    .filter(|ms| *ms >= 0)
                    .ok_or_else(|| Failure::error(format!("opts.delay is not a non-negative integer: {value}")))?;
                options.delay = Some(Duration::from_millis(ms as u64));
            }
            "priority" => {
                let p = as_int(value)
                    .filter(|p| *p >= 0)
                    .ok_or_else(|| Failure::error(format!("opts.priority is not a non-negative integer: {value}")))?;
                options.priority = Some(p as usize);
            }
            "lifo" => {
                options.lifo = Some(value.as_bool().ok_or_else(|| Failure::error(format!("opts.lifo is not a boolean: {value}")))?);
            }
            "de" => {
                // Sent only to protocol-2 adapters; bullrs's `deduplication_something` is a bare
                // string stored as `de`, with no deduplication id, ttl or key.
                return Err(Failure::Skip(format!(
                    "bullrs {PORT_VERSION} has no deduplication option: JobOptions::deduplication_something \
                     is an undocumented string stored as opts.de (job/options.rs:130)"
                )));
            }
            other => {
                return Err(Failure::Skip(format!("bullrs {PORT_VERSION} adapter: unknown add option {other:?}")));
            }
        }
    }
    if let Some(id) = field(op, "jobId") {
        options.job_id = Some(id_text(id));
    }
    let created = chrono::DateTime::from_timestamp_millis(timestamp)
        .ok_or_else(|| Failure::error(format!("timestamp {timestamp} is out of chrono's range")))?;
    options.timestamp = Some(created);

    let scope = clock::pinned(timestamp);
    let handle = queue.add_with(&name, &data, &options).await;
    if scope.reads() > 0 {
        log!("note: Queue::add_with read the wall clock {} time(s) (answered {timestamp})", scope.reads());
    }
    drop(scope);
    let handle = handle.map_err(|e| Failure::raised("Queue::add_with", e))?;
    Ok(Value::String(handle.id().to_string()))
}

async fn op_pause(queue: &JobQueue, resume: bool) -> Result<Value, Failure> {
    let scope = clock::unpinned();
    let outcome = if resume { queue.resume().await } else { queue.pause().await };
    let what = if resume { "Queue::resume" } else { "Queue::pause" };
    if scope.reads() > 0 {
        log!("warning: {what} read the wall clock {} time(s); the op has no time", scope.reads());
    }
    drop(scope);
    outcome.map_err(|e| Failure::raised(what, e))?;
    // `Result<(), _>`: the port hands back nothing, and its pause script (npm 5.66.6-5.67.3's
    // pause-7) returns nothing.
    Ok(Value::Null)
}

fn missing(op: &str) -> Failure {
    let reason = match op {
        "moveToActive" => format!(
            "bullrs {PORT_VERSION} has no fetch with the caller's lock token and lock duration: \
             Worker::next() hands out jobs that the worker's background task fetched with its own token \
             `<pull id>-<n>` (worker/pull_job.rs:90) and a fixed 30 s lock (worker/pull_job.rs:47)"
        ),
        "promote" | "changeDelay" | "changePriority" | "moveToDelayed" => {
            format!("bullrs {PORT_VERSION} has no {op}")
        }
        other => format!(
            "bullrs {PORT_VERSION} adapter speaks adapter protocol 1 and does not implement {other:?}"
        ),
    };
    Failure::Skip(reason)
}

async fn run_op(session: &mut Session, req: &Value) -> Result<Value, Failure> {
    let op = req.get("op").ok_or_else(|| Failure::error("op request without op"))?;
    let kind = op.get("op").and_then(Value::as_str).unwrap_or("");
    let queue_name = req.get("queue").and_then(Value::as_str).ok_or_else(|| Failure::error("op request without queue"))?;
    let base = req.get("base").and_then(Value::as_str);
    let queue = session.queue(queue_name, base).await?;
    match kind {
        "add" => op_add(queue, op).await,
        "pause" => op_pause(queue, false).await,
        "resume" => op_pause(queue, true).await,
        other => Err(missing(other)),
    }
}

// ------------------------------------------------------------------------------------------------
// Session

async fn start(req: &Value) -> Result<Session, String> {
    let redis = req.get("redis").and_then(Value::as_str).ok_or("start without redis")?.to_string();
    let profile = req.get("profile").cloned().unwrap_or(Value::Null);
    let prefix = profile.get("prefix").and_then(Value::as_str).unwrap_or("bull");
    let hash_tag = profile.get("hash_tag").and_then(Value::as_bool).unwrap_or(false);
    if prefix != PORT_PREFIX {
        return Err(format!(
            "bullrs {PORT_VERSION} cannot produce the profile {profile}: it spells every key \
             \"bull:<queue>:<suffix>\" (queue/name.rs:46-118) and has no prefix option, so prefix {prefix:?} is \
             out of reach"
        ));
    }
    let pool = new_pool(&redis).map_err(|f| match f {
        Failure::Error { message, .. } | Failure::Skip(message) => message,
    })?;
    let connection = tokio::time::timeout(Duration::from_secs(5), pool.get()).await;
    match connection {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(format!("cannot connect to {redis}: {e}")),
        Err(_) => return Err(format!("cannot connect to {redis}: timed out after 5 s")),
    }
    pool.close();
    Ok(Session { redis, hash_tag, current: None })
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
    /// Protocol 1: the start reply carries no `protocol` (see the module docs).
    const PROTOCOL: Option<u64> = None;
    type Session = Session;

    fn start(&mut self, request: &Value) -> Result<Session, String> {
        self.runtime.block_on(start(request))
    }

    fn op(&mut self, session: &mut Session, request: &Value) -> Result<Value, Failure> {
        self.runtime.block_on(run_op(session, request))
    }

    fn stop(&mut self, session: Session) {
        if let Some(c) = session.current {
            c.pool.close();
        }
    }
}

fn main() {
    // The port reads chrono::Utc::now as well as SystemTime::now: both must see the pinned time.
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
    // serve exits the process without dropping the runtime: bullrs's background readers may
    // still be blocked in XREAD.
    serve::serve(Port { runtime }, LOG_NAME)
}
