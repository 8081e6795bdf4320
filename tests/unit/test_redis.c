/*
 * test_redis.c - unit tests of the redis command table and request parser: keys of every command
 * (table-driven, RESP and inline, whole, split at every byte, one byte at a time), pipelines,
 * empty requests, rejects, protocol errors, big values over small mbufs, and the proxy's replies.
 * Threads: the test's only.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include "common/util.h"
#include "conf/conf.h"
#include "proto/proto.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"
#include "stats/stats.h"
#include "proto_drv.h"

#define BIG_MBUF 16384
#define SMALL_MBUF 512
#define GETK "*2\r\n$3\r\nget\r\n$1\r\nk\r\n"

/* ---------------------------------------------------------------- command table */

static void test_table_sorted_and_lookup(void **state)
{
    (void)state;
    assert_true(redis_ncmds > 100);
    for (size_t i = 0; i < redis_ncmds; i++) {
        const struct redis_cmd *c = &redis_cmds[i];
        size_t n = strlen(c->name);
        assert_true(n > 0 && n < REDIS_CMD_NAME_MAX);
        if (i > 0) assert_true(strcmp(redis_cmds[i - 1].name, c->name) < 0);
        assert_int_equal(redis_cmd_lookup((const uint8_t *)c->name, n), (int)i);
        char up[REDIS_CMD_NAME_MAX];
        for (size_t j = 0; j <= n; j++)
            up[j] = (char)((j % 2 && c->name[j] >= 'a' && c->name[j] <= 'z') ? c->name[j] - 32
                                                                               : c->name[j]);
        assert_int_equal(redis_cmd_lookup((const uint8_t *)up, n), (int)i);
        /* key spec sanity: keyed commands have a step, keyless ones are local or any-server */
        if (c->first_key > 0) assert_true(c->key_step > 0);
        if (c->first_key == 0 && c->numkeys_pos == 0)
            assert_true(c->flags & (CMD_F_LOCAL_MASK | CMD_F_ANY_SERVER | CMD_F_TXN_MASK | CMD_F_FRAG_ALL));
        /* a command sent to every server says how its replies merge */
        assert_true((c->fan != REDIS_FAN_NONE) == ((c->flags & CMD_F_FRAG_ALL) != 0));
        /* the proxy's own commands say which they are, and only they */
        assert_true((c->local != REDIS_LOCAL_NONE) == ((c->flags & CMD_F_LOCAL) != 0));
    }
    static const char *const absent[] = {
        "monitor", "wait", "swapdb", "debug",
        "msetnxx", "slowlog", "latency", "", "g",
        "getx", "zzzz", "aaaa", "georadiusbymemberx",
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(absent); i++)
        assert_int_equal(redis_cmd_lookup((const uint8_t *)absent[i], strlen(absent[i])), -1);
    assert_int_equal(redis_cmd_lookup((const uint8_t *)"get\0x", 5), -1);
    assert_int_equal(redis_cmd_lookup((const uint8_t *)"get", 2), -1);
    char longname[200];
    memset(longname, 'a', sizeof(longname));
    assert_int_equal(redis_cmd_lookup((const uint8_t *)longname, sizeof(longname)), -1);
}

/* The names refused requests count under: sorted, lowercase, none of them served (but to the
 * clients of a pool with client_cluster_mode: CLUSTER, READONLY, READWRITE), each found in any
 * case; the protocol exports them with their count. */
static void test_refused_names(void **state)
{
    (void)state;
    assert_ptr_equal(redis_proto.refused_names, redis_refused_names);
    assert_int_equal(redis_proto.nrefused, REDIS_NREFUSED);
    size_t gated = 0;
    /* every name and "other" have a counter of their own in the stats blocks */
    assert_true(redis_proto.nrefused < STATS_REFUSED_MAX && memcache_proto.nrefused < STATS_REFUSED_MAX);
    for (size_t i = 0; i < REDIS_NREFUSED; i++) {
        const char *n = redis_refused_names[i];
        assert_non_null(n);
        size_t len = strlen(n);
        assert_true(len > 0 && len < REDIS_CMD_NAME_MAX);
        if (i > 0) assert_true(strcmp(redis_refused_names[i - 1], n) < 0);
        for (size_t j = 0; j < len; j++) assert_false(n[j] >= 'A' && n[j] <= 'Z');
        int ci = redis_cmd_lookup((const uint8_t *)n, len);
        assert_true(ci < 0 || redis_cmds[ci].local >= REDIS_LOCAL_CLUSTER_FIRST);
        gated += ci >= 0;
        assert_int_equal(redis_refused_lookup((const uint8_t *)n, len), (int)i);
        char up[REDIS_CMD_NAME_MAX];
        for (size_t j = 0; j <= len; j++) up[j] = (char)(n[j] >= 'a' && n[j] <= 'z' ? n[j] - 32 : n[j]);
        assert_int_equal(redis_refused_lookup((const uint8_t *)up, len), (int)i);
    }
    assert_int_equal(gated, 3);
    static const char *const other[] = { "get", "", "monito", "monitorx", "zzzz", "mon\0itor" };
    for (size_t i = 0; i < NC_ARRAY_LEN(other); i++)
        assert_int_equal(redis_refused_lookup((const uint8_t *)other[i], strlen(other[i])), -1);
    assert_int_equal(redis_refused_lookup((const uint8_t *)"monitor\0", 8), -1);
}

static uint32_t flags_of(const char *name)
{
    int i = redis_cmd_lookup((const uint8_t *)name, strlen(name));
    assert_true(i >= 0);
    return redis_cmds[i].flags;
}

static void test_table_flags(void **state)
{
    (void)state;
    assert_int_equal(flags_of("mget") & CMD_F_FRAG_MASK, CMD_F_FRAG_MGET);
    assert_int_equal(flags_of("mset") & CMD_F_FRAG_MASK, CMD_F_FRAG_MSET);
    static const char *const sum[] = { "del", "unlink", "touch", "exists" };
    for (size_t i = 0; i < NC_ARRAY_LEN(sum); i++)
        assert_int_equal(flags_of(sum[i]) & CMD_F_FRAG_MASK, CMD_F_FRAG_SUM);
    assert_int_equal(flags_of("ping"), CMD_F_LOCAL_PING | CMD_F_TXN_SERVER);
    assert_int_equal(flags_of("echo"), CMD_F_LOCAL | CMD_F_TXN_SERVER);
    assert_int_equal(flags_of("hello"), CMD_F_LOCAL | CMD_F_FRAG_ALL | CMD_F_FRAG_PARTIAL | CMD_F_SWITCH);
    assert_int_equal(flags_of("info"), CMD_F_LOCAL | CMD_F_FRAG_ALL | CMD_F_FRAG_PARTIAL);
    assert_int_equal(flags_of("reset"), CMD_F_LOCAL | CMD_F_SWITCH | CMD_F_RESET);
    assert_int_equal(flags_of("client"), CMD_F_LOCAL);
    assert_int_equal(flags_of("cluster"), CMD_F_LOCAL);
    assert_int_equal(flags_of("readonly"), CMD_F_LOCAL);
    assert_int_equal(flags_of("readwrite"), CMD_F_LOCAL);
    assert_int_equal(flags_of("select"), CMD_F_LOCAL);
    assert_int_equal(flags_of("time"), CMD_F_ANY_SERVER);
    assert_int_equal(flags_of("quit"), CMD_F_QUIT);
    assert_int_equal(flags_of("auth"), CMD_F_AUTH);
    assert_int_equal(flags_of("command"), CMD_F_ANY_SERVER);
    assert_int_equal(flags_of("lolwut"), CMD_F_ANY_SERVER);
    assert_int_equal(flags_of("multi"), CMD_F_MULTI);
    assert_int_equal(flags_of("exec"), CMD_F_EXEC);
    assert_int_equal(flags_of("discard"), CMD_F_DISCARD);
    assert_int_equal(flags_of("watch"), CMD_F_WATCH);
    assert_int_equal(flags_of("unwatch"), CMD_F_UNWATCH);
    assert_true(flags_of("set") & CMD_F_WRITE);
    assert_false(flags_of("get") & CMD_F_WRITE);
    size_t nfrag = 0;
    for (size_t i = 0; i < redis_ncmds; i++)
        if (redis_cmds[i].flags & CMD_F_FRAG_MASK) nfrag++;
    assert_int_equal(nfrag, 21);
    assert_int_equal(flags_of("xread") & CMD_F_FRAG_MASK, CMD_F_FRAG_ONE);
    assert_int_equal(flags_of("msetnx"), CMD_F_WRITE | CMD_F_FRAG_ONE);
    assert_int_equal(flags_of("xreadgroup") & CMD_F_FRAG_MASK, CMD_F_FRAG_ONE);
    assert_int_equal(flags_of("keys"), CMD_F_FRAG_ALL);
    assert_int_equal(flags_of("dbsize"), CMD_F_FRAG_ALL);
    assert_int_equal(flags_of("randomkey"), CMD_F_FRAG_ALL | CMD_F_FRAG_PARTIAL);
    assert_int_equal(flags_of("scan"), CMD_F_LOCAL | CMD_F_FRAG_ALL | CMD_F_FRAG_ELEMS);
    assert_int_equal(flags_of("script"), CMD_F_LOCAL | CMD_F_FRAG_ALL | CMD_F_FRAG_ELEMS);
    assert_int_equal(flags_of("pubsub"), CMD_F_LOCAL | CMD_F_FRAG_ALL | CMD_F_FRAG_ELEMS);
    assert_int_equal(flags_of("flushall"), CMD_F_LOCAL | CMD_F_FRAG_ALL | CMD_F_WRITE);
    assert_int_equal(flags_of("flushdb"), CMD_F_LOCAL | CMD_F_FRAG_ALL | CMD_F_WRITE);
}

/* ---------------------------------------------------------------- keys of every command */

struct key_vector {
    const char *line;  /* words separated by one space */
    const char *keys;  /* expected keys, separated by one space */
};

static const struct key_vector key_vectors[] = {
    { "APPEND k v", "k" },
    { "AUTH pw", "pw" },            /* recorded for the proxy's own check, never routed */
    { "auth user pw", "user pw" },
    { "BITCOUNT k 0 -1", "k" },
    { "BITFIELD k GET u8 0", "k" },
    { "BITFIELD_RO k GET u8 0", "k" },
    { "BITOP AND dst a b", "dst a b" },
    { "BITPOS k 1", "k" },
    { "BLMOVE src dst LEFT RIGHT 0", "src dst" },
    { "BLMPOP 0.5 2 a b LEFT COUNT 2", "a b" },
    { "BLPOP a b 0", "a b" },
    { "BRPOP a 1", "a" },
    { "BRPOPLPUSH src dst 1.5", "src dst" },
    { "BZMPOP 0 1 z MIN", "z" },
    { "BZPOPMAX z1 z2 0", "z1 z2" },
    { "BZPOPMIN z 10", "z" },
    { "CLIENT SETNAME n", "SETNAME n" }, /* arguments for the proxy to read, never routed */
    { "CLIENT ID", "ID" },
    { "CLUSTER SLOTS", "SLOTS" },   /* client_cluster_mode (the vectors' parser options) */
    { "cluster keyslot {t}k", "keyslot {t}k" },
    { "COMMAND", "" },
    { "COMMAND INFO get", "" },
    { "CONFIG GET maxmemory", "GET" },  /* the subcommand, for the proxy to read */
    { "CONFIG SET maxmemory 10", "SET" },
    { "COPY src dst REPLACE", "src dst" },
    { "DBSIZE", "" },
    { "DECR k", "k" },
    { "DECRBY k 2", "k" },
    { "DEL a b c", "a b c" },
    { "del a", "a" },
    { "DISCARD", "" },
    { "DUMP k", "k" },
    { "ECHO msg", "msg" },
    { "EVAL script 2 k1 k2 a1", "k1 k2" },
    { "EVAL_RO script 1 k a", "k" },
    { "EVALSHA sha 1 k1 a1 a2", "k1" },
    { "EVALSHA_RO sha 2 k1 k2", "k1 k2" },
    { "EXEC", "" },
    { "EXISTS a b", "a b" },
    { "EXPIRE k 10 NX", "k" },
    { "EXPIREAT k 100", "k" },
    { "EXPIRETIME k", "k" },
    { "FCALL f 2 k1 k2 a", "k1 k2" },
    { "FCALL_RO f 1 k", "k" },
    { "FLUSHALL ASYNC", "ASYNC" },  /* arguments for the proxy to read, then every server's */
    { "FLUSHDB", "" },
    { "FUNCTION LOAD code", "LOAD" },  /* the code is not a key: any size */
    { "FUNCTION RESTORE payload REPLACE", "RESTORE" },
    { "GEOADD k 13.3 38.1 m", "k" },
    { "GEODIST k m1 m2 km", "k" },
    { "GEOHASH k m1 m2", "k" },
    { "GEOPOS k m1", "k" },
    { "GEORADIUS k 15 37 200 km STORE dst", "k" },
    { "GEORADIUSBYMEMBER k m 100 km", "k" },
    { "GEORADIUS_RO k 15 37 200 km", "k" },
    { "GEORADIUSBYMEMBER_RO k m 100 km", "k" },
    { "GEOSEARCH k FROMMEMBER m BYRADIUS 10 km", "k" },
    { "GEOSEARCHSTORE dst src FROMMEMBER m BYRADIUS 10 km", "dst src" },
    { "GET k", "k" },
    { "GETBIT k 7", "k" },
    { "GETDEL k", "k" },
    { "GETEX k PERSIST", "k" },
    { "GETRANGE k 0 3", "k" },
    { "GETSET k v", "k" },
    { "HDEL h f1 f2", "h" },
    { "HELLO", "" },
    { "HELLO 3 AUTH default pw SETNAME n", "3 AUTH default pw SETNAME n" },
    { "HEXISTS h f", "h" },
    { "HEXPIRE h 10 NX FIELDS 1 f", "h" },
    { "HEXPIREAT h 100 FIELDS 1 f", "h" },
    { "HEXPIRETIME h FIELDS 1 f", "h" },
    { "HGET h f", "h" },
    { "HGETALL h", "h" },
    { "HGETDEL h FIELDS 1 f", "h" },
    { "HGETEX h EX 10 FIELDS 1 f", "h" },
    { "HINCRBY h f 1", "h" },
    { "HINCRBYFLOAT h f 1.5", "h" },
    { "HKEYS h", "h" },
    { "HLEN h", "h" },
    { "HMGET h f1 f2", "h" },
    { "HMSET h f1 v1 f2 v2", "h" },
    { "HPERSIST h FIELDS 1 f", "h" },
    { "HPEXPIRE h 100 FIELDS 1 f", "h" },
    { "HPEXPIREAT h 100 FIELDS 1 f", "h" },
    { "HPEXPIRETIME h FIELDS 1 f", "h" },
    { "HPTTL h FIELDS 1 f", "h" },
    { "HRANDFIELD h 2 WITHVALUES", "h" },
    { "HSCAN h 0 MATCH x*", "h" },
    { "HSET h f v", "h" },
    { "HSETNX h f v", "h" },
    { "HSETEX h EX 10 FIELDS 1 f v", "h" },
    { "HSTRLEN h f", "h" },
    { "HTTL h FIELDS 2 f g", "h" },
    { "HVALS h", "h" },
    { "INCR k", "k" },
    { "INCRBY k 5", "k" },
    { "INCRBYFLOAT k 0.5", "k" },
    { "INFO", "" },
    { "INFO server keyspace", "server keyspace" },
    { "KEYS user:*", "" },
    { "LCS a b LEN", "a b" },
    { "LINDEX l 0", "l" },
    { "LINSERT l BEFORE p v", "l" },
    { "LLEN l", "l" },
    { "LMOVE src dst LEFT RIGHT", "src dst" },
    { "LMPOP 2 a b LEFT COUNT 2", "a b" },
    { "LOLWUT VERSION 5", "" },
    { "LPOP l 2", "l" },
    { "LPOS l e RANK 1", "l" },
    { "LPUSH l a b", "l" },
    { "LPUSHX l a", "l" },
    { "LRANGE l 0 -1", "l" },
    { "LREM l 0 v", "l" },
    { "LSET l 0 v", "l" },
    { "LTRIM l 0 9", "l" },
    { "MGET a b c", "a b c" },
    { "MEMORY USAGE k SAMPLES 5", "k" },
    { "MEMORY STATS", "" },         /* no key: local() refuses it */
    { "MOVE k 1", "k" },
    { "MSET a 1 b 2", "a b" },
    { "MSETNX a 1 b 2 c 3", "a b c" },
    { "MULTI", "" },
    { "OBJECT ENCODING k", "k" },
    { "OBJECT HELP", "" },          /* no key: any server answers */
    { "mset key value", "key" },
    { "PERSIST k", "k" },
    { "PEXPIRE k 100", "k" },
    { "PEXPIREAT k 100", "k" },
    { "PEXPIRETIME k", "k" },
    { "PFADD h a b", "h" },
    { "PFADD h", "h" },
    { "PFCOUNT h1 h2", "h1 h2" },
    { "PFMERGE d s1 s2", "d s1 s2" },
    { "PING", "" },
    { "PING hello", "hello" },      /* the message the proxy echoes */
    { "PSETEX k 100 v", "k" },
    { "PSUBSCRIBE p* q?", "p* q?" }, /* the patterns, for feature/pubsub.c */
    { "PTTL k", "k" },
    { "PUBLISH ch hello", "ch" },
    { "PUBSUB NUMSUB a b", "NUMSUB a b" },
    { "PUNSUBSCRIBE", "" },
    { "QUIT", "" },
    { "RANDOMKEY", "" },
    { "READONLY", "" },
    { "readwrite", "" },
    { "RENAME a b", "a b" },
    { "RENAMENX a b", "a b" },
    { "RESET", "" },
    { "RESTORE k 0 payload REPLACE", "k" },
    { "ROLE", "" },
    { "RPOP l", "l" },
    { "RPOPLPUSH src dst", "src dst" },
    { "RPUSH l a", "l" },
    { "RPUSHX l a", "l" },
    { "SADD s a b", "s" },
    { "SCAN 0 MATCH a* COUNT 10 TYPE string", "0 MATCH a* COUNT 10 TYPE string" },
    { "SCARD s", "s" },
    { "SCRIPT LOAD body", "LOAD body" },
    { "SDIFF s1 s2", "s1 s2" },
    { "SDIFFSTORE d s1 s2", "d s1 s2" },
    { "SELECT 0", "0" },
    { "SET k v EX 10 NX", "k" },
    { "SETBIT k 7 1", "k" },
    { "SETEX k 10 v", "k" },
    { "SETNX k v", "k" },
    { "SETRANGE k 2 v", "k" },
    { "SINTER s1 s2", "s1 s2" },
    { "SINTERCARD 2 s1 s2 LIMIT 5", "s1 s2" },
    { "SINTERSTORE d s1", "d s1" },
    { "SISMEMBER s m", "s" },
    { "SMEMBERS s", "s" },
    { "SMISMEMBER s a b", "s" },
    { "SMOVE src dst m", "src dst" },
    { "SORT l BY w_* LIMIT 0 5 STORE dst", "l" },
    { "SORT_RO l BY w_* LIMIT 0 5", "l" },
    { "SPOP s 2", "s" },
    { "SPUBLISH {t}ch hello", "{t}ch" },
    { "SSUBSCRIBE {t}a {t}b", "{t}a {t}b" },
    { "SUBSCRIBE a b", "a b" },
    { "SUNSUBSCRIBE {t}a", "{t}a" },
    { "SRANDMEMBER s -3", "s" },
    { "SREM s a", "s" },
    { "SSCAN s 0 COUNT 10", "s" },
    { "STRLEN k", "k" },
    { "SUBSTR k 0 3", "k" },
    { "SUNION s1 s2 s3", "s1 s2 s3" },
    { "SUNIONSTORE d s1", "d s1" },
    { "TIME", "" },
    { "TOUCH a b", "a b" },
    { "TTL k", "k" },
    { "TYPE k", "k" },
    { "UNLINK a b", "a b" },
    { "UNSUBSCRIBE", "" },
    { "UNWATCH", "" },
    { "WATCH a b", "a b" },
    { "XACK s g 1-0 2-0", "s" },
    { "XADD s MAXLEN ~ 10 * f v", "s" },
    { "XAUTOCLAIM s g c 10 0-0 COUNT 5", "s" },
    { "XCLAIM s g c 10 1-0", "s" },
    { "XDEL s 1-0", "s" },
    { "XGROUP CREATE s g $ MKSTREAM", "s" },
    { "XGROUP HELP", "" },           /* no key: any server answers */
    { "XINFO STREAM s FULL", "s" },
    { "XLEN s", "s" },
    { "XPENDING s g - + 10", "s" },
    { "XRANGE s - + COUNT 2", "s" },
    { "XREAD COUNT 2 STREAMS s1 s2 0-0 $", "s1 s2" },
    { "XREAD STREAMS streams 0", "streams" },
    { "XREAD COUNT 1 NOACK", "" },   /* no STREAMS: redis answers its error */
    { "XREAD STREAMS s1 s2 0", "" }, /* unbalanced: likewise */
    { "XREAD COUNT 1 NOSUCH STREAMS s1 0", "" },
    { "XREADGROUP GROUP streams c COUNT 1 NOACK STREAMS s1 >", "s1" },
    { "XREVRANGE s + - COUNT 2", "s" },
    { "XSETID s 5-0", "s" },
    { "XTRIM s MINID 0", "s" },
    { "ZADD z NX 1 a 2 b", "z" },
    { "ZCARD z", "z" },
    { "ZCOUNT z -inf +inf", "z" },
    { "ZDIFF 2 z1 z2 WITHSCORES", "z1 z2" },
    { "ZDIFFSTORE d 2 z1 z2", "d z1 z2" },
    { "ZINCRBY z 1 m", "z" },
    { "ZINTER 3 z1 z2 z3 WEIGHTS 1 2 3", "z1 z2 z3" },
    { "ZINTERCARD 2 z1 z2", "z1 z2" },
    { "ZINTERSTORE d 2 z1 z2 AGGREGATE MAX", "d z1 z2" },
    { "ZLEXCOUNT z - +", "z" },
    { "ZMPOP 2 z1 z2 MIN", "z1 z2" },
    { "ZMSCORE z a b", "z" },
    { "ZPOPMAX z 2", "z" },
    { "ZPOPMIN z", "z" },
    { "ZRANDMEMBER z 2 WITHSCORES", "z" },
    { "ZRANGE z 0 -1 WITHSCORES", "z" },
    { "ZRANGEBYLEX z - +", "z" },
    { "ZRANGEBYSCORE z 0 10", "z" },
    { "ZRANGESTORE d z 0 -1", "d z" },
    { "ZRANK z m", "z" },
    { "ZREM z a b", "z" },
    { "ZREMRANGEBYLEX z - +", "z" },
    { "ZREMRANGEBYRANK z 0 1", "z" },
    { "ZREMRANGEBYSCORE z 0 1", "z" },
    { "ZREVRANGE z 0 -1", "z" },
    { "ZREVRANGEBYLEX z + -", "z" },
    { "ZREVRANGEBYSCORE z 10 0", "z" },
    { "ZREVRANK z m", "z" },
    { "ZSCAN z 0", "z" },
    { "ZSCORE z m", "z" },
    { "ZUNION 2 z1 z2", "z1 z2" },
    { "ZUNIONSTORE d 2 z1 z2 WEIGHTS 2 3", "d z1 z2" },
};

/* The expected group of key kv at argv[ai] (MSET: with argv[ai + 1]). */
static void expected_group(char *out, size_t size, const char *const *argv, int ai, bool inl,
                           bool mset)
{
    if (inl) {
        snprintf(out, size, mset ? "%s %s" : "%s", argv[ai], mset ? argv[ai + 1] : "");
        return;
    }
    resp_build(out, size, mset ? 2 : 1, argv + ai);
    memmove(out, strchr(out, '\n') + 1, strlen(strchr(out, '\n') + 1) + 1); /* drop "*N\r\n" */
}

static void check_parsed(const struct msg *m, int argc, const char *const *argv, const char *keys,
                         bool inl)
{
    assert_int_equal(m->reject, REJECT_NONE);
    assert_true(m->cmd < redis_ncmds);
    const struct redis_cmd *c = &redis_cmds[m->cmd];
    assert_int_equal(strlen(c->name), strlen(argv[0]));
    assert_int_equal(strncasecmp(c->name, argv[0], strlen(argv[0])), 0);
    assert_int_equal(m->name_len, strlen(argv[0]));
    assert_memory_equal(m->name, argv[0], m->name_len);
    assert_int_equal(m->cmd_flags, c->flags);
    assert_int_equal(m->nargs, (uint64_t)argc);
    assert_int_equal(m->quit, (c->flags & CMD_F_QUIT) != 0);

    char kbuf[256];
    const char *kv[32];
    int nk = keys[0] ? split_words(keys, kbuf, sizeof(kbuf), kv, 32) : 0;
    assert_int_equal(m->nkeys, nk);
    bool mset = c->key_step > 1; /* a key's group holds its value too (MSET, MSETNX) */
    int ai = 1;
    for (int i = 0; i < nk; i++) {
        assert_int_equal(m->keys[i].len, strlen(kv[i]));
        assert_memory_equal(m->keys[i].ptr, kv[i], m->keys[i].len);
        while (ai < argc && strcmp(argv[ai], kv[i]) != 0) ai++;
        assert_true(ai < argc);
        char want[512];
        expected_group(want, sizeof(want), argv, ai, inl, mset);
        char *got = msg_range_text(m, m->keys[i].start, m->keys[i].end);
        assert_string_equal(got, want);
        free(got);
        ai++;
    }
}

/* Parses one request fed in two reads split at cut (cut != SIZE_MAX), else in steps of step bytes;
 * checks it, its keys and that every byte was consumed. */
static void run_vector_once(const char *in, size_t len, int argc, const char *const *argv,
                            const char *keys, bool inl, size_t mbuf, size_t step, size_t cut)
{
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, mbuf, &redis_proto, false, false);
    d.opts = REDIS_OPT_CLUSTER; /* every command in the table is known */
    if (cut != SIZE_MAX) drv_feed2(&d, in, len, cut);
    else drv_feed(&d, in, len, step);
    assert_false(d.failed);
    assert_int_equal(d.nout, 1);
    assert_int_equal(drv_pending(&d), 0);
    assert_int_equal(d.out[0]->len, len);
    check_parsed(d.out[0], argc, argv, keys, inl);
    drv_close(&d);
}

static void run_vector(const struct key_vector *v, bool inl)
{
    char wbuf[256], in[1024];
    const char *argv[32];
    int argc = split_words(v->line, wbuf, sizeof(wbuf), argv, 32);
    size_t len = inl ? (size_t)snprintf(in, sizeof(in), "%s\r\n", v->line)
                     : resp_build(in, sizeof(in), argc, argv);
    run_vector_once(in, len, argc, argv, v->keys, inl, BIG_MBUF, 0, SIZE_MAX);
    run_vector_once(in, len, argc, argv, v->keys, inl, SMALL_MBUF, 1, SIZE_MAX);
    for (size_t cut = 0; cut <= len; cut++)
        run_vector_once(in, len, argc, argv, v->keys, inl, SMALL_MBUF, 0, cut);
}

static void test_keys_every_command(void **state)
{
    (void)state;
    bool *covered = calloc(redis_ncmds, sizeof(bool));
    assert_non_null(covered);
    for (size_t i = 0; i < NC_ARRAY_LEN(key_vectors); i++) {
        const struct key_vector *v = &key_vectors[i];
        const char *sp = strchr(v->line, ' ');
        size_t nl = sp ? (size_t)(sp - v->line) : strlen(v->line);
        int ci = redis_cmd_lookup((const uint8_t *)v->line, nl);
        assert_true(ci >= 0);
        covered[ci] = true;
        run_vector(v, false);
        run_vector(v, true);
    }
    for (size_t i = 0; i < redis_ncmds; i++) {
        if (!covered[i]) print_error("no key vector for '%s'\n", redis_cmds[i].name);
        assert_true(covered[i]);
    }
    free(covered);
}

/* ---------------------------------------------------------------- streams, splits */

/* One line describing everything the parser found in m, and its bytes. */
static char *summarize(const struct msg *m)
{
    size_t size = 4096 + (size_t)m->len * 2;
    char *s = malloc(size);
    assert_non_null(s);
    int n = snprintf(s, size, "len=%" PRIu64 " rej=%d cmd=%d flags=%x nargs=%" PRIu64
                     " quit=%d name=%.*s keys=", m->len, m->reject, m->cmd, m->cmd_flags, m->nargs,
                     m->quit, (int)m->name_len, m->name ? (const char *)m->name : "");
    for (uint32_t i = 0; i < m->nkeys; i++)
        n += snprintf(s + n, size - (size_t)n, "[%.*s@%" PRIu64 "-%" PRIu64 "]", (int)m->keys[i].len,
                      (const char *)m->keys[i].ptr, m->keys[i].start, m->keys[i].end);
    char *text = msg_text(m);
    snprintf(s + n, size - (size_t)n, " bytes=%s", text);
    free(text);
    return s;
}

static void run_stream(struct drv_run *r, const char *in, size_t len, size_t mbuf, size_t step,
                       size_t cut)
{
    drv_run(r, &redis_proto, false, false, mbuf, in, len, step, cut, summarize);
}

static const char pipeline[] =
    "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"
    "*0\r\n"
    "GET key\r\n"
    "\r\n"
    "*4\r\n$4\r\nMGET\r\n$1\r\na\r\n$2\r\nbb\r\n$3\r\nccc\r\n"
    "*2\r\n$4\r\nSAVE\r\n$1\r\n*\r\n"
    "*1\r\n$3\r\nGET\r\n"
    "mset a 1  b 2\n"
    "*-1\r\n"
    "*6\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n2\r\n$2\r\nk1\r\n$2\r\nk2\r\n$1\r\nx\r\n"
    "*3\r\n$4\r\nEVAL\r\n$8\r\nreturn 1\r\n$1\r\n0\r\n"
    "*5\r\n$4\r\nmset\r\n$1\r\nx\r\n$0\r\n\r\n$1\r\ny\r\n$3\r\nabc\r\n"
    "*2\r\n$7\r\nUNKNOWN\r\n$10\r\n0123456789\r\n"
    "  \t \r\n"
    "*1\r\n$4\r\nPING\r\n"
    "QUIT\r\n";

static void test_pipeline_whole(void **state)
{
    (void)state;
    struct drv_run r;
    run_stream(&r, pipeline, sizeof(pipeline) - 1, BIG_MBUF, 0, SIZE_MAX);
    assert_false(r.failed);
    assert_int_equal(r.n, 12);
    char want[256];
    snprintf(want, sizeof(want), "len=33 rej=0 cmd=%d flags=100 nargs=3 quit=0 name=SET "
             "keys=[key@13-22] bytes=*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n",
             redis_cmd_lookup((const uint8_t *)"set", 3));
    assert_string_equal(r.lines[0], want);
    drv_run_free(&r);

    /* the same facts, looked at one by one */
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, BIG_MBUF, &redis_proto, false, false);
    drv_feed(&d, pipeline, sizeof(pipeline) - 1, 0);
    struct msg **o = d.out;
    /* "*0\r\n" before GET is part of the GET msg, its key offset counts it */
    char *t = msg_text(o[1]);
    assert_string_equal(t, "*0\r\nGET key\r\n");
    free(t);
    assert_int_equal(o[1]->keys[0].start, 8);
    assert_int_equal(o[1]->keys[0].end, 11);
    /* blank line + MGET */
    assert_int_equal(o[2]->nkeys, 3);
    assert_int_equal(o[2]->cmd_flags, CMD_F_FRAG_MGET);
    t = msg_range_text(o[2], o[2]->keys[2].start, o[2]->keys[2].end);
    assert_string_equal(t, "$3\r\nccc\r\n");
    free(t);
    assert_int_equal(o[3]->reject, REJECT_UNSUPPORTED);
    assert_int_equal(o[3]->nkeys, 0);
    assert_int_equal(o[4]->reject, REJECT_ARITY);
    /* inline mset with two blanks */
    assert_int_equal(o[5]->nkeys, 2);
    t = msg_range_text(o[5], o[5]->keys[1].start, o[5]->keys[1].end);
    assert_string_equal(t, "b 2");
    free(t);
    /* "*-1\r\n" ignored, then EVAL with 2 keys */
    assert_int_equal(o[6]->nkeys, 2);
    assert_memory_equal(o[6]->keys[1].ptr, "k2", 2);
    assert_int_equal(o[7]->reject, REJECT_ARITY); /* EVAL with no key */
    assert_int_equal(o[8]->nkeys, 2);            /* mset x "" y abc */
    t = msg_range_text(o[8], o[8]->keys[0].start, o[8]->keys[0].end);
    assert_string_equal(t, "$1\r\nx\r\n$0\r\n\r\n");
    free(t);
    assert_int_equal(o[9]->reject, REJECT_UNSUPPORTED);
    assert_int_equal(o[10]->cmd_flags, CMD_F_LOCAL_PING | CMD_F_TXN_SERVER);
    assert_true(o[11]->quit);
    assert_int_equal(o[11]->cmd_flags, CMD_F_QUIT);
    drv_close(&d);
}

static void test_pipeline_every_split(void **state)
{
    (void)state;
    size_t len = sizeof(pipeline) - 1;
    struct drv_run ref, r;
    run_stream(&ref, pipeline, len, BIG_MBUF, 0, SIZE_MAX);
    assert_false(ref.failed);
    assert_int_equal(ref.pending, 0);
    for (size_t cut = 0; cut <= len; cut++) {
        run_stream(&r, pipeline, len, BIG_MBUF, 0, cut);
        drv_run_same(&ref, &r);
        run_stream(&r, pipeline, len, SMALL_MBUF, 0, cut);
        drv_run_same(&ref, &r);
    }
    for (size_t step = 1; step <= 64; step++) {
        run_stream(&r, pipeline, len, SMALL_MBUF, step, SIZE_MAX);
        drv_run_same(&ref, &r);
    }
    drv_run_free(&ref);
}

/* ---------------------------------------------------------------- inline */

static void test_inline(void **state)
{
    (void)state;
    static const char in[] = "get k\n"
                             "  SET   key\tval  \r\n"
                             "\n"
                             "\r\n"
                             "\v\f \r\n"
                             "MGET a bb\r\n"
                             "ping\r\n"
                             "FOO bar\r\n"
                             "get\r\n"
                             "EVAL s 1 key arg\r\n";
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, SMALL_MBUF, &redis_proto, false, false);
    drv_feed(&d, in, sizeof(in) - 1, 1);
    assert_false(d.failed);
    assert_int_equal(d.nout, 7);
    struct msg **o = d.out;
    assert_int_equal(o[0]->nkeys, 1);
    assert_int_equal(o[0]->len, 6);
    assert_int_equal(o[1]->nargs, 3);
    assert_int_equal(o[1]->keys[0].start, 8);
    assert_int_equal(o[1]->keys[0].end, 11);
    assert_memory_equal(o[1]->keys[0].ptr, "key", 3);
    assert_int_equal(o[1]->name_len, 3);
    assert_memory_equal(o[1]->name, "SET", 3);
    /* three blank lines and "\v\f \r\n" belong to MGET's msg */
    assert_int_equal(o[2]->nkeys, 2);
    char *t = msg_text(o[2]);
    assert_string_equal(t, "\n\r\n\v\f \r\nMGET a bb\r\n");
    free(t);
    assert_int_equal(o[2]->keys[1].start, 15);
    assert_int_equal(o[3]->cmd_flags, CMD_F_LOCAL_PING | CMD_F_TXN_SERVER);
    assert_int_equal(o[4]->reject, REJECT_UNSUPPORTED);
    assert_int_equal(o[5]->reject, REJECT_ARITY);
    assert_int_equal(o[6]->nkeys, 1);
    assert_memory_equal(o[6]->keys[0].ptr, "key", 3);
    drv_close(&d);
}

/* ---------------------------------------------------------------- rejects */

/* Lowercases a word in place (split_words' buffer) and returns it. */
static const char *lower(const char *word)
{
    for (char *p = (char *)word; *p; p++)
        if (*p >= 'A' && *p <= 'Z') *p = (char)(*p + ('a' - 'A'));
    return word;
}

static void parse_one(struct tenv *e, struct drv *d, const char *in, size_t len, size_t step)
{
    drv_open(d, e, BIG_MBUF, &redis_proto, false, false);
    drv_feed(d, in, len, step);
}

/* line (words separated by one space) as a request in in[0..size): RESP, or inline when inl;
 * its *argc words (16 at most) in argv, pointing into wbuf. Returns its length. */
static size_t line_request(const char *line, int inl, char *in, size_t size, const char **argv, int *argc,
                           char *wbuf, size_t wsize)
{
    *argc = split_words(line, wbuf, wsize, argv, 16);
    return inl ? (size_t)snprintf(in, size, "%s\r\n", line) : resp_build(in, size, *argc, argv);
}

/* Parses line (RESP and inline, whole and byte by byte) followed by a valid GET, with the parser
 * options opts: line is rejected for why, with the reply naming it, and the GET after it parses. */
static void check_reject_opts(const char *line, uint8_t why, uint8_t opts)
{
    for (int inl = 0; inl <= 1; inl++) {
        char wbuf[256], in[1024];
        const char *argv[16];
        int argc;
        size_t len = line_request(line, inl, in, sizeof(in), argv, &argc, wbuf, sizeof(wbuf));
        len += (size_t)snprintf(in + len, sizeof(in) - len, inl ? "get k\r\n" : GETK);
        char want[256];
        if (why == REJECT_ARITY)
            snprintf(want, sizeof(want), "-ERR wrong number of arguments for '%s' command\r\n",
                     lower(argv[0]));
        else
            snprintf(want, sizeof(want), "-ERR unsupported command '%s'\r\n", lower(argv[0]));
        for (size_t step = 0; step <= 1; step++) {
            struct tenv e;
            struct drv d;
            drv_open(&d, &e, BIG_MBUF, &redis_proto, false, false);
            d.opts = opts;
            drv_feed(&d, in, len, step);
            assert_false(d.failed);
            assert_int_equal(d.nout, 2);
            struct msg *m = d.out[0];
            if (m->reject != why) print_error("'%s': reject %d\n", line, m->reject);
            assert_int_equal(m->reject, why);
            if (why == REJECT_UNSUPPORTED) assert_int_equal(m->cmd, REDIS_CMD_NONE);
            assert_int_equal(m->cmd_flags, 0);
            assert_false(m->quit);
            assert_int_equal(m->nkeys, 0);
            assert_int_equal(m->nargs, (uint64_t)argc);
            char reply[256];
            size_t n = redis_proto.reject_reply(m, reply, sizeof(reply));
            assert_int_equal(n, strlen(want));
            assert_memory_equal(reply, want, n);
            /* counted under its name when redis has that command, else as "other"; a wrong
             * arity is not a refused command */
            int known = redis_refused_lookup((const uint8_t *)argv[0], strlen(argv[0]));
            int bucket = why == REJECT_ARITY ? -1 : known >= 0 ? known : REDIS_NREFUSED;
            assert_int_equal(redis_proto.refused_bucket(m), bucket);
            assert_int_equal(redis_proto.refused_bucket(d.out[1]), -1);
            assert_int_equal(d.out[1]->reject, REJECT_NONE);
            assert_int_equal(d.out[1]->nkeys, 1);
            drv_close(&d);
        }
    }
}

static void check_reject(const char *line, uint8_t why)
{
    check_reject_opts(line, why, 0);
}

static void test_reject_unsupported_then_valid(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "MONITOR", "WAIT 0 0",
        "SWAPDB 0 1", "LASTSAVE", "DEBUG OBJECT k", "SLOWLOG GET 10", "LATENCY LATEST",
        "ACL WHOAMI", "MODULE LIST", "WAITAOF 0 0 0", "PFDEBUG GETREG k",
        "MIGRATE h p k 0 1", "NOSUCHCOMMAND a b c",
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(lines); i++) {
        check_reject(lines[i], REJECT_UNSUPPORTED);
        check_reject_opts(lines[i], REJECT_UNSUPPORTED, REDIS_OPT_CLUSTER); /* unknown there too */
    }
    /* without client_cluster_mode, as twemproxy (counted under their names) */
    static const char *const cluster[] = {
        "CLUSTER SLOTS", "CLUSTER", "cluster keyslot k", "READONLY", "readwrite", "READONLY x",
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cluster); i++) check_reject(cluster[i], REJECT_UNSUPPORTED);
}

static void test_reject_arity_then_valid(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "GET", "GET a b", "SET k", "MGET", "DEL", "MSET a", "MSET a 1 b", "HSET h f",
        "AUTH", "EVAL s", "EVAL s 0", "EVAL s 2 k", "EVAL s x k", "EVAL s -1 k", "EVAL s 01 k",
        "EVALSHA s 0 a", "ZUNION 0 a", "ZUNION 3 a b", "ZUNIONSTORE d 0 a", "ZINTERSTORE d 2 a",
        "ZDIFF", "LMOVE a b LEFT", "GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 10",
        "EVAL s 123456789012345678901234567890 k", "MULTI x", "EXEC x", "DISCARD x", "WATCH",
        "UNWATCH x", "CLIENT", "ECHO", "ECHO a b", "SELECT", "SELECT 0 1", "RESET x", "TIME x",
        "BLPOP a", "BRPOPLPUSH a b", "BLMOVE a b LEFT LEFT", "BZPOPMIN z", "BLMPOP 0 3 a LEFT",
        "BLMPOP 0 x a LEFT", "BZMPOP 0 0 z MIN",
        /* redis 7's commands the proxy took in later: redis's arities, numkeys as EVAL's */
        "FCALL f 0", "FCALL_RO f 0 a", "EVAL_RO s 0", "EVALSHA_RO s 2 k", "FUNCTION", "CONFIG", "ROLE x",
        "OBJECT", "MEMORY", "RENAME a", "RENAMENX a b c", "LCS a", "BITOP AND d", "LMPOP 1 a",
        "ZMPOP 0 z MIN", "SINTERCARD 0 s", "ZINTERCARD 3 a b", "EXPIRETIME", "PEXPIRETIME k x",
        "SUBSTR k 0", "HEXPIRE h 10 FIELDS 1", "HTTL h FIELDS 1", "HSETEX h FIELDS 1 f",
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(lines); i++) check_reject(lines[i], REJECT_ARITY);
    /* with client_cluster_mode, redis's arities */
    static const char *const cluster[] = { "CLUSTER", "READONLY x", "READWRITE x y" };
    for (size_t i = 0; i < NC_ARRAY_LEN(cluster); i++) check_reject_opts(cluster[i], REJECT_ARITY, REDIS_OPT_CLUSTER);
}

/* The proxy's replies in a transaction: redis's own texts; the proxy's errors name servers with
 * their control bytes blanked and stay one CRLF-ended line when cut. */
static void test_txn_replies(void **state)
{
    (void)state;
    static const struct {
        enum proto_txn_reply what;
        const char *text;
    } fixed[] = {
        { PROTO_TXN_OK, "+OK\r\n" },
        { PROTO_TXN_QUEUED, "+QUEUED\r\n" },
        { PROTO_TXN_NESTED, "-ERR MULTI calls can not be nested\r\n" },
        { PROTO_TXN_EXEC_WITHOUT, "-ERR EXEC without MULTI\r\n" },
        { PROTO_TXN_DISCARD_WITHOUT, "-ERR DISCARD without MULTI\r\n" },
        { PROTO_TXN_WATCH_INSIDE, "-ERR WATCH inside MULTI is not allowed\r\n" },
        { PROTO_TXN_NOT_ALLOWED, "-ERR Command not allowed inside a transaction\r\n" },
        { PROTO_TXN_EXECABORT, "-EXECABORT Transaction discarded because of previous errors.\r\n" },
    };
    char buf[512];
    for (size_t i = 0; i < NC_ARRAY_LEN(fixed); i++) {
        size_t n = redis_proto.txn_reply(fixed[i].what, NULL, NULL, buf, sizeof(buf));
        assert_int_equal(n, strlen(fixed[i].text));
        assert_memory_equal(buf, fixed[i].text, n);
    }
    const char *cross = "-ERR keys of one transaction on two servers, 'r 0' and 'r1' (hash tags keep "
                        "them on one)\r\n";
    size_t n = redis_proto.txn_reply(PROTO_TXN_CROSS, "r\r0", "r1", buf, sizeof(buf));
    assert_int_equal(n, strlen(cross));
    assert_memory_equal(buf, cross, n);
    const char *busy = "-ERR no dedicated connection free to server 's' (dedicated_connections: 3)\r\n";
    n = redis_proto.txn_reply(PROTO_TXN_BUSY, "s", "3", buf, sizeof(buf));
    assert_int_equal(n, strlen(busy));
    assert_memory_equal(buf, busy, n);
    n = redis_proto.txn_reply(PROTO_TXN_TOO_LARGE, "268435456", NULL, buf, sizeof(buf));
    assert_int_equal(n, strlen("-ERR transaction too large (more than 268435456 bytes queued)\r\n"));
    n = redis_proto.txn_reply(PROTO_TXN_BUSY, "a-very-long-server-name", "3", buf, 20);
    assert_int_equal(n, 20);
    assert_memory_equal(buf, "-ERR no dedicated \r\n", 20);
    assert_string_equal(redis_proto.txn_clean_request, "*1\r\n$7\r\nUNWATCH\r\n");
    assert_null(memcache_proto.txn_reply);
}

static void test_reject_long_and_odd_names(void **state)
{
    (void)state;
    /* a 300-byte name: only its first 64 bytes are kept; the rest (and the value) in pieces */
    char in[2048];
    size_t len = (size_t)sprintf(in, "*2\r\n$300\r\n");
    for (int i = 0; i < 300; i++) in[len++] = (char)('A' + i % 26);
    len += (size_t)sprintf(in + len, "\r\n$5\r\nhello\r\n*2\r\n$6\r\nget\r\nx\r\n$1\r\nk\r\n"
                                     "*1\r\n$4\r\npInG\r\n");
    for (size_t step = 0; step <= 3; step++) {
        struct tenv e;
        struct drv d;
        drv_open(&d, &e, SMALL_MBUF, &redis_proto, false, false);
        drv_feed(&d, in, len, step);
        assert_false(d.failed);
        assert_int_equal(d.nout, 3);
        assert_int_equal(d.out[0]->reject, REJECT_UNSUPPORTED);
        assert_int_equal(d.out[0]->name_len, REDIS_NAME_PREFIX);
        char reply[256];
        size_t n = redis_proto.reject_reply(d.out[0], reply, sizeof(reply));
        reply[n] = '\0';
        assert_string_equal(reply, "-ERR unsupported command 'abcdefghijklmnopqrstuvwxyzabcdefghijklm"
                                   "nopqrstuvwxyzabcdefghijkl'\r\n");
        /* CR/LF inside a name cannot break the reply line */
        assert_int_equal(d.out[1]->reject, REJECT_UNSUPPORTED);
        n = redis_proto.reject_reply(d.out[1], reply, sizeof(reply));
        reply[n] = '\0';
        assert_string_equal(reply, "-ERR unsupported command 'get  x'\r\n");
        assert_int_equal(d.out[2]->cmd_flags, CMD_F_LOCAL_PING | CMD_F_TXN_SERVER);
        /* a small buffer cuts the name, never the CRLF */
        n = redis_proto.reject_reply(d.out[0], reply, 30);
        assert_int_equal(n, 30);
        assert_memory_equal(reply, "-ERR unsupported command 'a'\r\n", 30);
        assert_int_equal(redis_proto.reject_reply(d.out[0], reply, 10), 0);
        drv_close(&d);
    }
}

static void test_nul_in_name(void **state)
{
    (void)state;
    static const char in[] = "*2\r\n$5\r\nget\0x\r\n$1\r\nk\r\n";
    struct tenv e;
    struct drv d;
    parse_one(&e, &d, in, sizeof(in) - 1, 0);
    assert_int_equal(d.nout, 1);
    assert_int_equal(d.out[0]->reject, REJECT_UNSUPPORTED);
    char reply[64];
    size_t n = redis_proto.reject_reply(d.out[0], reply, sizeof(reply));
    assert_int_equal(n, strlen("-ERR unsupported command 'get x'\r\n"));
    assert_memory_equal(reply, "-ERR unsupported command 'get x'\r\n", n);
    drv_close(&d);
}

static void test_special_commands(void **state)
{
    (void)state;
    static const char in[] = "*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n"
                             "*3\r\n$4\r\nauth\r\n$4\r\nuser\r\n$2\r\npw\r\n"
                             "*2\r\n$4\r\nQUIT\r\n$3\r\nnow\r\n"
                             "*1\r\n$7\r\nCOMMAND\r\n"
                             "*3\r\n$6\r\nLOLWUT\r\n$7\r\nVERSION\r\n$1\r\n5\r\n"
                             "*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n";
    struct tenv e;
    struct drv d;
    parse_one(&e, &d, in, sizeof(in) - 1, 1);
    assert_int_equal(d.nout, 6);
    assert_int_equal(d.out[0]->cmd_flags, CMD_F_AUTH);
    assert_int_equal(d.out[0]->nargs, 2);
    assert_int_equal(d.out[1]->cmd_flags, CMD_F_AUTH);
    assert_int_equal(d.out[1]->nargs, 3);
    assert_true(d.out[2]->quit);
    assert_int_equal(d.out[3]->cmd_flags, CMD_F_ANY_SERVER);
    assert_int_equal(d.out[4]->cmd_flags, CMD_F_ANY_SERVER);
    assert_int_equal(d.out[5]->cmd_flags, CMD_F_LOCAL_PING | CMD_F_TXN_SERVER);
    /* AUTH and PING record their arguments for the proxy's own use (password, message) */
    static const uint32_t nkeys[6] = { 1, 2, 0, 0, 0, 1 };
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(d.out[i]->nkeys, nkeys[i]);
        assert_int_equal(d.out[i]->reject, REJECT_NONE);
        if (i != 2) assert_false(d.out[i]->quit);
    }
    drv_close(&d);
}

/* ---------------------------------------------------------------- protocol errors */

struct err_vector {
    const char *in;
    size_t len;      /* 0: strlen */
    const char *error;
    size_t ndone;    /* requests parsed before the error */
};


static const struct err_vector err_vectors[] = {
    { "*x\r\n", 0, "invalid multibulk length", 0 },
    { GETK "*-\r\n", 0, "invalid multibulk length", 1 },
    { "*01\r\n", 0, "invalid multibulk length", 0 },
    { "*+1\r\n", 0, "invalid multibulk length", 0 },
    { "*-0\r\n", 0, "invalid multibulk length", 0 },
    { "*2147483648\r\n", 0, "invalid multibulk length", 0 },
    { "*99999999999999999999\r\n", 0, "invalid multibulk length", 0 },
    { "*1\n$4\r\nPING\r\n", 0, "invalid multibulk length", 0 },
    { "*11111111111111111111111111111111111\r\n", 0, "invalid multibulk length", 0 },
    /* redis's words, with the byte it got (a CR or LF shown as a space, as redis does) */
    { "*1\r\n:5\r\n", 0, "expected '$', got ':'", 0 },
    { "*2\r\n$3\r\nget\r\nk\r\n", 0, "expected '$', got 'k'", 0 },
    { "*1\r\n*1\r\n$4\r\nPING\r\n", 0, "expected '$', got '*'", 0 },
    { "*1\r\n\r\n", 0, "expected '$', got ' '", 0 },
    { "*1\r\n\x80\r\n", 0, "expected '$', got '\x80'", 0 },
    { "*1\r\n$-1\r\n", 0, "invalid bulk length", 0 },
    { "*1\r\n$abc\r\n", 0, "invalid bulk length", 0 },
    { "*1\r\n$\r\n", 0, "invalid bulk length", 0 },
    { "*1\r\n$04\r\nPING\r\n", 0, "invalid bulk length", 0 },
    { "*1\r\n$536870913\r\n", 0, "invalid bulk length", 0 },
    { "*1\r\n$4\rxPING\r\n", 0, "invalid bulk length", 0 },
    { "*1\r\n$3\r\nfooXX", 0, "expected CRLF after bulk data", 0 },
    { "*3\r\n$3\r\nset\r\n$1\r\nk\r\n$1\r\nvXY", 0, "expected CRLF after bulk data", 0 },
    { "*2\r\n$3\r\nfoo\r\n$3\r\nbarX\n", 0, "expected CRLF after bulk data", 0 },
    { GETK "set \"a b\" c\r\n", 0, "quotes and NUL are not supported in inline requests", 1 },
    { "get 'a'\r\n", 0, "quotes and NUL are not supported in inline requests", 0 },
    { "get a\0b\r\n", 9, "quotes and NUL are not supported in inline requests", 0 },
    { "get \"a\\\" b\" c\r\n", 0, "quotes and NUL are not supported in inline requests", 0 },
    { "get 'a\\'b'\r\n", 0, "quotes and NUL are not supported in inline requests", 0 },
    { "get 'a\\b'\r\r\n", 0, "quotes and NUL are not supported in inline requests", 0 },
    /* quotes redis' sdssplitargs cannot split: its error, not the proxy's refusal */
    { GETK "get 'a\r\n", 0, "unbalanced quotes in request", 1 },
    { "get \"a\n", 0, "unbalanced quotes in request", 0 },
    { "get \"a\\\"\r\n", 0, "unbalanced quotes in request", 0 },
    { "get 'a\\'\r\n", 0, "unbalanced quotes in request", 0 },
    { "get \"a\"b\r\n", 0, "unbalanced quotes in request", 0 },
    { "get a'b'c\r\n", 0, "unbalanced quotes in request", 0 },
    { "get \"a\\\r\n", 0, "unbalanced quotes in request", 0 },
    /* more than MSG_KEYS_MAX (2^20) keys: refused at the name or numkeys, none of them read */
    { "*1048578\r\n$3\r\nDEL\r\n", 0, "too many keys", 0 },
    { GETK "*1000000000\r\n$3\r\nDEL\r\n$1\r\na\r\n", 0, "too many keys", 1 },
    { "*2097155\r\n$4\r\nMSET\r\n", 0, "too many keys", 0 },
    { "*1048580\r\n$4\r\nEVAL\r\n$1\r\ns\r\n$7\r\n1048577\r\n", 0, "too many keys", 0 },
    { "*1048580\r\n$11\r\nZUNIONSTORE\r\n$1\r\nd\r\n$7\r\n1048576\r\n", 0, "too many keys", 0 },
};

static void test_protocol_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < NC_ARRAY_LEN(err_vectors); i++) {
        const struct err_vector *v = &err_vectors[i];
        size_t len = v->len ? v->len : strlen(v->in);
        for (size_t step = 0; step <= 1; step++) {
            struct tenv e;
            struct drv d;
            parse_one(&e, &d, v->in, len, step);
            if (!d.failed) print_error("vector %zu not refused\n", i);
            assert_true(d.failed);
            assert_false(d.gave_up);
            assert_string_equal(d.error, v->error);
            assert_int_equal(d.nout, v->ndone);
            drv_close(&d);
        }
    }
}

static void test_limits(void **state)
{
    (void)state;
    size_t big = 200 * 1024;
    char *in = malloc(big);
    assert_non_null(in);

    /* an inline line over 64 KiB */
    memset(in, 'a', big);
    memcpy(in, "get ", 4);
    in[70000] = '\n';
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, 256 * 1024, &redis_proto, false, false);
    drv_feed(&d, in, 70001, 4096);
    assert_true(d.failed);
    assert_string_equal(d.error, "too big inline request");
    drv_close(&d);

    /* an inline line just under it is fine */
    memset(in, 'a', big);
    memcpy(in, "get ", 4);
    in[REDIS_MAX_INLINE - 1] = '\n';
    drv_open(&d, &e, 256 * 1024, &redis_proto, false, false);
    drv_feed(&d, in, REDIS_MAX_INLINE, 4096);
    assert_false(d.failed);
    assert_int_equal(d.nout, 1);
    assert_int_equal(d.out[0]->keys[0].len, REDIS_MAX_INLINE - 5);
    drv_close(&d);

    /* empty requests: many are fine, too many in a row are not */
    size_t n = 0;
    for (int i = 0; i < 1000; i++) n += (size_t)sprintf(in + n, i % 2 ? "*0\r\n" : "\r\n");
    size_t blank = n;
    n += (size_t)sprintf(in + n, "%s", GETK);
    drv_open(&d, &e, SMALL_MBUF, &redis_proto, false, false);
    drv_feed(&d, in, n, 7);
    assert_false(d.failed);
    assert_int_equal(d.nout, 1);
    assert_int_equal(d.out[0]->len, n);
    assert_int_equal(d.out[0]->keys[0].start, blank + 13);
    char *t = msg_range_text(d.out[0], d.out[0]->keys[0].start, d.out[0]->keys[0].end);
    assert_string_equal(t, "$1\r\nk\r\n");
    free(t);
    drv_close(&d);

    n = 0;
    while (n <= REDIS_MAX_EMPTY + 8) n += (size_t)sprintf(in + n, "*0\r\n");
    drv_open(&d, &e, SMALL_MBUF, &redis_proto, false, false);
    drv_feed(&d, in, n, 100);
    assert_true(d.failed);
    assert_string_equal(d.error, "too many empty requests");
    drv_close(&d);

    /* a key larger than an mbuf: the core gives up (documented limit), no crash, no leak */
    n = (size_t)sprintf(in, "*2\r\n$3\r\nget\r\n$600\r\n");
    memset(in + n, 'k', 600);
    n += 600;
    n += (size_t)sprintf(in + n, "\r\n");
    drv_open(&d, &e, SMALL_MBUF, &redis_proto, false, false);
    drv_feed(&d, in, n, 0);
    assert_true(d.gave_up);
    drv_close(&d);
    /* ... and is fine with bigger mbufs */
    drv_open(&d, &e, 1024, &redis_proto, false, false);
    drv_feed(&d, in, n, 1);
    assert_false(d.failed);
    assert_int_equal(d.out[0]->keys[0].len, 600);
    drv_close(&d);
    free(in);
}

/*
 * An argument count is weighed as soon as the name (or numkeys) is read: over the key cap is
 * refused above (err_vectors); a request rejected anyway with more than MSG_KEYS_MAX arguments
 * after its name ends there, with its reject and quit (answered at once, then closed); a count
 * within the cap, or of arguments that are not keys, is read on.
 */
static void test_count_over_key_cap(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        uint8_t reject;
        const char *reply;
    } quits[] = {
        { "*1000000000\r\n$3\r\nGET\r\n", REJECT_ARITY,
          "-ERR wrong number of arguments for 'get' command\r\n" },
        { "*1048578\r\n$3\r\nGET\r\n", REJECT_ARITY,
          "-ERR wrong number of arguments for 'get' command\r\n" },
        { "*1048578\r\n$6\r\nNOSUCH\r\n", REJECT_UNSUPPORTED, "-ERR unsupported command 'nosuch'\r\n" },
        { "*2097154\r\n$4\r\nMSET\r\n", REJECT_ARITY, /* a key without its value */
          "-ERR wrong number of arguments for 'mset' command\r\n" },
        { "*1048580\r\n$4\r\nEVAL\r\n$1\r\ns\r\n$30\r\n", REJECT_ARITY,
          "-ERR wrong number of arguments for 'eval' command\r\n" },
        { "*1048580\r\n$4\r\nEVAL\r\n$1\r\ns\r\n$1\r\nx\r\n", REJECT_ARITY,
          "-ERR wrong number of arguments for 'eval' command\r\n" },
        { "*1048578\r\n$70\r\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
          REJECT_UNSUPPORTED,
          "-ERR unsupported command 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'\r\n" },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(quits); i++) {
        for (size_t step = 0; step <= 1; step++) {
            struct tenv e;
            struct drv d;
            parse_one(&e, &d, quits[i].in, strlen(quits[i].in), step);
            if (d.nout != 1) print_error("case %zu: %zu requests\n", i, d.nout);
            assert_false(d.failed);
            assert_int_equal(d.nout, 1);
            const struct msg *m = d.out[0];
            assert_int_equal(m->reject, quits[i].reject);
            assert_true(m->quit);
            assert_int_equal(m->nkeys, 0);
            char reply[256];
            size_t n = redis_proto.reject_reply(m, reply, sizeof(reply));
            assert_int_equal(n, strlen(quits[i].reply));
            assert_memory_equal(reply, quits[i].reply, n);
            drv_close(&d);
        }
    }
    /* within the cap, or not keys: the arguments are awaited */
    static const char *const pending[] = {
        "*1048577\r\n$3\r\nDEL\r\n$1\r\na\r\n",                /* 2^20 keys */
        "*1048577\r\n$3\r\nGET\r\n",                              /* 2^20 arguments */
        "*2097153\r\n$4\r\nMSET\r\n",
        "*3000000\r\n$4\r\nSADD\r\n$1\r\nk\r\n$1\r\nm\r\n",
        "*1048580\r\n$4\r\nEVAL\r\n$1\r\ns\r\n$7\r\n1048576\r\n",
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(pending); i++) {
        struct tenv e;
        struct drv d;
        parse_one(&e, &d, pending[i], strlen(pending[i]), 1);
        if (d.failed || d.nout != 0) print_error("case %zu: %s\n", i, d.failed ? d.error : "done");
        assert_false(d.failed);
        assert_int_equal(d.nout, 0);
        drv_close(&d);
    }
}

/* ---------------------------------------------------------------- randomized */

/* Appends a random request: a table command with random arguments (RESP or inline), sometimes
 * an unknown one, an empty one, or a wrong arity. */
static size_t random_request(char *out, size_t size, uint64_t *seed)
{
    static const char alphabet[] = "abcXYZ019-_*$:\r\n \t\"'";
    char args[12][40];
    const char *argv[12];
    uint64_t r = test_rand(seed);
    const struct redis_cmd *c = &redis_cmds[r % redis_ncmds];
    int argc = c->arity > 0 ? c->arity : -c->arity + (int)(test_rand(seed) % 4);
    if (argc > 12) argc = 12;
    if (test_rand(seed) % 8 == 0) argc = 1 + (int)(test_rand(seed) % 3); /* arity may be wrong */
    bool inl = test_rand(seed) % 4 == 0;
    snprintf(args[0], sizeof(args[0]), "%s", test_rand(seed) % 16 ? c->name : "nosuch");
    for (int i = 1; i < argc; i++) {
        size_t n = (size_t)(test_rand(seed) % 6);
        if (test_rand(seed) % 3 == 0) n = 1 + n * 5;
        for (size_t j = 0; j < n; j++)
            args[i][j] = inl ? (char)('a' + test_rand(seed) % 26)
                             : alphabet[test_rand(seed) % (sizeof(alphabet) - 1)];
        args[i][n] = '\0';
        if (inl && n == 0) snprintf(args[i], sizeof(args[i]), "x");
    }
    if (c->numkeys_pos > 0 && c->numkeys_pos < argc)
        snprintf(args[c->numkeys_pos], sizeof(args[0]), "%d", (int)(test_rand(seed) % 3));
    for (int i = 0; i < argc; i++) argv[i] = args[i];
    switch (test_rand(seed) % 10) {
    case 0: return (size_t)snprintf(out, size, "*0\r\n");
    case 1: return (size_t)snprintf(out, size, "\r\n");
    default: break;
    }
    if (!inl) return resp_build(out, size, argc, argv);
    size_t n = 0;
    for (int i = 0; i < argc; i++) n += (size_t)snprintf(out + n, size - n, i ? " %s" : "%s", argv[i]);
    return n + (size_t)snprintf(out + n, size - n, "\r\n");
}

static void test_random_requests(void **state)
{
    (void)state;
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    char *in = malloc(65536);
    assert_non_null(in);
    for (int round = 0; round < 60; round++) {
        size_t len = 0;
        int n = 1 + (int)(test_rand(&seed) % 40);
        for (int i = 0; i < n; i++) len += random_request(in + len, 65536 - len, &seed);
        drv_fuzz_splits(&redis_proto, false, false, in, len, BIG_MBUF, SMALL_MBUF, 20, 1 + len / 8,
                        &seed, summarize);
        drv_fuzz_splits(&redis_proto, false, false, in, len, BIG_MBUF, 0, 5, 3, &seed, summarize);
    }
    /* garbage from a protocol-ish alphabet: same findings however split, never a crash */
    static const char junk[] = "*$:+-\r\n0123456789abcGETgetMSETmset ";
    for (int round = 0; round < 300; round++) {
        size_t len = 1 + (size_t)(test_rand(&seed) % 300);
        for (size_t i = 0; i < len; i++) in[i] = junk[test_rand(&seed) % (sizeof(junk) - 1)];
        drv_fuzz_splits(&redis_proto, false, false, in, len, BIG_MBUF, SMALL_MBUF, 4, 1 + len / 4,
                        &seed, summarize);
    }
    free(in);
}

/* ---------------------------------------------------------------- big values */

static void test_big_values_small_mbufs(void **state)
{
    (void)state;
    size_t vlen = 100000;
    size_t size = vlen * 3 + 1024;
    char *in = malloc(size), *val = malloc(vlen + 1);
    assert_non_null(in);
    assert_non_null(val);
    for (size_t i = 0; i < vlen; i++) val[i] = (char)('a' + i % 26);
    val[vlen] = '\0';
    size_t n = (size_t)sprintf(in, "*3\r\n$3\r\nSET\r\n$6\r\nbigkey\r\n$%zu\r\n%s\r\n", vlen, val);
    size_t first = n;
    n += (size_t)sprintf(in + n, "*5\r\n$4\r\nMSET\r\n$2\r\nk1\r\n$%zu\r\n%s\r\n$2\r\nk2\r\n$%zu\r\n"
                                 "%s\r\n", vlen, val, vlen, val);
    n += (size_t)sprintf(in + n, "GET k3\r\n");
    static const size_t steps[] = { 0, 1, 7, 479, 480, 481, 1000, 65536 };
    for (size_t s = 0; s < NC_ARRAY_LEN(steps); s++) {
        struct tenv e;
        struct drv d;
        drv_open(&d, &e, SMALL_MBUF, &redis_proto, false, false);
        drv_feed(&d, in, n, steps[s]);
        assert_false(d.failed);
        assert_int_equal(d.nout, 3);
        struct msg *m = d.out[0];
        assert_int_equal(m->len, first);
        assert_true(m->nspans > 100);
        assert_int_equal(m->nkeys, 1);
        assert_memory_equal(m->keys[0].ptr, "bigkey", 6);
        char *t = msg_text(m);
        assert_memory_equal(t, in, first);
        free(t);
        m = d.out[1];
        assert_int_equal(m->nkeys, 2);
        assert_memory_equal(m->keys[1].ptr, "k2", 2);
        assert_int_equal(m->keys[0].end - m->keys[0].start, 8 + 9 + vlen + 2);
        assert_int_equal(m->keys[1].end, m->len);
        t = msg_range_text(m, m->keys[1].start, m->keys[1].end);
        assert_memory_equal(t, "$2\r\nk2\r\n$100000\r\nabc", 20);
        free(t);
        assert_memory_equal(d.out[2]->keys[0].ptr, "k3", 2);
        drv_close(&d);
    }
    free(in);
    free(val);
}

/* ---------------------------------------------------------------- what the proxy answers itself */

/* local()'s verdict for d's msg i, with its reply text in *text (NUL-terminated). */
static int local_of(struct drv *d, size_t i, struct proto_session *s, const struct conf_pool *cp,
                    char *text, size_t size)
{
    struct msg *rsp = msg_get(&d->env->pp);
    assert_non_null(rsp);
    int rc = redis_proto.local(s, cp, d->out[i], rsp);
    size_t n = msg_copy_out(rsp, 0, text, size - 1);
    text[n] = '\0';
    msg_put(&d->env->pp, rsp);
    return rc;
}

static void test_local_answers(void **state)
{
    (void)state;
    static const char in[] = "*1\r\n$3\r\nGET\r\n"                       /* 0: arity reject */
                             "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"            /* 1: forwarded once admitted */
                             "*2\r\n$4\r\nAUTH\r\n$5\r\nwrong\r\n"       /* 2 */
                             "*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n"      /* 3 */
                             "*1\r\n$4\r\nPING\r\n"                       /* 4 */
                             "*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n"          /* 5 */
                             "*1\r\n$4\r\nQUIT\r\n";                      /* 6 */
    struct tenv e;
    struct drv d;
    parse_one(&e, &d, in, sizeof(in) - 1, 1);
    assert_int_equal(d.nout, 7);
    struct conf_pool cp;
    memset(&cp, 0, sizeof(cp));
    cp.redis = true;
    cp.redis_auth = "secret";
    struct proto_session s;
    char t[256];
    redis_proto.session_init(&s, &cp, NULL);
    assert_false(s.admitted);
    assert_int_equal(local_of(&d, 0, &s, &cp, t, sizeof(t)), PROTO_ANSWERED);
    assert_string_equal(t, "-ERR wrong number of arguments for 'get' command\r\n");
    assert_int_equal(local_of(&d, 1, &s, &cp, t, sizeof(t)), PROTO_ANSWERED);
    assert_string_equal(t, "-NOAUTH Authentication required.\r\n");
    assert_int_equal(local_of(&d, 4, &s, &cp, t, sizeof(t)), PROTO_ANSWERED);
    assert_string_equal(t, "-NOAUTH Authentication required.\r\n");
    assert_int_equal(local_of(&d, 2, &s, &cp, t, sizeof(t)), PROTO_ANSWERED);
    assert_string_equal(t, "-ERR invalid password\r\n");
    assert_false(s.admitted);
    assert_int_equal(local_of(&d, 3, &s, &cp, t, sizeof(t)), PROTO_ANSWERED);
    assert_string_equal(t, "+OK\r\n");
    assert_true(s.admitted);
    assert_int_equal(local_of(&d, 1, &s, &cp, t, sizeof(t)), PROTO_FORWARD);
    assert_string_equal(t, "");
    assert_int_equal(local_of(&d, 4, &s, &cp, t, sizeof(t)), PROTO_ANSWERED);
    assert_string_equal(t, "+PONG\r\n");
    assert_int_equal(local_of(&d, 5, &s, &cp, t, sizeof(t)), PROTO_ANSWERED);
    assert_string_equal(t, "$2\r\nhi\r\n");
    assert_int_equal(local_of(&d, 6, &s, &cp, t, sizeof(t)), PROTO_ANSWERED_CLOSE);
    assert_string_equal(t, "+OK\r\n");

    /* a reload to the same password keeps the client in; another password, or none, decides anew */
    struct conf_pool same = cp, other = cp, none = cp;
    other.redis_auth = "other";
    none.redis_auth = NULL;
    redis_proto.session_init(&s, &same, &cp);
    assert_true(s.admitted);
    redis_proto.session_init(&s, &other, &same);
    assert_false(s.admitted);
    redis_proto.session_init(&s, &none, &other);
    assert_true(s.admitted);
    /* without a password AUTH is an error, and nothing is gated */
    assert_int_equal(local_of(&d, 3, &s, &none, t, sizeof(t)), PROTO_ANSWERED);
    assert_string_equal(t, "-ERR Client sent AUTH, but no password is set\r\n");
    assert_int_equal(local_of(&d, 1, &s, &none, t, sizeof(t)), PROTO_FORWARD);
    drv_close(&d);
}

/* The set-up of a new server connection (variant 1: for RESP3 clients, HELLO 3 with the AUTH
 * inside) is what want[] says. */
static void check_server_setup(struct tenv *e, const struct conf_pool *cp, uint8_t variant,
                               const char *const *want, int nwant)
{
    struct msg *out[PROTO_SETUP_MAX];
    assert_int_equal(redis_proto.server_setup(cp, variant, false, &e->pp, out, PROTO_SETUP_MAX), nwant);
    char t[128];
    for (int i = 0; i < nwant; i++) {
        size_t n = msg_copy_out(out[i], 0, t, sizeof(t) - 1);
        t[n] = '\0';
        assert_string_equal(t, want[i]);
        assert_true(out[i]->swallow);
        msg_put(&e->pp, out[i]);
    }
}

static void test_server_setup(void **state)
{
    (void)state;
    struct tenv e;
    tenv_init(&e, 4096);
    struct conf_pool cp;
    memset(&cp, 0, sizeof(cp));
    cp.redis = true;
    static const char *const hello[] = { "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n" };
    check_server_setup(&e, &cp, 0, NULL, 0);
    check_server_setup(&e, &cp, 1, hello, 1);
    cp.redis_auth = "pw";
    cp.redis_db = 12;
    static const char *const want[] = { "*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n",
                                         "*2\r\n$6\r\nSELECT\r\n$2\r\n12\r\n" };
    check_server_setup(&e, &cp, 0, want, 2);
    static const char *const want3[] = { "*5\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n"
                                         "$2\r\npw\r\n",
                                         "*2\r\n$6\r\nSELECT\r\n$2\r\n12\r\n" };
    check_server_setup(&e, &cp, 1, want3, 2);
    tenv_deinit(&e);
}

static void test_probe_alive(void **state)
{
    (void)state;
    static const struct {
        const char *reply;
        bool alive;
    } cases[] = {
        { "+PONG\r\n", true },
        { "-NOAUTH Authentication required.\r\n", true }, /* the probe sends no AUTH: up */
        { "-MISCONF errors writing to disk\r\n", true },
        { "-ERR max number of clients reached\r\n", true },
        { "-LOADING Redis is loading the dataset in memory\r\n", false },
        { "-BUSY Redis is busy running a script\r\n", false },
        { "-MASTERDOWN Link with MASTER is down\r\n", false },
        { "-BUSY\r\n", false },
        { "+PONG", false },  /* no line yet */
        { "$4\r\nPONG\r\n", false },
        { "garbage\r\n", false },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool got = redis_proto.probe_alive((const uint8_t *)cases[i].reply, strlen(cases[i].reply));
        if (got != cases[i].alive) fail_msg("probe_alive(%s) = %d", cases[i].reply, got);
    }
    assert_string_equal(redis_proto.probe_request, "*1\r\n$4\r\nPING\r\n");
    assert_string_equal(redis_proto.max_clients_reply, "-ERR max number of clients reached\r\n");
    char buf[128];
    size_t n = redis_proto.protocol_error_reply("invalid bulk length", buf, sizeof(buf));
    assert_int_equal(n, strlen("-ERR Protocol error: invalid bulk length\r\n"));
    assert_memory_equal(buf, "-ERR Protocol error: invalid bulk length\r\n", n);
}

/* ---------------------------------------------------------------- replies, helpers */

static void test_error_reply(void **state)
{
    (void)state;
    char buf[128];
    size_t n = redis_proto.error_reply(NULL, ECONNREFUSED, buf, sizeof(buf));
    assert_int_equal(n, strlen("-ERR Connection refused\r\n"));
    assert_memory_equal(buf, "-ERR Connection refused\r\n", n);
    n = redis_proto.error_reply(NULL, ETIMEDOUT, buf, sizeof(buf));
    assert_memory_equal(buf, "-ERR Connection timed out\r\n", n);
    n = redis_proto.error_reply(NULL, EINVAL, buf, sizeof(buf));
    assert_memory_equal(buf, "-ERR Invalid argument\r\n", n);
    n = redis_proto.error_reply(NULL, EHOSTDOWN, buf, 12);
    assert_int_equal(n, 12);
    assert_memory_equal(buf, "-ERR Host \r\n", 12);
    assert_int_equal(redis_proto.error_reply(NULL, EINVAL, buf, 6), 0);
    assert_string_equal(redis_proto.name, "redis");
}

/* ---------------------------------------------------------------- blocking commands */

/* A blocking command's timeout: seconds or milliseconds, a fraction and an exponent allowed, 0 for
 * ever; what is not a non-negative number is not read (redis answers it at once). */
static void test_parse_timeout(void **state)
{
    (void)state;
    static const struct { const char *s; uint32_t unit; bool ok; uint32_t ms; } v[] = {
        { "0", 1000, true, MSG_BLOCK_FOREVER }, { "0.0", 1000, true, MSG_BLOCK_FOREVER },
        { "1", 1000, true, 1000 }, { "1.5", 1000, true, 1500 }, { "0.25", 1000, true, 250 },
        { ".5", 1000, true, 500 }, { "1e1", 1000, true, 10000 }, { "2E-3", 1000, true, 2 },
        { "0.0001", 1000, true, 1 }, /* rounded up: it still blocks */
        { "200", 1, true, 200 }, { "0", 1, true, MSG_BLOCK_FOREVER }, { "0.5", 1, true, 1 },
        { "4294967", 1000, true, 4294967000u }, /* the longest: 49 days */
        { "4294968", 1000, true, MSG_BLOCK_FOREVER }, { "1e30", 1000, true, MSG_BLOCK_FOREVER },
        { "", 1000, false, 0 }, { "-1", 1000, false, 0 }, { "abc", 1000, false, 0 },
        { "1x", 1000, false, 0 }, { " 1", 1000, false, 0 }, { "inf", 1000, false, 0 },
        { "nan", 1000, false, 0 }, { "0x10", 1000, false, 0 }, { "1e999", 1000, false, 0 },
        { "1.2.3", 1000, false, 0 }, { "000000000000000000000000000000001", 1000, false, 0 },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(v); i++) {
        uint32_t out = 42;
        bool ok = redis_parse_timeout((const uint8_t *)v[i].s, strlen(v[i].s), v[i].unit, &out);
        if (ok != v[i].ok) print_error("'%s': %d\n", v[i].s, ok);
        assert_int_equal(ok, v[i].ok);
        assert_int_equal(out, v[i].ok ? v[i].ms : 42);
    }
}

/* The parser reads a blocking command's timeout into msg.block_ms (RESP and inline, whole and
 * byte by byte); XREAD/XREADGROUP become blocking with BLOCK; other commands have none. */
static void test_block_timeout_arg(void **state)
{
    (void)state;
    static const struct { const char *line; bool block; uint32_t ms; } v[] = {
        { "BLPOP a b 0", true, MSG_BLOCK_FOREVER },
        { "BLPOP a 2.5", true, 2500 },
        { "BRPOP a b c 1", true, 1000 },
        { "BRPOPLPUSH s d 0.1", true, 100 },
        { "BLMOVE s d LEFT RIGHT 3", true, 3000 },
        { "BLMPOP 0.5 2 a b LEFT COUNT 2", true, 500 },
        { "BZMPOP 4 1 z MAX", true, 4000 },
        { "BZPOPMIN z 0", true, MSG_BLOCK_FOREVER },
        { "BZPOPMAX z 7", true, 7000 },
        { "BLPOP a soon", true, MSG_BLOCK_FOREVER }, /* not a number: redis's error, at once */
        { "BLPOP a 123456789012345678901234567890123", true, MSG_BLOCK_FOREVER }, /* too long to read */
        { "XREAD BLOCK 200 STREAMS s 0", true, 200 },
        { "XREAD COUNT 2 BLOCK 0 STREAMS s t 0 0", true, MSG_BLOCK_FOREVER },
        { "XREADGROUP GROUP g c BLOCK 1500 COUNT 1 STREAMS s >", true, 1500 },
        { "XREAD COUNT 2 STREAMS s 0", false, 0 },
        { "GET k", false, 0 },
        { "LPOP k", false, 0 },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(v); i++) {
        for (int inl = 0; inl <= 1; inl++) {
            char wbuf[256], in[1024];
            const char *argv[16];
            int argc;
            size_t len = line_request(v[i].line, inl, in, sizeof(in), argv, &argc, wbuf, sizeof(wbuf));
            for (size_t step = 0; step <= 1; step++) {
                struct tenv e;
                struct drv d;
                parse_one(&e, &d, in, len, step);
                struct msg *m = d.nout == 1 ? d.out[0] : NULL;
                assert_true(!d.failed && m != NULL && m->reject == REJECT_NONE);
                if (((m->cmd_flags & CMD_F_BLOCK) != 0) != v[i].block || m->block_ms != v[i].ms)
                    print_error("'%s': flags %x ms %u\n", v[i].line, m->cmd_flags, m->block_ms);
                assert_int_equal((m->cmd_flags & CMD_F_BLOCK) != 0, v[i].block);
                assert_int_equal(m->block_ms, v[i].ms);
                drv_close(&d);
            }
        }
    }
}

static void test_parse_int(void **state)
{
    (void)state;
    static const struct { const char *s; bool ok; int64_t v; } v[] = {
        { "0", true, 0 }, { "7", true, 7 }, { "-1", true, -1 }, { "1234567890", true, 1234567890 },
        { "9223372036854775807", true, INT64_MAX }, { "-9223372036854775808", true, INT64_MIN },
        { "9223372036854775808", false, 0 }, { "-9223372036854775809", false, 0 },
        { "", false, 0 }, { "-", false, 0 }, { "-0", false, 0 }, { "00", false, 0 },
        { "01", false, 0 }, { "+1", false, 0 }, { "1a", false, 0 }, { " 1", false, 0 },
        { "99999999999999999999", false, 0 },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(v); i++) {
        int64_t out = 42;
        assert_int_equal(redis_parse_int((const uint8_t *)v[i].s, strlen(v[i].s), &out), v[i].ok);
        if (v[i].ok) assert_int_equal(out, v[i].v);
    }
    const uint8_t *l = (const uint8_t *)"$12\r\nabc";
    assert_int_equal(redis_line(l, 8, 32), 3);
    assert_int_equal(redis_line(l, 4, 32), REDIS_LINE_AGAIN);
    assert_int_equal(redis_line(l, 3, 32), REDIS_LINE_AGAIN);
    assert_int_equal(redis_line(l, 8, 4), REDIS_LINE_BAD); /* 5 bytes with CRLF */
    assert_int_equal(redis_line(l, 8, 5), 3);
    assert_int_equal(redis_line(l, 3, 4), REDIS_LINE_BAD);
    assert_int_equal(redis_line(l, 2, 4), REDIS_LINE_AGAIN);
    assert_int_equal(redis_line((const uint8_t *)"$1\rx", 4, 32), REDIS_LINE_BAD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_sorted_and_lookup),
        cmocka_unit_test(test_refused_names),
        cmocka_unit_test(test_table_flags),
        cmocka_unit_test(test_keys_every_command),
        cmocka_unit_test(test_pipeline_whole),
        cmocka_unit_test(test_pipeline_every_split),
        cmocka_unit_test(test_inline),
        cmocka_unit_test(test_reject_unsupported_then_valid),
        cmocka_unit_test(test_txn_replies),
        cmocka_unit_test(test_reject_arity_then_valid),
        cmocka_unit_test(test_reject_long_and_odd_names),
        cmocka_unit_test(test_nul_in_name),
        cmocka_unit_test(test_special_commands),
        cmocka_unit_test(test_protocol_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_count_over_key_cap),
        cmocka_unit_test(test_random_requests),
        cmocka_unit_test(test_big_values_small_mbufs),
        cmocka_unit_test(test_error_reply),
        cmocka_unit_test(test_local_answers),
        cmocka_unit_test(test_server_setup),
        cmocka_unit_test(test_probe_alive),
        cmocka_unit_test(test_parse_int),
        cmocka_unit_test(test_parse_timeout),
        cmocka_unit_test(test_block_timeout_arg),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
