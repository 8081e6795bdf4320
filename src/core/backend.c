/*
 * backend.c - a worker's connections to one backend server across generations (see backend.h).
 *
 * Threads: the owning worker only.
 */
#include "config.h"
#include "core/backend.h"

#include <errno.h>
#include <stdlib.h>

#include "core/conn.h"
#include "core/gen.h"
#include "core/server.h"
#include "thread/worker.h"

/* The backend's connections now follow s: its pool's config and health, its counters (the same
 * blocks: an owner always has the same pool and server names). */
static void backend_set_owner(struct backend *be, struct server_rt *s)
{
    be->owner = s;
    for (uint32_t i = 0; i < be->nconns; i++) {
        struct conn *c = be->conns[i];
        if (c == NULL) continue;
        c->server = s;
        c->pool = s->pool;
    }
}

int backend_acquire(struct worker *w, struct server_rt *s)
{
    struct backend *be;
    TAILQ_FOREACH(be, &w->backends, link)
    {
        const struct server_rt *o = be->owner;
        if (runtime_same_backend(o->pool->cp, o->cs, s->pool->cp, s->cs)) {
            be->refs++;
            backend_set_owner(be, s);
            s->be = be;
            return 0;
        }
    }
    be = calloc(1, sizeof(*be));
    if (be == NULL) return -ENOMEM;
    be->nconns = (uint32_t)s->pool->cp->server_connections;
    be->conns = calloc(be->nconns ? be->nconns : 1, sizeof(*be->conns));
    if (be->conns == NULL) {
        free(be);
        return -ENOMEM;
    }
    be->refs = 1;
    be->owner = s;
    TAILQ_INSERT_TAIL(&w->backends, be, link);
    s->be = be;
    return 0;
}

/* Another server_rt using be, in a generation other than skip's, or NULL. */
static struct server_rt *backend_find_user(struct worker *w, const struct backend *be, const struct worker_gen *skip)
{
    struct worker_gen *g;
    TAILQ_FOREACH(g, &w->gens, link)
    {
        if (g == skip) continue;
        for (size_t p = 0; p < g->npools; p++) {
            struct pool_rt *pr = &g->pools[p];
            for (uint32_t k = 0; k < pr->nservers; k++) {
                if (pr->servers[k].be == be) return &pr->servers[k];
            }
        }
    }
    return NULL;
}

void backend_release(struct worker *w, struct server_rt *s)
{
    struct backend *be = s->be;
    if (be == NULL) return;
    s->be = NULL;
    if (--be->refs > 0) {
        if (be->owner == s) {
            struct server_rt *next = backend_find_user(w, be, s->pool->gen);
            if (next != NULL) backend_set_owner(be, next);
        }
        return;
    }
    for (uint32_t i = 0; i < be->nconns; i++) {
        if (be->conns[i] != NULL) server_conn_destroy(be->conns[i]);
    }
    TAILQ_REMOVE(&w->backends, be, link);
    free(be->conns);
    free(be);
}

bool backend_busy(const struct backend *be)
{
    for (uint32_t i = 0; i < be->nconns; i++) {
        const struct conn *c = be->conns[i];
        if (c != NULL && c->nq1 + c->nq2 > 0) return true;
    }
    return false;
}
