/*
 * runtime.c - per-generation shared state: pools, server health, routing tables (see runtime.h).
 *
 * Threads: built by the master, freed by whichever thread drops the last reference. Health is
 * updated by any worker (atomics); routes are published and picked up under the pool's mutex,
 * never on the request path.
 */
#include "config.h"
#include "core/runtime.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"

/* Builds a route over the servers that are not ejected. Called with p->lock held (or before the
 * pool is shared). */
static struct route *route_build(struct pool_shared *p, uint64_t version)
{
    const struct conf_pool *cp = p->cp;
    size_t n = cp->nservers;
    struct dist_server *ds = calloc(n ? n : 1, sizeof(*ds));
    bool *live = calloc(n ? n : 1, sizeof(*live));
    struct route *r = calloc(1, sizeof(*r));
    if (ds == NULL || live == NULL || r == NULL) goto fail;
    for (size_t i = 0; i < n; i++) {
        ds[i].ketama_name = cp->servers[i].ketama_name;
        ds[i].sort_name = cp->servers[i].stats_name; /* name, else host:port:weight */
        ds[i].weight = cp->servers[i].weight;
        live[i] = atomic_load(&p->health[i].ejected_until) == 0;
    }
    r->dist = dist_build(cp->distribution, ds, n, live);
    if (r->dist == NULL) goto fail;
    atomic_init(&r->refs, 1);
    r->version = version;
    free(ds);
    free(live);
    return r;
fail:
    free(ds);
    free(live);
    free(r);
    return NULL;
}

void route_put(struct route *r)
{
    if (r != NULL && atomic_fetch_sub(&r->refs, 1) == 1) {
        dist_destroy(r->dist);
        free(r);
    }
}

struct route *pool_route_get(struct pool_shared *p)
{
    pthread_mutex_lock(&p->lock);
    struct route *r = p->route;
    atomic_fetch_add(&r->refs, 1);
    pthread_mutex_unlock(&p->lock);
    return r;
}

/* Rebuilds and publishes the route after a change of the live set. */
static void pool_publish(struct pool_shared *p)
{
    pthread_mutex_lock(&p->lock);
    uint64_t version = atomic_load(&p->version) + 1;
    struct route *r = route_build(p, version);
    if (r == NULL) {
        /* out of memory: keep routing with the old table; the next change retries */
        pthread_mutex_unlock(&p->lock);
        log_error("pool '%s': cannot rebuild the routing table: out of memory", p->cp->name);
        return;
    }
    struct route *old = p->route;
    p->route = r;
    atomic_store(&p->version, version);
    pthread_mutex_unlock(&p->lock);
    route_put(old);
}

static bool runtime_str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

bool runtime_same_backend(const struct conf_pool *pa, const struct conf_server *a,
                          const struct conf_pool *pb, const struct conf_server *b)
{
    return strcmp(pa->name, pb->name) == 0 && strcmp(a->stats_name, b->stats_name) == 0 &&
           strcmp(a->addr.text, b->addr.text) == 0 && pa->redis == pb->redis &&
           runtime_str_eq(pa->redis_auth, pb->redis_auth) && pa->redis_db == pb->redis_db &&
           pa->server_connections == pb->server_connections;
}

struct pool_shared *runtime_pool_find(const struct runtime *rt, const char *name)
{
    for (size_t i = 0; i < rt->npools; i++) {
        if (strcmp(rt->pools[i].cp->name, name) == 0) return &rt->pools[i];
    }
    return NULL;
}

/* A server that stays across a reload keeps its failure count and ejection. */
static void runtime_inherit_health(struct pool_shared *p, const struct runtime *prev)
{
    const struct pool_shared *old = runtime_pool_find(prev, p->cp->name);
    if (old == NULL) return;
    for (size_t i = 0; i < p->cp->nservers; i++) {
        const struct conf_server *cs = &p->cp->servers[i];
        for (size_t j = 0; j < old->cp->nservers; j++) {
            const struct conf_server *os = &old->cp->servers[j];
            if (strcmp(cs->stats_name, os->stats_name) != 0 || strcmp(cs->addr.text, os->addr.text) != 0)
                continue;
            const struct server_health *oh = &old->health[j];
            atomic_store(&p->health[i].failures, atomic_load(&oh->failures));
            atomic_store(&p->health[i].ejected_until, atomic_load(&oh->ejected_until));
            atomic_store(&p->health[i].ejected_at, atomic_load(&oh->ejected_at));
            break;
        }
    }
}

struct runtime *runtime_create(struct conf *conf, const struct runtime *prev, size_t nworkers)
{
    struct runtime *rt = calloc(1, sizeof(*rt));
    if (rt == NULL) return NULL;
    atomic_init(&rt->refs, 1);
    rt->conf = conf_ref(conf);
    rt->generation = prev != NULL ? prev->generation + 1 : 1;
    rt->loaded_at_usec = nc_usec_wall();
    rt->nworkers = nworkers;
    rt->npools = conf->npools;
    rt->pools = calloc(conf->npools ? conf->npools : 1, sizeof(*rt->pools));
    if (rt->pools == NULL) goto fail;
    for (size_t i = 0; i < conf->npools; i++) {
        struct pool_shared *p = &rt->pools[i];
        p->idx = (uint32_t)i;
        p->cp = &conf->pools[i];
        p->proto = p->cp->redis ? &redis_proto : &memcache_proto;
        atomic_init(&p->version, 1);
        pthread_mutex_init(&p->lock, NULL);
        size_t ns = p->cp->nservers ? p->cp->nservers : 1;
        p->health = calloc(ns, sizeof(*p->health));
        p->wstats = calloc(nworkers ? nworkers : 1, sizeof(*p->wstats));
        p->wservers = calloc((nworkers ? nworkers : 1) * ns, sizeof(*p->wservers));
        if (p->health == NULL || p->wstats == NULL || p->wservers == NULL) goto fail;
        const struct pool_shared *same = prev != NULL ? runtime_pool_find(prev, p->cp->name) : NULL;
        if (same != NULL) {
            p->clients = same->clients;
            atomic_fetch_add(&p->clients->refs, 1);
        } else {
            p->clients = calloc(1, sizeof(*p->clients));
            if (p->clients == NULL) goto fail;
            atomic_init(&p->clients->refs, 1);
            atomic_init(&p->clients->n, 0);
        }
        if (prev != NULL) runtime_inherit_health(p, prev);
        p->route = route_build(p, 1);
        if (p->route == NULL) {
            log_error("pool '%s': cannot build its distribution", p->cp->name);
            goto fail;
        }
    }
    return rt;
fail:
    runtime_put(rt);
    return NULL;
}

struct runtime *runtime_get(struct runtime *rt)
{
    atomic_fetch_add(&rt->refs, 1);
    return rt;
}

void runtime_put(struct runtime *rt)
{
    if (rt == NULL || atomic_fetch_sub(&rt->refs, 1) != 1) return;
    for (size_t i = 0; rt->pools != NULL && i < rt->npools; i++) {
        struct pool_shared *p = &rt->pools[i];
        if (p->cp == NULL) continue;
        route_put(p->route);
        if (p->clients != NULL && atomic_fetch_sub(&p->clients->refs, 1) == 1) free(p->clients);
        free(p->health);
        free(p->wstats);
        free(p->wservers);
        pthread_mutex_destroy(&p->lock);
    }
    free(rt->pools);
    conf_unref(rt->conf);
    free(rt);
}

uint32_t pool_key_hash(const struct pool_shared *p, const uint8_t *key, size_t len)
{
    const struct conf_pool *cp = p->cp;
    return hash_key(cp->hash, cp->has_hash_tag ? cp->hash_tag : NULL, key, len);
}

uint32_t pool_route(struct pool_shared *p, const uint8_t *key, size_t len)
{
    struct route *r = pool_route_get(p);
    uint32_t s = dist_dispatch(r->dist, pool_key_hash(p, key, len));
    route_put(r);
    return s;
}

bool pool_server_failed(struct pool_shared *p, uint32_t s, uint64_t now_usec)
{
    const struct conf_pool *cp = p->cp;
    struct server_health *h = &p->health[s];
    unsigned n = atomic_fetch_add(&h->failures, 1) + 1;
    if (!cp->auto_eject_hosts || n < (unsigned)cp->server_failure_limit) return false;
    uint64_t expected = 0;
    uint64_t until = now_usec + (uint64_t)cp->server_retry_timeout * 1000u;
    if (until == 0) until = 1;
    if (!atomic_compare_exchange_strong(&h->ejected_until, &expected, until)) return false;
    atomic_store(&h->ejected_at, nc_usec_wall());
    log_warn("pool '%s': server %s ejected after %u consecutive failures, for %ld ms", cp->name,
             cp->servers[s].stats_name, n, (long)cp->server_retry_timeout);
    pool_publish(p);
    return true;
}

bool pool_server_ejected(const struct pool_shared *p, uint32_t s)
{
    return atomic_load_explicit(&((struct pool_shared *)p)->health[s].ejected_until,
                                memory_order_relaxed) != 0;
}

void pool_server_readmit(struct pool_shared *p, uint32_t s)
{
    struct server_health *h = &p->health[s];
    atomic_store(&h->failures, 0);
    atomic_store(&h->ejected_until, 0);
    log_notice("pool '%s': server %s answers again: back in the distribution", p->cp->name,
               p->cp->servers[s].stats_name);
    pool_publish(p);
}

void pool_server_reeject(struct pool_shared *p, uint32_t s, uint64_t now_usec)
{
    uint64_t until = now_usec + (uint64_t)p->cp->server_retry_timeout * 1000u;
    atomic_store(&p->health[s].ejected_until, until ? until : 1);
}
