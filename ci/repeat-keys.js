// Ask npm bullmq 5.81.5's own client (ci/node-bullmq-5: `npm ci --prefix ci/node-bullmq-5`)
// for the ARGV it sends to addRepeatableJob-2 and removeRepeatable-3, for the inputs on stdin
// (a JSON list of {op: "add" | "remove", name, jobId?, repeat: {...}}). Writes one JSON list of
// ARGV (addRepeatableJob's packed options decoded) to stdout. The scripts themselves are not
// called: the client's Scripts methods are replaced by ones that record the ARGV the real
// argument builders make, so no Redis is needed. The clock is fixed at the vectors' T.
'use strict';
const path = require('path');
const root = path.join(__dirname, 'node-bullmq-5', 'node_modules');
const { Repeat } = require(path.join(root, 'bullmq', 'dist', 'cjs', 'classes', 'repeat'));
const IORedis = require(path.join(root, 'ioredis'));
const { unpack } = require(path.join(root, 'msgpackr'));

const T = 1700000000000;
Date.now = () => T;  // the end-date check compares with the clock; the keys never read it

async function main() {
  const inputs = JSON.parse(require('fs').readFileSync(0, 'utf8'));
  // Never connected: every call that would reach Redis is replaced below.
  const connection = new IORedis({ lazyConnect: true, port: 1, maxRetriesPerRequest: null,
                                   retryStrategy: () => null });
  connection.on('error', () => {});
  const repeat = new Repeat('q', { connection });
  let sent = null;
  repeat.scripts.addRepeatableJob = async (key, next, opts, legacy) => {
    const argv = repeat.scripts.addRepeatableJobArgs(key, next, opts, legacy).slice(2);
    sent = [argv[0], unpack(argv[1]), ...argv.slice(2)];
    return key;
  };
  repeat.scripts.removeRepeatable = async (legacyId, concat, key) => {
    sent = repeat.scripts.removeRepeatableArgs(legacyId, concat, key).slice(3);
    return 0;
  };
  repeat.createNextJob = async () => null;
  const out = [];
  for (const input of inputs) {
    sent = null;
    if (input.op === 'add') {
      const opts = { repeat: input.repeat, ...(input.jobId ? { jobId: input.jobId } : {}) };
      await repeat.updateRepeatableJob(input.name, {}, opts, { override: true });
    } else {
      await repeat.removeRepeatable(input.name, input.repeat, input.jobId);
    }
    out.push(sent);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
