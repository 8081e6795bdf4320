/*
 * fair.h - a client's fair share of the shared server connections. Every client of a pool sends
 * its requests on the same connections, answered in order, so a client that pipelines large
 * requests (1 MB SETs), or small ones with large replies (GETs of 1 MB values), would put hundreds
 * of megabytes in front of every other client's small GET. The design: notes/fair-share.md.
 *
 * A client may have at most FAIR_BUDGET bytes in flight on server connections: each forwarded
 * request costs its own bytes plus the reply it is expected to get (fair_est: the client's recent
 * replies, rising at once to a larger one, falling by an eighth per smaller one; before it has
 * any, the average reply of its pool on its worker, which starts at FAIR_EST_START): a client that
 * asks for large values from its first request on meets its share at once in a pool that serves
 * them. A request that would pass the budget is held back (msg.fair_wait) with every
 * later one of the client, until enough of its requests in flight are answered; one request alone
 * is always sent, whatever its size. A client whose requests and replies are small is never held:
 * the plain path pays a compare when it forwards and one when it is answered.
 *
 * Threads: the loop owning the client.
 */
#ifndef NC_FAIR_H
#define NC_FAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/conn.h"
#include "core/pool.h"
#include "msg/msg.h"

#define FAIR_BUDGET (1u << 20)      /* bytes a client may have in flight on server connections */
#define FAIR_EST_START (4u << 10)   /* a pool's first guess of a reply's size (256 small requests
                                     * in flight before any is answered) */

/* Whether req of client c may be forwarded now; then it is charged to c's share. */
static inline bool fair_admit(struct conn *c, struct msg *req)
{
    uint64_t cost = req->len + c->fair_est;
    if (c->fair_nheld > 0 || (c->fair_inflight > 0 && c->fair_inflight + cost > FAIR_BUDGET)) return false;
    if (cost > UINT32_MAX - c->fair_inflight) cost = UINT32_MAX - c->fair_inflight; /* one huge request */
    req->fair_cost = (uint32_t)cost;
    c->fair_inflight += (uint32_t)cost;
    return true;
}

/* req of client c could not be admitted: held back, after c's other held requests. */
void fair_hold(struct conn *c, struct msg *req);
/* Forwards c's held requests that now fit its share, oldest first (from c's flush: never from
 * inside a server connection's callback, which may be failing the connections they would go on). */
void fair_release(struct conn *c);

/* req (of client c, charged to its share) has its reply or failed: its share and its reply size
 * estimate follow (and its pool's average: a sixteenth a reply); when c holds requests back, its
 * flush is queued, which forwards those that now fit (fair_release). */
static inline void fair_done(struct conn *c, struct msg *req)
{
    c->fair_inflight -= req->fair_cost;
    req->fair_cost = 0;
    uint64_t len = req->peer != NULL ? req->peer->len : 0;
    uint32_t reply = len < FAIR_BUDGET ? (uint32_t)len : FAIR_BUDGET;
    if (reply > c->fair_est) c->fair_est = reply;
    else c->fair_est -= (c->fair_est - reply) / 8;
    struct pool_rt *p = c->pool;
    p->fair_est = (uint32_t)(((uint64_t)p->fair_est * 15 + reply) / 16);
    if (c->fair_nheld > 0) conn_flush_later(c);
}
/* A new client: no share used, its pool's replies as its first guess. */
void fair_init(struct conn *c);

#endif
