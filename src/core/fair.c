/*
 * fair.c - a client's fair share of the shared server connections (see fair.h).
 *
 * Threads: the loop owning the client.
 */
#include "config.h"
#include "core/fair.h"

#include "core/loop.h"
#include "core/pool.h"
#include "core/request.h"

void fair_init(struct conn *c)
{
    c->fair_first = NULL;
    c->fair_inflight = 0;
    c->fair_est = c->pool->fair_est;
    c->fair_nheld = 0;
}

void fair_hold(struct conn *c, struct msg *req)
{
    req->fair_wait = true;
    if (c->fair_nheld++ == 0) c->fair_first = req;
}

/* Forwards c's held requests, oldest first, while they fit its share. Not again from inside
 * itself: a request forwarded here may be answered at once (its server is down), which comes back
 * through fair_done. */
static void fair_release(struct conn *c)
{
    struct loop *l = c->loop;
    if (l->fair_releasing) return;
    l->fair_releasing = true;
    struct msg *req = c->fair_first;
    while (req != NULL && c->fair_nheld > 0) {
        if (!req->fair_wait) { /* answered by the proxy, or a transaction's, between two held */
            req = TAILQ_NEXT(req, client_link);
            continue;
        }
        uint32_t nheld = c->fair_nheld;
        c->fair_nheld = 0; /* fair_admit holds nothing while some are held */
        bool fits = fair_admit(c, req);
        c->fair_nheld = nheld;
        if (!fits) break;
        struct msg *next = TAILQ_NEXT(req, client_link);
        req->fair_wait = false;
        c->fair_nheld--;
        request_route(l, c, req);
        req = next;
    }
    c->fair_first = c->fair_nheld > 0 ? req : NULL;
    l->fair_releasing = false;
}

void fair_done(struct conn *c, struct msg *req)
{
    c->fair_inflight -= req->fair_cost;
    req->fair_cost = 0;
    uint64_t len = req->peer != NULL ? req->peer->len : 0;
    uint32_t reply = len < FAIR_BUDGET ? (uint32_t)len : FAIR_BUDGET;
    if (reply > c->fair_est) c->fair_est = reply;
    else c->fair_est -= (c->fair_est - reply) / 8;
    struct pool_rt *p = c->pool; /* the pool's average, for its next clients: a sixteenth a reply */
    p->fair_est = (uint32_t)(((uint64_t)p->fair_est * 15 + reply) / 16);
    if (c->fair_nheld > 0) fair_release(c);
}
