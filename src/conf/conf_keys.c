/*
 * conf_keys.c - the pool key table (name, parser/validator, field, range, default) and the walk
 * over one pool's mapping: defaults first, then each key through its table entry, reporting every
 * unknown, duplicate, ill-typed, out-of-range or missing key.
 *
 * Threads: whoever loads a config. The table is const; nothing else is kept.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "conf/conf_int.h"

#define CONF_INT_MAX INT32_MAX
#define CONF_KEEPIDLE_MAX 32767 /* Linux limits for TCP_KEEPIDLE / TCP_KEEPINTVL / TCP_KEEPCNT */
#define CONF_KEEPINTVL_MAX 32767
#define CONF_KEEPCNT_MAX 127
#define CONF_PATH_MAX 4095     /* certificate, key and CA file names */
#define CONF_SNI_MAX 253       /* a DNS name */
#define CONF_CIPHERS_MAX 4095
#define CONF_SERVER_ENTRY "\"host:port:weight [name]\""

struct conf_key;
typedef int (*conf_key_fn)(const struct conf_key *k, const struct conf_node *v,
                           struct conf_pool *p, struct conf_report *r);

/* The type of the struct conf_pool field a key fills through .offset. */
enum conf_field {
    CONF_FIELD_NONE, /* the parser fills its own fields */
    CONF_FIELD_BOOL,
    CONF_FIELD_INT,
    CONF_FIELD_I64,
    CONF_FIELD_HASH,
    CONF_FIELD_DIST,
    CONF_FIELD_STR,
};

/* A name -> value mapping of enum values (hash and distribution names). */
struct conf_enum {
    int (*from_name)(const char *name, size_t len);
    const char *(*name)(int value);
    int count;
};

struct conf_key {
    const char *name;
    conf_key_fn parse;
    enum conf_field field;
    size_t offset;                 /* of the field in struct conf_pool */
    int64_t min, max;              /* integers: the valid range; strings: max is the max length */
    int64_t def;                   /* numeric fields: the value when the key is absent */
    const struct conf_enum *names; /* CONF_FIELD_HASH / _DIST */
    bool required;
};

/* offsetof, and a compile error when the field does not have the expected type */
#define CONF_OFFSET(fld, type) \
    _Generic(((struct conf_pool *)0)->fld, type: offsetof(struct conf_pool, fld))

#define CONF_KEY_BOOL(n, fld) \
    { .name = n, .parse = conf_key_bool, .field = CONF_FIELD_BOOL, \
      .offset = CONF_OFFSET(fld, bool), .def = false }
#define CONF_KEY_BOOL_TRUE(n, fld) \
    { .name = n, .parse = conf_key_bool, .field = CONF_FIELD_BOOL, \
      .offset = CONF_OFFSET(fld, bool), .def = true }
#define CONF_KEY_STR(n, fld, maxlen) \
    { .name = n, .parse = conf_key_string, .field = CONF_FIELD_STR, \
      .offset = CONF_OFFSET(fld, char *), .max = (maxlen) }
#define CONF_KEY_INT(n, fld, lo, hi, d) \
    { .name = n, .parse = conf_key_int, .field = CONF_FIELD_INT, \
      .offset = CONF_OFFSET(fld, int), .min = (lo), .max = (hi), .def = (d) }
#define CONF_KEY_I64(n, fld, lo, hi, d) \
    { .name = n, .parse = conf_key_int, .field = CONF_FIELD_I64, \
      .offset = CONF_OFFSET(fld, int64_t), .min = (lo), .max = (hi), .def = (d) }

static int conf_key_bool(const struct conf_key *k, const struct conf_node *v, struct conf_pool *p,
                         struct conf_report *r);
static int conf_key_int(const struct conf_key *k, const struct conf_node *v, struct conf_pool *p,
                        struct conf_report *r);
static int conf_key_enum(const struct conf_key *k, const struct conf_node *v, struct conf_pool *p,
                         struct conf_report *r);
static int conf_key_string(const struct conf_key *k, const struct conf_node *v,
                           struct conf_pool *p, struct conf_report *r);
static int conf_key_hash_tag(const struct conf_key *k, const struct conf_node *v,
                             struct conf_pool *p, struct conf_report *r);
static int conf_key_listen(const struct conf_key *k, const struct conf_node *v,
                           struct conf_pool *p, struct conf_report *r);
static int conf_key_servers(const struct conf_key *k, const struct conf_node *v,
                            struct conf_pool *p, struct conf_report *r);
static int conf_key_tls_auth(const struct conf_key *k, const struct conf_node *v,
                             struct conf_pool *p, struct conf_report *r);
static int conf_key_tls_protocols(const struct conf_key *k, const struct conf_node *v,
                                  struct conf_pool *p, struct conf_report *r);
static int conf_key_sentinels(const struct conf_key *k, const struct conf_node *v,
                              struct conf_pool *p, struct conf_report *r);
static int conf_key_read_from(const struct conf_key *k, const struct conf_node *v,
                              struct conf_pool *p, struct conf_report *r);
static int conf_key_cluster_announce(const struct conf_key *k, const struct conf_node *v,
                                     struct conf_pool *p, struct conf_report *r);
static int conf_key_commands(const struct conf_key *k, const struct conf_node *v, struct conf_pool *p,
                             struct conf_report *r);

static const char *conf_hash_name(int value)
{
    return hash_table[value].name;
}

static const char *conf_dist_name(int value)
{
    return dist_type_name((enum dist_type)value);
}

static const struct conf_enum conf_hash_names = { hash_type_from_name, conf_hash_name, HASH_COUNT };
static const struct conf_enum conf_dist_names = { dist_type_from_name, conf_dist_name, DIST_COUNT };

/* The pool keys, in twemproxy's order (tcpkeepidle/cnt/intvl, client_idle_timeout, dedicated_connections,
 * redis_flush, the TLS, the Sentinel and the cluster-mode clients' keys and commands are ours). */
static const struct conf_key conf_keys[] = {
    { .name = "listen", .parse = conf_key_listen, .required = true },
    { .name = "hash", .parse = conf_key_enum, .field = CONF_FIELD_HASH,
      .offset = CONF_OFFSET(hash, enum hash_type), .def = CONF_DEFAULT_HASH,
      .names = &conf_hash_names },
    { .name = "hash_tag", .parse = conf_key_hash_tag },
    { .name = "distribution", .parse = conf_key_enum, .field = CONF_FIELD_DIST,
      .offset = CONF_OFFSET(distribution, enum dist_type), .def = CONF_DEFAULT_DIST,
      .names = &conf_dist_names },
    CONF_KEY_I64("timeout", timeout, -1, CONF_INT_MAX, CONF_DEFAULT_TIMEOUT),
    CONF_KEY_INT("backlog", backlog, 0, CONF_INT_MAX, CONF_DEFAULT_BACKLOG),
    CONF_KEY_I64("client_connections", client_connections, 0, CONF_INT_MAX,
                 CONF_DEFAULT_CLIENT_CONNECTIONS),
    CONF_KEY_I64("client_idle_timeout", client_idle_timeout, 0, CONF_INT_MAX,
                 CONF_DEFAULT_CLIENT_IDLE_TIMEOUT),
    CONF_KEY_BOOL("redis", redis),
    CONF_KEY_BOOL("tcpkeepalive", tcpkeepalive),
    CONF_KEY_INT("tcpkeepidle", tcpkeepidle, 1, CONF_KEEPIDLE_MAX, CONF_DEFAULT_KEEP),
    CONF_KEY_INT("tcpkeepcnt", tcpkeepcnt, 1, CONF_KEEPCNT_MAX, CONF_DEFAULT_KEEP),
    CONF_KEY_INT("tcpkeepintvl", tcpkeepintvl, 1, CONF_KEEPINTVL_MAX, CONF_DEFAULT_KEEP),
    CONF_KEY_BOOL("reuseport", reuseport),
    { .name = "redis_auth", .parse = conf_key_string, .field = CONF_FIELD_STR,
      .offset = CONF_OFFSET(redis_auth, char *), .max = CONF_REDIS_AUTH_MAX - 1 },
    CONF_KEY_INT("redis_db", redis_db, 0, CONF_INT_MAX, CONF_DEFAULT_REDIS_DB),
    CONF_KEY_BOOL("redis_flush", redis_flush),
    CONF_KEY_BOOL("preconnect", preconnect),
    CONF_KEY_BOOL("auto_eject_hosts", auto_eject_hosts),
    CONF_KEY_INT("server_connections", server_connections, 1, CONF_INT_MAX,
                 CONF_DEFAULT_SERVER_CONNECTIONS),
    CONF_KEY_INT("dedicated_connections", dedicated_connections, 0, CONF_INT_MAX,
                 CONF_DEFAULT_DEDICATED_CONNECTIONS),
    CONF_KEY_I64("server_retry_timeout", server_retry_timeout, 0, CONF_INT_MAX,
                 CONF_DEFAULT_SERVER_RETRY_TIMEOUT),
    CONF_KEY_INT("server_failure_limit", server_failure_limit, 1, CONF_INT_MAX,
                 CONF_DEFAULT_SERVER_FAILURE_LIMIT),
    { .name = "servers", .parse = conf_key_servers, .required = true },
    CONF_KEY_BOOL("tls", tls),
    CONF_KEY_STR("tls_cert_file", tls_cert_file, CONF_PATH_MAX),
    CONF_KEY_STR("tls_key_file", tls_key_file, CONF_PATH_MAX),
    CONF_KEY_STR("tls_ca_cert_file", tls_ca_cert_file, CONF_PATH_MAX),
    { .name = "tls_auth_clients", .parse = conf_key_tls_auth },
    { .name = "tls_protocols", .parse = conf_key_tls_protocols },
    CONF_KEY_STR("tls_ciphers", tls_ciphers, CONF_CIPHERS_MAX),
    CONF_KEY_STR("tls_ciphersuites", tls_ciphersuites, CONF_CIPHERS_MAX),
    CONF_KEY_BOOL("server_tls", server_tls),
    CONF_KEY_STR("server_tls_ca_cert_file", server_tls_ca_cert_file, CONF_PATH_MAX),
    CONF_KEY_STR("server_tls_cert_file", server_tls_cert_file, CONF_PATH_MAX),
    CONF_KEY_STR("server_tls_key_file", server_tls_key_file, CONF_PATH_MAX),
    CONF_KEY_STR("server_tls_server_name", server_tls_server_name, CONF_SNI_MAX),
    CONF_KEY_BOOL_TRUE("server_tls_verify", server_tls_verify),
    { .name = "sentinels", .parse = conf_key_sentinels },
    { .name = "sentinel_auth", .parse = conf_key_string, .field = CONF_FIELD_STR,
      .offset = CONF_OFFSET(sentinel_auth, char *), .max = CONF_REDIS_AUTH_MAX - 1 },
    { .name = "read_from", .parse = conf_key_read_from },
    CONF_KEY_BOOL("redis_cluster", redis_cluster),
    CONF_KEY_BOOL("client_cluster_mode", client_cluster_mode),
    { .name = "cluster_announce", .parse = conf_key_cluster_announce },
    { .name = "commands", .parse = conf_key_commands },
};

static const struct {
    const char *text;
    bool value;
} conf_bools[] = {
    { "true", true }, { "false", false }, { "yes", true }, { "no", false },
};

int conf_parse_int(const char *s, size_t len, int base, int64_t min, int64_t max, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    bool over = false;
    uint64_t acc = 0;

    NC_ASSERT(base == 8 || base == 10);
    if (base == 10 && len > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i++;
    }
    if (i == len) return -EINVAL;
    for (; i < len; i++) {
        unsigned d = (unsigned)((unsigned char)s[i] - '0');
        if (d >= (unsigned)base) return -EINVAL;
        if (acc > (UINT64_MAX - d) / (unsigned)base) over = true;
        else acc = acc * (unsigned)base + d;
    }
    if (over || acc > (uint64_t)INT64_MAX) return -ERANGE;
    int64_t v = neg ? -(int64_t)acc : (int64_t)acc;
    if (v < min || v > max) return -ERANGE;
    *out = v;
    return 0;
}

/* Stores a numeric value into the key's field. */
static void conf_field_store(struct conf_pool *p, const struct conf_key *k, int64_t v)
{
    void *f = (char *)p + k->offset;
    switch (k->field) {
    case CONF_FIELD_BOOL: *(bool *)f = v != 0; break;
    case CONF_FIELD_INT: *(int *)f = (int)v; break;
    case CONF_FIELD_I64: *(int64_t *)f = v; break;
    case CONF_FIELD_HASH: *(enum hash_type *)f = (enum hash_type)v; break;
    case CONF_FIELD_DIST: *(enum dist_type *)f = (enum dist_type)v; break;
    case CONF_FIELD_NONE:
    case CONF_FIELD_STR: break;
    }
}

/* True when v is a scalar; otherwise reports that the key wants one. */
static bool conf_want_scalar(const struct conf_key *k, const struct conf_node *v,
                             const struct conf_pool *p, struct conf_report *r, const char *what)
{
    if (v->kind == CONF_NODE_SCALAR) return true;
    conf_report(r, v->line, 0, p->name, k->name, "expected %s, got %s", what, conf_node_what(v));
    return false;
}

static int conf_key_bool(const struct conf_key *k, const struct conf_node *v, struct conf_pool *p,
                         struct conf_report *r)
{
    if (!conf_want_scalar(k, v, p, r, "true or false")) return -EINVAL;
    for (size_t i = 0; i < NC_ARRAY_LEN(conf_bools); i++) {
        if (strcasecmp(v->text, conf_bools[i].text) == 0) {
            conf_field_store(p, k, conf_bools[i].value);
            return 0;
        }
    }
    conf_report(r, v->line, 0, p->name, k->name, "expected true or false, got '%s'", v->text);
    return -EINVAL;
}

static int conf_key_int(const struct conf_key *k, const struct conf_node *v, struct conf_pool *p,
                        struct conf_report *r)
{
    int64_t value;
    if (!conf_want_scalar(k, v, p, r, "an integer")) return -EINVAL;
    int rc = conf_parse_int(v->text, v->len, 10, k->min, k->max, &value);
    if (rc == -EINVAL) {
        conf_report(r, v->line, 0, p->name, k->name, "expected an integer, got '%s'", v->text);
    } else if (rc == -ERANGE) {
        conf_report(r, v->line, 0, p->name, k->name,
                    "%s is out of range (must be between %lld and %lld)", v->text,
                    (long long)k->min, (long long)k->max);
    } else {
        conf_field_store(p, k, value);
    }
    return rc;
}

static int conf_key_enum(const struct conf_key *k, const struct conf_node *v, struct conf_pool *p,
                         struct conf_report *r)
{
    const struct conf_enum *names = k->names;
    if (!conf_want_scalar(k, v, p, r, "a name")) return -EINVAL;
    int value = names->from_name(v->text, v->len);
    if (value >= 0 && value < names->count) {
        conf_field_store(p, k, value);
        return 0;
    }
    char list[CONF_ERR_MAX];
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; i < names->count && used < sizeof(list); i++) {
        int n = snprintf(list + used, sizeof(list) - used, "%s%s", i > 0 ? ", " : "",
                         names->name(i));
        used += n > 0 ? (size_t)n : 0;
    }
    conf_report(r, v->line, 0, p->name, k->name, "unknown %s '%s' (valid: %s)", k->name, v->text,
                list);
    return -EINVAL;
}

static int conf_key_string(const struct conf_key *k, const struct conf_node *v,
                           struct conf_pool *p, struct conf_report *r)
{
    char **f = (char **)(void *)((char *)p + k->offset);
    if (!conf_want_scalar(k, v, p, r, "a string")) return -EINVAL;
    if (v->len > (size_t)k->max) {
        /* the value itself is not shown: it may be a password */
        conf_report(r, v->line, 0, p->name, k->name,
                    "too long (%zu bytes; must be at most %lld)", v->len, (long long)k->max);
        return -EINVAL;
    }
    if (v->len == 0) return 0; /* empty: not set */
    *f = strdup(v->text);
    if (*f == NULL) {
        conf_report(r, v->line, 0, p->name, k->name, "out of memory");
        return -ENOMEM;
    }
    return 0;
}

static int conf_key_hash_tag(const struct conf_key *k, const struct conf_node *v,
                             struct conf_pool *p, struct conf_report *r)
{
    if (!conf_want_scalar(k, v, p, r, "two characters")) return -EINVAL;
    if (v->len != sizeof(p->hash_tag)) {
        conf_report(r, v->line, 0, p->name, k->name,
                    "expected exactly two characters (e.g. \"{}\"), got '%s'", v->text);
        return -EINVAL;
    }
    memcpy(p->hash_tag, v->text, sizeof(p->hash_tag));
    p->has_hash_tag = true;
    return 0;
}

static int conf_key_listen(const struct conf_key *k, const struct conf_node *v,
                           struct conf_pool *p, struct conf_report *r)
{
    char err[CONF_ERR_MAX];
    if (!conf_want_scalar(k, v, p, r, "an address")) return -EINVAL;
    int rc = conf_listen_parse(v->text, &p->listen, err, sizeof(err));
    if (rc == -ENOMEM) snprintf(err, sizeof(err), "out of memory");
    if (rc != 0) {
        conf_report(r, v->line, 0, p->name, k->name, "'%s': %s", v->text, err);
        return rc;
    }
    p->listen_line = v->line;
    return 0;
}

/* Parses one servers entry and appends it to p->servers (which has room for it). */
static int conf_server_add(const struct conf_key *k, const struct conf_node *item,
                           struct conf_pool *p, struct conf_report *r)
{
    char err[CONF_ERR_MAX];
    struct conf_server srv;

    if (item->kind != CONF_NODE_SCALAR || item->len == 0) {
        conf_report(r, item->line, 0, p->name, k->name, "expected a server %s, got %s",
                    CONF_SERVER_ENTRY, conf_node_what(item));
        return -EINVAL;
    }
    int rc = conf_server_parse(item->text, &srv, err, sizeof(err));
    if (rc == -ENOMEM) snprintf(err, sizeof(err), "out of memory");
    if (rc != 0) {
        conf_report(r, item->line, 0, p->name, k->name, "'%s': %s", item->text, err);
        return rc;
    }
    for (size_t i = 0; i < p->nservers; i++) {
        if (strcmp(p->servers[i].stats_name, srv.stats_name) == 0) {
            conf_report(r, item->line, 0, p->name, k->name,
                        "'%s': duplicate server name '%s' (first at line %d)", item->text,
                        srv.stats_name, p->servers[i].line);
            conf_server_deinit(&srv);
            return -EINVAL;
        }
    }
    srv.line = item->line;
    p->servers[p->nservers++] = srv;
    return 0;
}

static int conf_key_servers(const struct conf_key *k, const struct conf_node *v,
                            struct conf_pool *p, struct conf_report *r)
{
    int rc = 0;
    if (v->kind != CONF_NODE_SEQ) {
        conf_report(r, v->line, 0, p->name, k->name, "expected a sequence of %s, got %s",
                    CONF_SERVER_ENTRY, conf_node_what(v));
        return -EINVAL;
    }
    if (v->nkids == 0) {
        conf_report(r, v->line, 0, p->name, k->name, "no servers (at least one is needed)");
        return -EINVAL;
    }
    p->servers = calloc(v->nkids, sizeof(*p->servers));
    if (p->servers == NULL) {
        conf_report(r, v->line, 0, p->name, k->name, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < v->nkids; i++) {
        int one = conf_server_add(k, v->kids[i], p, r);
        if (one != 0 && rc == 0) rc = one;
    }
    return rc;
}

static int conf_key_tls_auth(const struct conf_key *k, const struct conf_node *v,
                             struct conf_pool *p, struct conf_report *r)
{
    if (!conf_want_scalar(k, v, p, r, "no, yes or optional")) return -EINVAL;
    int rc = conf_tls_auth_parse(v->text, &p->tls_auth_clients);
    if (rc != 0)
        conf_report(r, v->line, 0, p->name, k->name, "expected no, yes or optional, got '%s'", v->text);
    return rc;
}

static int conf_key_tls_protocols(const struct conf_key *k, const struct conf_node *v,
                                  struct conf_pool *p, struct conf_report *r)
{
    char err[CONF_ERR_MAX];
    if (!conf_want_scalar(k, v, p, r, "protocol names")) return -EINVAL;
    int rc = conf_tls_protocols_parse(v->text, &p->tls_protocols, err, sizeof(err));
    if (rc != 0) conf_report(r, v->line, 0, p->name, k->name, "%s", err);
    return rc;
}

static int conf_key_sentinels(const struct conf_key *k, const struct conf_node *v,
                              struct conf_pool *p, struct conf_report *r)
{
    return conf_sentinels_parse(k->name, v, p, r);
}

static int conf_key_read_from(const struct conf_key *k, const struct conf_node *v,
                              struct conf_pool *p, struct conf_report *r)
{
    if (!conf_want_scalar(k, v, p, r, "master, prefer_master, replica, prefer_replica or any")) return -EINVAL;
    int rc = conf_read_from_parse(v->text, &p->read_from);
    if (rc != 0)
        conf_report(r, v->line, 0, p->name, k->name,
                    "expected master, prefer_master, replica, prefer_replica or any, got '%s'", v->text);
    return rc;
}

static int conf_key_cluster_announce(const struct conf_key *k, const struct conf_node *v,
                                     struct conf_pool *p, struct conf_report *r)
{
    return conf_cluster_announce_parse(k->name, v, p, r);
}

static int conf_key_commands(const struct conf_key *k, const struct conf_node *v, struct conf_pool *p,
                             struct conf_report *r)
{
    return conf_commands_parse(k->name, v, p, r);
}

static const struct conf_key *conf_key_find(const char *name)
{
    for (size_t i = 0; i < NC_ARRAY_LEN(conf_keys); i++) {
        if (strcmp(conf_keys[i].name, name) == 0) return &conf_keys[i];
    }
    return NULL;
}

unsigned conf_pool_parse(struct conf_pool *p, const struct conf_node *map, struct conf_report *r)
{
    unsigned before = r->nerrors;
    int *seen = calloc(NC_ARRAY_LEN(conf_keys), sizeof(*seen)); /* line of each key, 0: not set */

    NC_ASSERT(map->kind == CONF_NODE_MAP && map->nkids % 2 == 0);
    if (seen == NULL) {
        conf_report(r, p->line, 0, p->name, NULL, "out of memory");
        return r->nerrors - before;
    }
    p->key_lines = seen;
    for (size_t i = 0; i < NC_ARRAY_LEN(conf_keys); i++) {
        conf_field_store(p, &conf_keys[i], conf_keys[i].def);
    }

    for (size_t i = 0; i < map->nkids; i += 2) {
        const struct conf_node *kn = map->kids[i], *vn = map->kids[i + 1];
        if (kn->kind != CONF_NODE_SCALAR) {
            conf_report(r, kn->line, 0, p->name, NULL, "a key must be a scalar, got %s",
                        conf_node_what(kn));
            continue;
        }
        const struct conf_key *k = conf_key_find(kn->text);
        if (k == NULL) {
            conf_report(r, kn->line, 0, p->name, kn->text, "unknown key");
            continue;
        }
        size_t idx = (size_t)(k - conf_keys);
        if (seen[idx] != 0) {
            conf_report(r, kn->line, 0, p->name, k->name, "duplicate key (first at line %d)",
                        seen[idx]);
            continue;
        }
        seen[idx] = kn->line;
        k->parse(k, vn, p, r);
    }

    for (size_t i = 0; i < NC_ARRAY_LEN(conf_keys); i++) {
        if (conf_keys[i].required && seen[i] == 0) {
            conf_report(r, p->line, 0, p->name, conf_keys[i].name, "required key is missing");
        }
    }
    conf_tls_check(p, r);
    conf_sentinel_check(p, r);
    conf_cluster_check(p, r);
    conf_cluster_clients_check(p, r);
    conf_commands_check(p, r);
    if (r->nerrors == before) conf_cluster_warn(p, r);
    if (r->nerrors == before) conf_cluster_places(p, r);
    if (r->nerrors == before) conf_sentinel_replica_slots(p, r);
    else p->nshards = p->nservers;
    return r->nerrors - before;
}

int conf_pool_key_line(const struct conf_pool *p, const char *key)
{
    const struct conf_key *k = conf_key_find(key);
    int line = k != NULL && p->key_lines != NULL ? p->key_lines[k - conf_keys] : 0;
    return line > 0 ? line : p->line;
}

void conf_pool_deinit(struct conf_pool *p)
{
    for (size_t i = 0; i < p->nservers; i++) conf_server_deinit(&p->servers[i]);
    free(p->servers);
    free(p->redis_auth);
    char **strs[] = { &p->tls_cert_file, &p->tls_key_file, &p->tls_ca_cert_file, &p->tls_ciphers,
                      &p->tls_ciphersuites, &p->server_tls_ca_cert_file, &p->server_tls_cert_file,
                      &p->server_tls_key_file, &p->server_tls_server_name };
    for (size_t i = 0; i < NC_ARRAY_LEN(strs); i++) {
        free(*strs[i]);
        *strs[i] = NULL;
    }
    conf_sentinel_deinit(p);
    conf_cluster_deinit(p);
    conf_addr_deinit(&p->cluster_announce);
    free(p->commands);
    p->commands = NULL;
    p->ncommands = 0;
    free(p->key_lines);
    p->key_lines = NULL;
    conf_addr_deinit(&p->listen);
    free(p->name);
    p->servers = NULL;
    p->nservers = 0;
    p->redis_auth = NULL;
    p->name = NULL;
}
