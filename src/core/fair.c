/*
 * fair.c - a client's fair share of the shared server connections (see fair.h).
 *
 * Threads: the loop owning the client.
 */
#include "config.h"
#include "core/fair.h"

#include "core/loop.h"
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

/* Oldest first, while they fit. Not again from inside itself: a request forwarded here may be
 * answered at once (its server is down), which comes back through fair_done. */
void fair_release(struct conn *c)
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
