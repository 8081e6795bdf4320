// ioredis.js - the ioredis adapter of lib.js: `new Redis(port, host)` with no other option
// (ioredis 5: INFO ready check; ioredis 6: HELLO 3 then INFO), its replies made plain values.
// Usage: node ioredis.js ioredis5|ioredis6 '<plan JSON>' (see lib.js).
'use strict';
const { main, settled, version } = require('./lib');

const HOST = '127.0.0.1';

// ioredis takes [name, ...args] batches with its method names (lower case)
function lower(cmds) {
    return cmds.map(([name, ...args]) => [name.toLowerCase(), ...args]);
}

function adapter(alias, errors) {
    const mod = require(alias);
    const Redis = mod.Redis || mod.default || mod;
    function wrap(r) {
        const ok = (pairs) => pairs.map(([err, v]) => {
            if (err) throw err;
            return v;
        });
        return {
            raw: (args) => r.call(...args),
            info: (section) => r.info(section),
            ping: () => r.ping(),
            set: (k, v) => r.set(k, v),
            get: (k) => r.get(k),
            append: (k, v) => r.append(k, v),
            incrBy: (k, n) => r.incrby(k, n),
            setEx: (k, s, v) => r.setex(k, s, v),
            ttl: (k) => r.ttl(k),
            del: (keys) => r.del(...keys),
            exists: (keys) => r.exists(...keys),
            rPush: (k, vs) => r.rpush(k, ...vs),
            lPush: (k, vs) => r.lpush(k, ...vs),
            lRange: (k, a, b) => r.lrange(k, a, b),
            lLen: (k) => r.llen(k),
            lPop: (k) => r.lpop(k),
            hSet: (k, obj) => r.hset(k, obj),
            hGet: (k, f) => r.hget(k, f),
            hIncrBy: (k, f, n) => r.hincrby(k, f, n),
            hGetAll: async (k) => ({ ...(await r.hgetall(k)) }),
            hDel: (k, f) => r.hdel(k, f),
            hLen: (k) => r.hlen(k),
            sAdd: (k, ms) => r.sadd(k, ...ms),
            sMembers: (k) => r.smembers(k),
            sIsMember: async (k, m) => (await r.sismember(k, m)) === 1,
            sRem: (k, ms) => r.srem(k, ...ms),
            sCard: (k) => r.scard(k),
            zAdd: (k, pairs) => r.zadd(k, ...pairs.flat()),
            zRangeWithScores: async (k) => {
                const flat = await r.zrange(k, 0, -1, 'WITHSCORES');
                const out = [];
                for (let i = 0; i < flat.length; i += 2) out.push([flat[i], Number(flat[i + 1])]);
                return out;
            },
            zScore: async (k, m) => {
                const s = await r.zscore(k, m);
                return s === null ? null : Number(s);
            },
            zIncrBy: async (k, n, m) => Number(await r.zincrby(k, n, m)),
            zRank: (k, m) => r.zrank(k, m),
            zCard: (k) => r.zcard(k),
            mSet: (obj) => r.mset(obj),
            mGet: (keys) => r.mget(...keys),
            pipeline: async (cmds) => ok(await r.pipeline(lower(cmds)).exec()),
            multi: async (cmds) => ok(await r.multi(lower(cmds)).exec()),
            watch: (keys) => r.watch(...keys),
            // EXEC of a transaction a WATCH aborted: ioredis resolves it with null
            multiWatched: (cmds) => r.multi(lower(cmds)).exec(),
            multiError: async (cmds) => {
                try {
                    await r.multi(lower(cmds)).exec();
                } catch (e) {
                    return [e.message, ...(e.previousErrors || []).map((x) => x.message)].join(' | ');
                }
                throw new Error('the transaction ran');
            },
            // MULTI sent at once, each command answered QUEUED (or its error), then EXEC
            rawTransaction: async (cmds) => settled(await Promise.allSettled([
                r.multi({ pipeline: false }), ...cmds.map((c) => r.call(...c)), r.exec(),
            ])),
            quit: () => r.quit(),
        };
    }
    return {
        version: version(alias),
        connect: (port) => new Promise((resolve, reject) => {
            const r = new Redis(port, HOST);
            r.on('error', (e) => errors.push(`${port}: ${e.message}`));
            r.once('ready', () => resolve(wrap(r)));
            r.once('end', () => reject(new Error('connection ended before ready')));
        }),
    };
}

main(adapter);
