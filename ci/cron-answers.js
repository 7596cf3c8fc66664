// The cron-parity answers: the next fire time the pinned npm bullmq client computes for each
// input, with its own cron library. Reads a JSON list of inputs on stdin
// ({pattern, now, tz?, startDate?, endDate?}), writes the same list with `next` (ms, or null
// when the client computes none) on stdout.
//
// Node's Queue.upsertJobScheduler throws when endDate is before now; otherwise its
// JobScheduler asks its repeat strategy for the fire time after max(now, prevMillis) and
// clamps it to now (prevMillis is 0 on a user's upsert, as here). The default strategy (exported as
// defaultRepeatStrategy) parses the pattern with the repeat options (tz, startDate, endDate)
// and currentDate = the later of startDate and now, and answers undefined when next() throws
// (past endDate). Without tz the process's zone applies: this script runs in UTC.
//
// The bullmq it loads is the suite's pinned one (the Node adapter's node_modules), or the one
// installed beside BULLMQ_NODE_ROOT/package.json (to compare another release's answers).
'use strict';
process.env.TZ = 'UTC';
const path = require('node:path');
const { createRequire } = require('node:module');

const root = process.env.BULLMQ_NODE_ROOT
  || path.join(__dirname, '..', 'conformance', 'bundled', 'node-bullmq');
const here = createRequire(path.join(root, 'package.json'));
const { defaultRepeatStrategy } = here('bullmq');
const bullmqVersion = here('bullmq/package.json').version;
const cronVersion = here('cron-parser/package.json').version;

function answer(input) {
  const opts = { pattern: input.pattern };
  for (const key of ['tz', 'startDate', 'endDate']) {
    if (input[key] !== undefined && input[key] !== null) opts[key] = input[key];
  }
  if (input.endDate !== undefined && input.endDate < input.now) {
    // Queue.upsertJobScheduler throws before the scheduler is asked
    return { ...input, error: 'End date must be greater than current timestamp' };
  }
  let next;
  try {
    next = defaultRepeatStrategy(input.now, opts, 'parity');
  } catch (err) {
    return { ...input, error: String(err && err.message ? err.message : err) };
  }
  if (next !== undefined && next < input.now) next = input.now;  // upsertJobScheduler's clamp
  return { ...input, next: next === undefined ? null : next };
}

let raw = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { raw += chunk; });
process.stdin.on('end', () => {
  const inputs = JSON.parse(raw);
  const out = { bullmq: bullmqVersion, 'cron-parser': cronVersion, answers: inputs.map(answer) };
  process.stdout.write(JSON.stringify(out, null, 1) + '\n');
});
