'use strict';
const { Job } = require('bullmq');

// The scheduler ops the npm bullmq adapter drives through the client's own code: cron parity's
// nextMillis (adapter protocol 4), a worker's pickUpIteration (protocol 5) and a caller's
// upsertJobScheduler (protocol 6).
//
// nextMillis: the fire time Queue.upsertJobScheduler computes for a pattern, taken from the
// client's own upsert.
//
// The upsert runs at the op's `now` (Date.now pinned) with repeat options {pattern, tz,
// startDate, endDate}. Its JobScheduler's backend is swapped, for the call, for one whose
// addJobScheduler records the nextMillis it is handed and stops the upsert there: nothing is
// written. Result {next: ms}; {next: null} when the upsert returns without calling it (past
// endDate, or no fire time); "invalid" when the upsert throws (the client rejects the pattern
// or the zone). A pattern without tz is read in the process's zone, so the adapter runs in UTC,
// the zone the vectors assume (see adapter.js).

/** Thrown by the recording backend: the upsert got as far as adding the iteration. */
class Recorded extends Error {
  constructor(nextMillis) {
    super('recorded');
    this.nextMillis = nextMillis;
  }
}

module.exports = function cronOps({ withClock, getWorker, watchScript }) {
  async function nextMillis(queue, op) {
    const scheduler = await queue.jobScheduler;
    const repeat = { pattern: op.pattern };
    for (const key of ['tz', 'startDate', 'endDate']) {
      if (op[key] !== undefined && op[key] !== null) repeat[key] = op[key];
    }
    const backend = scheduler.backend;
    scheduler.backend = {
      addJobScheduler: async (id, next) => {
        throw new Recorded(next);
      },
    };
    try {
      const job = await withClock(op.now, () => queue.upsertJobScheduler('parity', repeat, { name: 'parity' }));
      if (job === undefined) return { next: null };
      throw new Error('upsertJobScheduler returned a job without calling addJobScheduler');
    } catch (err) {
      if (err instanceof Recorded) return { next: Number(err.nextMillis) };
      if (err && err.message === 'upsertJobScheduler returned a job without calling addJobScheduler') {
        throw err;
      }
      return 'invalid';
    } finally {
      scheduler.backend = backend;
    }
  }
  /**
   * pickUpIteration: what a Worker does with a job it fetched, Worker.nextJobFromJobData with
   * the job as the backend hands a fetched hash over (its JobJson: opts decoded by
   * Job.optsFromJSON, rjk as repeatJobKey; rjk and opts from the op), at the op's now. Its
   * scheduler step calls updateJobScheduler, or nothing (the client stops first, or throws:
   * the worker reports that as an 'error' event and goes on). Result: the script's reply (the
   * next iteration's id, or null), null when it was not called.
   */
  async function pickUpIteration(queueName, op) {
    const worker = await getWorker(queueName);
    const jobData = {
      id: String(op.producerId), name: 'report', data: '{}',
      opts: Job.optsFromJSON(JSON.stringify(op.opts || {})),
      progress: 0, delay: 0, priority: 0, timestamp: op.now,
      attemptsStarted: 1, attemptsMade: 0, stalledCounter: 0, processedOn: op.now,
      repeatJobKey: op.rjk === null ? undefined : op.rjk,
    };
    const { replies } = await watchScript(worker.backend, 'updateJobScheduler', () =>
      withClock(op.now, () => worker.nextJobFromJobData(jobData, String(op.producerId), 'tok')));
    if (replies.length > 1) {
      throw new Error(`expected at most one updateJobScheduler call, saw ${replies.length}`);
    }
    const got = replies.length ? replies[0] : null;
    return got === null || got === undefined ? null : String(got);
  }

  /**
   * upsertJobScheduler: a caller's Queue.upsertJobScheduler(schedulerId, repeat, {name, data,
   * opts}) at the op's now (name and data left out when the op has none, so the client's own
   * defaults apply). Result {job, delay} of the job it returns (the id and delay the script
   * replied), null when it returns none (it called no script).
   */
  async function upsertJobScheduler(queue, op) {
    const template = { opts: op.opts || {} };
    if (op.name !== undefined && op.name !== null) template.name = op.name;
    if (op.data !== undefined) template.data = op.data;
    const job = await withClock(op.now, () =>
      queue.upsertJobScheduler(op.schedulerId, op.repeat, template));
    if (job === undefined || job === null) return null;
    return { job: String(job.id), delay: Number(job.opts.delay) };
  }

  return { nextMillis, pickUpIteration, upsertJobScheduler };
};
