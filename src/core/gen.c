/*
 * gen.c - a loop's side of one config generation (see gen.h).
 *
 * Threads: the owning loop (gen_create/gen_destroy also on the master before the loop's thread
 * starts and after it stopped).
 */
#include "config.h"
#include "core/gen.h"

#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/loop.h"
#include "core/pool.h"
#include "core/runtime.h"
#include "core/server.h"

struct gen *gen_create(struct loop *l, struct runtime *rt)
{
    struct gen *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        runtime_put(rt);
        return NULL;
    }
    g->loop = l;
    g->rt = rt;
    TAILQ_INSERT_TAIL(&l->gens, g, link);
    g->pools = calloc(rt->npools ? rt->npools : 1, sizeof(*g->pools));
    if (g->pools == NULL) goto fail;
    for (size_t i = 0; i < rt->npools; i++) {
        if (pool_rt_init(&g->pools[i], g, &rt->pools[i]) < 0) goto fail;
        g->npools++;
        struct pool_rt *p = &g->pools[i];
        for (uint32_t k = 0; k < p->nservers; k++) {
            if (backend_acquire(l, &p->servers[k]) < 0) goto fail;
        }
    }
    return g;
fail:
    gen_destroy(g);
    return NULL;
}

void gen_destroy(struct gen *g)
{
    struct loop *l = g->loop;
    for (size_t i = 0; g->pools != NULL && i < g->npools; i++) {
        struct pool_rt *p = &g->pools[i];
        for (uint32_t k = 0; p->servers != NULL && k < p->nservers; k++) backend_release(l, &p->servers[k]);
        pool_rt_deinit(p);
    }
    free(g->pools);
    TAILQ_REMOVE(&l->gens, g, link);
    runtime_put(g->rt);
    free(g);
}

bool gen_idle(const struct gen *g)
{
    if (g == g->loop->gen || g->nclients > 0) return false;
    for (size_t i = 0; i < g->npools; i++) {
        const struct pool_rt *p = &g->pools[i];
        for (uint32_t k = 0; k < p->nservers; k++) {
            const struct backend *be = p->servers[k].be;
            if (be != NULL && backend_used_only_by(be, &p->servers[k]) && backend_busy(be)) return false;
        }
    }
    return true;
}

struct pool_rt *gen_pool_find(struct gen *g, const char *name)
{
    for (size_t i = 0; i < g->npools; i++) {
        if (strcmp(g->pools[i].cp->name, name) == 0) return &g->pools[i];
    }
    return NULL;
}

void gen_preconnect(struct gen *g)
{
    for (size_t i = 0; i < g->npools; i++) {
        struct pool_rt *p = &g->pools[i];
        if (!p->cp->preconnect) continue;
        for (uint32_t k = 0; k < p->nservers; k++) {
            if (k < p->route->set->nservers && topo_slot_empty(p->route->set, k)) continue; /* nobody there yet */
            server_preconnect(&p->servers[k]);
        }
    }
}
