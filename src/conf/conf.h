/*
 * conf.h - the YAML configuration, parsed once by the master into an immutable, refcounted
 * "generation" that the workers and the stats thread share read-only.
 *
 * Threads: conf_load* runs on the master (or a unit test). After it returns, a struct conf is never
 * written again; any thread may read it while it holds a reference (conf_ref/conf_unref are atomic).
 * The last conf_unref frees the whole generation.
 */
#ifndef NC_CONF_H
#define NC_CONF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "hash/dist.h"
#include "hash/hash.h"

/* defaults, as twemproxy 0.5.0 */
#define CONF_DEFAULT_HASH HASH_FNV1A_64
#define CONF_DEFAULT_DIST DIST_KETAMA
#define CONF_DEFAULT_TIMEOUT (-1)            /* ms; -1: wait forever */
#define CONF_DEFAULT_BACKLOG 512
#define CONF_DEFAULT_CLIENT_CONNECTIONS 0    /* 0: unlimited */
#define CONF_DEFAULT_CLIENT_IDLE_TIMEOUT 0   /* 0: never */
#define CONF_DEFAULT_REDIS_DB 0
#define CONF_DEFAULT_SERVER_CONNECTIONS 1
#define CONF_DEFAULT_DEDICATED_CONNECTIONS 64 /* per server and worker (transactions, blocking
                                                * commands, subscribers: notes/transactions.md) */
#define CONF_DEFAULT_SERVER_RETRY_TIMEOUT 30000 /* ms */
#define CONF_DEFAULT_SERVER_FAILURE_LIMIT 2
#define CONF_DEFAULT_KEEP (-1)               /* tcpkeepidle/cnt/intvl: -1 = kernel default */
#define CONF_REDIS_AUTH_MAX 256              /* redis_auth must be shorter */

/* tls_auth_clients */
enum conf_tls_auth { CONF_TLS_AUTH_NO, CONF_TLS_AUTH_YES, CONF_TLS_AUTH_OPTIONAL };
/* tls_protocols: a set of these bits (0: OpenSSL's defaults, TLSv1.2 at least) */
#define CONF_TLS_V1_0 0x1u
#define CONF_TLS_V1_1 0x2u
#define CONF_TLS_V1_2 0x4u
#define CONF_TLS_V1_3 0x8u

/* Replica slots per shard of a pool that reads from replicas: the first ones up of each master
 * take them (notes/sentinel.md) */
#define CONF_REPLICA_SLOTS 3

/* A command declared in a redis pool's `commands:` (notes/declared-commands.md): its name is at
 * most this long (the longest module command names clients send, TDIGEST.TRIMMED_MEAN, have 20) */
#define CONF_COMMAND_NAME_MAX 23
struct conf_command {
    char name[CONF_COMMAND_NAME_MAX + 1]; /* lowercase */
    int first;            /* arg index of the first key (>= 1) */
    int last;             /* of the last (>= first; < 0: counted from the end, -1 = the last arg) */
    int step;             /* distance between keys (>= 1) */
    bool readonly;        /* may be read from a replica (read_from); else a write */
    int line;             /* line of its entry */
};

/* The masters a redis_cluster pool can follow: its node places (notes/cluster.md) */
#define CONF_CLUSTER_MASTERS 128

/* read_from: where a pool with replicas sends read-only commands (notes/sentinel.md) */
enum conf_read_from {
    CONF_READ_MASTER,          /* masters only (the default) */
    CONF_READ_PREFER_MASTER,   /* the master; a replica while the master is unreachable */
    CONF_READ_REPLICA,         /* replicas only (an error while none is up) */
    CONF_READ_PREFER_REPLICA,  /* a replica; the master while none is up */
    CONF_READ_ANY,             /* the master and the replicas in turn */
};

/* An address to listen on or connect to: TCP host:port or a unix socket path. */
struct conf_addr {
    char *text;       /* as written, e.g. "127.0.0.1:22121" or "/tmp/gamma" */
    char *host;       /* host name / IP, or the socket path for unix sockets */
    uint16_t port;    /* 0 for unix sockets */
    bool is_unix;
    int perm;         /* unix listen sockets: octal permissions, -1 if not given */
};

struct conf_server {
    struct conf_addr addr;
    uint32_t weight;      /* >= 1 */
    char *name;           /* configured name, or NULL */
    char *pname;          /* "host:port:weight" ("/path:weight" for unix), as twemproxy names it */
    char *stats_name;     /* name if given, else pname: the key in the stats JSON */
    char *ketama_name;    /* name if given, else "host:port" ("host" when port is 11211) */
    int line;             /* line in the config file */
    bool replica_slot;    /* not written in the config: a place for a replica of servers[shard]
                           * (read_from other than master, notes/sentinel.md) */
    uint32_t shard;       /* a replica slot's master */
    bool node_place;      /* not written in the config: a place for a node of a Redis Cluster
                           * (redis_cluster, notes/cluster.md) */
};

struct conf_pool {
    char *name;
    int line;
    struct conf_addr listen;
    int listen_line;              /* line of the listen value */
    enum hash_type hash;
    bool has_hash_tag;
    char hash_tag[2];
    enum dist_type distribution;
    int64_t timeout;              /* ms, -1 = forever */
    int backlog;
    int64_t client_connections;   /* 0 = unlimited */
    int64_t client_idle_timeout;  /* ms a client may send and read nothing, waiting for nothing; 0 = never */
    bool redis;
    bool tcpkeepalive;
    int tcpkeepidle, tcpkeepcnt, tcpkeepintvl; /* -1 = kernel default */
    bool reuseport;
    char *redis_auth;             /* NULL if not set */
    int redis_db;
    bool preconnect;
    bool auto_eject_hosts;
    bool redis_flush;             /* redis FLUSHDB/FLUSHALL are sent to every server; else refused */
    int server_connections;
    int dedicated_connections;    /* per server and worker: clients in MULTI/EXEC or WATCH, or blocked */
    int64_t server_retry_timeout; /* ms */
    int server_failure_limit;
    struct conf_server *servers;
    size_t nservers;              /* the servers written, then the replica slots (if any) */
    size_t nshards;               /* the servers written: servers[0..nshards) own the keys */
    /* TLS towards the clients (the listener): notes/tls.md */
    bool tls;
    char *tls_cert_file, *tls_key_file, *tls_ca_cert_file; /* NULL: not set */
    int tls_auth_clients;         /* enum conf_tls_auth */
    unsigned tls_protocols;       /* CONF_TLS_V* bits; 0: the default */
    char *tls_ciphers, *tls_ciphersuites;
    /* TLS towards the servers */
    bool server_tls;
    bool server_tls_verify;       /* default true */
    char *server_tls_ca_cert_file, *server_tls_cert_file, *server_tls_key_file;
    char *server_tls_server_name; /* NULL: each server's host */
    /* Redis Sentinel (notes/sentinel.md): the servers' names are the sentinels' master names */
    struct conf_addr *sentinels;  /* NULL: a static pool */
    size_t nsentinels;
    char *sentinel_auth;          /* NULL: the sentinels need no password */
    int read_from;                /* enum conf_read_from */
    /* Redis Cluster (notes/cluster.md): servers are then node places, the seeds written here */
    bool redis_cluster;
    struct conf_server *seeds;    /* the `servers:` written (NULL: not a cluster pool) */
    size_t nseeds;
    /* Redis Cluster clients (notes/cluster-clients.md): the proxy answers CLUSTER SLOTS, SHARDS,
     * NODES, ... as the one node of a cluster that owns every slot, at cluster_announce */
    bool client_cluster_mode;
    struct conf_addr cluster_announce; /* host NULL: not set (the listen address is announced) */
    /* redis commands declared with their key positions (notes/declared-commands.md) */
    struct conf_command *commands; /* NULL: none */
    size_t ncommands;
    const char *file;             /* the file it was loaded from (its conf's path) */
    int *key_lines;               /* line where each key of the table was set (0: not set) */
};

struct conf {
    atomic_uint refs;
    char *path;                   /* file it was loaded from */
    uint64_t generation;          /* set by the loader's caller (1, 2, ... on reloads) */
    time_t loaded_at;
    struct conf_pool *pools;
    size_t npools;
};

/*
 * Errors: every problem found is reported through this callback as one line of the form
 *   "<file>:<line>: pool '<pool>': key '<key>': <what is wrong>"
 * (YAML syntax errors: "<file>:<line>:<column>: <what libyaml says>"). A NULL callback prints
 * each line to stderr prefixed with "nutcrackers: ".
 */
typedef void (*conf_error_fn)(void *ctx, const char *line);

/* Parses and validates a file. Returns a new conf (refs = 1) or NULL after reporting errors. */
struct conf *conf_load(const char *path, conf_error_fn on_error, void *ctx);
/* Same from memory; name is the file name used in messages. */
struct conf *conf_load_string(const char *text, size_t len, const char *name,
                              conf_error_fn on_error, void *ctx);

struct conf *conf_ref(struct conf *c);
void conf_unref(struct conf *c);

/* The line where key was set in p, else p's own line. */
int conf_pool_key_line(const struct conf_pool *p, const char *key);
/* Reports a problem of p's key found after loading (a certificate that does not parse) in the
 * loader's format, "<file>:<line>: pool '<pool>': key '<key>': <what>", through on_error (NULL:
 * stderr). */
void conf_pool_report(const struct conf_pool *p, const char *key, conf_error_fn on_error, void *ctx,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The same for a problem found at line (an item of a sequence key: one `commands:` entry). */
void conf_pool_report_at(const struct conf_pool *p, const char *key, int line, conf_error_fn on_error, void *ctx,
                         const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Lookups on an immutable conf; NULL when absent. */
const struct conf_pool *conf_pool_find(const struct conf *c, const char *name);

#endif
