// node_redis.js - the node-redis (npm `redis`) adapter of lib.js: createClient({ socket: { host,
// port } }) with no other option (node-redis 6: HELLO 3, CLIENT SETINFO, CLIENT
// MAINT_NOTIFICATIONS in its first write; node-redis 5: RESP2, CLIENT SETINFO), its replies made
// plain values. Usage: node node_redis.js redis5|redis6 '<plan JSON>' (see lib.js).
'use strict';
const { main, settled, version } = require('./lib');

const HOST = '127.0.0.1';

function adapter(alias, errors) {
    const { createClient } = require(alias);
    function wrap(c) {
        const multi = (cmds) => cmds.reduce((m, cmd) => m.addCommand(cmd), c.multi());
        return {
            raw: (args) => c.sendCommand(args),
            info: (section) => c.info(section),
            ping: () => c.ping(),
            set: (k, v) => c.set(k, v),
            get: (k) => c.get(k),
            append: (k, v) => c.append(k, v),
            incrBy: (k, n) => c.incrBy(k, n),
            setEx: (k, s, v) => c.setEx(k, s, v),
            ttl: (k) => c.ttl(k),
            del: (keys) => c.del(keys),
            exists: (keys) => c.exists(keys),
            rPush: (k, vs) => c.rPush(k, vs),
            lPush: (k, vs) => c.lPush(k, vs),
            lRange: (k, a, b) => c.lRange(k, a, b),
            lLen: (k) => c.lLen(k),
            lPop: (k) => c.lPop(k),
            hSet: (k, obj) => c.hSet(k, obj),
            hGet: (k, f) => c.hGet(k, f),
            hIncrBy: (k, f, n) => c.hIncrBy(k, f, n),
            hGetAll: async (k) => ({ ...(await c.hGetAll(k)) }),
            hDel: (k, f) => c.hDel(k, f),
            hLen: (k) => c.hLen(k),
            sAdd: (k, ms) => c.sAdd(k, ms),
            sMembers: (k) => c.sMembers(k),
            sIsMember: async (k, m) => Boolean(await c.sIsMember(k, m)),
            sRem: (k, ms) => c.sRem(k, ms),
            sCard: (k) => c.sCard(k),
            zAdd: (k, pairs) => c.zAdd(k, pairs.map(([score, value]) => ({ score, value }))),
            zRangeWithScores: async (k) => (await c.zRangeWithScores(k, 0, -1))
                .map(({ value, score }) => [value, Number(score)]),
            zScore: async (k, m) => {
                const s = await c.zScore(k, m);
                return s === null ? null : Number(s);
            },
            zIncrBy: async (k, n, m) => Number(await c.zIncrBy(k, n, m)),
            zRank: (k, m) => c.zRank(k, m),
            zCard: (k) => c.zCard(k),
            mSet: (obj) => c.mSet(obj),
            mGet: (keys) => c.mGet(keys),
            pipeline: (cmds) => multi(cmds).execAsPipeline(),
            multi: (cmds) => multi(cmds).exec(),
            watch: (keys) => c.watch(keys),
            // EXEC of a transaction a WATCH aborted: node-redis rejects it with a WatchError
            multiWatched: async (cmds) => {
                try {
                    await multi(cmds).exec();
                } catch (e) {
                    if (e.constructor.name === 'WatchError') return null;
                    throw e;
                }
                throw new Error('the watched transaction ran');
            },
            multiError: async (cmds) => {
                try {
                    await multi(cmds).exec();
                } catch (e) {
                    return e.message;
                }
                throw new Error('the transaction ran');
            },
            rawTransaction: async (cmds) => settled(await Promise.allSettled(
                [['MULTI'], ...cmds, ['EXEC']].map((cmd) => c.sendCommand(cmd)))),
            quit: () => c.quit(),
        };
    }
    return {
        version: version(alias, '@redis/client'),
        connect: async (port) => {
            const c = createClient({ socket: { host: HOST, port } });
            c.on('error', (e) => errors.push(`${port}: ${e.message}`));
            await c.connect();
            return wrap(c);
        },
    };
}

main(adapter);
