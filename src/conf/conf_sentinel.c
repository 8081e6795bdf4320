/*
 * conf_sentinel.c - the pool keys of Redis Sentinel (notes/sentinel.md): `sentinels` (a list of
 * host:port), `read_from` (where read-only commands go), and what a pool with sentinels must
 * agree on once parsed (a redis pool; every server named, since a server's name is the
 * sentinels' master name). `sentinel_auth` is a plain string key of the table (conf_keys.c).
 *
 * Threads: whoever loads a config. Nothing is kept.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "conf/conf_int.h"

static const struct {
    const char *name;
    int value;
} conf_read_froms[] = {
    { "master", CONF_READ_MASTER },   { "prefer_master", CONF_READ_PREFER_MASTER },
    { "replica", CONF_READ_REPLICA }, { "prefer_replica", CONF_READ_PREFER_REPLICA },
    { "any", CONF_READ_ANY },
};

int conf_read_from_parse(const char *s, int *out)
{
    for (size_t i = 0; i < NC_ARRAY_LEN(conf_read_froms); i++) {
        if (strcasecmp(s, conf_read_froms[i].name) == 0) {
            *out = conf_read_froms[i].value;
            return 0;
        }
    }
    return -EINVAL;
}

const char *conf_read_from_name(int value)
{
    for (size_t i = 0; i < NC_ARRAY_LEN(conf_read_froms); i++) {
        if (conf_read_froms[i].value == value) return conf_read_froms[i].name;
    }
    return "?";
}

/* One "host:port" item of the list into p->sentinels[p->nsentinels]. */
static int conf_sentinel_add(const char *key, const struct conf_node *item, struct conf_pool *p,
                             struct conf_report *r)
{
    char err[CONF_ERR_MAX];
    if (item->kind != CONF_NODE_SCALAR) {
        conf_report(r, item->line, 0, p->name, key, "expected \"host:port\", got %s", conf_node_what(item));
        return -EINVAL;
    }
    struct conf_addr a;
    int rc = conf_listen_parse(item->text, &a, err, sizeof(err));
    if (rc == 0 && (a.is_unix || (strchr(a.host, ':') != NULL && item->text[0] != '['))) {
        conf_addr_deinit(&a);
        snprintf(err, sizeof(err), "expected \"host:port\" (a sentinel is reached over TCP, it has no weight)");
        rc = -EINVAL;
    }
    if (rc != 0) {
        conf_report(r, item->line, 0, p->name, key, "'%s': %s", item->text,
                    rc == -ENOMEM ? "out of memory" : err);
        return rc;
    }
    for (size_t i = 0; i < p->nsentinels; i++) {
        if (conf_addr_same(&p->sentinels[i], &a)) {
            conf_report(r, item->line, 0, p->name, key, "'%s': listed twice", item->text);
            conf_addr_deinit(&a);
            return -EINVAL;
        }
    }
    p->sentinels[p->nsentinels++] = a;
    return 0;
}

int conf_sentinels_parse(const char *key, const struct conf_node *v, struct conf_pool *p,
                         struct conf_report *r)
{
    if (v->kind != CONF_NODE_SEQ || v->nkids == 0) {
        conf_report(r, v->line, 0, p->name, key, "expected a sequence of \"host:port\", got %s",
                    v->kind == CONF_NODE_SEQ ? "an empty sequence" : conf_node_what(v));
        return -EINVAL;
    }
    p->sentinels = calloc(v->nkids, sizeof(*p->sentinels));
    if (p->sentinels == NULL) {
        conf_report(r, v->line, 0, p->name, key, "out of memory");
        return -ENOMEM;
    }
    int rc = 0;
    for (size_t i = 0; i < v->nkids; i++) {
        int one = conf_sentinel_add(key, v->kids[i], p, r);
        if (one != 0 && rc == 0) rc = one;
    }
    return rc;
}

unsigned conf_sentinel_check(const struct conf_pool *p, struct conf_report *r)
{
    unsigned n = 0;
    if (p->nsentinels == 0) {
        if (p->sentinel_auth != NULL) {
            conf_report(r, conf_pool_key_line(p, "sentinel_auth"), 0, p->name, "sentinel_auth",
                        "set without sentinels");
            n++;
        }
        if (p->read_from != CONF_READ_MASTER && !p->redis_cluster) {
            conf_report(r, conf_pool_key_line(p, "read_from"), 0, p->name, "read_from",
                        "'%s' needs replicas: a pool with sentinels or redis_cluster",
                        conf_read_from_name(p->read_from));
            n++;
        }
        return n;
    }
    if (!p->redis) {
        conf_report(r, conf_pool_key_line(p, "sentinels"), 0, p->name, "sentinels",
                    "sentinels need a redis pool (redis: true)");
        n++;
    }
    for (size_t i = 0; i < p->nservers; i++) {
        if (p->servers[i].name != NULL) continue;
        conf_report(r, p->servers[i].line, 0, p->name, "servers",
                    "'%s': a server of a pool with sentinels needs a name (the sentinels' master name)",
                    p->servers[i].pname);
        n++;
    }
    return n;
}

/* A replica slot of servers[shard]: "<its address>:1 <its name>/replica<k>", never connected
 * to before its source puts a replica there. */
static int conf_replica_slot(struct conf_pool *p, size_t shard, unsigned k, struct conf_report *r)
{
    const struct conf_server *m = &p->servers[shard];
    char text[1200], err[CONF_ERR_MAX];
    snprintf(text, sizeof(text), "%s:1 %s/replica%u", m->pname, m->name, k + 1);
    struct conf_server *slot = &p->servers[p->nservers];
    int rc = conf_server_parse(text, slot, err, sizeof(err));
    if (rc != 0) {
        conf_report(r, m->line, 0, p->name, "servers", "'%s': %s", m->pname, rc == -ENOMEM ? "out of memory" : err);
        return rc;
    }
    slot->line = m->line;
    slot->replica_slot = true;
    slot->shard = (uint32_t)shard;
    p->nservers++;
    return 0;
}

int conf_sentinel_replica_slots(struct conf_pool *p, struct conf_report *r)
{
    p->nshards = p->nservers;
    if ((p->nsentinels == 0 && !p->redis_cluster) || p->read_from == CONF_READ_MASTER || p->nservers == 0) return 0;
    size_t total = p->nshards * (1 + CONF_REPLICA_SLOTS);
    struct conf_server *servers = realloc(p->servers, total * sizeof(*servers));
    if (servers == NULL) {
        conf_report(r, p->line, 0, p->name, "servers", "out of memory");
        return -ENOMEM;
    }
    p->servers = servers;
    for (size_t s = 0; s < p->nshards; s++) {
        for (unsigned k = 0; k < CONF_REPLICA_SLOTS; k++) {
            int rc = conf_replica_slot(p, s, k, r);
            if (rc != 0) return rc;
        }
    }
    return 0;
}

void conf_sentinel_deinit(struct conf_pool *p)
{
    for (size_t i = 0; i < p->nsentinels; i++) conf_addr_deinit(&p->sentinels[i]);
    free(p->sentinels);
    p->sentinels = NULL;
    p->nsentinels = 0;
    free(p->sentinel_auth);
    p->sentinel_auth = NULL;
}
