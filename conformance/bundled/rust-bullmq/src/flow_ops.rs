//! The flow ops (adapter protocol 3), each through bullmq-official's public API, or skipped
//! with the public API it lacks.
//!
//! | op | the SDK's call | result |
//! |---|---|---|
//! | add with `opts.parent` | `Queue::add` with `JobOptions.parent` and the policy flags (queue_ops) | the id, or the script's -5 / -7 (`Error::Script`) |
//! | addFlow | `FlowProducer::add` at the op's timestamp | the root's id, or the code the SDK fails the add with |
//! | addParentJob | skipped: no public call adds a parent alone | |
//! | moveToWaitingChildren | `Job::move_to_waiting_children` on the Job fetched with the op's token, at `now` | `Ok(true)` / `Ok(false)` as 0 / 1; the code read back from the error |
//! | getDependencyCounts | `Queue::get_dependencies_count(id)` | its four counts in the op's order |
//! | removeChildDependency | `Queue::remove_child_dependency(id, parentKey)` | `true` / `false` as 0 / 1; -1 / -5 read back from the error |
//! | removeUnprocessedChildren | `Queue::remove_unprocessed_children(id)` | null (the script answers nothing) |

use bullmq::{Error, FlowJob, JobOptions};
use bullmq_conformance_adapter::clock;
use serde_json::{json, Value};

use crate::codes::script_code;
use crate::protocol::{FlowNode, JobRef, OpResult, Outcome, PolicyFlags};
use crate::queue_ops::{client_rejection, held, no_fetch_with, sdk_priority, skip_if_any};
use crate::session::Session;

/// The failure policy flags as the SDK's job options (`JobOptions::fail_parent_on_failure`
/// and so on, options.rs:957-978), which its add packs into the parent record. The setters
/// can only turn a flag on; off is the default, and what a flag false stands for.
pub fn with_flags(mut opts: JobOptions, flags: PolicyFlags) -> JobOptions {
    if flags.fpof == Some(true) {
        opts = opts.fail_parent_on_failure();
    }
    if flags.cpof == Some(true) {
        opts = opts.continue_parent_on_failure();
    }
    if flags.idof == Some(true) {
        opts = opts.ignore_dependency_on_failure();
    }
    if flags.rdof == Some(true) {
        opts = opts.remove_dependency_on_failure();
    }
    opts
}

/// A vector's flow node as the SDK's `FlowJob` in the queue `queue` (the SDK's name for the
/// op's queue), or in the node's own (`queue`, a child in another queue): the node's id is its
/// `JobOptions.job_id`; its parent is the node above it, which `FlowProducer::add` links
/// itself (flow_producer.rs:670-679).
fn flow_job(session: &Session, node: FlowNode, queue: &str) -> Result<FlowJob, Outcome> {
    let own = match &node.queue {
        Some(qualified) => session.sdk_name_of(qualified)?,
        None => queue.to_string(),
    };
    let opts = node.opts.unwrap_or_default();
    let mut job_opts = JobOptions::new().job_id(node.job_id);
    if let Some(delay) = opts.delay {
        job_opts = job_opts.delay(std::time::Duration::from_millis(delay));
    }
    if let Some(priority) = opts.priority {
        job_opts = job_opts.priority(sdk_priority(priority)?);
    }
    if opts.lifo == Some(true) {
        job_opts = job_opts.lifo();
    }
    job_opts = with_flags(job_opts, opts.flags);
    let mut job = FlowJob::new(node.name, &own, node.data)?.options(job_opts);
    if let Some(children) = node.children {
        let children = children
            .into_iter()
            .map(|child| flow_job(session, child, queue))
            .collect::<Result<Vec<_>, _>>()?;
        job = job.children(children);
    }
    Ok(job)
}

/// `FlowProducer::add(tree)` with every node in the op's queue or its own, the wall clock
/// pinned at the op's timestamp: the SDK takes each job's timestamp (Job::new,
/// job.rs:118-123) and the release check's time (flow_producer.rs:796) from it.
///
/// The SDK fails the whole add with any negative code but a child's -5
/// (apply_pipeline_results, flow_producer.rs:1134-1159), after its transaction ran; that code
/// is its answer, and the op's result. The op's root has no parent, so its own reply is
/// never negative: a code here is a child's, which Node's FlowProducer does not report.
pub async fn add_flow(session: &mut Session, timestamp: u64, flow: FlowNode) -> OpResult {
    let queue = session.sdk_queue_name();
    let tree = flow_job(session, flow, &queue)?;
    let producer = session.flow_producer()?;
    match clock::at(timestamp, producer.add(tree)).await {
        Ok(node) => Ok(json!(node.job.id())),
        Err(err) => match script_code(&err) {
            Some(code) => Ok(json!(code)),
            None => Err(client_rejection("FlowProducer::add", err)),
        },
    }
}

/// No public call adds a parent alone.
pub fn add_parent_job() -> OpResult {
    Err(Outcome::Skip(
        "bullmq-official 1.4.4 has no public call that adds a parent job alone: addParentJob-6 \
         runs only inside FlowProducer::add, for a node with children (FlowProducer::add_node, \
         flow_producer.rs:681-684; add_parent_job_to_pipe is private, flow_producer.rs:806), \
         and a FlowJob whose children list is empty is added as a leaf \
         (flow_producer.rs:718-719)"
            .to_string(),
    ))
}

/// `Job::move_to_waiting_children(child key)` at `now`, on the Job this adapter fetched with
/// the op's token (the SDK sends the fetch's token, job.rs:589).
///
/// The SDK answers the script's 0 / 1 as `Ok(true)` / `Ok(false)` and each negative code as
/// an error of its own kind (job.rs:599-621): `JobNotFound` -1, `JobLockNotExist` -2,
/// `JobNotInState` -3, `Unrecoverable` "…has at least one failed child…" -9, and any other
/// code (the lock held by another token, -6) as `InvalidConfig` "moveToWaitingChildren
/// returned unexpected code: N". Each is read back to its integer, so the code comes back
/// whole.
pub async fn move_to_waiting_children(
    session: &mut Session,
    job_id: &str,
    now: u64,
    token: &str,
    child: Option<JobRef>,
) -> OpResult {
    let mut gaps = Vec::new();
    if session.held(job_id, token).is_none() {
        gaps.push(no_fetch_with(job_id, token));
    }
    skip_if_any("Job::move_to_waiting_children", gaps)?;
    // The SDK takes the child's full key, as Node's client builds it: `<queue>:<id>`.
    let child_key = child.map(|child| format!("{}:{}", child.queue, child.id));
    let job = held(session, job_id, token)?;
    let result = clock::at(now, job.move_to_waiting_children(child_key.as_deref())).await;
    match result {
        Ok(true) => Ok(json!(0)),
        Ok(false) => Ok(json!(1)),
        Err(err) => match waiting_children_code(&err) {
            Some(code) => Ok(json!(code)),
            None => Err(err.into()),
        },
    }
}

/// The script code behind an error of `Job::move_to_waiting_children` (job.rs:602-617).
fn waiting_children_code(err: &Error) -> Option<i64> {
    match err {
        Error::JobNotFound(_) => Some(-1),
        Error::JobLockNotExist(_) => Some(-2),
        Error::JobNotInState(_, _) => Some(-3),
        Error::Unrecoverable(message) if message.contains("has at least one failed child") => {
            Some(-9)
        }
        Error::InvalidConfig(message) => message
            .strip_prefix("moveToWaitingChildren returned unexpected code: ")
            .and_then(|code| code.parse::<i64>().ok())
            .filter(|code| *code < 0),
        other => script_code(other),
    }
}

/// `Queue::get_dependencies_count(id)`: the SDK reads all four counts (HLEN :processed, SCARD
/// :dependencies, HLEN :failed, ZCARD :unsuccessful in one pipeline, queue.rs:1701-1724,
/// where Node runs getDependencyCounts-4); the op's types pick them in its order.
pub async fn get_dependency_counts(
    session: &mut Session,
    job_id: &str,
    types: Option<Vec<String>>,
) -> OpResult {
    let queue = session.queue().await?;
    let counts =
        clock::without("getDependencyCounts", queue.get_dependencies_count(job_id)).await?;
    let types = types.unwrap_or_else(|| {
        ["processed", "unprocessed", "ignored", "failed"]
            .map(String::from)
            .to_vec()
    });
    let picked = types
        .iter()
        .map(|kind| match kind.as_str() {
            "processed" => Ok(counts.processed),
            "unprocessed" => Ok(counts.unprocessed),
            "ignored" => Ok(counts.ignored),
            "failed" => Ok(counts.failed),
            other => Err(Outcome::fail(format!("unknown dependency type {other:?}"))),
        })
        .collect::<Result<Vec<u64>, Outcome>>()?;
    Ok(json!(picked))
}

/// `Queue::remove_child_dependency(id, parentKey)` (queue.rs:1745), the id-based form of
/// `Job::remove_child_dependency` (which takes the parent key from a loaded Job).
///
/// The SDK answers the script's 0 / 1 as `true` / `false`, and -1 / -5 as `InvalidConfig`
/// "Missing key for job …" / "Missing key for parent job …" (queue.rs:1768-1780); those are
/// read back to their codes. (It would also answer any other reply `false`, queue.rs:1779,
/// but removeChildDependency-1 has no other.)
pub async fn remove_child_dependency(
    session: &mut Session,
    job_id: &str,
    parent_key: &str,
) -> OpResult {
    let queue = session.queue().await?;
    let result = clock::without(
        "removeChildDependency",
        queue.remove_child_dependency(job_id, parent_key),
    )
    .await;
    match result {
        Ok(true) => Ok(json!(0)),
        Ok(false) => Ok(json!(1)),
        Err(Error::InvalidConfig(message))
            if message.starts_with("Missing key for parent job ") =>
        {
            Ok(json!(-5))
        }
        Err(Error::InvalidConfig(message)) if message.starts_with("Missing key for job ") => {
            Ok(json!(-1))
        }
        Err(err) => Err(err.into()),
    }
}

/// `Queue::remove_unprocessed_children(id)` (queue.rs:1890): the script answers nothing, so the
/// op's result is null.
pub async fn remove_unprocessed_children(session: &mut Session, job_id: &str) -> OpResult {
    let queue = session.queue().await?;
    clock::without(
        "removeUnprocessedChildren",
        queue.remove_unprocessed_children(job_id),
    )
    .await?;
    Ok(Value::Null)
}
