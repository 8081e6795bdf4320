// tls.js - a Node client over TLS to the proxy's TLS listener (test_tls_clients.py): ioredis
// (`tls: {ca, servername}`) or node-redis (`socket: {tls: true, ca, servername}`), each its
// default protocol otherwise. SET/GET, a pipeline of 200 commands and an MGET of keys over the
// pool's servers; prints one JSON line: {"ok": true, "get": ..., "pipeline": [...], "mget": [...]}
// or {"ok": false, "error": "..."}.
// Usage: node tls.js ioredis5|ioredis6|redis5|redis6 PORT CA_FILE KEYS_JSON
'use strict';
const fs = require('fs');

const HOST = '127.0.0.1';

async function withIoredis(alias, port, ca, body) {
    const mod = require(alias);
    const Redis = mod.Redis || mod.default || mod;
    const r = new Redis({ host: HOST, port, tls: { ca, servername: 'localhost' }, lazyConnect: true });
    await r.connect();
    try {
        return await body({
            set: (k, v) => r.set(k, v),
            get: (k) => r.get(k),
            pipeline: async (cmds) => (await r.pipeline(cmds).exec()).map(([err, v]) => {
                if (err) throw err;
                return v;
            }),
            mget: (keys) => r.mget(...keys),
        });
    } finally {
        r.disconnect();
    }
}

async function withNodeRedis(alias, port, ca, body) {
    const { createClient } = require(alias);
    const c = createClient({ socket: { host: HOST, port, tls: true, ca, servername: 'localhost' } });
    c.on('error', () => {}); // the awaited calls report what fails
    await c.connect();
    try {
        return await body({
            set: (k, v) => c.set(k, v),
            get: (k) => c.get(k),
            // commands sent in one tick go out together (node-redis pipelines them)
            pipeline: (cmds) => Promise.all(cmds.map((cmd) => c.sendCommand(cmd.map(String)))),
            mget: (keys) => c.mGet(keys),
        });
    } finally {
        await c.quit().catch(() => {});
    }
}

async function steps(api, keys) {
    await api.set('tls:node', 'over-tls');
    const get = await api.get('tls:node');
    const cmds = [];
    for (let i = 0; i < 100; i++) cmds.push(['set', `tls:p:${i}`, `v${i}`]);
    for (let i = 0; i < 100; i++) cmds.push(['get', `tls:p:${i}`]);
    const pipeline = await api.pipeline(cmds);
    for (const k of keys) await api.set(k, `m-${k}`);
    const mget = await api.mget(keys);
    return { ok: true, get, pipeline, mget };
}

async function run() {
    const [alias, port, caFile, keysJson] = process.argv.slice(2);
    const ca = fs.readFileSync(caFile);
    const keys = JSON.parse(keysJson);
    const use = alias.startsWith('ioredis') ? withIoredis : withNodeRedis;
    return use(alias, Number(port), ca, (api) => steps(api, keys));
}

run().then((out) => console.log(JSON.stringify(out)),
    (err) => console.log(JSON.stringify({ ok: false, error: String(err && err.stack || err) })));
