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

#include "core/gen.h"
#include "core/loop.h"

int pool_rt_init(struct pool_rt *p, struct gen *g, struct pool_shared *shared)
{
    memset(p, 0, sizeof(*p));
    p->loop = g->loop;
    p->gen = g;
    p->shared = shared;
    p->cp = shared->cp;
    p->proto = shared->proto;
    p->st = shared->wstats[g->loop->id];
    p->route = pool_route_get(shared);
    p->route_version = p->route->version;
    p->nservers = (uint32_t)p->cp->nservers;
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

void pool_rt_refresh(struct pool_rt *p)
{
    struct route *r = pool_route_get(p->shared);
    route_put(p->route);
    p->route = r;
    p->route_version = r->version;
}
