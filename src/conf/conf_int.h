/*
 * conf_int.h - internals shared by the files of src/conf/ (not for other modules; unit tests may
 * use it): the error reporter (conf.c), the YAML node tree built from libyaml events
 * (conf_yaml.c), the key table and pool walker (conf_keys.c) and the listen/server string parsers
 * (conf_addr.c).
 *
 * Threads: whoever runs conf_load (the master or a test). Nothing here is shared between threads;
 * the objects live only while one file is being loaded.
 */
#ifndef NC_CONF_INT_H
#define NC_CONF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/conf.h"

/* ---- error reporting (conf.c) ---- */

#define CONF_ERR_MAX 256 /* size of the message buffers the string parsers fill */

struct conf_report {
    const char *file;  /* name used at the start of every message */
    conf_error_fn fn;  /* NULL: stderr */
    void *ctx;
    unsigned nerrors;  /* problems reported so far */
};

/*
 * Reports one problem as a single line:
 *   "<file>:<line>[:<col>]: [pool '<pool>': ][key '<key>': ]<message>"
 * line <= 0 leaves the line out, col <= 0 the column, pool/key NULL their part. Control characters
 * (from user input) are shown as '?' so a message is always one line.
 */
void conf_report(struct conf_report *r, int line, int col, const char *pool, const char *key,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* The same line with "warning: " before the message, not counted as a problem. */
void conf_warn(struct conf_report *r, int line, const char *pool, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- YAML node tree (conf_yaml.c) ---- */

enum conf_node_kind { CONF_NODE_SCALAR, CONF_NODE_SEQ, CONF_NODE_MAP };

struct conf_node {
    enum conf_node_kind kind;
    int line;                 /* 1-based line of the node's first character */
    int col;                  /* 1-based column */
    char *text;               /* scalars: the value, NUL-terminated (no NUL inside) */
    size_t len;               /* scalars: strlen(text) */
    struct conf_node **kids;  /* SEQ: the items; MAP: key, value, key, value, ... */
    size_t nkids;
    size_t cap;
};

/* What a node is, for messages: "a scalar", "a sequence", "a mapping", "an empty value". */
const char *conf_node_what(const struct conf_node *n);

/*
 * Parses one YAML document from text[0..len) into a node tree. *root is NULL for a stream with no
 * document (empty file, only comments). Returns 0, or -EINVAL after reporting a syntax error (or
 * an unsupported construct: aliases, several documents, too deep nesting), or -ENOMEM.
 */
int conf_yaml_parse(const char *text, size_t len, struct conf_report *r, struct conf_node **root);
void conf_node_free(struct conf_node *n);

/* ---- scalar values (conf_keys.c) ---- */

/*
 * Parses all of s[0..len) as an integer in base 10 (optional sign) or base 8 (digits only).
 * Returns 0 with *out set, -EINVAL if it is not a number, -ERANGE if it is outside [min, max].
 */
int conf_parse_int(const char *s, size_t len, int base, int64_t min, int64_t max, int64_t *out);

/* ---- pools (conf_keys.c) ---- */

/*
 * Fills p (whose name and line are set, everything else zero) from the mapping node of its keys:
 * defaults first, then every key, reporting every problem. Returns the number of problems found.
 */
unsigned conf_pool_parse(struct conf_pool *p, const struct conf_node *map, struct conf_report *r);
/* Frees what a pool owns (not the pool itself). */
void conf_pool_deinit(struct conf_pool *p);

/* ---- TLS keys (conf_tls.c) ---- */

/* "no", "yes" or "optional" -> enum conf_tls_auth. Returns 0, or -EINVAL. */
int conf_tls_auth_parse(const char *s, int *out);
/* A space-separated list of TLSv1, TLSv1.1, TLSv1.2, TLSv1.3 -> CONF_TLS_V* bits. Returns 0, or
 * -EINVAL with a message in err. */
int conf_tls_protocols_parse(const char *s, unsigned *mask, char *err, size_t errlen);
/* What the TLS keys of a parsed pool must agree on (certificate and key given together, files
 * readable, no TLS on a unix-socket listener, ...): reports each problem, returns their number. */
unsigned conf_tls_check(const struct conf_pool *p, struct conf_report *r);

/* ---- Redis Sentinel keys (conf_sentinel.c) ---- */
/* A read_from value -> enum conf_read_from. Returns 0, or -EINVAL. */
int conf_read_from_parse(const char *s, int *out);
const char *conf_read_from_name(int value);
/* The `sentinels` sequence of "host:port" into p->sentinels, reporting each bad item. */
int conf_sentinels_parse(const char *key, const struct conf_node *v, struct conf_pool *p,
                         struct conf_report *r);
/* What the sentinel keys of a parsed pool must agree on: reports each problem, returns their number. */
unsigned conf_sentinel_check(const struct conf_pool *p, struct conf_report *r);
/* Sets p->nshards, and gives a pool with sentinels that reads from replicas CONF_REPLICA_SLOTS
 * replica slots per server, after the servers written. Returns 0 or -errno (reported). */
int conf_sentinel_replica_slots(struct conf_pool *p, struct conf_report *r);
/* Frees the sentinel keys' values. */
void conf_sentinel_deinit(struct conf_pool *p);

/* ---- Redis Cluster keys (conf_cluster.c) ---- */
/* What a redis_cluster pool must agree on: reports each problem, returns their number. */
unsigned conf_cluster_check(const struct conf_pool *p, struct conf_report *r);
/* Warns about the keys a redis_cluster pool ignores (hash, hash_tag, distribution). */
void conf_cluster_warn(const struct conf_pool *p, struct conf_report *r);
/* Moves a redis_cluster pool's servers to its seeds and gives it CONF_CLUSTER_MASTERS node
 * places; its keys then hash with CRC16 and the {} tag. Returns 0 or -errno (reported). */
int conf_cluster_places(struct conf_pool *p, struct conf_report *r);
void conf_cluster_deinit(struct conf_pool *p);

/* ---- cluster-mode clients (conf_cluster_clients.c) ---- */
/* The `cluster_announce` value ("host:port", TCP, not a wildcard) into p->cluster_announce. */
int conf_cluster_announce_parse(const char *key, const struct conf_node *v, struct conf_pool *p,
                                struct conf_report *r);
/* What client_cluster_mode and cluster_announce must agree on: reports each problem, returns
 * their number. */
unsigned conf_cluster_clients_check(const struct conf_pool *p, struct conf_report *r);

/* ---- declared redis commands (conf_commands.c) ---- */
/* The `commands` sequence of "NAME FIRST LAST STEP [readonly|write]" into p->commands, reporting
 * each bad entry. */
int conf_commands_parse(const char *key, const struct conf_node *v, struct conf_pool *p,
                        struct conf_report *r);
/* What `commands` must agree on with the other keys (a redis pool): reports, returns the number. */
unsigned conf_commands_check(const struct conf_pool *p, struct conf_report *r);

/* ---- addresses (conf_addr.c) ---- */

/*
 * Parses a listen value: "host:port" or "/absolute/path [octal permissions]". Returns 0, -EINVAL
 * with a message (without the value) in err, or -ENOMEM. On error a holds nothing to free.
 */
int conf_listen_parse(const char *s, struct conf_addr *a, char *err, size_t errlen);
/*
 * Parses a servers entry: "host:port:weight [name]" or "/path:weight [name]", filling addr, weight,
 * name, pname, stats_name and ketama_name (not line). Same returns as conf_listen_parse.
 */
int conf_server_parse(const char *s, struct conf_server *srv, char *err, size_t errlen);
void conf_addr_deinit(struct conf_addr *a);
void conf_server_deinit(struct conf_server *srv);
/* True when both name the same socket as written (no name resolution). */
bool conf_addr_same(const struct conf_addr *a, const struct conf_addr *b);

#endif
