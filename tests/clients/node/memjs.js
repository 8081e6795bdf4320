// memjs.js - the memcached plan of tests/integration/test_memcache_clients.py
// (tests/nctest/mcplan.py describes it) run by memjs, pinned in package.json: the binary protocol,
// one connection per client. memjs has no multi-get (the plan's multi-get is its gets sent at once,
// pipelined on the connection), no cas and no serializer of its own (values are Buffers stored with
// flags 0); its increment sends an initial value, so memcached creates a missing counter. The
// flags step sets the flags through memjs's `serializer` hook (a request's extras) and reads them
// from a get's.
//
// Usage: node memjs.js '<plan JSON>' (a plan, or a cross-protocol plan: {"write", "read"}).
// Prints one JSON line, what it saw, and exits 0; or prints {"error", "step"} and exits 1 (2: a
// step that never finished).
'use strict';
const crypto = require('node:crypto');
const memjs = require('memjs');
const { step, currentStep, version } = require('./lib');

const VERSION = version('memjs');
const logger = { log: (...args) => console.error(...args) }; // stdout is for the result

// mcplan.value_of: binary, byte j = (seed + 151 j) mod 256; text, letters from the seed on
function valueOf(key, size, kind) {
    let seed = 0;
    for (const b of Buffer.from(key)) seed += b;
    seed %= 251;
    const buf = Buffer.alloc(size);
    for (let j = 0; j < size; j++) {
        buf[j] = kind === 'binary' ? (seed + 151 * j) % 256 : 97 + ((seed + j) % 26);
    }
    return buf;
}

function digest(buf) {
    return buf === null ? null : [buf.length, crypto.createHash('sha1').update(buf).digest('hex')];
}

function flagsOf(extras) {
    return extras && extras.length >= 4 ? extras.readUInt32BE(0) : null;
}

function client(plan, options = {}) {
    return memjs.Client.create(`${plan.host}:${plan.port}`,
        { timeout: plan.timeout, retries: 1, logger, ...options });
}

// a serializer that puts `flags` in a set's extras (memjs always sends 0 otherwise)
function flagging(flags) {
    return {
        serialize(opcode, value, extras) {
            if (opcode === 1 && extras.length === 8) {
                extras = Buffer.from(extras);
                extras.writeUInt32BE(flags, 0);
            }
            return { value, extras };
        },
        deserialize: (opcode, value, extras) => ({ value, extras }),
    };
}

async function runPlan(plan) {
    const c = client(plan);
    const out = { client: 'memjs', version: VERSION, protocol: 'binary', steps: [] };
    const done = (name) => out.steps.push(name);
    try {
        await step('set', async () => {
            out.set = [];
            for (const [k, size, kind] of plan.values) {
                out.set.push(await c.set(k, valueOf(k, size, kind), {}));
            }
        });
        done('set');
        const keys = [...plan.values.map(([k]) => k), ...plan.missing];
        await step('get', async () => {
            out.get = {};
            for (const k of keys) out.get[k] = digest((await c.get(k)).value);
        });
        done('get');
        await step('multi-get', async () => {
            const got = await Promise.all(keys.map((k) => c.get(k)));
            out.multi = Object.fromEntries(keys.map((k, i) => [k, digest(got[i].value)]));
            out.multi_call = 'gets at once';
        });
        done('multi-get');
        await step('delete', async () => {
            const k = plan.delete;
            await c.set(k, 'x', {});
            out.delete = [await c.delete(k), digest((await c.get(k)).value), await c.delete(k)];
        });
        done('delete');
        await step('incr/decr', async () => {
            const { key, start, ops } = plan.counter;
            await c.set(key, start, {});
            out.counter = [];
            for (const [op, n] of ops) {
                const r = await (op === 'incr' ? c.increment(key, n, {}) : c.decrement(key, n, {}));
                out.counter.push(r.success ? r.value : null);
            }
            const r = await c.increment(plan.counter_missing, 1, {});
            out.counter_missing = r.success ? r.value : null;
        });
        done('incr/decr');
        await step('ttl', async () => {
            const t = plan.ttl;
            const setOk = (await c.set(t.set, 't', { expires: t.ttl })) &&
                (await c.set(t.touch, 't', { expires: t.ttl }));
            out.ttl = [setOk, await c.touch(t.touch, t.touched),
                await c.touch(plan.missing[0], t.touched)];
        });
        done('ttl');
        await step('flags', async () => {
            const [key, flags, text] = plan.flags;
            const f = client(plan, { serializer: flagging(flags) });
            try {
                await f.set(key, text, {});
            } finally {
                f.close();
            }
            out.flags = flagsOf((await c.get(key)).flags);
        });
        done('flags');
    } finally {
        c.close();
    }
    return out;
}

async function runCross(plan) {
    const c = client(plan);
    const out = { client: 'memjs', version: VERSION, protocol: 'binary', wrote: [], read: {} };
    try {
        await step('write', async () => {
            for (const [k, size, kind] of plan.write) {
                out.wrote.push(await c.set(k, valueOf(k, size, kind), {}));
            }
        });
        await step('read', async () => {
            for (const k of plan.read) {
                const r = await c.get(k);
                out.read[k] = r.value === null ? null : [...digest(r.value), flagsOf(r.flags)];
            }
        });
    } finally {
        c.close();
    }
    return out;
}

async function main() {
    const plan = JSON.parse(process.argv[2]);
    try {
        const out = await (plan.write ? runCross(plan) : runPlan(plan));
        console.log(JSON.stringify(out));
    } catch (e) {
        const error = String(e && e.stack ? e.stack : e);
        console.log(JSON.stringify({ error, step: currentStep() }));
        process.exitCode = 1;
    }
}

main();
