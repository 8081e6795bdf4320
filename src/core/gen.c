/*
 * gen.c - a worker's side of one config generation (see gen.h).
 *
 * Threads: the owning worker (gen_create/gen_destroy also on the master before the worker
 * starts and after it stopped).
 */
#include "config.h"
#include "core/gen.h"

#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/runtime.h"
#include "core/server.h"
#include "thread/worker.h"

struct worker_gen *gen_create(struct worker *w, struct runtime *rt)
{
    struct worker_gen *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        runtime_put(rt);
        return NULL;
    }
    g->w = w;
    g->rt = rt;
    TAILQ_INSERT_TAIL(&w->gens, g, link);
    g->pools = calloc(rt->npools ? rt->npools : 1, sizeof(*g->pools));
    if (g->pools == NULL) goto fail;
    for (size_t i = 0; i < rt->npools; i++) {
        if (pool_rt_init(&g->pools[i], g, &rt->pools[i]) < 0) goto fail;
        g->npools++;
        struct pool_rt *p = &g->pools[i];
        for (uint32_t k = 0; k < p->nservers; k++) {
            if (backend_acquire(w, &p->servers[k]) < 0) goto fail;
        }
    }
    return g;
fail:
    gen_destroy(g);
    return NULL;
}

void gen_destroy(struct worker_gen *g)
{
    struct worker *w = g->w;
    for (size_t i = 0; g->pools != NULL && i < g->npools; i++) {
        struct pool_rt *p = &g->pools[i];
        for (uint32_t k = 0; p->servers != NULL && k < p->nservers; k++) backend_release(w, &p->servers[k]);
        pool_rt_deinit(p);
    }
    free(g->pools);
    TAILQ_REMOVE(&w->gens, g, link);
    runtime_put(g->rt);
    free(g);
}

bool gen_idle(const struct worker_gen *g)
{
    if (g == g->w->gen || g->nclients > 0) return false;
    for (size_t i = 0; i < g->npools; i++) {
        const struct pool_rt *p = &g->pools[i];
        for (uint32_t k = 0; k < p->nservers; k++) {
            const struct backend *be = p->servers[k].be;
            if (be != NULL && be->refs == 1 && backend_busy(be)) return false;
        }
    }
    return true;
}

struct pool_rt *gen_pool_find(struct worker_gen *g, const char *name)
{
    for (size_t i = 0; i < g->npools; i++) {
        if (strcmp(g->pools[i].cp->name, name) == 0) return &g->pools[i];
    }
    return NULL;
}

void gen_preconnect(struct worker_gen *g)
{
    for (size_t i = 0; i < g->npools; i++) {
        struct pool_rt *p = &g->pools[i];
        if (!p->cp->preconnect) continue;
        for (uint32_t k = 0; k < p->nservers; k++) server_preconnect(&p->servers[k]);
    }
}
