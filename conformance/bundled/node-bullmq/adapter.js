#!/usr/bin/env node
'use strict';
// bullmq-conformance adapter for the official npm `bullmq` client (docs/ADAPTERS.md).
//
// Protocol: one JSON request per line on stdin, one JSON reply per line on stdout, strictly in
// order. Everything else (logs, library warnings) goes to stderr.
//
// Adapter protocol version 7 (the start reply says so): the queue half's ops below, the flow ops,
// the worker half's in worker-ops.js, cron parity's nextMillis, a worker's pickUpIteration and
// a caller's upsertJobScheduler in cron-ops.js, the getters and maintenance calls in
// admin-ops.js. Every op is driven through the package's own client code:
//   add            Queue.add(name, data, {...opts, timestamp, jobId}); the stored short names in
//                  opts are passed as the client's options: de as `deduplication`, and a child's
//                  fpof, cpof, idof, rdof as failParentOnFailure, continueParentOnFailure,
//                  ignoreDependencyOnFailure, removeDependencyOnFailure; opts.parent ({id, queue},
//                  the parent queue's qualified name) is the client's `parent` option as it is;
//                  result the id, or the negative code the client throws (-5, -7)
//   addFlow        FlowProducer.add({name, queueName, data, opts: {jobId, ...opts}, children}) at
//                  the op's timestamp, every node in the op's queue or its own `queue` (a
//                  qualified name: a child in another queue), opts mapped as for add (the
//                  client gives each child its `parent`); result the root's id (the tree's
//                  job.id), or the negative code the client throws for the root
//   addParentJob   skipped: the client adds a parent (addParentJob-6) only in FlowProducer.add,
//                  together with its children (the addFlow op); no public call adds one alone
//   moveToActive   the Worker's backend moveToActive (the call Worker.moveToActive makes), on a
//                  Worker built with the op's lockDuration, limiter and name; raw [job, id, ttl,
//                  next] normalized
//   promote        Job.fromId + job.promote()
//   changeDelay    Job.fromId + job.changeDelay(delay)
//   changePriority Job.fromId + job.changePriority({priority, lifo})
//   moveToDelayed  with skipAttempt, delay >= 0 and neither fields nor fetchNext: Job.fromId +
//                  job.moveToDelayed(now + delay, token) (the public Job API, which always skips
//                  the attempt); otherwise the backend moveToDelayed(id, now, delay, token,
//                  {skipAttempt, fieldsToUpdate, fetchNext}) that Job.moveToFailed calls for a
//                  retry with backoff, on a default Worker's backend (whose options it packs for
//                  the fetch-next); result 0, or the fetched [job, id, ttl, next] normalized
//   pause, resume  Queue.pause() / Queue.resume(), each one pass of the pause script; result
//                  the script's reply (the legacy paused jobs left), seen in backend.execCommand.
//                  Queue.resume() repeats the script (without the event) until that reply is 0;
//                  the op is one pass, so the adapter hands the client 0 after the first one
//   moveToFinished completed: job.moveToCompleted(JSON.parse(value), token, fetchNext) (skipped
//                  when JSON.stringify would not give back the op's value text, or with fields);
//                  failed: the backend moveToFailed(job, value, removeOnFail, token, fetchNext,
//                  fields) that Job.moveToFailed calls for a final failure (Job.moveToFailed
//                  itself formats the fields from an Error's message and stack, and decides on a
//                  retry). The Job is a handle on a Worker built with the op's lockDuration,
//                  limiter and metrics.maxDataPoints (maxMetricsSize); its opts hold the op's
//                  attempts and keepJobs (as removeOnComplete / removeOnFail, which the client
//                  packs as they are). Result: the script's code, or its fetch [job, id, ttl,
//                  next] normalized
//   retryJob       the backend retryJob(id, lifo, token, {fieldsToUpdate}) that Job.moveToFailed
//                  calls for a retry without backoff
//   extendLock     job.extendLock(token, duration)
//   extendLocks    Worker.extendJobLocks(ids, tokens, duration) (what its LockManager calls)
//   releaseLock    skipped: the package ships releaseLock-1 but no client code calls it
//   moveStalledJobsToWait  Worker.moveStalledJobsToWait() on a Worker built with the op's
//                  maxStalledCount and stalledInterval; result the script's list of stalled ids
//   moveJobFromActiveToWait  job.moveToWait(token) (what a rate-limited Worker calls)
//   getRateLimitTtl  Queue.getRateLimitTtl(maxJobs)
//   removeDeduplicationKey  job.removeDeduplicationKey() on a job whose deduplication id is the
//                  op's (true/false as 1/0); Queue.removeDeduplicationKey is a plain DEL instead
//   removeJob      Queue.remove(id, {removeChildren}) (the script removes the job's children
//                  too unless removeChildren is false)
//   updateProgress job.updateProgress(progress)
//   updateData     job.updateData(data)
//   addLog         job.log(row), the job's opts holding the op's keepLogs
//   moveToWaitingChildren  job.moveToWaitingChildren(token, {child}) at now (the client sends
//                  Date.now()); its true / false are the script's 0 / 1 and the codes it throws
//                  (-1, -2, -3, -6, -9) are returned, so the integer comes back whole
//   getDependencyCounts  job.getDependenciesCount({[type]: true, ...}) with the op's types in
//                  order, its {type: count} read back as the list in that order; skipped when a
//                  type repeats (an object's keys hold each once)
//   removeChildDependency  job.removeChildDependency() on a handle whose parentKey is the op's
//                  (as a Job read from its hash holds it); true / false as 0 / 1, -1 / -5 thrown
//   removeUnprocessedChildren  job.removeUnprocessedChildren(); result null
//   nextMillis     the nextMillis Queue.upsertJobScheduler hands its backend, recorded there
//                  and not written (cron-ops.js); {next: null} when it adds nothing, "invalid"
//                  when it throws
//   pickUpIteration  Worker.nextJobFromJobData(job, id, token), the job's hash built from the
//                  op's rjk and opts (cron-ops.js); result the updateJobScheduler reply (the next
//                  iteration's id or null), null when the worker calls nothing
//   upsertJobScheduler  Queue.upsertJobScheduler(id, repeat, {name, data, opts}) (cron-ops.js);
//                  result {job, delay} of the job it returns, null when it returns none
//   addJobScheduler, updateJobScheduler, removeJobScheduler, getJobScheduler: not in the
//                  protocol (the suite sends none: their vectors give the script's arguments)
// A worker op's Job is a handle (new Job(queue, '', {}, opts, id)), as a worker holds one for the
// job it fetched: the scripts read nothing of it but the id and the opts the op names.
// When Job.fromId finds no hash, the op calls the same backend method the Job method wraps
// (queue.backend.promote / changeDelay / changePriority / moveToDelayed), so the script still
// decides the code.
// Negative script codes, which the client throws as errors carrying `code`, are mapped back to
// the integer code. Date.now is replaced by the op's explicit time for the duration of each op.

// A cron pattern without tz is read in the process's zone: the vectors assume UTC.
process.env.TZ = 'UTC';

// Keep stdout for protocol replies only.
const realStdoutWrite = process.stdout.write.bind(process.stdout);
console.log = console.error.bind(console);
console.info = console.error.bind(console);
console.debug = console.error.bind(console);

const readline = require('node:readline');
const IORedis = require('ioredis');
const { Queue, Worker, Job, FlowProducer } = require('bullmq');
const BULLMQ_VERSION = require('bullmq/package.json').version;

const realDateNow = Date.now;
/** The adapter protocol version this adapter speaks: 7, with the worker half's ops, flows,
 * cron parity, a worker's side of a job scheduler, a caller's upsert, and the getters and
 * maintenance calls. */
const PROTOCOL = 7;

const state = {
  connection: null, // shared ioredis client
  flowProducer: null, // bullmq FlowProducer on that connection (not bound to a queue)
  profile: null, // {name, prefix, hash_tag}
  queueName: null, // the protocol's queue name of the cached objects
  queue: null, // bullmq Queue for queueName
  worker: null, // bullmq Worker for queueName (fetches, finishing, stall checks)
  workerKey: undefined, // the options it was built with, as JSON
};

function log(...args) {
  console.error('[node-bullmq adapter]', ...args);
}

function reply(obj) {
  realStdoutWrite(JSON.stringify(obj) + '\n');
}

// ---------------------------------------------------------------------------------------------
// Clock injection

/** Runs fn with Date.now() pinned to `now`; restores the real clock afterwards. */
async function withClock(now, fn) {
  if (typeof now !== 'number' || !Number.isFinite(now)) {
    throw new Error(`explicit time must be a finite number, got ${JSON.stringify(now)}`);
  }
  Date.now = () => now;
  try {
    return await fn();
  } finally {
    Date.now = realDateNow;
  }
}

/**
 * For ops that carry no time (promote, changePriority, pause, resume): their scripts take none,
 * so the client should not read the clock. Any read is logged to stderr so a leak would be
 * visible.
 */
async function withoutClock(opName, fn) {
  let warned = false;
  Date.now = () => {
    if (!warned) {
      warned = true;
      log(`warning: Date.now() read during ${opName}, which has no explicit time:\n${new Error().stack}`);
    }
    return realDateNow();
  };
  try {
    return await fn();
  } finally {
    Date.now = realDateNow;
  }
}

// ---------------------------------------------------------------------------------------------
// Queue / worker cache (current queue only)

function nodeQueueName(queue) {
  return state.profile.hash_tag ? `{${queue}}` : queue;
}

async function closeQuietly(what, obj) {
  if (!obj) return;
  try {
    await obj.close();
  } catch (err) {
    log(`error closing ${what}:`, err && err.stack ? err.stack : err);
  }
}

async function closeCurrent() {
  const { queue, worker } = state;
  state.queue = null;
  state.worker = null;
  state.workerKey = undefined;
  state.queueName = null;
  await closeQuietly('worker', worker);
  await closeQuietly('queue', queue);
}

/** The suite's BASE must be what bullmq's own QueueKeys build for this queue. */
function checkBase(queue, base) {
  const nodeBase = queue.toKey('');
  if (base !== undefined && nodeBase !== base) {
    throw new Error(`bullmq builds BASE ${JSON.stringify(nodeBase)} for queue ${JSON.stringify(queue.name)}, ` +
      `but the suite expects ${JSON.stringify(base)}`);
  }
}

async function getQueue(queueName, base) {
  if (state.queueName === queueName && state.queue) {
    checkBase(state.queue, base);
    return state.queue;
  }
  await closeCurrent();
  const name = nodeQueueName(queueName);
  const queue = new Queue(name, { connection: state.connection, prefix: state.profile.prefix });
  queue.on('error', err => log('queue error:', err && err.stack ? err.stack : err));
  try {
    checkBase(queue, base);
  } catch (err) {
    await closeQuietly('queue', queue);
    throw err;
  }
  await queue.waitUntilReady();
  // Node's Queue writes meta (opts.maxLenEvents, version) when it opens; let that finish before
  // the first op so the write order is deterministic.
  await queue.queueMetaInitialized;
  state.queue = queue;
  state.queueName = queueName;
  return queue;
}

/** `obj` without its undefined fields (an option spread as undefined would override a default). */
function defined(obj) {
  return Object.fromEntries(Object.entries(obj).filter(([, value]) => value !== undefined));
}

/**
 * A Worker for queueName built with `workerOpts` (lockDuration, limiter, name, metrics,
 * maxStalledCount, stalledInterval; the rest its defaults). It has no processor and never runs
 * its loop: the ops call its fetch, its stall check and the backend its Jobs use.
 */
async function getWorker(queueName, workerOpts = {}) {
  const wanted = defined(workerOpts);
  const key = JSON.stringify(wanted);
  if (state.worker && state.queueName === queueName && state.workerKey === key) {
    return state.worker;
  }
  if (state.worker) {
    const old = state.worker;
    state.worker = null;
    await closeQuietly('worker', old);
  }
  const opts = Object.assign({
    connection: state.connection,
    prefix: state.profile.prefix,
    autorun: false,
    skipStalledCheck: true,
    skipLockRenewal: true,
  }, wanted);
  const worker = new Worker(nodeQueueName(queueName), null, opts);
  worker.on('error', err => log('worker error:', err && err.stack ? err.stack : err));
  await worker.waitUntilReady();
  state.worker = worker;
  state.workerKey = key;
  return worker;
}

/** The queue's Worker as it is (for calls that read none of its options), or a default one. */
async function anyWorker(queueName) {
  if (state.worker && state.queueName === queueName) return state.worker;
  return getWorker(queueName);
}

/**
 * Runs fn while watching backend.execCommand: the raw replies of the script `script` are
 * collected (and, with `rewrite`, what the client gets back is rewrite(reply)). Returns
 * {value, replies}. The client's own code still builds and sends every call.
 */
async function watchScript(backend, script, fn, rewrite) {
  const own = Object.prototype.hasOwnProperty.call(backend, 'execCommand');
  const original = backend.execCommand;
  const replies = [];
  backend.execCommand = async function (client, name, args) {
    const result = await original.call(this, client, name, args);
    if (name !== script) return result;
    // A copy: the client may change the reply in place (getRanges reverses a list).
    replies.push(structuredClone(result));
    return rewrite ? rewrite(result, replies.length) : result;
  };
  try {
    const value = await fn();
    return { value, replies };
  } finally {
    if (own) backend.execCommand = original;
    else delete backend.execCommand;
  }
}

/** A fetch reply ([job, id, ttl, next]) as {job, ttl, next}; any other reply as it is. */
function fetchedOrRaw(raw) {
  if (Array.isArray(raw) && raw.length === 4) {
    const [jobData, id, ttl, next] = raw;
    const none = !jobData || id === 0 || id === '0' || id === null;
    return { job: none ? null : String(id), ttl: toInt(ttl), next: toInt(next) };
  }
  return raw;
}

// ---------------------------------------------------------------------------------------------
// Ops

// Client-side validation in bullmq's Queue.addJob / Job.validateOptions that rejects inputs the
// Lua scripts would accept.
const CLIENT_VALIDATION = [
  /^Custom Id cannot be integers$/,
  /^Custom Id cannot contain :$/,
  /^JobId cannot be '0' or start with '0:'$/,
  /^Priority should not be float$/,
  /^Priority should be between 0 and \d+$/,
  /^Deduplication and parent options cannot be used together$/,
  /^The following options cannot be used together: /,
  // FlowProducer.add's own checks of a tree.
  /^Deduplication options cannot be used on flow nodes with children$/,
  /^keepLastIfActive deduplication cannot be used on flow nodes with a parent$/,
];

/** A client-side rejection (CLIENT_VALIDATION) of `what` as a Skip; anything else as it is. */
function clientRejection(what, err) {
  const message = err && err.message;
  if (typeof message === 'string' && CLIENT_VALIDATION.some(re => re.test(message))) {
    return new Skip(`bullmq ${BULLMQ_VERSION} rejects this ${what} client-side: ${message}`);
  }
  return err;
}

class Skip extends Error {}

/** A rejected client promise carrying a negative script code (bullmq's finishedErrors). */
function scriptCode(err) {
  if (err && typeof err.code === 'number' && Number.isInteger(err.code) && err.code < 0) {
    return err.code;
  }
  return undefined;
}

async function codeOf(fn) {
  try {
    await fn();
    return 0;
  } catch (err) {
    const code = scriptCode(err);
    if (code !== undefined) return code;
    throw err;
  }
}

// The vectors spell options by the short names the client stores them under (its optsEncodeMap);
// the client takes them by their long names and encodes them back when it packs the opts.
const CLIENT_OPTION = {
  de: 'deduplication',
  fpof: 'failParentOnFailure',
  cpof: 'continueParentOnFailure',
  idof: 'ignoreDependencyOnFailure',
  rdof: 'removeDependencyOnFailure',
};

/** A vector's opts as the client's job options (a copy; the other keys as they are). */
function clientOpts(opts) {
  const out = {};
  for (const [key, value] of Object.entries(opts || {})) {
    out[Object.prototype.hasOwnProperty.call(CLIENT_OPTION, key) ? CLIENT_OPTION[key] : key] = value;
  }
  return out;
}

async function opAdd(queue, op) {
  const opts = Object.assign(clientOpts(op.opts), { timestamp: op.timestamp });
  if (op.jobId !== undefined && op.jobId !== null) {
    opts.jobId = op.jobId;
  }
  try {
    const job = await withClock(op.timestamp, () => queue.add(op.name, op.data, opts));
    return String(job.id);
  } catch (err) {
    // A child's negative code (-5: no parent, -7: another parent), thrown with `code`.
    const code = scriptCode(err);
    if (code !== undefined) return code;
    throw clientRejection('add', err);
  }
}

/**
 * The protocol's queue name of a qualified name `<prefix>:<queue>` (`<prefix>:{<queue>}` under
 * hash_tag): a flow node in another queue names its queue so.
 */
function queueOfQualified(qualified) {
  const head = `${state.profile.prefix}:`;
  if (typeof qualified !== 'string' || !qualified.startsWith(head)) {
    throw new Error(`a flow node's queue ${JSON.stringify(qualified)} is not a queue of prefix ` +
      JSON.stringify(state.profile.prefix));
  }
  const part = qualified.slice(head.length);
  return state.profile.hash_tag ? part.slice(1, -1) : part;
}

/**
 * A vector's flow node as FlowProducer.add takes it, in the client's queue `queueName` (the
 * op's), or the node's own `queue` (a child in another queue). The node's id goes in
 * opts.jobId (where the client reads it); its parent is the node above it, which the client
 * sets itself. The job's time is the pinned clock, as for a FlowProducer user.
 */
function flowJob(node, queueName) {
  const job = {
    name: node.name,
    queueName: node.queue ? nodeQueueName(queueOfQualified(node.queue)) : queueName,
    data: node.data,
    opts: Object.assign({ jobId: node.jobId }, clientOpts(node.opts)),
  };
  if (node.children && node.children.length) {
    job.children = node.children.map(child => flowJob(child, queueName));
  }
  return job;
}

async function opAddFlow(queueName, op) {
  const flow = flowJob(op.flow, nodeQueueName(queueName));
  try {
    const tree = await withClock(op.timestamp, () => state.flowProducer.add(flow));
    return String(tree.job.id);
  } catch (err) {
    // The root's negative code: FlowProducer.add throws it (toFlowError) with `code`.
    const code = scriptCode(err);
    if (code !== undefined) return code;
    throw clientRejection('flow', err);
  }
}

async function opMoveToActive(queueName, op) {
  const worker = await getWorker(queueName, {
    lockDuration: op.lockDuration, limiter: op.limiter, name: op.name,
  });
  const raw = await withClock(op.now, () => worker.backend.moveToActive(String(op.token), worker.opts.name));
  // raw2NextJobData: [jobData|null, id, rateLimitTtl, nextDelayedTimestamp]
  const [jobData, id, ttl, next] = raw || [];
  return {
    job: jobData ? String(id) : null,
    ttl: toInt(ttl),
    next: toInt(next),
  };
}

function toInt(v) {
  if (v === undefined || v === null) return 0;
  const n = typeof v === 'number' ? v : Number(v);
  if (!Number.isFinite(n)) throw new Error(`non-numeric value in a fetch reply: ${JSON.stringify(v)}`);
  return Math.trunc(n);
}

async function opPromote(queue, op) {
  const jobId = String(op.jobId);
  return withoutClock('promote', () => codeOf(async () => {
    const job = await Job.fromId(queue, jobId);
    if (job) {
      await job.promote();
    } else {
      // No hash: Job.promote() is `backend.promote(id)`; the script decides (-3 or 0).
      await queue.backend.promote(jobId);
    }
  }));
}

async function opChangeDelay(queue, op) {
  const jobId = String(op.jobId);
  return withClock(op.now, () => codeOf(async () => {
    const job = await Job.fromId(queue, jobId);
    if (job) {
      await job.changeDelay(op.delay);
    } else {
      await queue.backend.changeDelay(jobId, op.delay);
    }
  }));
}

async function opChangePriority(queue, op) {
  const jobId = String(op.jobId);
  const priority = op.priority;
  const lifo = !!op.lifo;
  return withoutClock('changePriority', () => codeOf(async () => {
    const job = await Job.fromId(queue, jobId);
    if (job) {
      await job.changePriority({ priority, lifo });
    } else {
      await queue.backend.changePriority(jobId, priority, lifo);
    }
  }));
}

async function opMoveToDelayed(queueName, queue, op) {
  const jobId = String(op.jobId);
  const token = String(op.token === undefined ? 'tok' : op.token);
  const delay = op.delay;
  const skipAttempt = !!op.skipAttempt;
  const fields = op.fields && Object.keys(op.fields).length ? op.fields : undefined;
  const fetchNext = !!op.fetchNext;
  if (fields || fetchNext) {
    // Job.moveToFailed's call for a retry with backoff; the fetch-next options it packs are the
    // Worker's (lockDuration, limiter, name), so it runs on a default Worker's backend.
    const backend = (await getWorker(queueName)).backend;
    return withClock(op.now, async () => {
      const { replies } = await watchScript(backend, 'moveToDelayed', () => codeOf(() =>
        backend.moveToDelayed(jobId, Date.now(), delay, token,
          { skipAttempt, fieldsToUpdate: fields, fetchNext })));
      return replies.length === 1 && Array.isArray(replies[0])
        ? fetchedOrRaw(replies[0])
        : codeOrReply(replies);
    });
  }
  return withClock(op.now, () => codeOf(async () => {
    // Job.moveToDelayed(timestamp, token) passes delay = max(timestamp - Date.now(), 0) and
    // skipAttempt: true, so it can only express skipAttempt with a non-negative delay.
    const job = skipAttempt && delay >= 0 ? await Job.fromId(queue, jobId) : undefined;
    if (job) {
      await job.moveToDelayed(op.now + delay, token);
    } else {
      await queue.backend.moveToDelayed(jobId, Date.now(), delay, token, { skipAttempt });
    }
  }));
}

/** The integer reply of the one script call an op made (a negative one is the thrown code). */
function codeOrReply(replies) {
  if (replies.length !== 1) {
    throw new Error(`expected one script call, saw ${replies.length}`);
  }
  return replies[0];
}

/**
 * Queue.pause() / Queue.resume() with the reply of their pause script. Both go through
 * backend.execCommand(client, 'pause', args); it is wrapped for the call to record the first
 * reply. Queue.resume() loops while the reply (legacy jobs left in the pre-v6 `paused` list, moved
 * 7000 per pass) is above 0; the op is one pass, so the loop is told 0 after the first pass.
 */
async function opPause(queue, op) {
  let reply;
  await watchScript(queue.backend, 'pause', () => withoutClock(op.op, () => (op.op === 'pause' ? queue.pause() : queue.resume())),
    (result, calls) => {
      if (calls > 1) throw new Error('Queue.' + op.op + '() ran the pause script twice');
      reply = Number(result);
      return 0;
    });
  if (reply === undefined || !Number.isInteger(reply)) {
    throw new Error(`Queue.${op.op}() did not return an integer from the pause script: ${reply}`);
  }
  return reply;
}

const WORKER_OPS = require('./worker-ops')({
  Skip, BULLMQ_VERSION, withClock, withoutClock, getWorker, anyWorker, watchScript, fetchedOrRaw,
  codeOf, scriptCode, defined,
});

const CRON_OPS = require('./cron-ops')({ withClock, getWorker, watchScript });

const ADMIN_OPS = require('./admin-ops')({ Skip, BULLMQ_VERSION, withClock, withoutClock, watchScript });

async function runOp(req) {
  if (!state.connection) throw new Error('op before start');
  const op = req.op || {};
  const queue = await getQueue(req.queue, req.base);
  switch (op.op) {
    case 'add':
      return opAdd(queue, op);
    case 'addFlow':
      return opAddFlow(req.queue, op);
    case 'addParentJob':
      throw new Skip(`npm bullmq ${BULLMQ_VERSION} has no public call that adds a parent job alone: ` +
        'FlowProducer.add (the addFlow op) adds a parent (addParentJob-6) only together with its ' +
        'children');
    case 'moveToActive':
      return opMoveToActive(req.queue, op);
    case 'promote':
      return opPromote(queue, op);
    case 'changeDelay':
      return opChangeDelay(queue, op);
    case 'changePriority':
      return opChangePriority(queue, op);
    case 'moveToDelayed':
      return opMoveToDelayed(req.queue, queue, op);
    case 'pause':
    case 'resume':
      return opPause(queue, op);
    case 'nextMillis':
      return CRON_OPS.nextMillis(queue, op);
    case 'pickUpIteration':
      return CRON_OPS.pickUpIteration(req.queue, op);
    case 'upsertJobScheduler':
      return CRON_OPS.upsertJobScheduler(queue, op);
    default:
      if (Object.prototype.hasOwnProperty.call(WORKER_OPS, op.op)) {
        return WORKER_OPS[op.op](req.queue, queue, op);
      }
      if (Object.prototype.hasOwnProperty.call(ADMIN_OPS, op.op)) {
        return ADMIN_OPS[op.op](queue, op);
      }
      throw new Error(`unknown op ${JSON.stringify(op.op)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Session

async function start(req) {
  if (state.connection) {
    await shutdown();
  }
  state.profile = req.profile;
  const connection = new IORedis(req.redis, { maxRetriesPerRequest: null, lazyConnect: true });
  connection.on('error', err => log('redis error:', err && err.message ? err.message : err));
  await connection.connect();
  await connection.ping();
  state.connection = connection;
  // One FlowProducer per connection: it is not bound to a queue (each node names its own), and
  // its prefix is the profile's, like the Queue's.
  const flowProducer = new FlowProducer({ connection, prefix: state.profile.prefix });
  flowProducer.on('error', err => log('flow producer error:', err && err.stack ? err.stack : err));
  await flowProducer.waitUntilReady();
  state.flowProducer = flowProducer;
  return { name: 'bullmq (npm)', version: BULLMQ_VERSION, language: 'javascript' };
}

async function shutdown() {
  await closeCurrent();
  const flowProducer = state.flowProducer;
  state.flowProducer = null;
  await closeQuietly('flow producer', flowProducer);
  const connection = state.connection;
  state.connection = null;
  if (connection) {
    try {
      await connection.quit();
    } catch (err) {
      connection.disconnect();
    }
  }
}

function withTimeout(promise, ms) {
  return Promise.race([promise, new Promise(resolve => setTimeout(resolve, ms).unref())]);
}

function exit(code) {
  // Let stdout drain before leaving.
  realStdoutWrite('', () => process.exit(code));
}

async function handleLine(line) {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    log('unparseable request:', line);
    return;
  }
  const seq = req.seq;
  try {
    switch (req.type) {
      case 'start':
        reply({ seq, implementation: await start(req), protocol: PROTOCOL });
        return;
      case 'stop':
        await withTimeout(shutdown().catch(err => log('shutdown error:', err)), 5000);
        reply({ seq, stopped: true });
        exit(0);
        return;
      case 'op':
        reply({ seq, result: await runOp(req) });
        return;
      default:
        throw new Error(`unknown request type ${JSON.stringify(req.type)}`);
    }
  } catch (err) {
    if (err instanceof Skip) {
      reply({ seq, skipped: true, reason: err.message });
      return;
    }
    const message = err && err.message ? err.message : String(err);
    const out = { seq, errored: true, message };
    if (err && err.stack) out.traceback = String(err.stack);
    reply(out);
  } finally {
    Date.now = realDateNow;
  }
}

function main() {
  let chain = Promise.resolve();
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity, terminal: false });
  rl.on('line', line => {
    chain = chain.then(() => handleLine(line)).catch(err => log('internal error:', err && err.stack ? err.stack : err));
  });
  rl.on('close', () => {
    chain = chain
      .then(() => withTimeout(shutdown(), 5000))
      .catch(err => log('shutdown error:', err))
      .then(() => exit(0));
  });
}

process.on('unhandledRejection', err => log('unhandled rejection:', err && err.stack ? err.stack : err));

main();
