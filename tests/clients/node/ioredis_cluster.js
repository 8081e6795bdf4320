// ioredis_cluster.js - ioredis's Cluster at its defaults (its CLUSTER INFO ready check, CLUSTER
// SLOTS; ioredis 6: HELLO 3) with the proxy's address as its only seed, against a pool with
// client_cluster_mode, which announces itself as the one node of the cluster
// (tests/integration/test_cluster_clients.py, notes/cluster-clients.md).
// Usage: node ioredis_cluster.js ioredis5|ioredis6 '<plan JSON>', the plan being
//   {"port": N, "prefix": "p", "keys": [...], "tagged": [...], "counter": "k"}
// SET and GET of every key (value "v-<key>"), MSET and MGET of the tagged keys (one hash slot), a
// pipeline of 100 commands (50 SETs of <prefix>:p:0..49, values v0..v49, then their GETs), INCR and
// INCRBY of counter, DEL and EXISTS of the tagged keys. Prints one JSON line and exits 0, or
// prints {"error", "step"} and exits 1.
'use strict';
const assert = require('node:assert/strict');
const { version } = require('./lib');

const HOST = '127.0.0.1';
const PIPELINED = 50;

async function run(Cluster, plan, out) {
    const c = new Cluster([{ host: HOST, port: plan.port }]); // the defaults
    const errors = [];
    c.on('error', (e) => errors.push(e.message));
    await new Promise((resolve, reject) => {
        c.once('ready', resolve);
        c.once('end', () => reject(new Error('the cluster ended before ready')));
    });
    out.step = 'slots';
    out.nodes = c.nodes('master').map((n) => `${n.options.host}:${n.options.port}`);
    out.slots = (await c.cluster('SLOTS')).map(([a, b, [host, port, id]]) => [a, b, [`${host}:${port} ${id}`]]);
    out.step = 'set/get';
    for (const k of plan.keys) assert.equal(await c.set(k, `v-${k}`), 'OK');
    out.gets = 0;
    for (const k of plan.keys) {
        assert.equal(await c.get(k), `v-${k}`);
        out.gets++;
    }
    out.step = 'mset/mget';
    assert.equal(await c.mset(...plan.tagged.flatMap((k) => [k, `t-${k}`])), 'OK');
    out.mget = await c.mget(...plan.tagged);
    out.step = 'pipeline';
    const p = c.pipeline();
    for (let i = 0; i < PIPELINED; i++) p.set(`${plan.prefix}:p:${i}`, `v${i}`);
    for (let i = 0; i < PIPELINED; i++) p.get(`${plan.prefix}:p:${i}`);
    out.pipeline = (await p.exec()).map(([err, v]) => {
        if (err) throw err;
        return v;
    });
    out.step = 'incr';
    for (let i = 1; i <= 10; i++) assert.equal(await c.incr(plan.counter), i);
    out.incr = await c.incrby(plan.counter, 5);
    out.step = 'del';
    out.del = await c.del(...plan.tagged);
    out.exists = await c.exists(...plan.tagged);
    out.step = 'quit';
    await c.quit();
    assert.deepEqual(errors, [], 'error events');
    delete out.step;
}

const [alias, planText] = process.argv.slice(2);
const out = { client: alias, version: version(alias), step: 'connect' };
(async () => {
    const mod = require(alias);
    await run(mod.Cluster || (mod.default && mod.default.Cluster), JSON.parse(planText), out);
    console.log(JSON.stringify(out));
    process.exit(0);
})().catch((e) => {
    console.log(JSON.stringify({ error: String(e && e.stack || e), step: out.step }));
    process.exit(1);
});
