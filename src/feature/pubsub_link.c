/*
 * pubsub_link.c - a subscriber's state (see pubsub_int.h), made and ended, and its links: its
 * dedicated connection to each server, the requests sent on them and the FIFO of confirmations
 * each waits for, the client requests waiting for those (ps_op), and the timer that takes a
 * server that does not confirm in time as failed and gives the servers back from an ejection the
 * client's patterns.
 *
 * Threads: the loop owning the client (and its dedicated connections).
 */
#include "config.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "core/client.h"
#include "core/loop.h"
#include "core/pool.h"
#include "feature/pubsub.h"
#include "feature/pubsub_int.h"
#include "core/request.h"
#include "core/server.h"

/* how often a pattern subscriber looks for an ejected server that came back (usec) */
#define PS_REPAIR_USEC 1000000u

/* --- the state ------------------------------------------------------------------------------- */

/* c's state: made at its first (P|S)SUBSCRIBE, with an empty set and no link held yet. */
struct pubsub *ps_get(struct conn *c)
{
    if (ps_of(c) != NULL) return ps_of(c);
    struct pubsub *ps = calloc(1, sizeof(*ps));
    if (ps == NULL) return NULL;
    ps->c = c;
    ps->nbuckets = PS_BUCKETS_MIN;
    ps->table = calloc(ps->nbuckets, sizeof(*ps->table));
    ps->nlinks = c->pool->nservers;
    ps->links = calloc(ps->nlinks, sizeof(*ps->links));
    if (ps->table == NULL || ps->links == NULL) {
        free(ps->table);
        free(ps->links);
        free(ps);
        return NULL;
    }
    feature_attach(c, &pubsub_feature, ps);
    return ps;
}

/* --- requests waiting for confirmations ----------------------------------------------------- */

/* A server refused op's request: the names it added leave the client's set again. */
static void ps_op_rollback(struct ps_op *op)
{
    struct msg *req = op->req;
    struct pubsub *ps = ps_of(req->owner);
    for (uint32_t i = 0; op->added != NULL && i < req->nkeys; i++) {
        if (!op->added[i]) continue;
        struct ps_name **at = ps_slot(ps, op->kind, req->keys[i].ptr, req->keys[i].len);
        if (*at != NULL) ps_unlink(ps, at);
    }
}

/* op has all its confirmations (or its link is gone): its client gets the reply; a refused
 * request's names are taken out of the set when rollback says so. */
void ps_op_finish(struct loop *l, struct ps_op *op, bool client_gone, bool rollback)
{
    struct msg *req = op->req;
    if (!client_gone && rollback && op->err != 0) ps_op_rollback(op);
    if (client_gone) {
        client_req_mark_done(req->owner, req); /* freed with its client */
    } else if (op->err != 0 && op->err_text.len > 0 && !op->err_text.failed) {
        request_answer(req->owner, req, op->err_text.data, op->err_text.len);
    } else if (op->err != 0 || op->reply.failed) {
        request_fail(l, req, op->err != 0 ? op->err : ENOMEM);
    } else {
        request_answer(req->owner, req, op->reply.data, op->reply.len);
    }
    textbuf_deinit(&op->reply);
    textbuf_deinit(&op->err_text);
    free(op->added);
    free(op);
}

void ps_op_step(struct loop *l, struct ps_op *op, bool client_gone, bool rollback)
{
    if (op != NULL && --op->servers_left == 0) ps_op_finish(l, op, client_gone, rollback);
}

static int ps_wait_push(struct ps_link *lk, struct ps_op *op, uint64_t confirms)
{
    if (lk->nwait == lk->wcap) {
        uint32_t ncap = lk->wcap ? lk->wcap * 2 : 4;
        struct ps_wait *w = malloc(sizeof(*w) * ncap);
        if (w == NULL) return -ENOMEM;
        for (uint32_t i = 0; i < lk->nwait; i++) w[i] = lk->waits[(lk->whead + i) % lk->wcap];
        free(lk->waits);
        lk->waits = w;
        lk->wcap = ncap;
        lk->whead = 0;
    }
    lk->waits[(lk->whead + lk->nwait) % lk->wcap] =
        (struct ps_wait){ .op = op, .confirms_left = confirms, .t_queued = nc_usec_now() };
    lk->nwait++;
    return 0;
}

struct ps_wait *ps_wait_head(struct ps_link *lk)
{
    return lk->nwait > 0 ? &lk->waits[lk->whead] : NULL;
}

struct ps_op *ps_wait_pop(struct ps_link *lk)
{
    struct ps_op *op = lk->waits[lk->whead].op;
    lk->whead = (lk->whead + 1) % lk->wcap;
    lk->nwait--;
    return op;
}

/* op's request could not be sent to every server it needs: the waits queued for it on the others
 * are orphaned (their confirmations are for nobody). */
void ps_op_orphan(struct pubsub *ps, const struct ps_op *op)
{
    for (uint32_t s = 0; s < ps->nlinks; s++) {
        struct ps_link *lk = &ps->links[s];
        for (uint32_t w = 0; w < lk->nwait; w++) {
            struct ps_wait *wt = &lk->waits[(lk->whead + w) % lk->wcap];
            if (wt->op == op) wt->op = NULL;
        }
    }
}

/* --- the confirmations' timeout, the patterns' repair -------------------------------------- */

/* When the first link whose server owes a confirmation times out: the pool's `timeout` after the
 * oldest request waiting on it (0: nothing waits, or no `timeout`). A link's FIFO is in the order
 * of its requests, so its head is its oldest. */
static uint64_t ps_deadline(const struct pubsub *ps)
{
    if (ps->c->pool->cp->timeout <= 0) return 0;
    uint64_t timeout = (uint64_t)ps->c->pool->cp->timeout * 1000u, first = 0;
    for (uint32_t s = 0; s < ps->nlinks; s++) {
        const struct ps_link *lk = &ps->links[s];
        if (lk->d == NULL || lk->nwait == 0) continue;
        uint64_t at = lk->waits[lk->whead].t_queued + timeout;
        if (first == 0 || at < first) first = at;
    }
    return first;
}

static void ps_on_timer(evutil_socket_t fd, short what, void *arg);

/* (Re)arms ps's timer: for ps_deadline, and within PS_REPAIR_USEC while a server misses the
 * client's patterns. A pending timer that fires no later is kept. */
void ps_arm_timer(struct pubsub *ps)
{
    const struct conn *c = ps->c;
    uint64_t now = nc_usec_now(), at = ps_deadline(ps);
    if (ps->nmissing > 0 && (at == 0 || now + PS_REPAIR_USEC < at)) at = now + PS_REPAIR_USEC;
    if (at == 0) return;
    if (ps->tev == NULL && (ps->tev = evtimer_new(c->loop->base, ps_on_timer, ps)) == NULL) {
        log_warn("client %lu: out of memory for the subscription timer", (unsigned long)c->id);
        return;
    }
    if (evtimer_pending(ps->tev, NULL) && ps->t_armed <= at) return;
    uint64_t wait = at > now ? at - now : 0;
    struct timeval tv = { .tv_sec = (time_t)(wait / 1000000u), .tv_usec = (suseconds_t)(wait % 1000000u) };
    ps->t_armed = at;
    evtimer_add(ps->tev, &tv);
}

static void ps_repair(struct pubsub *ps);

/* A server that has not confirmed within `timeout` is taken as failed, as one that leaves a request
 * unanswered: its link's connection is closed as timed out (ps_link_lost then fails what waits on
 * it and closes the client). Then the servers back from an ejection get the client's patterns. */
static void ps_on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct pubsub *ps = arg;
    struct conn *c = ps->c;
    uint64_t now = nc_usec_now();
    if (c->pool->cp->timeout > 0) {
        uint64_t timeout = (uint64_t)c->pool->cp->timeout * 1000u;
        for (uint32_t s = 0; s < ps->nlinks; s++) {
            struct ps_link *lk = &ps->links[s];
            if (lk->d != NULL && lk->nwait > 0 && lk->waits[lk->whead].t_queued + timeout <= now)
                server_conn_timed_out(lk->d);
        }
    }
    if (ps->nmissing > 0 && !c->closing && !c->kill) ps_repair(ps);
    ps_arm_timer(ps); /* (ps stays: a lost link closes its client later, from the flush queue) */
}

/* --- links ----------------------------------------------------------------------------------- */

/* Gives lk's connection up: closed (nothing of the client stays on the server), back in its set. */
static void ps_link_drop(struct loop *l, struct ps_link *lk, bool client_gone)
{
    while (lk->nwait > 0) ps_op_step(l, ps_wait_pop(lk), client_gone, false);
    struct conn *d = lk->d;
    lk->d = NULL;
    if (d == NULL) return;
    dedicated_release(d, false); /* first: its closing is nobody's loss */
    server_conn_close(d, ECONNABORTED);
    d->ops = &dedicated_conn_ops;
}

/* The client has no subscription left (or is leaving): every link dropped, the state freed. */
void ps_end(struct conn *c, bool client_gone)
{
    struct pubsub *ps = ps_of(c);
    if (ps == NULL) return;
    for (uint32_t i = 0; i < ps->nlinks; i++) {
        ps_link_drop(c->loop, &ps->links[i], client_gone);
        free(ps->links[i].waits);
    }
    for (uint32_t i = 0; i < ps->nbuckets; i++) {
        while (ps->table[i] != NULL) ps_unlink(ps, &ps->table[i]);
    }
    free(ps->table);
    free(ps->links);
    if (ps->tev != NULL) event_free(ps->tev);
    free(ps);
    feature_detach(c, &pubsub_feature);
}

/* dedicated_holder.lost: a subscribed connection failed (or its server did not confirm in time):
 * the client's subscriptions on that server are gone. The requests waiting on it fail with its
 * error (answered once their other servers confirmed), and the client is closed once its replies
 * are written (it subscribes again when it reconnects). */
static void ps_link_lost(struct dedicated_holder *h, struct conn *d, int err)
{
    (void)d; /* lk->d */
    struct ps_link *lk = (struct ps_link *)h;
    struct conn *c = lk->ps->c;
    if (lk->d != NULL) lk->d->ops = &dedicated_conn_ops;
    lk->d = NULL;
    if (err == 0) err = ECONNRESET;
    log_notice("client %lu: its subscriptions on server %s are lost (%s): closing the client",
               (unsigned long)c->id, c->pool->servers[lk->server].cs->stats_name, strerror(err));
    while (lk->nwait > 0) {
        struct ps_op *op = ps_wait_pop(lk);
        if (op != NULL && op->err == 0) op->err = err;
        ps_op_step(c->loop, op, false, true);
    }
    c->err = err;
    c->closing = true; /* closed from the flush queue, outside the server connection's callback */
    conn_want_read(c, false);
    conn_flush_later(c);
}

/* lk holds a dedicated connection to its server. Returns 0, -EBUSY or -ENOMEM. */
int ps_link_take(struct conn *c, struct pubsub *ps, uint32_t server)
{
    struct ps_link *lk = &ps->links[server];
    if (lk->d != NULL) return 0;
    lk->ps = ps;
    lk->server = server;
    lk->holder.lost = ps_link_lost;
    lk->holder.redirect = NULL; /* a subscription's -MOVED is relayed */
    int rc = dedicated_acquire(&c->pool->servers[server], &lk->holder, c->sess.variant, &lk->d);
    if (rc < 0) {
        lk->d = NULL;
        return rc;
    }
    lk->d->ops = &pubsub_conn_ops;
    return 0;
}

/* --- the requests to the servers ------------------------------------------------------------ */

int ps_batch_init(struct ps_batch *b, uint32_t nservers)
{
    b->nservers = nservers;
    b->text = calloc(nservers, sizeof(*b->text));
    b->n = calloc(nservers, sizeof(*b->n));
    return b->text != NULL && b->n != NULL ? 0 : -ENOMEM;
}

void ps_batch_free(struct ps_batch *b)
{
    for (uint32_t i = 0; b->text != NULL && i < b->nservers; i++) textbuf_deinit(&b->text[i]);
    free(b->text);
    free(b->n);
}

void ps_batch_add(struct conn *c, struct ps_batch *b, uint32_t server, const uint8_t *p, size_t n)
{
    c->pool->proto->pubsub->arg(&b->text[server], p, n);
    b->n[server]++;
}

/* Sends the batch's request to each server that has arguments (kind, unsub), each waiting for
 * one confirmation per argument on behalf of op (NULL: nobody waits). Returns the number of
 * servers sent to; *err: the error of a server it could not be sent to (0: none). */
uint32_t ps_batch_send(struct conn *c, struct ps_batch *b, uint8_t kind, bool unsub, struct ps_op *op,
                       int *err)
{
    struct pubsub *ps = ps_of(c);
    const struct proto_pubsub *pp = c->pool->proto->pubsub;
    uint32_t sent = 0;
    *err = 0;
    for (uint32_t s = 0; s < b->nservers; s++) {
        if (b->n[s] == 0) continue;
        struct textbuf head = { 0 };
        pp->request(&head, kind, unsub, b->n[s]);
        struct msg *m = msg_get(&c->loop->msgs);
        int rc = m == NULL ? -ENOMEM : 0;
        if (rc == 0) rc = proto_text_put(&head, m);
        else textbuf_deinit(&head);
        if (rc == 0) rc = proto_text_put(&b->text[s], m);
        if (rc == 0) {
            m->swallow = m->noreply = true; /* the confirmations come on their own (pubsub_on_msg) */
            rc = ps_wait_push(&ps->links[s], op, b->n[s]);
        }
        if (rc == 0 && (rc = server_conn_enqueue(ps->links[s].d, m, s)) < 0 && ps->links[s].d != NULL) {
            ps->links[s].nwait--; /* the wait just pushed: the last (unless the link was lost) */
        }
        if (rc < 0) {
            if (m != NULL) msg_put(&c->loop->msgs, m);
            *err = -rc;
            continue;
        }
        sent++;
    }
    return sent;
}

/* The servers a PSUBSCRIBE left out (ejected) that are back get every pattern of the client, on
 * its link there (nobody waits for those confirmations; a pattern subscribed twice on a
 * connection is one subscription). A server whose link cannot be had now is tried again at the
 * next tick. */
static void ps_repair(struct pubsub *ps)
{
    struct conn *c = ps->c;
    struct ps_batch b;
    if (ps_batch_init(&b, ps->nlinks) < 0) {
        ps_batch_free(&b);
        return;
    }
    bool any = false;
    for (uint32_t s = 0; s < ps->nlinks; s++) {
        struct ps_link *lk = &ps->links[s];
        if (!lk->pat_missing) continue;
        if (ps->count[PROTO_PS_PATTERN] > 0) {
            if (pool_server_ejected(c->pool->shared, s) || ps_link_take(c, ps, s) < 0) continue;
            for (uint32_t i = 0; i < ps->nbuckets; i++)
                for (const struct ps_name *e = ps->table[i]; e != NULL; e = e->next)
                    if (e->kind == PROTO_PS_PATTERN) ps_batch_add(c, &b, s, e->bytes, e->len);
            any = true;
        }
        lk->pat_missing = false;
        ps->nmissing--;
    }
    int err = 0;
    if (any) ps_batch_send(c, &b, PROTO_PS_PATTERN, false, NULL, &err);
    for (uint32_t s = 0; err != 0 && s < ps->nlinks; s++) { /* tried again at the next tick */
        if (b.n[s] == 0 || ps->links[s].pat_missing) continue;
        ps->links[s].pat_missing = true;
        ps->nmissing++;
    }
    if (any && err == 0) log_info("client %lu: its patterns subscribed on the servers back from an ejection",
                                  (unsigned long)c->id);
    ps_batch_free(&b);
}
