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

/* Oldest first, while they fit. A request forwarded here may be answered at once (its server is
 * down): fair_done then only queues c's flush again. */
void fair_release(struct conn *c)
{
    while (c->fair_nheld > 0) {
        struct msg *req = c->fair_first;
        while (req != NULL && !req->fair_wait) req = TAILQ_NEXT(req, client_link); /* (answered
                                    * by the proxy, or a transaction's, between two held ones) */
        if (req == NULL) { /* cannot happen: nheld counts the held ones after fair_first */
            c->fair_nheld = 0;
            break;
        }
        c->fair_first = req;
        uint32_t nheld = c->fair_nheld;
        c->fair_nheld = 0; /* fair_admit holds nothing while some are held */
        bool fits = fair_admit(c, req);
        c->fair_nheld = nheld - (fits ? 1 : 0);
        if (!fits) break;
        req->fair_wait = false;
        c->fair_first = c->fair_nheld > 0 ? TAILQ_NEXT(req, client_link) : NULL;
        request_route(c->loop, c, req);
    }
}
