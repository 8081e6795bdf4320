/*
 * redis_cmd.h - the redis command table: every command nutcrackers forwards (or answers itself),
 * with its arity and key positions as redis defines them, its CMD_F_* flags, and for the commands
 * the proxy handles itself (CMD_F_LOCAL) which one it is. msg->cmd is an
 * index into redis_cmds[]. A command that is not in the table is not supported.
 *
 * Threads: the table is const; any thread may read it.
 */
#ifndef NC_REDIS_CMD_H
#define NC_REDIS_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* longest name in the table is shorter than this; longer names are unknown without a lookup */
#define REDIS_CMD_NAME_MAX 24
/* msg->cmd of a request whose name is not in the table */
#define REDIS_CMD_NONE UINT16_MAX

/* The commands whose CMD_F_LOCAL the proxy handles (redis_local.c): which one a command is. */
enum redis_local_cmd {
    REDIS_LOCAL_NONE = 0,
    REDIS_LOCAL_CLIENT,
    REDIS_LOCAL_ECHO,
    REDIS_LOCAL_HELLO,
    REDIS_LOCAL_INFO,
    REDIS_LOCAL_RESET,
    REDIS_LOCAL_SELECT,
    REDIS_LOCAL_SCAN,     /* checks the cursor, then every server's (redis_fanout.c) */
    REDIS_LOCAL_SCRIPT,   /* LOAD, EXISTS, FLUSH go to every server; the rest is refused */
    REDIS_LOCAL_FLUSH,    /* FLUSHDB, FLUSHALL: to every server when the pool's redis_flush allows */
    REDIS_LOCAL_PUBSUB,   /* PUBSUB: every server's; its arguments read by the merge */
    REDIS_LOCAL_FUNCTION, /* FUNCTION: LOAD, DELETE, FLUSH, RESTORE to every server; LIST, DUMP,
                           * STATS, HELP to the first; KILL refused (redis_admin.c) */
    REDIS_LOCAL_CONFIG,   /* CONFIG GET, HELP: the first server's; SET, REWRITE, RESETSTAT refused */
    REDIS_LOCAL_ROLE,     /* ROLE: a master without replicas */
    REDIS_LOCAL_MEMORY,   /* MEMORY USAGE key: routed by its key; MEMORY without a key refused */
    /* the commands of cluster-mode clients (redis_cluster.c), last: a pool without
     * client_cluster_mode refuses them as unknown (redis_req.c) */
    REDIS_LOCAL_CLUSTER,  /* CLUSTER SLOTS, SHARDS, NODES, INFO, MYID, KEYSLOT, HELP */
    REDIS_LOCAL_READONLY, /* READONLY, READWRITE: +OK */
};
#define REDIS_LOCAL_CLUSTER_FIRST REDIS_LOCAL_CLUSTER

/* How the reply of a CMD_F_FRAG_ALL command (sent to every server) is built from theirs. */
enum redis_fan {
    REDIS_FAN_NONE = 0,
    REDIS_FAN_INFO,       /* HELLO, INFO (redis_info.c) */
    REDIS_FAN_SUM,        /* DBSIZE: the integers summed */
    REDIS_FAN_KEYS,       /* KEYS: the arrays joined */
    REDIS_FAN_RANDOMKEY,  /* RANDOMKEY: one of the keys the servers sent */
    REDIS_FAN_SCRIPT,     /* SCRIPT LOAD (the sha), EXISTS (1 where every server has it), FLUSH */
    REDIS_FAN_OK,         /* FLUSHDB, FLUSHALL: +OK when every server said it */
    REDIS_FAN_SCAN,       /* SCAN: one server, the one its cursor names (notes/fan-out.md) */
    REDIS_FAN_PUBSUB,     /* PUBSUB CHANNELS, SHARDCHANNELS (joined), NUMSUB, SHARDNUMSUB (summed
                           * per channel), NUMPAT (the largest) */
    REDIS_FAN_FUNCTION,   /* FUNCTION LOAD (the library's name), DELETE, FLUSH, RESTORE (+OK when
                           * every server said it); LIST, DUMP, STATS, HELP: the first server's */
    REDIS_FAN_FIRST,      /* CONFIG GET, HELP: the first live server's reply, as it came */
};

/* numkeys_pos of XREAD and XREADGROUP: the keys are the first half of the arguments after the
 * STREAMS keyword (the options before it are read whole). */
#define REDIS_KEYS_STREAMS (-1)

struct redis_cmd {
    const char *name;     /* lowercase */
    int8_t arity;         /* > 0: exactly this many args (name included); < 0: at least -arity */
    int8_t first_key;     /* arg index of the first fixed key; 0: none */
    int8_t last_key;      /* arg index of the last fixed key; < 0: counted from the end (-1 = last) */
    int8_t key_step;      /* distance between fixed keys (MSET: 2, the value is part of the group) */
    int8_t numkeys_pos;   /* > 0: this arg counts the keys that follow it (EVAL, ZUNION, ...);
                           * REDIS_KEYS_STREAMS: the keys follow STREAMS (XREAD, XREADGROUP) */
    uint32_t flags;       /* CMD_F_* (proto.h) */
    uint8_t local;        /* enum redis_local_cmd: with CMD_F_LOCAL, which of the proxy's own */
    uint8_t fan;          /* enum redis_fan: with CMD_F_FRAG_ALL, how the replies merge */
    int8_t timeout_arg;   /* CMD_F_BLOCK: the arg holding its timeout in seconds (> 0: that
                           * index; < 0: counted from the end, -1 = last); 0: none */
};

extern const struct redis_cmd redis_cmds[];
extern const size_t redis_ncmds;

/* The index of the command named name[0..len) (any case), or -1 when there is none. */
int redis_cmd_lookup(const uint8_t *name, size_t len);

/* name[0..len) lowercased and NUL-terminated into low (REDIS_CMD_NAME_MAX bytes); false when it
 * cannot be a command's name (empty, too long, a NUL in it: "get\0x" must not match "get"). */
bool redis_cmd_name_lower(const uint8_t *name, size_t len, char *low);

/* redis's own commands the proxy does not serve (sorted, lowercase): the names refused requests
 * are counted under (proto_ops.refused_names). */
#define REDIS_NREFUSED 28
extern const char *const redis_refused_names[REDIS_NREFUSED];
/* The index of name[0..len) (any case) in redis_refused_names, or -1. */
int redis_refused_lookup(const uint8_t *name, size_t len);

#endif
