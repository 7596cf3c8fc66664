'use strict';
const { Job } = require('bullmq');

// The queue's getters and maintenance calls (adapter protocol 7), driven through the client's
// own calls. Each op's result is the script's raw reply as the client received it (seen in
// backend.execCommand), in the vectors' form: job hashes as objects. Where the public call
// loops over the script (Queue.obliterate, retryJobs, promoteJobs), the op makes the one
// backend call the loop makes.
//
//   getCounts             Queue.getJobCounts(...types); with a cutoff, Queue.getDelayedCount(cutoff)
//                         (its types must be just delayed)
//   getCountsPerPriority  Queue.getCountsPerPriority(priorities)
//   getState              Queue.getJobState(id) (getStateV2: getState only on Redis < 6.0.6)
//   getRanges             Queue.getRanges(types, start, end, asc)
//   getJobs               Queue.getJobs(types, start, end, asc)
//   paginate              Queue.getDependencies(parent, 'pending' | 'processed', start, end) on
//                         <parent>:dependencies or <parent>:processed, from offset 0 with jobs
//   isMaxed               Queue.isMaxed()
//   getMetrics            Queue.getMetrics(type, start, end)
//   getJob                Queue.getJob(id): the HGETALL reply, no hash as null
//   getJobLogs            Queue.getJobLogs(id, start, end, asc): {logs, count} as it returns them
//   drain                 Queue.drain(delayed)
//   cleanJobsInSet        Queue.clean(0, limit, set) at the op's timestamp (Date.now pinned)
//   obliterate            the backend obliterate({count, force}) of Queue.obliterate's loop
//   moveJobsToWait        the backend retryFinishedJobs(state, count, timestamp) of
//                         Queue.retryJobs, or promoteJobs(count) of Queue.promoteJobs
//   reprocessJob          Job.fromId + job.retry(state, {resetAttemptsMade, resetAttemptsStarted})
// Skipped, with the reason: a call the client cannot make with the vector's arguments (a
// repeated state name: the client sends each once; a clean of limit 0: it sends 10000), and
// isFinished, isJobInList, saveStacktrace, removeOrphanedJobs as their messages say.

/** HGETALL's flat reply ([field, value, ...]) as an object. */
function fields(flat) {
  const out = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]] = flat[i + 1];
  return out;
}

module.exports = function adminOps({ Skip, BULLMQ_VERSION, withClock, withoutClock, watchScript }) {
  const npm = `npm bullmq ${BULLMQ_VERSION}`;

  /** The raw reply of the one `script` call `call` makes; the call's own error is dropped
   * once the script replied (the client throws for some codes: the code is the result). */
  async function scriptReply(queue, script, call) {
    let failure;
    const { replies } = await watchScript(queue.backend, script, async () => {
      try {
        await call();
      } catch (err) {
        failure = err;
      }
    });
    if (replies.length === 0) {
      throw failure || new Error(`the client called no ${script}`);
    }
    if (replies.length > 1) {
      throw new Error(`the client called ${script} ${replies.length} times`);
    }
    return replies[0] === undefined ? null : replies[0];
  }

  function eachOnce(names, call) {
    if (new Set(names).size !== names.length) {
      throw new Skip(`${npm}'s ${call} sends each name once: it cannot repeat one`);
    }
  }

  function noClock(op, fn) {
    return withoutClock(op.op, fn);
  }

  const ops = {
    getCounts(queue, op) {
      eachOnce(op.types, 'Queue.getJobCounts');
      if (op.cutoff === undefined || op.cutoff === null) {
        return noClock(op, () => scriptReply(queue, 'getCounts', () => queue.getJobCounts(...op.types)));
      }
      if (op.types.length !== 1 || op.types[0] !== 'delayed') {
        throw new Skip(`${npm} passes a delayed cutoff only in Queue.getDelayedCount, which counts ` +
          'delayed alone');
      }
      return noClock(op, () => scriptReply(queue, 'getCounts', () => queue.getDelayedCount(op.cutoff)));
    },
    getCountsPerPriority(queue, op) {
      eachOnce(op.priorities, 'Queue.getCountsPerPriority');
      return noClock(op, () => scriptReply(queue, 'getCountsPerPriority',
        () => queue.getCountsPerPriority(op.priorities)));
    },
    getState(queue, op) {
      if (op.legacy) {
        throw new Skip(`${npm} runs getState-8 only on a Redis older than 6.0.6 (getStateV2 otherwise)`);
      }
      return noClock(op, () => scriptReply(queue, 'getStateV2', () => queue.getJobState(String(op.jobId))));
    },
    getRanges(queue, op) {
      eachOnce(op.types, 'Queue.getRanges');
      return noClock(op, () => scriptReply(queue, 'getRanges',
        () => queue.getRanges(op.types, op.start, op.end, op.asc)));
    },
    async getJobs(queue, op) {
      eachOnce(op.types, 'Queue.getJobs');
      const raw = await noClock(op, () => scriptReply(queue, 'getJobs',
        () => queue.getJobs(op.types, op.start, op.end, op.asc)));
      return raw.map(entries => entries.map(([id, flat]) => [id, fields(flat)]));
    },
    async paginate(queue, op) {
      const found = /^(.+):(dependencies|processed)$/.exec(op.key);
      if (!found || op.offset || !op.fetchJobs) {
        throw new Skip(`${npm} paginates only in Queue.getDependencies: a parent's dependencies or ` +
          'processed, from offset 0, with the jobs');
      }
      const type = found[2] === 'processed' ? 'processed' : 'pending';
      const raw = await noClock(op, () => scriptReply(queue, 'paginate',
        () => queue.getDependencies(found[1], type, op.start, op.end)));
      if (raw.length < 5) return raw;
      const [cursor, offset, items, total, jobs] = raw;
      return [cursor, offset, items, total, jobs.map(fields)];
    },
    isMaxed(queue, op) {
      return noClock(op, () => scriptReply(queue, 'isMaxed', () => queue.isMaxed()));
    },
    getMetrics(queue, op) {
      return noClock(op, () => scriptReply(queue, 'getMetrics',
        () => queue.getMetrics(op.type, op.start, op.end)));
    },
    async getJob(queue, op) {
      // The backend's client (Queue.client's): the one getJobData reads with.
      const client = await queue.backend.client;
      const own = Object.prototype.hasOwnProperty.call(client, 'hgetall');
      const original = client.hgetall;
      const replies = [];
      client.hgetall = async function (...args) {
        const reply = await original.apply(this, args);
        replies.push(reply);
        return reply;
      };
      try {
        await noClock(op, () => queue.getJob(String(op.jobId)));
      } finally {
        if (own) client.hgetall = original;
        else delete client.hgetall;
      }
      if (replies.length !== 1) throw new Error(`Queue.getJob made ${replies.length} HGETALLs`);
      return Object.keys(replies[0]).length ? replies[0] : null;
    },
    getJobLogs(queue, op) {
      return noClock(op, () => queue.getJobLogs(String(op.jobId), op.start, op.end, op.asc));
    },
    drain(queue, op) {
      return noClock(op, () => scriptReply(queue, 'drain', () => queue.drain(op.delayed)));
    },
    cleanJobsInSet(queue, op) {
      if (!op.limit) {
        throw new Skip(`${npm}'s Queue.clean sends a limit of at most 10000, never 0 (all)`);
      }
      return withClock(op.timestamp, () => scriptReply(queue, 'cleanJobsInSet',
        () => queue.clean(0, op.limit, op.set)));
    },
    obliterate(queue, op) {
      return noClock(op, () => scriptReply(queue, 'obliterate',
        () => queue.backend.obliterate({ count: op.count, force: op.force })));
    },
    moveJobsToWait(queue, op) {
      if (op.state === 'delayed') {
        return noClock(op, () => scriptReply(queue, 'moveJobsToWait',
          () => queue.backend.promoteJobs(op.count)));
      }
      return noClock(op, () => scriptReply(queue, 'moveJobsToWait',
        () => queue.backend.retryFinishedJobs(op.state, op.count, op.timestamp)));
    },
    async reprocessJob(queue, op) {
      const jobId = String(op.jobId);
      const job = await Job.fromId(queue, jobId);
      if (!job) {
        throw new Skip(`${npm} retries a job through Job.retry, which needs the job's hash`);
      }
      if (Boolean(job.opts.lifo) !== Boolean(op.lifo)) {
        throw new Skip(`${npm}'s Job.retry takes lifo from the job's opts (${Boolean(job.opts.lifo)})`);
      }
      const opts = { resetAttemptsMade: op.resetAttemptsMade, resetAttemptsStarted: op.resetAttemptsStarted };
      return noClock(op, () => scriptReply(queue, 'reprocessJob', () => job.retry(op.state, opts)));
    },
    isFinished() {
      throw new Skip(`${npm} reads isFinished-3 only inside Job.waitUntilFinished, which waits on ` +
        'QueueEvents for a job that has not finished');
    },
    isJobInList() {
      throw new Skip(`${npm} runs isJobInList-1 only on a Redis older than 6.0.6 (LPOS otherwise)`);
    },
    saveStacktrace() {
      throw new Skip(`${npm} ships saveStacktrace-1 but no client code calls it`);
    },
    removeOrphanedJobs() {
      throw new Skip(`${npm}'s Queue.removeOrphanedJobs finds its candidates by scanning the ` +
        'keyspace: it takes no ids');
    },
  };
  return ops;
};
