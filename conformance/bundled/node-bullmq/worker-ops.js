'use strict';
// The worker half's ops of adapter protocol version 2 and the flow ops of a job of version 3
// (see the op table at the top of adapter.js), each driven through npm bullmq's own client code. adapter.js passes in its
// helpers: the clocks, the Queue/Worker cache, script-reply watching and code mapping.

const { Job } = require('bullmq');

module.exports = function workerOps(ctx) {
  const { Skip, BULLMQ_VERSION, withClock, withoutClock, getWorker, anyWorker, watchScript,
    fetchedOrRaw, codeOf, scriptCode, defined } = ctx;

  /**
   * A Job handle for an id, as a Worker holds one for the job it fetched (no hash read: the
   * scripts read nothing of it but the id, and the options the op names). The constructor reads
   * Date.now for an in-memory timestamp that no call here sends, so it is built off the op's
   * clock.
   */
  function handle(owner, jobId, opts = {}) {
    return new Job(owner, '', {}, opts, String(jobId));
  }

  function tokenOf(op) {
    return String(op.token === undefined ? 'tok' : op.token);
  }

  function fieldsOf(op) {
    return op.fields && Object.keys(op.fields).length ? op.fields : undefined;
  }

  /** The one reply of `script` during fn: a negative code the client threw, or the raw reply. */
  async function replyOf(backend, script, fn) {
    try {
      const { replies } = await watchScript(backend, script, fn);
      if (replies.length !== 1) {
        throw new Error(`expected one ${script} call, saw ${replies.length}`);
      }
      return replies[0];
    } catch (err) {
      const code = scriptCode(err);
      if (code !== undefined) return code;
      throw err;
    }
  }

  /** The return value whose JSON.stringify is `text`, as Job.moveToCompleted sends it. */
  function returnValueOf(text) {
    let value;
    try {
      value = JSON.parse(text);
    } catch (err) {
      throw new Skip(`npm bullmq ${BULLMQ_VERSION} sends JSON.stringify(returnvalue) on ` +
        `completion; the op's value ${JSON.stringify(text)} is not JSON`);
    }
    const sent = JSON.stringify(value);
    if (sent !== text) {
      throw new Skip(`npm bullmq ${BULLMQ_VERSION} sends JSON.stringify(returnvalue) on ` +
        `completion: ${sent} for the op's value ${JSON.stringify(text)}`);
    }
    return value;
  }

  async function moveToFinished(queueName, queue, op) {
    const failed = op.target === 'failed';
    const fields = fieldsOf(op);
    if (!failed && fields) {
      throw new Skip(`npm bullmq ${BULLMQ_VERSION}'s Job.moveToCompleted sends no job fields; ` +
        `the op has ${Object.keys(fields).join(', ')}`);
    }
    const text = op.value === undefined ? 'null' : String(op.value);
    const returnValue = failed ? undefined : returnValueOf(text);
    const worker = await getWorker(queueName, {
      lockDuration: op.lockDuration,
      limiter: op.limiter,
      metrics: op.maxMetricsSize ? { maxDataPoints: op.maxMetricsSize } : undefined,
    });
    // Read by the client from the job's opts: attempts, and keepJobs as removeOnComplete /
    // removeOnFail (an object is packed as it is; absent, it packs {count: -1}).
    const job = handle(worker, op.jobId, defined({
      attempts: op.attempts,
      [failed ? 'removeOnFail' : 'removeOnComplete']: op.keepJobs,
    }));
    const token = tokenOf(op);
    const fetchNext = !!op.fetchNext;
    const reply = await withClock(op.now, () => replyOf(worker.backend, 'moveToFinished', () =>
      failed
        ? worker.backend.moveToFailed(job, text, job.opts.removeOnFail, token, fetchNext, fields)
        : job.moveToCompleted(returnValue, token, fetchNext)));
    return fetchedOrRaw(reply);
  }

  async function retryJob(queueName, queue, op) {
    const jobId = String(op.jobId);
    const fields = fieldsOf(op);
    return withClock(op.now, () => codeOf(() =>
      queue.backend.retryJob(jobId, !!op.lifo, tokenOf(op), { fieldsToUpdate: fields })));
  }

  async function extendLock(queueName, queue, op) {
    const job = handle(queue, op.jobId);
    return withoutClock('extendLock', () => job.extendLock(tokenOf(op), op.duration));
  }

  async function extendLocks(queueName, queue, op) {
    const worker = await anyWorker(queueName);
    const ids = (op.jobIds || []).map(String);
    const tokens = (op.tokens || []).map(String);
    const failed = await withoutClock('extendLocks', () =>
      worker.extendJobLocks(ids, tokens, op.duration));
    return (failed || []).map(String);
  }

  async function releaseLock() {
    throw new Skip(`npm bullmq ${BULLMQ_VERSION} ships releaseLock-1 but no client code calls ` +
      'it (a worker deletes its lock in moveToFinished, retryJob or moveToDelayed)');
  }

  async function moveStalledJobsToWait(queueName, queue, op) {
    const worker = await getWorker(queueName, {
      maxStalledCount: op.maxStalledCount,
      stalledInterval: op.stalledInterval,
    });
    const reply = await withClock(op.now, () =>
      replyOf(worker.backend, 'moveStalledJobsToWait', () => worker.moveStalledJobsToWait()));
    return Array.isArray(reply) ? reply.map(String) : reply;
  }

  async function moveJobFromActiveToWait(queueName, queue, op) {
    const job = handle(queue, op.jobId);
    return withoutClock('moveJobFromActiveToWait', () => codeOfResult(() =>
      job.moveToWait(tokenOf(op))));
  }

  async function getRateLimitTtl(queueName, queue, op) {
    return withoutClock('getRateLimitTtl', () => queue.getRateLimitTtl(op.maxJobs));
  }

  async function removeDeduplicationKey(queueName, queue, op) {
    const job = handle(queue, op.jobId, { deduplication: { id: String(op.deduplicationId) } });
    const removed = await withoutClock('removeDeduplicationKey', () =>
      job.removeDeduplicationKey());
    return removed ? 1 : 0;
  }

  async function removeJob(queueName, queue, op) {
    const opts = op.removeChildren === undefined ? undefined
      : { removeChildren: !!op.removeChildren };
    return withoutClock('removeJob', () => codeOfResult(() =>
      queue.remove(String(op.jobId), opts)));
  }

  async function updateProgress(queueName, queue, op) {
    const job = handle(queue, op.jobId);
    const progress = op.progress === undefined ? null : op.progress;
    return withoutClock('updateProgress', () => codeOf(() => job.updateProgress(progress)));
  }

  async function updateData(queueName, queue, op) {
    const job = handle(queue, op.jobId);
    const data = op.data === undefined ? null : op.data;
    return withoutClock('updateData', () => codeOf(() => job.updateData(data)));
  }

  async function addLog(queueName, queue, op) {
    const job = handle(queue, op.jobId, defined({ keepLogs: op.keepLogs }));
    return withoutClock('addLog', () => codeOfResult(() => job.log(String(op.row))));
  }

  // The flow ops of a job (adapter protocol version 3).

  /**
   * Job.moveToWaitingChildren(token, {child}) at the op's now (the client sends Date.now()).
   * The client's boolean is lossless: the backend maps the script's 0 to true and 1 to false and
   * throws every other reply with its `code` (-1, -2, -3, -6, -9), which codeOfResult returns.
   */
  async function moveToWaitingChildren(queueName, queue, op) {
    const job = handle(queue, op.jobId);
    const opts = op.child ? { child: { id: String(op.child.id), queue: op.child.queue } } : {};
    return withClock(op.now, () => codeOfResult(async () =>
      ((await job.moveToWaitingChildren(tokenOf(op), opts)) ? 0 : 1)));
  }

  const DEPENDENCY_TYPES = ['processed', 'unprocessed', 'ignored', 'failed'];

  /**
   * Job.getDependenciesCount({[type]: true, ...}) in the op's order: the client sends the keys
   * set to true in insertion order (all four when none is), and answers {type: count}, read
   * back here in that order. An object holds each type once, so a repeated type cannot be asked.
   */
  async function getDependencyCounts(queueName, queue, op) {
    const types = op.types === undefined ? DEPENDENCY_TYPES : op.types.map(String);
    if (new Set(types).size !== types.length) {
      throw new Skip(`npm bullmq ${BULLMQ_VERSION}'s Job.getDependenciesCount takes the types as ` +
        `an object's keys, each once; the op asks ${JSON.stringify(types)}`);
    }
    const job = handle(queue, op.jobId);
    const asked = Object.fromEntries(types.map(type => [type, true]));
    const counts = await withoutClock('getDependencyCounts', () => job.getDependenciesCount(asked));
    return types.map(type => counts[type]);
  }

  /**
   * Job.removeChildDependency() on a handle whose parentKey is the op's, as a Job read back from
   * its hash holds the stored `parentKey` string. Lossless like moveToWaitingChildren: true is the
   * script's 0, false its 1, and -1 / -5 are thrown with their code.
   */
  async function removeChildDependency(queueName, queue, op) {
    const job = handle(queue, op.jobId);
    job.parentKey = String(op.parentKey);
    return withoutClock('removeChildDependency', () => codeOfResult(async () =>
      ((await job.removeChildDependency()) ? 0 : 1)));
  }

  /** Job.removeUnprocessedChildren(); the script answers nothing, and the client returns nothing. */
  async function removeUnprocessedChildren(queueName, queue, op) {
    const job = handle(queue, op.jobId);
    await withoutClock('removeUnprocessedChildren', () => job.removeUnprocessedChildren());
    return null;
  }

  /** fn's result, or the negative script code the client threw. */
  async function codeOfResult(fn) {
    try {
      return await fn();
    } catch (err) {
      const code = scriptCode(err);
      if (code !== undefined) return code;
      throw err;
    }
  }

  return {
    moveToFinished,
    retryJob,
    extendLock,
    extendLocks,
    releaseLock,
    moveStalledJobsToWait,
    moveJobFromActiveToWait,
    getRateLimitTtl,
    removeDeduplicationKey,
    removeJob,
    updateProgress,
    updateData,
    addLog,
    moveToWaitingChildren,
    getDependencyCounts,
    removeChildDependency,
    removeUnprocessedChildren,
  };
};
