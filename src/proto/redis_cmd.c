/*
 * redis_cmd.c - the redis command table (see redis_cmd.h) and its case-insensitive lookup.
 *
 * The set of commands is twemproxy 0.5.0's (twemproxy-behaviour.md 1.5, including what its code
 * parses beyond its notes: COPY, TOUCH, UNLINK, MOVE, HRANDFIELD, HSTRLEN, ...); arities and key
 * positions are redis 7's. The table is sorted by name (a unit test checks it); a request's name
 * is found through a hash index built once at load (one pass over the name lowercases and hashes
 * it, then usually one slot and one compare). Beyond twemproxy's set: the transaction commands
 * (MULTI, EXEC, DISCARD, WATCH, UNWATCH), which the core runs on a dedicated server connection; the
 * connection handshake the proxy answers itself (HELLO, CLIENT, ECHO, SELECT, RESET; HELLO and
 * INFO from every server's INFO, notes/resp3-and-handshake.md); TIME, sent to any server; the
 * streams (XREAD and XREADGROUP: keys after STREAMS, on one server); the blocking commands (BLPOP,
 * ..., XREAD with BLOCK: CMD_F_BLOCK, on a dedicated server connection, notes/blocking-commands.md);
 * the commands sent to every server (KEYS, DBSIZE, RANDOMKEY, SCAN, SCRIPT, PUBSUB, FLUSHDB,
 * FLUSHALL: notes/fan-out.md); the commands of cluster-mode clients (CLUSTER, READONLY, READWRITE,
 * answered by the proxy in a pool with client_cluster_mode, unknown elsewhere:
 * notes/cluster-clients.md); redis 7's functions (FUNCTION to every server or the first, FCALL and
 * FCALL_RO by their keys), the introspection tools ask for (CONFIG GET from the first server, ROLE
 * answered by the proxy, OBJECT and MEMORY USAGE by key) and the rest of redis 7's commands that a
 * key routes (EXPIRETIME, LCS, LMPOP, RENAME, BITOP, ..., the hash field expiry commands of 7.4 and
 * 8): notes/functions-and-introspection.md.
 * Beside it, the names of redis's commands that are not in it, or only in a pool with
 * client_cluster_mode: what a refused request is counted under (notes/refused-commands.md).
 *
 * Threads: const data (the index is written once, before main() runs); any thread.
 */
#include "config.h"
#include "proto/redis_cmd.h"

#include <stddef.h>

#include "proto/proto.h"

#define W CMD_F_WRITE

/* name, arity, first key, last key, key step, numkeys position, flags */
#define NOKEY(n, ar, fl)   { n, ar, 0, 0, 0, 0, fl, 0, 0, 0 }
#define KEY1(n, ar, fl)    { n, ar, 1, 1, 1, 0, fl, 0, 0, 0 }    /* one key, at arg 1 */
#define KEY2(n, ar, fl)    { n, ar, 2, 2, 1, 0, fl, 0, 0, 0 }    /* one key, at arg 2 (after a subcommand) */
#define KEY12(n, ar, fl)   { n, ar, 1, 2, 1, 0, fl, 0, 0, 0 }    /* keys at args 1 and 2 */
#define KEYALL(n, ar, fl)  { n, ar, 1, -1, 1, 0, fl, 0, 0, 0 }   /* every arg after the name is a key */
#define NUMK(n, ar, pos, fl) { n, ar, 0, 0, 0, pos, fl, 0, 0, 0 } /* numkeys at pos, keys after it */
#define DESTNUMK(n, ar, fl) { n, ar, 1, 1, 1, 2, fl, 0, 0, 0 }  /* dest key, numkeys, keys */
/* keys after STREAMS, on one server (XREAD, XREADGROUP) */
#define STREAMS(n, ar, fl) { n, ar, 0, 0, 0, REDIS_KEYS_STREAMS, CMD_F_FRAG_ONE | (fl), 0, 0, 0 }
/* answered (or checked) by the proxy: every argument a "key", for local() to read */
#define LOCAL(n, ar, fl, which) { n, ar, 1, -1, 1, 0, CMD_F_LOCAL | (fl), which, 0, 0 }
/* sent to every server, the replies merged as fan says */
#define ALL(n, ar, fl, fan) { n, ar, 0, 0, 0, 0, CMD_F_FRAG_ALL | (fl), 0, fan, 0 }
/* blocking (CMD_F_BLOCK): keys at args first..last (< 0: from the end), the timeout at tpos */
#define BLOCKING(n, ar, first, last, tpos) { n, ar, first, last, 1, 0, W | CMD_F_BLOCK, 0, 0, tpos }
/* blocking, the timeout at arg 1 and numkeys at arg 2 (BLMPOP, BZMPOP) */
#define BLOCKNUMK(n, ar) { n, ar, 0, 0, 0, 2, W | CMD_F_BLOCK, 0, 0, 1 }
#define LOCALALL(n, ar, fl, which, fan) { n, ar, 1, -1, 1, 0, CMD_F_LOCAL | CMD_F_FRAG_ALL | (fl), which, fan, 0 }
/* Pub/Sub subscriptions (feature/pubsub.c): every argument a channel or pattern */
#define PUBSUB(n, ar, fl) { n, ar, 1, -1, 1, 0, CMD_F_PUBSUB | (fl), 0, 0, 0 }
/* checked by the proxy (local()), then sent to every server or to the first as fan says: only the
 * subcommand is a "key", for local() to read (a library's code, a payload: any size) */
#define SUBCMD(n, ar, fl, which, fan) { n, ar, 1, 1, 1, 0, CMD_F_LOCAL | CMD_F_FRAG_ALL | (fl), which, fan, 0 }
/* keys from arg first to last (< 0: from the end), all on one server (else the proxy's error) */
#define ONESRV(n, ar, first, last, fl) { n, ar, first, last, 1, 0, CMD_F_FRAG_ONE | (fl), 0, 0, 0 }

const struct redis_cmd redis_cmds[] = {
    KEY1("append", 3, W),
    KEYALL("auth", -2, CMD_F_AUTH), /* "keys": the arguments, for the proxy to check */
    KEY1("bitcount", -2, 0),
    KEY1("bitfield", -2, W),
    KEY1("bitfield_ro", -2, 0),
    ONESRV("bitop", -4, 2, -1, W),  /* BITOP op dest key...: every key on one server */
    KEY1("bitpos", -3, 0),
    BLOCKING("blmove", 6, 1, 2, 5),
    BLOCKNUMK("blmpop", -5),
    BLOCKING("blpop", -3, 1, -2, -1),
    BLOCKING("brpop", -3, 1, -2, -1),
    BLOCKING("brpoplpush", 4, 1, 2, 3),
    BLOCKNUMK("bzmpop", -5),
    BLOCKING("bzpopmax", -3, 1, -2, -1),
    BLOCKING("bzpopmin", -3, 1, -2, -1),
    LOCAL("client", -2, 0, REDIS_LOCAL_CLIENT),
    LOCAL("cluster", -2, 0, REDIS_LOCAL_CLUSTER), /* a pool with client_cluster_mode only */
    NOKEY("command", -1, CMD_F_ANY_SERVER),
    SUBCMD("config", -2, 0, REDIS_LOCAL_CONFIG, REDIS_FAN_FIRST),
    KEY12("copy", -3, W),
    ALL("dbsize", 1, 0, REDIS_FAN_SUM),
    KEY1("decr", 2, W),
    KEY1("decrby", 3, W),
    KEYALL("del", -2, W | CMD_F_FRAG_SUM),
    NOKEY("discard", 1, CMD_F_DISCARD),
    KEY1("dump", 2, 0),
    LOCAL("echo", 2, CMD_F_TXN_SERVER, REDIS_LOCAL_ECHO),
    NUMK("eval", -3, 2, W),
    NUMK("eval_ro", -3, 2, CMD_F_FRAG_ONE),
    NUMK("evalsha", -3, 2, W),
    /* W: not a write, but kept off the replicas, where SCRIPT LOAD (to the masters) put no script */
    NUMK("evalsha_ro", -3, 2, W | CMD_F_FRAG_ONE),
    NOKEY("exec", 1, CMD_F_EXEC),
    KEYALL("exists", -2, CMD_F_FRAG_SUM),
    KEY1("expire", -3, W),
    KEY1("expireat", -3, W),
    KEY1("expiretime", 2, 0),
    /* a function's keys on one server: run anywhere else it would not see them (EVAL and EVALSHA
     * keep twemproxy's way: the first key's server) */
    NUMK("fcall", -3, 2, W | CMD_F_FRAG_ONE),
    NUMK("fcall_ro", -3, 2, CMD_F_FRAG_ONE),
    LOCALALL("flushall", -1, W, REDIS_LOCAL_FLUSH, REDIS_FAN_OK),
    LOCALALL("flushdb", -1, W, REDIS_LOCAL_FLUSH, REDIS_FAN_OK),
    SUBCMD("function", -2, W, REDIS_LOCAL_FUNCTION, REDIS_FAN_FUNCTION),
    KEY1("geoadd", -5, W),
    KEY1("geodist", -4, 0),
    KEY1("geohash", -2, 0),
    KEY1("geopos", -2, 0),
    KEY1("georadius", -6, W),
    KEY1("georadius_ro", -6, 0),
    KEY1("georadiusbymember", -5, W),
    KEY1("georadiusbymember_ro", -5, 0),
    KEY1("geosearch", -7, 0),
    KEY12("geosearchstore", -8, W),
    KEY1("get", 2, 0),
    KEY1("getbit", 3, 0),
    KEY1("getdel", 2, W),
    KEY1("getex", -2, W),
    KEY1("getrange", 4, 0),
    KEY1("getset", 3, W),
    KEY1("hdel", -3, W),
    LOCALALL("hello", -1, CMD_F_FRAG_PARTIAL | CMD_F_SWITCH, REDIS_LOCAL_HELLO, REDIS_FAN_INFO),
    KEY1("hexists", 3, 0),
    /* the hash field expiry commands of redis 7.4 and 8: forwarded, an older server answers its
     * unknown-command error */
    KEY1("hexpire", -6, W),
    KEY1("hexpireat", -6, W),
    KEY1("hexpiretime", -5, 0),
    KEY1("hget", 3, 0),
    KEY1("hgetall", 2, 0),
    KEY1("hgetdel", -5, W),
    KEY1("hgetex", -5, W),
    KEY1("hincrby", 4, W),
    KEY1("hincrbyfloat", 4, W),
    KEY1("hkeys", 2, 0),
    KEY1("hlen", 2, 0),
    KEY1("hmget", -3, 0),
    KEY1("hmset", -4, W),
    KEY1("hpersist", -5, W),
    KEY1("hpexpire", -6, W),
    KEY1("hpexpireat", -6, W),
    KEY1("hpexpiretime", -5, 0),
    KEY1("hpttl", -5, 0),
    KEY1("hrandfield", -2, 0),
    KEY1("hscan", -3, 0),
    KEY1("hset", -4, W),
    KEY1("hsetex", -6, W),
    KEY1("hsetnx", 4, W),
    KEY1("hstrlen", 3, 0),
    KEY1("httl", -5, 0),
    KEY1("hvals", 2, 0),
    KEY1("incr", 2, W),
    KEY1("incrby", 3, W),
    KEY1("incrbyfloat", 3, W),
    LOCALALL("info", -1, CMD_F_FRAG_PARTIAL, REDIS_LOCAL_INFO, REDIS_FAN_INFO),
    ALL("keys", 2, 0, REDIS_FAN_KEYS),
    ONESRV("lcs", -3, 1, 2, 0),
    KEY1("lindex", 3, 0),
    KEY1("linsert", 5, W),
    KEY1("llen", 2, 0),
    KEY12("lmove", 5, W),
    NUMK("lmpop", -4, 1, W | CMD_F_FRAG_ONE),
    NOKEY("lolwut", -1, CMD_F_ANY_SERVER),
    KEY1("lpop", -2, W),
    KEY1("lpos", -3, 0),
    KEY1("lpush", -3, W),
    KEY1("lpushx", -3, W),
    KEY1("lrange", 4, 0),
    KEY1("lrem", 4, W),
    KEY1("lset", 4, W),
    KEY1("ltrim", 4, W),
    /* MEMORY USAGE key [SAMPLES n]: routed by its key at arg 2; without a key, local() refuses it */
    { "memory", -2, 2, 2, 1, 0, CMD_F_LOCAL, REDIS_LOCAL_MEMORY, 0, 0 },
    KEYALL("mget", -2, CMD_F_FRAG_MGET),
    KEY1("move", 3, W),
    { "mset", -3, 1, -1, 2, 0, W | CMD_F_FRAG_MSET, 0, 0, 0 },
    /* all or nothing: its keys on one server (one slot of a Redis Cluster, which says CROSSSLOT) */
    { "msetnx", -3, 1, -1, 2, 0, W | CMD_F_FRAG_ONE, 0, 0, 0 },
    NOKEY("multi", 1, CMD_F_MULTI),
    KEY2("object", -2, 0),       /* OBJECT ENCODING|FREQ|IDLETIME|REFCOUNT key; HELP: any server */
    KEY1("persist", 2, W),
    KEY1("pexpire", -3, W),
    KEY1("pexpireat", -3, W),
    KEY1("pexpiretime", 2, 0),
    KEY1("pfadd", -2, W),
    KEYALL("pfcount", -2, 0),
    KEYALL("pfmerge", -2, W),
    KEYALL("ping", -1, CMD_F_LOCAL_PING | CMD_F_TXN_SERVER), /* "key": the optional message */
    KEY1("psetex", 4, W),
    PUBSUB("psubscribe", -2, CMD_F_PS_PATTERN),
    KEY1("pttl", 2, 0),
    KEY1("publish", 3, W),      /* the channel is the key: it lives where its name hashes */
    LOCALALL("pubsub", -2, CMD_F_FRAG_ELEMS, REDIS_LOCAL_PUBSUB, REDIS_FAN_PUBSUB),
    PUBSUB("punsubscribe", -1, CMD_F_PS_PATTERN | CMD_F_PS_UNSUB),
    NOKEY("quit", -1, CMD_F_QUIT),
    ALL("randomkey", 1, CMD_F_FRAG_PARTIAL, REDIS_FAN_RANDOMKEY),
    LOCAL("readonly", 1, 0, REDIS_LOCAL_READONLY),   /* a pool with client_cluster_mode only */
    LOCAL("readwrite", 1, 0, REDIS_LOCAL_READONLY),  /* a pool with client_cluster_mode only */
    ONESRV("rename", 3, 1, 2, W),
    ONESRV("renamenx", 3, 1, 2, W),
    LOCAL("reset", 1, CMD_F_SWITCH | CMD_F_RESET, REDIS_LOCAL_RESET),
    KEY1("restore", -4, W),
    LOCAL("role", 1, 0, REDIS_LOCAL_ROLE),
    KEY1("rpop", -2, W),
    KEY12("rpoplpush", 3, W),
    KEY1("rpush", -3, W),
    KEY1("rpushx", -3, W),
    KEY1("sadd", -3, W),
    LOCALALL("scan", -2, CMD_F_FRAG_ELEMS, REDIS_LOCAL_SCAN, REDIS_FAN_SCAN),
    KEY1("scard", 2, 0),
    LOCALALL("script", -2, CMD_F_FRAG_ELEMS, REDIS_LOCAL_SCRIPT, REDIS_FAN_SCRIPT),
    KEYALL("sdiff", -2, 0),
    KEYALL("sdiffstore", -3, W),
    LOCAL("select", 2, 0, REDIS_LOCAL_SELECT),
    KEY1("set", -3, W),
    KEY1("setbit", 4, W),
    KEY1("setex", 4, W),
    KEY1("setnx", 3, W),
    KEY1("setrange", 4, W),
    KEYALL("sinter", -2, 0),
    NUMK("sintercard", -3, 1, CMD_F_FRAG_ONE),
    KEYALL("sinterstore", -3, W),
    KEY1("sismember", 3, 0),
    KEY1("smembers", 2, 0),
    KEY1("smismember", -3, 0),
    KEY12("smove", 4, W),
    KEY1("sort", -2, W),
    KEY1("sort_ro", -2, 0),
    KEY1("spop", -2, W),
    KEY1("spublish", 3, W),
    KEY1("srandmember", -2, 0),
    KEY1("srem", -3, W),
    KEY1("sscan", -3, 0),
    PUBSUB("ssubscribe", -2, CMD_F_PS_SHARD),
    KEY1("strlen", 2, 0),
    PUBSUB("subscribe", -2, 0),
    KEY1("substr", 4, 0),
    KEYALL("sunion", -2, 0),
    KEYALL("sunionstore", -3, W),
    PUBSUB("sunsubscribe", -1, CMD_F_PS_SHARD | CMD_F_PS_UNSUB),
    NOKEY("time", 1, CMD_F_ANY_SERVER),
    KEYALL("touch", -2, CMD_F_FRAG_SUM),
    KEY1("ttl", 2, 0),
    KEY1("type", 2, 0),
    KEYALL("unlink", -2, W | CMD_F_FRAG_SUM),
    PUBSUB("unsubscribe", -1, CMD_F_PS_UNSUB),
    NOKEY("unwatch", 1, CMD_F_UNWATCH),
    KEYALL("watch", -2, CMD_F_WATCH),
    KEY1("xack", -4, W),
    KEY1("xadd", -5, W),
    KEY1("xautoclaim", -6, W),
    KEY1("xclaim", -6, W),
    KEY1("xdel", -3, W),
    KEY2("xgroup", -2, W),      /* XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER key ... */
    KEY2("xinfo", -2, 0),       /* XINFO STREAM|GROUPS|CONSUMERS key ... */
    KEY1("xlen", 2, 0),
    KEY1("xpending", -3, 0),
    KEY1("xrange", -4, 0),
    STREAMS("xread", -4, 0),
    STREAMS("xreadgroup", -7, W),
    KEY1("xrevrange", -4, 0),
    KEY1("xsetid", -3, W),
    KEY1("xtrim", -4, W),
    KEY1("zadd", -4, W),
    KEY1("zcard", 2, 0),
    KEY1("zcount", 4, 0),
    NUMK("zdiff", -3, 1, 0),
    DESTNUMK("zdiffstore", -4, W),
    KEY1("zincrby", 4, W),
    NUMK("zinter", -3, 1, 0),
    NUMK("zintercard", -3, 1, CMD_F_FRAG_ONE),
    DESTNUMK("zinterstore", -4, W),
    KEY1("zlexcount", 4, 0),
    NUMK("zmpop", -4, 1, W | CMD_F_FRAG_ONE),
    KEY1("zmscore", -3, 0),
    KEY1("zpopmax", -2, W),
    KEY1("zpopmin", -2, W),
    KEY1("zrandmember", -2, 0),
    KEY1("zrange", -4, 0),
    KEY1("zrangebylex", -4, 0),
    KEY1("zrangebyscore", -4, 0),
    KEY12("zrangestore", -5, W),
    KEY1("zrank", -3, 0),
    KEY1("zrem", -3, W),
    KEY1("zremrangebylex", 4, W),
    KEY1("zremrangebyrank", 4, W),
    KEY1("zremrangebyscore", 4, W),
    KEY1("zrevrange", -4, 0),
    KEY1("zrevrangebylex", -4, 0),
    KEY1("zrevrangebyscore", -4, 0),
    KEY1("zrevrank", -3, 0),
    KEY1("zscan", -3, 0),
    KEY1("zscore", 3, 0),
    NUMK("zunion", -3, 1, 0),
    DESTNUMK("zunionstore", -4, W),
};

const size_t redis_ncmds = sizeof(redis_cmds) / sizeof(redis_cmds[0]);

/* The hash index: REDIS_CMD_SLOTS slots (over twice the commands: short probe runs), each 0 or
 * 1 + the index of a command; open addressing, the next slot on a collision. */
#define REDIS_CMD_SLOTS 512
_Static_assert(sizeof(redis_cmds) / sizeof(redis_cmds[0]) < REDIS_CMD_SLOTS / 2, "the index stays sparse");
_Static_assert(sizeof(redis_cmds) / sizeof(redis_cmds[0]) < 256, "a slot holds a uint8_t");
static uint8_t cmd_slot[REDIS_CMD_SLOTS];
static uint8_t cmd_len[sizeof(redis_cmds) / sizeof(redis_cmds[0])];

/* One step of the name hash (a multiplicative hash of the lowercase bytes), and its slot. */
static inline uint32_t cmd_hash_step(uint32_t h, uint8_t c) { return h * 33u + c; }
static inline uint32_t cmd_hash_slot(uint32_t h) { return (h ^ (h >> 9)) & (REDIS_CMD_SLOTS - 1); }

__attribute__((constructor)) static void cmd_index_build(void)
{
    for (size_t i = 0; i < redis_ncmds; i++) {
        const char *n = redis_cmds[i].name;
        uint32_t h = 0;
        size_t len = 0;
        for (; n[len] != '\0'; len++) h = cmd_hash_step(h, (uint8_t)n[len]);
        cmd_len[i] = (uint8_t)len;
        uint32_t s = cmd_hash_slot(h);
        while (cmd_slot[s] != 0) s = (s + 1) & (REDIS_CMD_SLOTS - 1);
        cmd_slot[s] = (uint8_t)(i + 1);
    }
}

/* redis 7.0's commands that are not in the table (a server's own business: ACL, replication,
 * persistence, debugging, its logs), and those of cluster-mode clients: sorted, lowercase. A
 * refused request is counted under its name when it is one of these. */
const char *const redis_refused_names[REDIS_NREFUSED] = {
    "acl", "asking", "bgrewriteaof", "bgsave", "cluster", "debug", "failover", "lastsave", "latency",
    "migrate", "module", "monitor", "pfdebug", "pfselftest", "psync", "readonly", "readwrite",
    "replconf", "replicaof", "restore-asking", "save", "shutdown", "slaveof", "slowlog", "swapdb",
    "sync", "wait", "waitaof",
};
/* (a unit test checks that the table is sorted and that no entry is left empty) */

/* strcmp for short names, inlined: most probes of the search differ at the first byte */
static inline int cmd_name_cmp(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return (int)(unsigned char)*a - (int)(unsigned char)*b;
}

bool redis_cmd_name_lower(const uint8_t *name, size_t len, char *low)
{
    if (len == 0 || len >= REDIS_CMD_NAME_MAX) return false;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = name[i];
        if (c == '\0') return false;
        low[i] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    low[len] = '\0';
    return true;
}

/* The index of low among the n sorted names, or -1. */
static int cmd_name_search(const char *low, const char *const *names, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmd_name_cmp(low, names[mid]);
        if (c == 0) return (int)mid;
        if (c < 0) hi = mid;
        else lo = mid + 1;
    }
    return -1;
}

int redis_refused_lookup(const uint8_t *name, size_t len)
{
    char low[REDIS_CMD_NAME_MAX];
    if (!redis_cmd_name_lower(name, len, low)) return -1;
    return cmd_name_search(low, redis_refused_names, REDIS_NREFUSED);
}

int redis_cmd_lookup(const uint8_t *name, size_t len)
{
    char low[REDIS_CMD_NAME_MAX];
    if (len == 0 || len >= REDIS_CMD_NAME_MAX) return -1;
    uint32_t h = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = name[i];
        c = (uint8_t)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
        low[i] = (char)c;
        h = cmd_hash_step(h, c);
    }
    for (uint32_t s = cmd_hash_slot(h); cmd_slot[s] != 0; s = (s + 1) & (REDIS_CMD_SLOTS - 1)) {
        unsigned i = cmd_slot[s] - 1u;
        /* equal bytes over the same length: "get\0x" has length 5, so it is never "get" */
        if (cmd_len[i] == len && proto_bytes_equal(low, redis_cmds[i].name, len)) return (int)i;
    }
    return -1;
}
