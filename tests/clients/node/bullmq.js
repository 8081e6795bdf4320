// bullmq.js - a BullMQ producer, worker and event listener on each of several queues, through the
// proxy (the test is tests/integration/test_frameworks.py): BullMQ's own defaults, with the one
// ioredis option it requires (maxRetriesPerRequest: null) and a hash-tag prefix per queue, so a
// queue's keys (and the keys its Lua scripts reach) are on one server of the pool while the queues
// spread over the pool's servers. Per queue: a QueueEvents reading the events stream from its start
// (XREAD BLOCK), a Worker (BZPOPMIN on the marker key, Lua scripts to move jobs), then the jobs
// added in bulk; each job returns n * n. The script waits until every job completed, reads every
// job back, and prints what it saw; the checks of "exactly once" are the test's.
//
// Usage: node bullmq.js '<plan JSON>'; the plan is
//   {"port": N, "queues": [{"name": "q", "prefix": "{tag}"}], "jobs": J, "concurrency": C,
//    "timeout_ms": T}
// Prints one JSON line {"version", "queues": [{"name", "ids" (as added), "runs" ({id: times the
// processor ran it}), "results" ({id: [n, return value, attempts made]}, read back), "completed"
// (the worker's completed events), "events" (job ids the QueueEvents saw completed), "counts"}]}
// and exits 0, or {"error", "step"} and exits 1 (2: not done in time).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { Queue, Worker, QueueEvents, Job } = require('bullmq');

const HOST = '127.0.0.1';
let current = 'start';

function version() {
    const file = path.join(__dirname, 'node_modules', 'bullmq', 'package.json');
    return JSON.parse(fs.readFileSync(file, 'utf8')).version;
}

// resolves when pred() holds, checked at every event of emitter named in events
function until(pred, emitters) {
    return new Promise((resolve) => {
        const check = () => {
            if (pred()) {
                for (const [em, ev] of emitters) em.off(ev, check);
                resolve();
            }
        };
        for (const [em, ev] of emitters) em.on(ev, check);
        check();
    });
}

async function runQueue(plan, spec) {
    const connection = { host: HOST, port: plan.port, maxRetriesPerRequest: null };
    const opts = { connection, prefix: spec.prefix };
    const out = { name: spec.name, ids: [], runs: {}, results: {}, completed: 0, events: 0 };
    const eventIds = new Set();
    current = `${spec.name}: connect`;
    const queue = new Queue(spec.name, opts);
    const events = new QueueEvents(spec.name, { ...opts, lastEventId: '0-0' });
    await queue.waitUntilReady();
    await events.waitUntilReady();
    events.on('completed', ({ jobId }) => {
        eventIds.add(jobId);
        out.events = eventIds.size;
    });
    const worker = new Worker(spec.name, async (job) => {
        out.runs[job.id] = (out.runs[job.id] || 0) + 1;
        return job.data.n * job.data.n;
    }, { ...opts, concurrency: plan.concurrency });
    worker.on('completed', () => { out.completed += 1; });
    const failures = [];
    worker.on('failed', (job, err) => failures.push(`${job && job.id}: ${err.message}`));
    worker.on('error', (err) => failures.push(`worker: ${err.message}`));
    await worker.waitUntilReady();

    current = `${spec.name}: add`;
    const added = await queue.addBulk(Array.from({ length: plan.jobs }, (_, n) => (
        { name: 'square', data: { n } })));
    out.ids = added.map((j) => j.id);

    current = `${spec.name}: process`;
    await until(() => failures.length > 0 || (out.completed >= plan.jobs && out.events >= plan.jobs),
        [[worker, 'completed'], [worker, 'failed'], [worker, 'error'], [events, 'completed']]);
    if (failures.length > 0) throw new Error(`failures: ${failures.slice(0, 5).join('; ')}`);

    current = `${spec.name}: read back`;
    for (const id of out.ids) {
        const job = await Job.fromId(queue, id);
        out.results[id] = job ? [job.data.n, job.returnvalue, job.attemptsMade] : null;
    }
    out.counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'active', 'delayed');

    current = `${spec.name}: close`;
    await worker.close();
    await events.close();
    await queue.close();
    return out;
}

async function main() {
    const plan = JSON.parse(process.argv[2]);
    const timer = setTimeout(() => {
        console.log(JSON.stringify({ error: `not done in ${plan.timeout_ms} ms`, step: current }));
        process.exit(2);
    }, plan.timeout_ms);
    try {
        const queues = await Promise.all(plan.queues.map((spec) => runQueue(plan, spec)));
        console.log(JSON.stringify({ version: version(), queues }));
        process.exit(0);
    } catch (err) {
        // exits at once: connections still open would keep the process up
        console.log(JSON.stringify({ error: String(err && err.stack || err), step: current }));
        process.exit(1);
    }
}

main();
