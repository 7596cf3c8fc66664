'use strict';
// Cron parity's nextMillis (adapter protocol 4) for the npm bullmq adapter: the fire time
// Queue.upsertJobScheduler computes for a pattern, taken from the client's own upsert.
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

module.exports = function cronOps({ withClock }) {
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
  return { nextMillis };
};
