/*
 * pool.c - a loop's view of a pool and its servers (see pool.h).
 *
 * Threads: the owning loop (pool_rt_init/deinit also on the master before the loop's thread
 * starts and after it stopped).
 */
#include "config.h"
#include "core/pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/fair.h"
#include "core/gen.h"
#include "core/loop.h"
#include "core/park.h"

int pool_rt_init(struct pool_rt *p, struct gen *g, struct pool_shared *shared)
{
    memset(p, 0, sizeof(*p));
    p->loop = g->loop;
    p->gen = g;
    p->shared = shared;
    p->cp = shared->cp;
    p->proto = shared->proto;
    p->parse_opts = p->proto->parse_opts != NULL ? p->proto->parse_opts(p->cp) : 0;
    p->parse_table = shared->parse_table;
    p->st = shared->wstats[g->loop->id];
    p->route = pool_route_get(shared);
    p->route_version = p->route->version;
    p->fair_est = FAIR_EST_START;
    p->hot_countdown = 1; /* the first keyed request: its sample sets the pace (loop.hotkeys_every) */
    p->nservers = (uint32_t)p->cp->nservers;
    p->nshards = p->cp->nshards != 0 ? (uint32_t)p->cp->nshards : p->nservers;
    p->servers = calloc(p->nservers ? p->nservers : 1, sizeof(*p->servers));
    if (p->servers == NULL) {
        pool_rt_deinit(p);
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < p->nservers; i++) {
        struct server_rt *s = &p->servers[i];
        s->pool = p;
        s->idx = i;
        s->cs = &p->cp->servers[i];
        s->st = shared->wservers[(size_t)g->loop->id * p->nservers + i];
    }
    return 0;
}

void pool_rt_deinit(struct pool_rt *p)
{
    free(p->servers);
    p->servers = NULL;
    route_put(p->route);
    p->route = NULL;
}

/* Whether server i held its writes in a and no longer does in b (at the same address). */
static bool pool_hold_ended(const struct topo_set *a, const struct topo_set *b, uint32_t i)
{
    return a->servers[i].hold && !b->servers[i].hold;
}

/* Whether any server is at another address in b than in a, or stopped holding its writes. */
static bool pool_set_moved(const struct topo_set *a, const struct topo_set *b)
{
    if (a == b) return false;
    for (uint32_t i = 0; i < a->nservers && i < b->nservers; i++) {
        if (!topo_same_addr(a, b, i) || pool_hold_ended(a, b, i)) return true;
    }
    return false;
}

void pool_rt_refresh(struct pool_rt *p)
{
    struct route *r = pool_route_get(p->shared);
    if (pool_set_moved(p->route->set, r->set)) {
        /* not now: at the pass's end (the version is noted so that routing does not come back
         * here for every request until then) */
        p->route_version = r->version;
        p->loop->moved_pending = true;
        route_put(r);
        return;
    }
    struct route *old = p->route;
    p->route = r;
    p->route_version = r->version;
    route_put(old);
}

void pool_rt_refresh_moved(struct pool_rt *p)
{
    struct route *r = pool_route_get(p->shared);
    struct route *old = p->route;
    p->route = r;
    p->route_version = r->version;
    if (r->set != old->set) {
        for (uint32_t i = 0; i < p->nservers && i < r->set->nservers; i++) {
            bool moved = !topo_same_addr(old->set, r->set, i);
            if (!moved && !pool_hold_ended(old->set, r->set, i)) continue;
            if (moved) backend_moved(p->servers[i].be);
            park_server_moved(p->loop, p, i); /* its held and refused writes go there now */
        }
    }
    route_put(old);
}

uint32_t pool_rt_any_master(struct pool_rt *p, uint32_t turn)
{
    const struct topo_set *set = p->route->set;
    for (uint32_t k = 0; k < p->nshards; k++) {
        uint32_t i = (turn + k) % p->nshards;
        if (i >= set->nservers || !topo_slot_empty(set, i)) return i;
    }
    return DIST_NONE;
}

const struct conf_addr *pool_rt_server_addr(struct pool_rt *p, uint32_t s)
{
    if (atomic_load_explicit(&p->shared->version, memory_order_relaxed) != p->route_version)
        pool_rt_refresh(p);
    return &p->route->set->servers[s].addr;
}
