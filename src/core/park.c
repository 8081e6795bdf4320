/*
 * park.c - writes refused with -READONLY, held until their master moves (see park.h).
 *
 * Threads: the loop's own.
 */
#include "config.h"
#include "core/park.h"

#include <errno.h>
#include <event2/event.h>

#include "common/clock.h"
#include "common/log.h"
#include "core/conn.h"
#include "core/loop.h"
#include "core/pool.h"
#include "core/request.h"
#include "core/runtime.h"
#include "core/server.h"
#include "proto/proto.h"

/* The client whose request (or fragment of one) req is; NULL when it left. */
static struct conn *park_client(const struct msg *req)
{
    return req->frag_owner != NULL ? req->frag_owner->owner : req->owner;
}

/* req gets the reply it had (its peer, the -READONLY), or fails as its connection did. */
static void park_relay(struct loop *l, struct msg *req)
{
    TAILQ_REMOVE(&l->parked, req, server_link);
    if (req->peer == NULL) request_fail(l, req, EREMCHG);
    else request_complete(l, req);
}

/* Parked requests past their deadline: their master did not move in time; relayed. */
static void park_on_timer(int fd, short what, void *arg)
{
    struct loop *l = arg;
    (void)fd;
    (void)what;
    uint64_t now = nc_usec_now();
    struct msg *req = TAILQ_FIRST(&l->parked), *next;
    for (; req != NULL; req = next) {
        next = TAILQ_NEXT(req, server_link);
        if (req->t_sent <= now) park_relay(l, req);
    }
    loop_arm_earliest(l->park_ev, &l->parked);
}

bool park_possible(const struct conn *c, const struct msg *req)
{
    return !req->swallow && !req->retried && c->pool->shared->recheck_fd >= 0 && c->ops == &server_conn_ops;
}

/* Parks req of pool p (waiting for server req->server_idx to move, or to stop holding its
 * writes) until the pool's timeout. False when out of memory. */
static bool park_add(struct loop *l, struct pool_rt *p, struct msg *req, struct msg *rsp)
{
    if (l->park_ev == NULL && (l->park_ev = evtimer_new(l->base, park_on_timer, l)) == NULL) return false;
    req->retried = true;
    req->peer = rsp;
    if (rsp != NULL) rsp->peer = req;
    int64_t timeout_ms = p->cp->timeout;
    uint64_t wait = timeout_ms > 0 ? (uint64_t)timeout_ms * 1000u : PARK_USEC;
    req->t_sent = nc_usec_now() + wait; /* while parked: its deadline */
    TAILQ_INSERT_TAIL(&l->parked, req, server_link);
    loop_arm_earliest(l->park_ev, &l->parked);
    return true;
}

bool park_request(struct conn *c, struct msg *req, struct msg *rsp)
{
    if (!park_possible(c, req) || !park_add(c->loop, c->pool, req, rsp)) return false;
    pool_topology_recheck(c->pool->shared);
    return true;
}

bool park_held_write(struct loop *l, struct pool_rt *p, struct msg *req, uint32_t s)
{
    if (req->swallow || req->retried || !(req->cmd_flags & CMD_F_WRITE)) return false;
    req->server_idx = s;
    return park_add(l, p, req, NULL);
}

void park_server_moved(struct loop *l, struct pool_rt *p, uint32_t s)
{
    struct msg *req = TAILQ_FIRST(&l->parked), *next;
    for (; req != NULL; req = next) {
        next = TAILQ_NEXT(req, server_link);
        struct conn *client = park_client(req);
        if (req->server_idx != s || (client != NULL && client->pool != p)) continue;
        if (client == NULL) { /* it left: nothing to send again */
            park_relay(l, req);
            continue;
        }
        TAILQ_REMOVE(&l->parked, req, server_link);
        if (req->peer != NULL) msg_put(&l->msgs, req->peer);
        req->peer = NULL;
        int rc = server_enqueue(&p->servers[s], req, client->id, client->sess.variant);
        if (rc < 0) request_fail(l, req, -rc);
    }
}

void park_release_all(struct loop *l)
{
    struct msg *req;
    while ((req = TAILQ_FIRST(&l->parked)) != NULL) park_relay(l, req);
    if (l->park_ev != NULL) event_free(l->park_ev);
    l->park_ev = NULL;
}
