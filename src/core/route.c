/*
 * route.c - server health and routing tables (see route.h).
 *
 * Threads: health is updated by any worker and the master's prober (atomics); tables are built
 * and published under the pool's mutex, never on the request path.
 */
#include "config.h"
#include "core/route.h"

#include <stdlib.h>

#include "common/clock.h"
#include "common/log.h"

/* Builds a route over the servers of p->set that are not ejected. Called with p->lock held (or
 * before the pool is shared). */
static struct route *route_build(struct pool_shared *p, uint64_t version)
{
    const struct topo_set *set = p->set;
    size_t n = set->nservers;
    bool *live = calloc(n ? n : 1, sizeof(*live));
    struct route *r = calloc(1, sizeof(*r));
    if (live == NULL || r == NULL) goto fail;
    /* replicas own no keys: reads go to them from their master's keys (core/replica.h) */
    for (size_t i = 0; i < n; i++)
        live[i] = atomic_load(&p->health[i].ejected_until) == 0 && set->servers[i].role == TOPO_ROLE_MASTER;
    const struct topo_source_ops *src = p->source_ops;
    r->dist = src->build_dist != NULL ? src->build_dist(p->cp, set, live) : topo_build_dist(p->cp, set, live);
    if (r->dist == NULL) goto fail;
    atomic_init(&r->refs, 1);
    for (size_t i = 0; i < n; i++) r->any_hold |= set->servers[i].hold;
    r->set = topo_set_ref(p->set);
    r->version = version;
    free(live);
    return r;
fail:
    free(live);
    free(r);
    return NULL;
}

void route_put(struct route *r)
{
    if (r != NULL && atomic_fetch_sub(&r->refs, 1) == 1) {
        dist_destroy(r->dist);
        topo_set_put(r->set);
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

struct route *route_build_first(struct pool_shared *p)
{
    return route_build(p, 1);
}

void pool_publish_set(void *arg, struct topo_set *set)
{
    struct pool_shared *p = arg;
    if (set->nservers != p->cp->nservers) { /* a source of a fixed server list cannot do that */
        log_error("pool '%s': a server set of %u servers for %zu: ignored", p->cp->name, set->nservers,
                  p->cp->nservers);
        topo_set_put(set);
        return;
    }
    pthread_mutex_lock(&p->lock);
    struct topo_set *old = p->set;
    set->serial = old->serial + 1;
    p->set = set;
    pthread_mutex_unlock(&p->lock);
    /* a server at a new address starts with a clean record: the old address's failures (an
     * ejection for a dead master) say nothing of the new one */
    uint64_t now = nc_usec_now();
    for (uint32_t i = 0; i < set->nservers; i++) {
        if (topo_same_addr(old, set, i)) continue;
        uint64_t since = atomic_exchange(&p->health[i].failing_since, 0);
        if (since != 0 && now > since)
            log_notice("pool '%s': server %s: its requests had been failing for %llu ms when it moved", p->cp->name,
                       set->servers[i].name, (unsigned long long)((now - since) / 1000u));
        atomic_store(&p->health[i].failures, 0);
        atomic_store(&p->health[i].ejected_until, 0);
    }
    topo_set_put(old);
    pool_publish(p);
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

bool server_log_allowed(struct nc_ratelimit *rl, uint64_t *suppressed)
{
    return log_enabled(LOG_NOTICE) && nc_ratelimit_allow(rl, nc_usec_now(), suppressed);
}

bool pool_server_failed(struct pool_shared *p, uint32_t s, uint64_t now_usec)
{
    const struct conf_pool *cp = p->cp;
    struct server_health *h = &p->health[s];
    unsigned n = atomic_fetch_add(&h->failures, 1) + 1;
    if (n == 1) atomic_store(&h->failing_since, now_usec);
    if (!cp->auto_eject_hosts || n < (unsigned)cp->server_failure_limit) return false;
    uint64_t expected = 0;
    uint64_t until = now_usec + (uint64_t)cp->server_retry_timeout * 1000u;
    if (until == 0) until = 1;
    if (!atomic_compare_exchange_strong(&h->ejected_until, &expected, until)) return false;
    atomic_store(&h->ejected_at, nc_usec_wall());
    uint64_t sup;
    if (server_log_allowed(&h->state_log, &sup))
        log_warn("pool '%s': server %s ejected after %u consecutive failures, for %ld ms%s", cp->name,
                 cp->servers[s].stats_name, n, (long)cp->server_retry_timeout, NC_RATELIMIT_NOTE(sup));
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
    atomic_store(&h->failing_since, 0);
    atomic_store(&h->ejected_until, 0);
    uint64_t sup;
    if (server_log_allowed(&h->state_log, &sup))
        log_notice("pool '%s': server %s answers again: back in the distribution%s", p->cp->name,
                   p->cp->servers[s].stats_name, NC_RATELIMIT_NOTE(sup));
    pool_publish(p);
}

void pool_server_reeject(struct pool_shared *p, uint32_t s, uint64_t now_usec)
{
    uint64_t until = now_usec + (uint64_t)p->cp->server_retry_timeout * 1000u;
    atomic_store(&p->health[s].ejected_until, until ? until : 1);
}
