/*
 * runtime.c - per-generation shared state (see runtime.h).
 * Threads: built/destroyed by the master; read-only for everybody else.
 */
#include "config.h"
#include "core/runtime.h"

#include <stdlib.h>

#include "common/log.h"

static struct dist *runtime_build_dist(const struct conf_pool *cp)
{
    struct dist_server *ds = calloc(cp->nservers ? cp->nservers : 1, sizeof(*ds));
    if (ds == NULL) return NULL;
    for (size_t i = 0; i < cp->nservers; i++) {
        ds[i].ketama_name = cp->servers[i].ketama_name;
        ds[i].sort_name = cp->servers[i].stats_name; /* name, else host:port:weight */
        ds[i].weight = cp->servers[i].weight;
    }
    struct dist *d = dist_build(cp->distribution, ds, cp->nservers, NULL);
    free(ds);
    return d;
}

struct runtime *runtime_create(struct conf *conf)
{
    struct runtime *rt = calloc(1, sizeof(*rt));
    if (rt == NULL) return NULL;
    rt->conf = conf_ref(conf);
    rt->npools = conf->npools;
    rt->pools = calloc(conf->npools ? conf->npools : 1, sizeof(*rt->pools));
    if (rt->pools == NULL) goto fail;
    for (size_t i = 0; i < conf->npools; i++) {
        struct pool_shared *p = &rt->pools[i];
        p->idx = (uint32_t)i;
        p->cp = &conf->pools[i];
        p->proto = p->cp->redis ? &redis_proto : &memcache_proto;
        atomic_init(&p->nclients, 0);
        p->dist = runtime_build_dist(p->cp);
        if (p->dist == NULL) {
            log_error("pool '%s': cannot build its distribution", p->cp->name);
            goto fail;
        }
    }
    return rt;
fail:
    runtime_destroy(rt);
    return NULL;
}

void runtime_destroy(struct runtime *rt)
{
    if (rt == NULL) return;
    for (size_t i = 0; rt->pools != NULL && i < rt->npools; i++) {
        if (rt->pools[i].dist) dist_destroy(rt->pools[i].dist);
    }
    free(rt->pools);
    conf_unref(rt->conf);
    free(rt);
}

uint32_t pool_route(const struct pool_shared *p, const uint8_t *key, size_t len)
{
    const struct conf_pool *cp = p->cp;
    uint32_t h = hash_key(cp->hash, cp->has_hash_tag ? cp->hash_tag : NULL, key, len);
    return dist_dispatch(p->dist, h);
}
