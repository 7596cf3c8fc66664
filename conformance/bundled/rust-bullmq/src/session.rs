//! The SDK objects of one run: the connection, and the Queue, Workers and fetched Jobs of the
//! vector being run (each vector has a fresh queue name; a new name drops the old objects).

use std::collections::HashMap;
use std::time::Duration;

use bullmq::options::RedisConnectionOptions;
use bullmq::redis_connection::RedisConnection;
use bullmq::{
    FlowProducer, Job, Queue, QueueKeys, QueueOptions, RateLimiterOptions, Worker, WorkerOptions,
};

use crate::protocol::{Limiter, Outcome, Profile};

/// Node's Worker default, used when a fetch names no lockDuration.
const DEFAULT_LOCK_DURATION_MS: u64 = 30_000;

/// The options a fetching Worker is built with: the ones moveToActive packs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSpec {
    pub lock_duration: u64,
    pub limiter: Option<Limiter>,
    pub name: Option<String>,
}

impl WorkerSpec {
    pub fn new(lock_duration: Option<u64>, limiter: Option<Limiter>, name: Option<String>) -> Self {
        WorkerSpec {
            lock_duration: lock_duration.unwrap_or(DEFAULT_LOCK_DURATION_MS),
            limiter,
            name,
        }
    }
}

/// The objects of the current vector's queue.
struct Current {
    /// The protocol's queue name (the SDK's may carry a hash tag).
    queue_name: String,
    keys: QueueKeys,
    /// Opened on first use: opening a Queue writes `library` into meta (queue.rs update_meta),
    /// so vectors whose ops need no Queue do not get that write.
    queue: Option<Queue>,
    /// One Worker per option set: a Job fetched by one stays usable after another is built.
    workers: Vec<(WorkerSpec, Worker)>,
    /// Jobs returned by `Worker::get_next_job_nonblocking`, by (job id, lock token): the only
    /// Jobs whose script context carries a lock token.
    fetched: HashMap<(String, String), Job>,
}

pub struct Session {
    profile: Profile,
    conn_opts: RedisConnectionOptions,
    conn: RedisConnection,
    current: Option<Current>,
}

impl Session {
    /// Connects to `redis` and checks that the SDK can spell the profile's keys.
    pub async fn start(redis: &str, profile: Profile) -> Result<Self, String> {
        // The SDK refuses a prefix that is empty or holds ':' (keys.rs validate_prefix): such
        // a profile cannot be produced at all.
        if profile.prefix.is_empty() || profile.prefix.contains(':') {
            return Err(format!(
                "bullmq-official 1.4.4 cannot produce the profile's prefix {:?}: \
                 Queue/Worker options reject a prefix that is empty or contains ':'",
                profile.prefix
            ));
        }
        let conn_opts = RedisConnectionOptions::new().url(redis);
        let conn = RedisConnection::new_managed_only(&conn_opts)
            .await
            .map_err(|e| format!("cannot connect to {redis}: {e}"))?;
        conn.ping()
            .await
            .map_err(|e| format!("cannot ping {redis}: {e}"))?;
        Ok(Session {
            profile,
            conn_opts,
            conn,
            current: None,
        })
    }

    /// The queue name as the SDK is given it: `{q}` under a hash-tagged profile, so that its
    /// key builder yields `<prefix>:{q}:`.
    fn sdk_name(&self, queue: &str) -> String {
        if self.profile.hash_tag {
            format!("{{{queue}}}")
        } else {
            queue.to_string()
        }
    }

    /// Switches to `queue` (dropping the previous vector's objects) and checks that the SDK's
    /// own key base for it is the `base` the suite sent.
    pub async fn enter(&mut self, queue: &str, base: Option<&str>) -> Result<(), Outcome> {
        if self.current.as_ref().map(|c| c.queue_name.as_str()) != Some(queue) {
            self.close_current().await;
            let keys = QueueKeys::new(&self.sdk_name(queue), Some(&self.profile.prefix));
            self.current = Some(Current {
                queue_name: queue.to_string(),
                keys,
                queue: None,
                workers: Vec::new(),
                fetched: HashMap::new(),
            });
        }
        let keys = &self.cur().keys;
        let sdk_base = keys.key_prefix();
        match base {
            Some(base) if base != sdk_base => Err(Outcome::fail(format!(
                "bullmq-official builds BASE {sdk_base:?} for queue {:?}, but the suite expects \
                 {base:?}",
                keys.name()
            ))),
            _ => Ok(()),
        }
    }

    fn cur(&self) -> &Current {
        self.current.as_ref().expect("enter() runs before every op")
    }

    fn cur_mut(&mut self) -> &mut Current {
        self.current.as_mut().expect("enter() runs before every op")
    }

    /// The SDK's name (see `sdk_name`) of the queue of a qualified name `<prefix>:<queue>`:
    /// what a flow node in another queue gives. Under a hash-tagged profile the qualified
    /// name already holds the braces the SDK takes.
    pub fn sdk_name_of(&self, qualified: &str) -> Result<String, Outcome> {
        let head = format!("{}:", self.profile.prefix);
        match qualified.strip_prefix(&head) {
            Some(name) if !name.is_empty() => Ok(name.to_string()),
            _ => Err(Outcome::fail(format!(
                "a flow node's queue {qualified:?} is not a queue of prefix {:?}",
                self.profile.prefix
            ))),
        }
    }

    /// The current queue's name as the SDK is given it (see `sdk_name`).
    pub fn sdk_queue_name(&self) -> String {
        self.cur().keys.name().to_string()
    }

    /// A FlowProducer on the shared connection with the profile's prefix. It is not bound to a
    /// queue and writes nothing when built (flow_producer.rs:247-251), so one is made per op.
    pub fn flow_producer(&self) -> Result<FlowProducer, Outcome> {
        Ok(FlowProducer::with_connection(
            self.conn.clone(),
            Some(self.profile.prefix.clone()),
        )?)
    }

    /// The current queue's `Queue`, opened on first use on the shared connection.
    pub async fn queue(&mut self) -> Result<&Queue, Outcome> {
        if self.cur().queue.is_none() {
            let name = self.cur().keys.name().to_string();
            let opts = QueueOptions::new().prefix(self.profile.prefix.clone());
            let queue = Queue::with_connection(&name, self.conn.clone(), opts).await?;
            self.cur_mut().queue = Some(queue);
        }
        Ok(self.cur().queue.as_ref().expect("opened above"))
    }

    /// A Job loaded by `Queue::get_job` (its script context holds no lock token), or None when
    /// the job hash does not exist.
    pub async fn load_job(&mut self, job_id: &str) -> Result<Option<Job>, Outcome> {
        Ok(self.queue().await?.get_job(job_id).await?)
    }

    /// The current queue's Worker built with `spec`: no processor ever runs (autorun off), and
    /// no stall check or lock renewal runs in the background.
    pub async fn worker(&mut self, spec: &WorkerSpec) -> Result<&Worker, Outcome> {
        let found = self.cur().workers.iter().position(|(s, _)| s == spec);
        let index = match found {
            Some(index) => index,
            None => {
                let mut opts = WorkerOptions::new()
                    .connection(self.conn_opts.clone())
                    .prefix(self.profile.prefix.clone())
                    .autorun(false)
                    .skip_stalled_check()
                    .skip_lock_renewal()
                    .lock_duration(Duration::from_millis(spec.lock_duration));
                if let Some(limiter) = &spec.limiter {
                    let duration = limiter.duration.ok_or_else(|| {
                        Outcome::Skip(
                            "bullmq-official 1.4.4's RateLimiterOptions requires a duration \
                             (RateLimiterOptions::new(max, duration)); the op's limiter has none"
                                .to_string(),
                        )
                    })?;
                    opts = opts.limiter(RateLimiterOptions::new(
                        limiter.max,
                        Duration::from_millis(duration),
                    ));
                }
                if let Some(name) = &spec.name {
                    opts = opts.name(name.clone());
                }
                let name = self.cur().keys.name().to_string();
                let worker = Worker::with_options(&name, idle_processor, opts).await?;
                let workers = &mut self.cur_mut().workers;
                workers.push((spec.clone(), worker));
                workers.len() - 1
            }
        };
        Ok(&self.cur().workers[index].1)
    }

    /// Keeps a fetched Job for later ops that must act under its lock token.
    pub fn hold(&mut self, token: &str, job: Job) {
        let key = (job.id().to_string(), token.to_string());
        self.cur_mut().fetched.insert(key, job);
    }

    /// The Job fetched earlier in this vector with `token`, if any.
    pub fn held(&mut self, job_id: &str, token: &str) -> Option<&mut Job> {
        let key = (job_id.to_string(), token.to_string());
        self.cur_mut().fetched.get_mut(&key)
    }

    /// Closes the current queue's SDK objects.
    async fn close_current(&mut self) {
        if let Some(current) = self.current.take() {
            for (_, worker) in &current.workers {
                if let Err(err) = worker.close(0).await {
                    eprintln!("[rust-bullmq adapter] error closing a worker: {err}");
                }
            }
            if let Some(queue) = &current.queue {
                queue.close().await;
            }
        }
    }

    /// Closes everything before the process exits.
    pub async fn shutdown(&mut self) {
        self.close_current().await;
        self.conn.close().await;
    }
}

/// The processor of the adapter's Workers. Never called: the Workers are not run, jobs are
/// only fetched by hand.
async fn idle_processor(
    _job: Job,
    _token: bullmq::worker::CancellationToken,
) -> bullmq::Result<serde_json::Value> {
    Ok(serde_json::Value::Null)
}
