/*
 * backend.c - a loop's connections to one backend server across generations (see backend.h).
 *
 * Threads: the owning loop only.
 */
#include "config.h"
#include "core/backend.h"

#include <errno.h>
#include <stdlib.h>

#include "core/conn.h"
#include "core/loop.h"
#include "core/server.h"

/* The backend's connections now follow s: its pool's config and health, its counters (the same
 * blocks: an owner always has the same pool and server names). */
static void backend_conns_follow(struct conn **conns, uint32_t n, struct server_rt *s)
{
    for (uint32_t i = 0; conns != NULL && i < n; i++) {
        struct conn *c = conns[i];
        if (c == NULL) continue;
        c->server = s;
        c->pool = s->pool;
    }
}

static void backend_set_owner(struct backend *be, struct server_rt *s)
{
    be->owner = s;
    for (int v = 0; v < PROTO_VARIANTS; v++) backend_conns_follow(be->conns[v], be->nconns, s);
    backend_conns_follow(be->dconns, be->ndconns, s);
}

static bool backend_conns_busy(struct conn *const *conns, uint32_t n)
{
    for (uint32_t i = 0; conns != NULL && i < n; i++) {
        const struct conn *c = conns[i];
        if (c != NULL && c->nto_send + c->nsent > 0) return true;
    }
    return false;
}

int backend_acquire(struct loop *l, struct server_rt *s)
{
    struct backend *be;
    TAILQ_FOREACH(be, &l->backends, link)
    {
        const struct server_rt *o = be->owner;
        if (runtime_same_backend(o->pool->cp, o->cs, s->pool->cp, s->cs)) {
            TAILQ_INSERT_TAIL(&be->users, s, be_link);
            backend_set_owner(be, s);
            s->be = be;
            return 0;
        }
    }
    be = calloc(1, sizeof(*be));
    if (be == NULL) return -ENOMEM;
    be->nconns = (uint32_t)s->pool->cp->server_connections;
    be->conns[0] = calloc(be->nconns ? be->nconns : 1, sizeof(*be->conns[0]));
    if (be->conns[0] == NULL) {
        free(be);
        return -ENOMEM;
    }
    TAILQ_INIT(&be->users);
    TAILQ_INSERT_TAIL(&be->users, s, be_link);
    be->owner = s;
    TAILQ_INSERT_TAIL(&l->backends, be, link);
    s->be = be;
    return 0;
}

void backend_release(struct loop *l, struct server_rt *s)
{
    struct backend *be = s->be;
    if (be == NULL) return;
    s->be = NULL;
    TAILQ_REMOVE(&be->users, s, be_link);
    struct server_rt *newest = TAILQ_LAST(&be->users, server_rt_tqh);
    if (newest != NULL) {
        if (be->owner == s) backend_set_owner(be, newest);
        return;
    }
    for (int v = 0; v < PROTO_VARIANTS; v++) {
        for (uint32_t i = 0; be->conns[v] != NULL && i < be->nconns; i++) {
            if (be->conns[v][i] != NULL) server_conn_destroy(be->conns[v][i]);
        }
    }
    for (uint32_t i = 0; i < be->ndconns; i++) server_conn_destroy(be->dconns[i]);
    TAILQ_REMOVE(&l->backends, be, link);
    for (int v = 0; v < PROTO_VARIANTS; v++) free(be->conns[v]);
    free(be->dconns);
    free(be);
}

bool backend_busy(const struct backend *be)
{
    for (int v = 0; v < PROTO_VARIANTS; v++) {
        if (backend_conns_busy(be->conns[v], be->nconns)) return true;
    }
    return backend_conns_busy(be->dconns, be->ndconns);
}

static void backend_conns_close(struct conn *const *conns, uint32_t n, int err)
{
    for (uint32_t i = 0; conns != NULL && i < n; i++) {
        if (conns[i] != NULL && conn_open(conns[i])) server_conn_close(conns[i], err);
    }
}

void backend_moved(struct backend *be)
{
    /* what fails with them says why: "Remote address changed" */
    for (int v = 0; v < PROTO_VARIANTS; v++) backend_conns_close(be->conns[v], be->nconns, EREMCHG);
    backend_conns_close(be->dconns, be->ndconns, EREMCHG);
}

bool backend_used_only_by(const struct backend *be, const struct server_rt *s)
{
    return TAILQ_FIRST(&be->users) == s && TAILQ_NEXT(s, be_link) == NULL;
}
