// lib.js - the sequence every Node redis client runs against the proxy (the test is
// tests/integration/test_clients_node.py): the client connects with its default options, then
// every data type, pipelines, multi-key commands over several servers, a transaction on
// hash-tagged keys, a WATCH that aborts one, concurrent transactions on one key, a transaction and
// a WATCH whose keys cross servers (refused: nothing may run), and the connection still serving
// afterwards. Each step checks the values it gets; a client's own API is in its adapter
// (ioredis.js, node_redis.js), which turns its replies into plain values (strings, numbers,
// arrays, objects) before they are compared.
//
// Usage: node <adapter>.js <package alias> '<plan JSON>'; the plan is
//   {"pools": [{"port": N, "prefix": "p", "spread": [keys on every server], "cross": [a, b]}]}
// (cross: two keys the proxy maps to two servers), or {"port": N, "down": {"up": key, "down": key}}
// for a pool with a server down (runDegraded). Prints one JSON line and exits 0 when every
// step passed; prints {"error", "step"} and exits 1 otherwise (2: a step that never finished).
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const STEP_TIMEOUT_MS = 30000;
const CONCURRENT = 8; // connections running transactions at once
const ROUNDS = 20;    // transactions each

let current = 'start';

function version(alias, inner) {
    const dir = path.join(__dirname, 'node_modules', alias);
    const nested = inner && path.join(dir, 'node_modules', inner, 'package.json');
    const top = inner && path.join(__dirname, 'node_modules', inner, 'package.json');
    const file = nested && fs.existsSync(nested) ? nested : inner ? top : path.join(dir, 'package.json');
    return JSON.parse(fs.readFileSync(file, 'utf8')).version;
}

async function step(name, fn) {
    current = name;
    const timer = setTimeout(() => {
        console.log(JSON.stringify({ error: `did not finish in ${STEP_TIMEOUT_MS} ms`, step: name }));
        process.exit(2);
    }, STEP_TIMEOUT_MS);
    try {
        return await fn();
    } finally {
        clearTimeout(timer);
    }
}

// Promise.allSettled's results as values, a rejection as its message
function settled(results) {
    return results.map((r) => (r.status === 'fulfilled' ? r.value : r.reason.message));
}

function sortedPairs(obj) {
    return Object.entries(obj).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

// The whole sequence on one pool; returns what the test checks beside the asserts here.
async function runPool(make, pool, errors) {
    const p = pool.prefix;
    const out = { port: pool.port, steps: [] };
    const done = (name) => out.steps.push(name);
    const c = await step('connect', () => make.connect(pool.port));
    done('connect');

    await step('handshake', async () => {
        const info = Object.fromEntries((await c.raw(['CLIENT', 'INFO'])).trim().split(' ')
            .map((f) => f.split('=', 2)));
        out.resp = Number(info.resp);
        out.lib_name = info['lib-name'];
        out.lib_ver = info['lib-ver'];
        assert.equal(await c.ping(), 'PONG');
        // INFO as the library reads it: the test compares the version with the servers'
        const serverInfo = await c.info('server');
        out.redis_version = (/^redis_version:(\S+)/m.exec(serverInfo) || [])[1];
        assert.ok(out.redis_version, serverInfo);
    });
    done('handshake');

    await step('string', async () => {
        const k = `${p}:str`;
        assert.equal(await c.set(k, 'hello'), 'OK');
        assert.equal(await c.get(k), 'hello');
        assert.equal(await c.append(k, ' world'), 11);
        assert.equal(await c.get(k), 'hello world');
        assert.equal(await c.incrBy(`${p}:n`, 41), 41);
        assert.equal(await c.incrBy(`${p}:n`, 1), 42);
        assert.equal(await c.get(`${p}:n`), '42');
        assert.equal(await c.setEx(`${p}:ttl`, 1000, 'v'), 'OK');
        const ttl = await c.ttl(`${p}:ttl`);
        assert.ok(ttl > 900 && ttl <= 1000, `ttl ${ttl}`);
        assert.equal(await c.get(`${p}:missing`), null);
        const odd = 'line\r\nbreak, ünïcødé ✓, $3\r\nfoo *1\r\n';
        assert.equal(await c.set(`${p}:odd`, odd), 'OK');
        assert.equal(await c.get(`${p}:odd`), odd);
        const big = 'x'.repeat(100000) + 'end';
        assert.equal(await c.set(`${p}:big`, big), 'OK');
        assert.equal(await c.get(`${p}:big`), big);
        assert.equal(await c.del([k, `${p}:n`, `${p}:ttl`, `${p}:odd`, `${p}:big`]), 5);
    });
    done('string');

    await step('list', async () => {
        const k = `${p}:list`;
        assert.equal(await c.rPush(k, ['b', 'c', 'd']), 3);
        assert.equal(await c.lPush(k, ['a']), 4);
        assert.deepEqual(await c.lRange(k, 0, -1), ['a', 'b', 'c', 'd']);
        assert.equal(await c.lLen(k), 4);
        assert.equal(await c.lPop(k), 'a');
        assert.deepEqual(await c.lRange(k, 1, 2), ['c', 'd']);
        assert.equal(await c.del([k]), 1);
    });
    done('list');

    await step('hash', async () => {
        const k = `${p}:hash`;
        assert.equal(await c.hSet(k, { f1: 'v1', f2: 'v2', n: '10' }), 3);
        assert.equal(await c.hGet(k, 'f2'), 'v2');
        assert.equal(await c.hGet(k, 'nope'), null);
        assert.equal(await c.hIncrBy(k, 'n', 5), 15);
        assert.deepEqual(sortedPairs(await c.hGetAll(k)), [['f1', 'v1'], ['f2', 'v2'], ['n', '15']]);
        assert.equal(await c.hDel(k, 'f1'), 1);
        assert.equal(await c.hLen(k), 2);
        assert.deepEqual(await c.hGetAll(`${p}:nohash`), {});
        assert.equal(await c.del([k]), 1);
    });
    done('hash');

    await step('set', async () => {
        const k = `${p}:set`;
        assert.equal(await c.sAdd(k, ['x', 'y', 'z', 'x']), 3);
        assert.deepEqual((await c.sMembers(k)).sort(), ['x', 'y', 'z']);
        assert.equal(await c.sIsMember(k, 'y'), true);
        assert.equal(await c.sIsMember(k, 'w'), false);
        assert.equal(await c.sRem(k, ['y']), 1);
        assert.equal(await c.sCard(k), 2);
        assert.equal(await c.del([k]), 1);
    });
    done('set');

    await step('zset', async () => {
        const k = `${p}:zset`;
        assert.equal(await c.zAdd(k, [[3, 'c'], [1.5, 'a'], [2, 'b']]), 3);
        assert.deepEqual(await c.zRangeWithScores(k), [['a', 1.5], ['b', 2], ['c', 3]]);
        assert.equal(await c.zScore(k, 'a'), 1.5);
        assert.equal(await c.zScore(k, 'nope'), null);
        assert.equal(await c.zIncrBy(k, 10, 'a'), 11.5);
        assert.equal(await c.zRank(k, 'a'), 2);
        assert.equal(await c.zCard(k), 3);
        assert.equal(await c.del([k]), 1);
    });
    done('zset');

    await step('pipeline', async () => {
        // the library's pipeline: one write, replies in order
        const cmds = [];
        for (let i = 0; i < 20; i++) cmds.push(['SET', `${p}:pl:${i}`, `v${i}`]);
        for (let i = 0; i < 20; i++) cmds.push(['GET', `${p}:pl:${i}`]);
        cmds.push(['INCR', `${p}:pl:n`], ['INCR', `${p}:pl:n`], ['GET', `${p}:pl:missing`]);
        const got = await c.pipeline(cmds);
        const want = [...Array(20).fill('OK'), ...Array.from({ length: 20 }, (_, i) => `v${i}`), 1, 2, null];
        assert.deepEqual(got, want);
        // commands issued together without waiting (node-redis writes them in one go)
        const many = await Promise.all(Array.from({ length: 20 }, (_, i) => c.get(`${p}:pl:${i}`)));
        assert.deepEqual(many, Array.from({ length: 20 }, (_, i) => `v${i}`));
        const keys = [...Array.from({ length: 20 }, (_, i) => `${p}:pl:${i}`), `${p}:pl:n`];
        assert.equal(await c.del(keys), 21);
        // a long one: 1000 SETs then 1000 GETs over keys on every server
        const n = 1000;
        const long = [];
        for (let i = 0; i < n; i++) long.push(['SET', `${p}:lp:${i}`, `w${i}`]);
        for (let i = 0; i < n; i++) long.push(['GET', `${p}:lp:${i}`]);
        const replies = await c.pipeline(long);
        assert.deepEqual(replies.slice(0, n), Array(n).fill('OK'));
        assert.deepEqual(replies.slice(n), Array.from({ length: n }, (_, i) => `w${i}`));
        assert.equal(await c.del(Array.from({ length: n }, (_, i) => `${p}:lp:${i}`)), n);
    });
    done('pipeline');

    await step('multikey', async () => {
        // keys the test chose on every server of the pool: split by the proxy, merged in order
        const keys = pool.spread;
        const pairs = Object.fromEntries(keys.map((k, i) => [k, `m${i}`]));
        assert.equal(await c.mSet(pairs), 'OK');
        const missing = `${p}:mk:missing`;
        assert.deepEqual(await c.mGet([...keys, missing]), [...keys.map((_, i) => `m${i}`), null]);
        assert.equal(await c.exists([...keys, missing]), keys.length);
        const half = keys.filter((_, i) => i % 2 === 0);
        assert.equal(await c.del([...half, missing]), half.length);
        assert.deepEqual(await c.mGet(keys), keys.map((_, i) => (i % 2 === 0 ? null : `m${i}`)));
        // the odd ones stay: the test reads them from the servers
        // many keys in one command, split over the servers and merged back in order
        const many = Array.from({ length: 300 }, (_, i) => `${p}:mk:many:${i}`);
        assert.equal(await c.mSet(Object.fromEntries(many.map((k, i) => [k, `${i}`]))), 'OK');
        assert.deepEqual(await c.mGet(many), many.map((_, i) => `${i}`));
        assert.equal(await c.del(many), many.length);
    });
    done('multikey');

    out.transactions = 0; // transactions that reached a server (MULTI .. EXEC sent there)
    const tagged = (name) => `{${p}:tx}:${name}`;
    await step('transaction', async () => {
        const got = await c.multi([
            ['SET', tagged('a'), '1'], ['INCR', tagged('a')], ['RPUSH', tagged('l'), 'x', 'y'],
            ['LRANGE', tagged('l'), '0', '-1'], ['HSET', tagged('h'), 'f', 'v'], ['GET', tagged('a')],
        ]);
        out.transactions++;
        assert.deepEqual(got, ['OK', 2, 2, ['x', 'y'], 1, '2']);
        assert.equal(await c.get(tagged('a')), '2');
        assert.deepEqual(await c.lRange(tagged('l'), 0, -1), ['x', 'y']);
        assert.equal(await c.hGet(tagged('h'), 'f'), 'v');
    });
    done('transaction');

    await step('watch', async () => {
        // WATCH, another connection changes the key, EXEC runs nothing
        const k = tagged('w');
        assert.equal(await c.set(k, 'before'), 'OK');
        assert.equal(await c.watch([k]), 'OK');
        const other = await make.connect(pool.port);
        assert.equal(await other.set(k, 'other'), 'OK');
        await other.quit();
        assert.equal(await c.multiWatched([['SET', k, 'mine']]), null);
        out.transactions++;
        assert.equal(await c.get(k), 'other');
    });
    done('watch');

    await step('concurrent transactions', async () => {
        // several connections (workers of -T 4 among them) increment one key in transactions at
        // once: each EXEC's result is one of the increments, none lost or repeated
        const k = tagged('ctr');
        const conns = await Promise.all(Array.from({ length: CONCURRENT }, () => make.connect(pool.port)));
        const results = await Promise.all(conns.map(async (cc) => {
            const mine = [];
            for (let i = 0; i < ROUNDS; i++) {
                const [n, v] = await cc.multi([['INCR', k], ['GET', k]]);
                assert.equal(String(n), v);
                mine.push(n);
            }
            return mine;
        }));
        await Promise.all(conns.map((cc) => cc.quit()));
        out.transactions += CONCURRENT * ROUNDS;
        const all = results.flat().sort((x, y) => x - y);
        assert.deepEqual(all, Array.from({ length: CONCURRENT * ROUNDS }, (_, i) => i + 1));
        assert.equal(await c.get(k), String(CONCURRENT * ROUNDS));
    });
    done('concurrent transactions');

    await step('cross-server transaction', async () => {
        // two keys on two servers: the crossing command is refused, EXEC aborts, nothing runs
        const [a, b] = pool.cross;
        const err = await c.multiError([['SET', a, 'never'], ['INCR', b], ['SET', tagged('x'), 'never']]);
        out.cross_error = err;
        assert.match(err, /EXECABORT|keys of one transaction on two servers/, err);
        assert.match(err + (c.previousErrors || ''), /two servers/);
        // a WATCH whose keys cross servers is refused the same way, and holds nothing
        await assert.rejects(c.watch([a, b]), /keys of one transaction on two servers/);
        if (c.rawTransaction) {
            // the replies one by one, as the library passes them on: the refusal, then EXECABORT
            const replies = await c.rawTransaction([['SET', a, 'never'], ['INCR', b]]);
            out.cross_raw = replies;
            assert.deepEqual(replies.slice(0, 2), ['OK', 'QUEUED']);
            assert.match(replies[2], /^ERR keys of one transaction on two servers, '.+' and '.+'/);
            assert.equal(replies[3], 'EXECABORT Transaction discarded because of previous errors.');
        }
    });
    done('cross-server transaction');

    await step('usable afterwards', async () => {
        const [a, b] = pool.cross;
        assert.equal(await c.ping(), 'PONG');
        assert.equal(await c.exists([a, b, tagged('x')]), 0);
        assert.deepEqual(await c.mGet([a, b]), [null, null]);
        assert.equal(await c.set(a, 'after'), 'OK');
        assert.equal(await c.get(a), 'after');
        assert.equal(await c.del([a]), 1);
        const got = await c.multi([['INCR', tagged('a')], ['GET', tagged('a')]]);
        out.transactions++;
        assert.deepEqual(got, [3, '3']);
        assert.deepEqual(await c.pipeline([['GET', tagged('a')], ['LLEN', tagged('l')]]), ['3', 2]);
    });
    done('usable afterwards');

    await step('quit', () => c.quit());
    done('quit');
    assert.deepEqual(errors, [], 'error events');
    return out;
}

// A pool one of whose servers is down (plan: "down": {"up": key, "down": key}): the client still
// connects with its defaults (INFO ready check, HELLO: answered by the servers that are up), the
// keys of the live server work, those of the dead one get the proxy's error, and the connection
// stays usable.
async function runDegraded(make, pool, errors) {
    const { up, down } = pool.down;
    const out = { port: pool.port, steps: [] };
    const c = await step('connect', () => make.connect(pool.port));
    out.steps.push('connect');
    await step('degraded', async () => {
        assert.equal(await c.set(up, 'alive'), 'OK');
        assert.equal(await c.get(up), 'alive');
        await assert.rejects(c.get(down), /ERR Connection refused/);
        assert.equal(await c.ping(), 'PONG');
        assert.equal(await c.del([up]), 1);
    });
    out.steps.push('degraded');
    await step('quit', () => c.quit());
    out.steps.push('quit');
    assert.deepEqual(errors, [], 'error events');
    return out;
}

// main(adapterFactory): adapterFactory(alias, errors) -> { name, version, connect(port) }
function main(adapterFactory) {
    const [alias, planText] = process.argv.slice(2);
    const errors = [];
    (async () => {
        const plan = JSON.parse(planText);
        const make = adapterFactory(alias, errors);
        const pools = [];
        for (const pool of plan.pools) pools.push(await (pool.down ? runDegraded : runPool)(make, pool, errors));
        console.log(JSON.stringify({ client: alias, version: make.version, pools }));
        process.exit(0);
    })().catch((e) => {
        console.log(JSON.stringify({ error: String(e && e.stack || e), step: current, events: errors }));
        process.exit(1);
    });
}

// step(name, fn) and the step under way (currentStep()) serve memjs.js too
module.exports = { main, settled, version, step, currentStep: () => current };
