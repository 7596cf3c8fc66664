//! Adapter protocol version 6 (docs/ADAPTERS.md): requests, ops and their outcomes.
//!
//! Every op field is read as the vector writes it. Integers are `u64`/`i64`: the schema keeps
//! every time, delay and count within 2^53, so nothing is rounded on the way to the SDK.

use bullmq_conformance_adapter::serve::Failure;
use serde::Deserialize;
use serde_json::Value;

/// A JSON object (an op's `fields`).
pub type Map = serde_json::Map<String, Value>;

/// The adapter protocol version this adapter speaks: 6, with the worker half's ops, flows, cron
/// parity, a worker's pick-up of a scheduler's iteration (skipped: see `cron_ops`) and a
/// caller's upsert of a job scheduler.
pub const PROTOCOL: u64 = 6;

/// A `start` request's fields (the loop has read its `seq` and `type`).
#[derive(Debug, Deserialize)]
pub struct Start {
    pub redis: String,
    pub profile: Profile,
}

/// An `op` request's fields.
#[derive(Debug, Deserialize)]
pub struct OpRequest {
    pub queue: String,
    pub base: Option<String>,
    pub op: Value,
}

/// The start request's key profile.
#[derive(Debug, Clone, Deserialize)]
pub struct Profile {
    pub prefix: String,
    #[serde(default)]
    pub hash_tag: bool,
}

/// A worker's rate limiter, as the op spells it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Limiter {
    pub max: u64,
    pub duration: Option<u64>,
}

/// moveToFinished's keepJobs: the packed removeOnComplete / removeOnFail.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct KeepJobs {
    pub count: Option<i64>,
    pub age: Option<f64>,
    pub limit: Option<u64>,
}

/// add's deduplication option, stored by the scripts as `de`.
#[derive(Debug, Clone, Deserialize)]
pub struct Dedup {
    pub id: String,
    pub ttl: Option<u64>,
    pub extend: Option<bool>,
    pub replace: Option<bool>,
}

/// A job in a queue, as flow ops name a parent or a child: its id and its queue's qualified
/// name (`<prefix>:<name>`).
#[derive(Debug, Clone, Deserialize)]
pub struct JobRef {
    pub id: String,
    pub queue: String,
}

/// The failure policy flags a child copies into its parent record, by the short names the
/// scripts store.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct PolicyFlags {
    pub fpof: Option<bool>,
    pub cpof: Option<bool>,
    pub idof: Option<bool>,
    pub rdof: Option<bool>,
}

/// add's opts: the options the add scripts read.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AddOpts {
    pub delay: Option<u64>,
    pub priority: Option<u64>,
    pub lifo: Option<bool>,
    pub de: Option<Dedup>,
    /// A child's parent (protocol 3).
    pub parent: Option<JobRef>,
    #[serde(flatten)]
    pub flags: PolicyFlags,
}

/// A flow node's opts (protocol 3): its parent is the node above it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FlowOpts {
    pub delay: Option<u64>,
    pub priority: Option<u64>,
    pub lifo: Option<bool>,
    #[serde(flatten)]
    pub flags: PolicyFlags,
}

/// addFlow's tree: a job and the children it waits for.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowNode {
    pub name: String,
    pub job_id: String,
    #[serde(default)]
    pub data: Value,
    pub opts: Option<FlowOpts>,
    pub children: Option<Vec<FlowNode>>,
    /// The node's queue when it is not the op's: a qualified name (`<prefix>:<queue>`, the
    /// queue braced under a hash-tagged profile), for a child in another queue.
    pub queue: Option<String>,
}

/// upsertJobScheduler's repeat options, as a caller gives them (protocol 6).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpsertRepeat {
    pub every: Option<u64>,
    pub pattern: Option<String>,
    pub offset: Option<u64>,
    pub start_date: Option<u64>,
    pub end_date: Option<u64>,
    pub tz: Option<String>,
    pub limit: Option<u64>,
}

/// One `when` step of a vector. Unknown fields are ignored, as the Node adapter does.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Op {
    Add {
        name: String,
        timestamp: u64,
        #[serde(default)]
        data: Value,
        #[serde(default)]
        opts: Option<AddOpts>,
        job_id: Option<String>,
    },
    MoveToActive {
        now: u64,
        token: String,
        lock_duration: Option<u64>,
        limiter: Option<Limiter>,
        name: Option<String>,
    },
    Promote {
        job_id: String,
    },
    ChangeDelay {
        job_id: String,
        delay: u64,
        now: u64,
    },
    ChangePriority {
        job_id: String,
        priority: u64,
        #[serde(default)]
        lifo: bool,
    },
    MoveToDelayed {
        job_id: String,
        now: u64,
        delay: u64,
        token: String,
        #[serde(default)]
        skip_attempt: bool,
        fields: Option<Map>,
        #[serde(default)]
        fetch_next: bool,
    },
    Pause,
    Resume,
    MoveToFinished {
        job_id: String,
        now: u64,
        target: String,
        value: Option<String>,
        token: String,
        keep_jobs: Option<KeepJobs>,
        attempts: Option<u64>,
        fields: Option<Map>,
        #[serde(default)]
        fetch_next: bool,
        max_metrics_size: Option<u64>,
    },
    RetryJob {},
    ExtendLock {
        job_id: String,
        token: String,
        duration: u64,
    },
    ExtendLocks {},
    ReleaseLock {},
    MoveStalledJobsToWait {},
    MoveJobFromActiveToWait {
        job_id: String,
        token: String,
    },
    GetRateLimitTtl {
        max_jobs: Option<u64>,
    },
    RemoveDeduplicationKey {
        deduplication_id: String,
        job_id: String,
    },
    RemoveJob {
        job_id: String,
        remove_children: Option<bool>,
    },
    UpdateProgress {
        job_id: String,
        #[serde(default)]
        progress: Value,
    },
    UpdateData {
        job_id: String,
        #[serde(default)]
        data: Value,
    },
    AddLog {
        job_id: String,
        row: String,
        keep_logs: Option<u64>,
    },
    AddParentJob {},
    AddFlow {
        timestamp: u64,
        flow: FlowNode,
    },
    MoveToWaitingChildren {
        job_id: String,
        now: u64,
        token: String,
        child: Option<JobRef>,
    },
    GetDependencyCounts {
        job_id: String,
        types: Option<Vec<String>>,
    },
    RemoveChildDependency {
        job_id: String,
        parent_key: String,
    },
    RemoveUnprocessedChildren {
        job_id: String,
    },
    NextMillis {
        pattern: String,
        now: u64,
        tz: Option<String>,
        start_date: Option<u64>,
        end_date: Option<u64>,
    },
    PickUpIteration {},
    UpsertJobScheduler {
        scheduler_id: String,
        now: u64,
        repeat: UpsertRepeat,
        name: Option<String>,
        data: Option<Value>,
        opts: Option<Map>,
    },
}

/// Why an op produced no result.
#[derive(Debug)]
pub enum Outcome {
    /// The SDK cannot express this op or these arguments through its public API.
    Skip(String),
    /// The SDK (or the adapter) failed; `traceback` holds the error's debug form.
    Fail { message: String, traceback: String },
}

impl Outcome {
    pub fn fail(message: impl Into<String>) -> Self {
        let message = message.into();
        Outcome::Fail {
            traceback: message.clone(),
            message,
        }
    }
}

impl From<bullmq::Error> for Outcome {
    fn from(err: bullmq::Error) -> Self {
        Outcome::Fail {
            message: err.to_string(),
            traceback: format!("{err:?}"),
        }
    }
}

/// The loop's failure for an op's outcome (an enum of this crate, so that `?` can turn a
/// `bullmq::Error` into it).
impl From<Outcome> for Failure {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Skip(reason) => Failure::Skip(reason),
            Outcome::Fail { message, traceback } => Failure::Error { message, traceback },
        }
    }
}

/// What an op gives back: its protocol result, or why there is none.
pub type OpResult = Result<Value, Outcome>;
