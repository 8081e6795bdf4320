/*
 * pubsub.c - a client's Pub/Sub subscriptions (see pubsub.h and notes/pubsub.md): its set of
 * names, its dedicated connection per server (a link), the requests waiting for their servers'
 * confirmations, and the role ops of a subscribed dedicated connection.
 *
 * Threads: the loop owning the client (and its dedicated connections).
 */
#include "config.h"
#include "core/pubsub.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "core/client.h"
#include "core/dedicated.h"
#include "core/loop.h"
#include "core/pool.h"
#include "core/request.h"
#include "core/server.h"

#define PS_REPLY_MAX 512
#define PS_BUCKETS_MIN 16u
/* how often a pattern subscriber looks for an ejected server that came back (usec) */
#define PS_REPAIR_USEC 1000000u

/* One subscription of the client. */
struct ps_name {
    struct ps_name *next;      /* its hash chain */
    uint32_t server;           /* channel, shard channel: the server it is on (patterns: all) */
    uint32_t len;
    uint8_t kind;              /* enum proto_ps_kind */
    uint8_t bytes[];
};

/* A client request waiting for the confirmations of its servers. */
struct ps_op {
    struct msg *req;
    uint8_t *added;            /* added[i]: the request's name i was new to the set (NULL: unknown) */
    uint8_t kind;
    struct textbuf reply;        /* its confirmations, written once every server confirmed */
    uint32_t servers_left;
    int err;                   /* a server refused it: its error text is the reply */
    struct textbuf err_text;
};

/* A request sent on a link, waiting for confirms_left confirmations (op NULL: nobody waits). */
struct ps_wait {
    struct ps_op *op;
    uint64_t confirms_left;
    uint64_t t_queued;         /* when it was queued (usec): the pool's `timeout` counts from it */
};

/* The client's dedicated connection to one server. */
struct ps_link {
    struct dedicated_holder holder; /* what the connection knows it by (first member) */
    struct pubsub *ps;
    struct conn *d;            /* NULL: none held */
    struct ps_wait *waits;     /* a FIFO ring: nwait from whead */
    uint32_t whead, nwait, wcap;
    uint32_t server;
    bool pat_missing;          /* a PSUBSCRIBE left this server out (ejected): its patterns are
                                * subscribed there once it is back (ps_repair) */
};

struct pubsub {
    struct conn *c;
    struct ps_name **table;
    uint32_t nbuckets, nnames;
    uint64_t count[PROTO_PS_KINDS];
    struct ps_link *links;     /* one per server of the client's pool */
    uint32_t nlinks;
    struct event *tev;         /* the confirmations' timeout and the patterns' repair, NULL: none yet */
    uint64_t t_armed;          /* when tev fires, if it is pending (usec) */
    uint32_t nmissing;         /* links with pat_missing */
};

/* --- the set ---------------------------------------------------------------------------- */

static uint32_t ps_hash(uint8_t kind, const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u ^ kind;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Where (kind, name) is in ps's table, or where its chain ends. */
static struct ps_name **ps_slot(struct pubsub *ps, uint8_t kind, const uint8_t *p, size_t n)
{
    struct ps_name **at = &ps->table[ps_hash(kind, p, n) & (ps->nbuckets - 1)];
    for (; *at != NULL; at = &(*at)->next) {
        const struct ps_name *e = *at;
        if (e->kind == kind && e->len == n && memcmp(e->bytes, p, n) == 0) break;
    }
    return at;
}

static int ps_grow(struct pubsub *ps)
{
    uint32_t nb = ps->nbuckets * 2;
    struct ps_name **t = calloc(nb, sizeof(*t));
    if (t == NULL) return -ENOMEM;
    for (uint32_t i = 0; i < ps->nbuckets; i++) {
        struct ps_name *e, *next;
        for (e = ps->table[i]; e != NULL; e = next) {
            next = e->next;
            uint32_t b = ps_hash(e->kind, e->bytes, e->len) & (nb - 1);
            e->next = t[b];
            t[b] = e;
        }
    }
    free(ps->table);
    ps->table = t;
    ps->nbuckets = nb;
    return 0;
}

/* Adds (kind, name) on server when it is not there. Returns 1 (added), 0 (there already) or
 * -ENOMEM. */
static int ps_add(struct pubsub *ps, uint8_t kind, const uint8_t *p, size_t n, uint32_t server)
{
    if (*ps_slot(ps, kind, p, n) != NULL) return 0;
    if (ps->nnames >= ps->nbuckets && ps_grow(ps) < 0) return -ENOMEM;
    struct ps_name *e = malloc(sizeof(*e) + n);
    if (e == NULL) return -ENOMEM;
    e->server = server;
    e->len = (uint32_t)n;
    e->kind = kind;
    memcpy(e->bytes, p, n);
    struct ps_name **at = ps_slot(ps, kind, p, n);
    e->next = NULL;
    *at = e;
    ps->nnames++;
    ps->count[kind]++;
    client_hold(ps->c, (int64_t)(sizeof(*e) + n)); /* over its limit: closed from the flush queue */
    return 1;
}

static void ps_unlink(struct pubsub *ps, struct ps_name **at)
{
    struct ps_name *e = *at;
    *at = e->next;
    ps->nnames--;
    ps->count[e->kind]--;
    client_hold(ps->c, -(int64_t)(sizeof(*e) + e->len));
    free(e);
}

/* The count redis gives in a confirmation of kind: the shard channels count apart. */
static int64_t ps_count(const struct pubsub *ps, uint8_t kind)
{
    if (kind == PROTO_PS_SHARD) return (int64_t)ps->count[PROTO_PS_SHARD];
    return (int64_t)(ps->count[PROTO_PS_CHANNEL] + ps->count[PROTO_PS_PATTERN]);
}

static struct pubsub *ps_get(struct conn *c)
{
    if (c->psub != NULL) return c->psub;
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
    c->psub = ps;
    return ps;
}

/* --- requests waiting for confirmations ----------------------------------------------------- */

/* A server refused op's request: the names it added leave the client's set again. */
static void ps_op_rollback(struct ps_op *op)
{
    struct msg *req = op->req;
    struct pubsub *ps = req->owner->psub;
    for (uint32_t i = 0; op->added != NULL && i < req->nkeys; i++) {
        if (!op->added[i]) continue;
        struct ps_name **at = ps_slot(ps, op->kind, req->keys[i].ptr, req->keys[i].len);
        if (*at != NULL) ps_unlink(ps, at);
    }
}

/* op has all its confirmations (or its link is gone): its client gets the reply; a refused
 * request's names are taken out of the set when rollback says so. */
static void ps_op_finish(struct loop *l, struct ps_op *op, bool client_gone, bool rollback)
{
    struct msg *req = op->req;
    if (!client_gone && rollback && op->err != 0) ps_op_rollback(op);
    if (client_gone) {
        req->done = true; /* freed with its client */
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

static void ps_op_step(struct loop *l, struct ps_op *op, bool client_gone, bool rollback)
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

static struct ps_wait *ps_wait_head(struct ps_link *lk)
{
    return lk->nwait > 0 ? &lk->waits[lk->whead] : NULL;
}

static struct ps_op *ps_wait_pop(struct ps_link *lk)
{
    struct ps_op *op = lk->waits[lk->whead].op;
    lk->whead = (lk->whead + 1) % lk->wcap;
    lk->nwait--;
    return op;
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
static void ps_arm_timer(struct pubsub *ps)
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
static void ps_end(struct conn *c, bool client_gone)
{
    struct pubsub *ps = c->psub;
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
    c->psub = NULL;
}

/* After a request of the client: with no name left, its links are dropped and its state freed (a
 * SUBSCRIBE still waiting then is answered: its names are gone already). */
static void ps_maybe_end(struct conn *c)
{
    struct pubsub *ps = c->psub;
    if (ps != NULL && ps->nnames == 0) ps_end(c, false);
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
static int ps_link_take(struct conn *c, struct pubsub *ps, uint32_t server)
{
    struct ps_link *lk = &ps->links[server];
    if (lk->d != NULL) return 0;
    lk->ps = ps;
    lk->server = server;
    lk->holder.lost = ps_link_lost;
    int rc = dedicated_acquire(&c->pool->servers[server], &lk->holder, c->sess.variant, &lk->d);
    if (rc < 0) {
        lk->d = NULL;
        return rc;
    }
    lk->d->ops = &pubsub_conn_ops;
    return 0;
}

/* --- the commands ---------------------------------------------------------------------------- */

static int ps_answer_text(struct conn *c, struct msg *req, const char *text, size_t len)
{
    request_answer(c, req, text, len);
    ps_maybe_end(c);
    return 0;
}

static int ps_fail(struct conn *c, struct msg *req, int err)
{
    request_fail(c->loop, req, err);
    ps_maybe_end(c);
    return 0;
}

/* Answers req with the text t (freed), or fails it when t ran out of memory. */
static int ps_answer_buf(struct conn *c, struct msg *req, struct textbuf *t)
{
    if (textbuf_failed(t)) {
        textbuf_deinit(t);
        return ps_fail(c, req, ENOMEM);
    }
    ps_answer_text(c, req, t->data, t->len);
    textbuf_deinit(t);
    return 0;
}

/* No dedicated connection to server could be had (rc from ps_link_take). */
static int ps_no_conn(struct conn *c, struct msg *req, uint32_t server, int rc)
{
    if (rc != -EBUSY) return ps_fail(c, req, -rc);
    char limit[24], buf[PS_REPLY_MAX];
    snprintf(limit, sizeof(limit), "%d", dedicated_limit(&c->pool->servers[server]));
    size_t n = c->pool->proto->txn_reply(PROTO_TXN_BUSY, c->pool->servers[server].cs->stats_name, limit, buf,
                                         sizeof(buf));
    return ps_answer_text(c, req, buf, n);
}

/* Per-server request texts being built for one client request. */
struct ps_batch {
    struct textbuf *text;        /* one per server: the arguments so far (head added at the end) */
    uint32_t *n;               /* arguments per server */
    uint32_t nservers;
};

static int ps_batch_init(struct ps_batch *b, uint32_t nservers)
{
    b->nservers = nservers;
    b->text = calloc(nservers, sizeof(*b->text));
    b->n = calloc(nservers, sizeof(*b->n));
    return b->text != NULL && b->n != NULL ? 0 : -ENOMEM;
}

static void ps_batch_free(struct ps_batch *b)
{
    for (uint32_t i = 0; b->text != NULL && i < b->nservers; i++) textbuf_deinit(&b->text[i]);
    free(b->text);
    free(b->n);
}

static void ps_batch_add(struct conn *c, struct ps_batch *b, uint32_t server, const uint8_t *p, size_t n)
{
    c->pool->proto->pubsub->arg(&b->text[server], p, n);
    b->n[server]++;
}

/* Sends the batch's request to each server that has arguments (kind, unsub), each waiting for
 * one confirmation per argument on behalf of op (NULL: nobody waits). Returns the number of
 * servers sent to; *err: the error of a server it could not be sent to (0: none). */
static uint32_t ps_batch_send(struct conn *c, struct ps_batch *b, uint8_t kind, bool unsub, struct ps_op *op,
                              int *err)
{
    struct pubsub *ps = c->psub;
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

/* The server a channel (shard channel) lives on, or DIST_NONE. */
static uint32_t ps_route(struct conn *c, const struct msg_key *k)
{
    uint32_t s = pool_rt_route(c->pool, k->ptr, k->len);
    return s < c->pool->nservers ? s : DIST_NONE;
}

/* (P|S)SUBSCRIBE name...: the links it needs, the requests to their servers, and the
 * confirmations, written once every server confirmed. */
static int ps_subscribe(struct conn *c, struct msg *req, uint8_t kind)
{
    struct pubsub *ps = ps_get(c);
    if (ps == NULL) return ps_fail(c, req, ENOMEM);
    struct pool_rt *p = c->pool;
    struct ps_batch b;
    if (ps_batch_init(&b, ps->nlinks) < 0) {
        ps_batch_free(&b);
        return ps_fail(c, req, ENOMEM);
    }
    int rc = 0;
    uint32_t bad = 0;
    for (uint32_t i = 0; i < req->nkeys && rc == 0; i++) {
        const struct msg_key *k = &req->keys[i];
        if (kind == PROTO_PS_PATTERN) {
            bool any = false;
            for (uint32_t s = 0; s < p->nservers && rc == 0; s++) {
                if (pool_server_ejected(p->shared, s)) { /* as the fan-out commands; until it is back */
                    if (!ps->links[s].pat_missing) ps->nmissing++;
                    ps->links[s].pat_missing = true;
                    continue;
                }
                if ((rc = ps_link_take(c, ps, s)) < 0) bad = s;
                else ps_batch_add(c, &b, s, k->ptr, k->len);
                any = true;
            }
            if (!any) rc = -ECONNREFUSED;
            continue;
        }
        uint32_t s = ps_route(c, k);
        if (s == DIST_NONE) rc = -ECONNREFUSED;
        else if ((rc = ps_link_take(c, ps, s)) < 0) bad = s;
        else ps_batch_add(c, &b, s, k->ptr, k->len);
    }
    struct ps_op *op = rc == 0 ? calloc(1, sizeof(*op)) : NULL;
    if (rc == 0 && op == NULL) rc = -ENOMEM;
    if (rc < 0) {
        ps_batch_free(&b);
        if (rc == -ECONNREFUSED || rc == -ENOMEM) return ps_fail(c, req, -rc);
        return ps_no_conn(c, req, bad, rc);
    }
    op->req = req;
    op->kind = kind;
    op->added = calloc(req->nkeys, 1);
    int err = 0;
    uint32_t nsent = ps_batch_send(c, &b, kind, false, op, &err);
    ps_batch_free(&b);
    if (err != 0) { /* a server cannot be reached: the request fails, what was sent is orphaned
                     * (its messages are dropped: the names are not in the set) */
        for (uint32_t s = 0; s < ps->nlinks; s++) {
            struct ps_link *lk = &ps->links[s];
            for (uint32_t w = 0; w < lk->nwait; w++) {
                struct ps_wait *wt = &lk->waits[(lk->whead + w) % lk->wcap];
                if (wt->op == op) wt->op = NULL;
            }
        }
        free(op->added);
        free(op);
        return ps_fail(c, req, err);
    }
    /* the client's set, and its confirmations in the order of the arguments */
    const struct proto_pubsub *pp = p->proto->pubsub;
    for (uint32_t i = 0; i < req->nkeys; i++) {
        const struct msg_key *k = &req->keys[i];
        uint32_t s = kind == PROTO_PS_PATTERN ? DIST_NONE : ps_route(c, k);
        int added = ps_add(ps, kind, k->ptr, k->len, s);
        if (added < 0) op->reply.failed = true;
        else if (op->added != NULL) op->added[i] = (uint8_t)added;
        pp->confirm(&op->reply, c->sess.variant, kind, false, k->ptr, k->len, ps_count(ps, kind));
    }
    op->servers_left = nsent;
    if (nsent == 0) ps_op_finish(c->loop, op, false, false); /* cannot happen: each name has a server */
    else ps_arm_timer(ps);
    return 0;
}

/* (P|S)UNSUBSCRIBE [name...]: answered at once from the client's set; the names it had are
 * unsubscribed on their servers (nobody waits for those confirmations), or, with nothing left,
 * the links are dropped. */
static int ps_unsubscribe(struct conn *c, struct msg *req, uint8_t kind)
{
    struct pubsub *ps = c->psub;
    const struct proto_pubsub *pp = c->pool->proto->pubsub;
    struct textbuf reply = { 0 };
    uint8_t v = c->sess.variant;
    if (ps == NULL) { /* nothing subscribed */
        if (req->nkeys == 0) pp->confirm(&reply, v, kind, true, NULL, 0, 0);
        for (uint32_t i = 0; i < req->nkeys; i++)
            pp->confirm(&reply, v, kind, true, req->keys[i].ptr, req->keys[i].len, 0);
        return ps_answer_buf(c, req, &reply);
    }
    struct ps_batch b;
    if (ps_batch_init(&b, ps->nlinks) < 0) {
        ps_batch_free(&b);
        return ps_fail(c, req, ENOMEM);
    }
    uint32_t removed = 0;
    if (req->nkeys == 0) { /* every name of the kind */
        for (uint32_t i = 0; i < ps->nbuckets; i++) {
            struct ps_name **at = &ps->table[i];
            while (*at != NULL) {
                struct ps_name *e = *at;
                if (e->kind != kind) {
                    at = &e->next;
                    continue;
                }
                if (kind == PROTO_PS_PATTERN) {
                    for (uint32_t s = 0; s < ps->nlinks; s++)
                        if (ps->links[s].d != NULL) ps_batch_add(c, &b, s, e->bytes, e->len);
                } else if (e->server < ps->nlinks && ps->links[e->server].d != NULL) {
                    ps_batch_add(c, &b, e->server, e->bytes, e->len);
                }
                ps->count[kind]--;
                pp->confirm(&reply, v, kind, true, e->bytes, e->len, ps_count(ps, kind));
                ps->count[kind]++;
                ps_unlink(ps, at);
                removed++;
            }
        }
        if (removed == 0) pp->confirm(&reply, v, kind, true, NULL, 0, ps_count(ps, kind));
    }
    for (uint32_t i = 0; i < req->nkeys; i++) {
        const struct msg_key *k = &req->keys[i];
        struct ps_name **at = ps_slot(ps, kind, k->ptr, k->len);
        if (*at != NULL) {
            struct ps_name *e = *at;
            if (kind == PROTO_PS_PATTERN) {
                for (uint32_t s = 0; s < ps->nlinks; s++)
                    if (ps->links[s].d != NULL) ps_batch_add(c, &b, s, k->ptr, k->len);
            } else if (e->server < ps->nlinks && ps->links[e->server].d != NULL) {
                ps_batch_add(c, &b, e->server, k->ptr, k->len);
            }
            ps_unlink(ps, at);
        }
        pp->confirm(&reply, v, kind, true, k->ptr, k->len, ps_count(ps, kind));
    }
    if (ps->nnames > 0) { /* else the links are dropped: nothing to unsubscribe on them */
        int err;
        ps_batch_send(c, &b, kind, true, NULL, &err); /* a failure: the messages are dropped */
        ps_arm_timer(ps);
    }
    ps_batch_free(&b);
    return ps_answer_buf(c, req, &reply);
}

bool pubsub_restricted(struct conn *c, struct msg *req)
{
    struct pubsub *ps = c->psub;
    if (ps == NULL || ps->nnames == 0 || req->reject != REJECT_NONE || !c->sess.admitted) return false;
    char buf[PS_REPLY_MAX];
    size_t n = c->pool->proto->pubsub->subscribed_reply(req, c->sess.variant, buf, sizeof(buf));
    if (n == 0) return false;
    request_answer(c, req, buf, n);
    return true;
}

int pubsub_serve(struct conn *c, struct msg *req)
{
    if (req->reject != REJECT_NONE || req->quit || !c->sess.admitted) return -1;
    if (pubsub_restricted(c, req)) return 0; /* (one held until its turn: checked now) */
    if (req->cmd_flags & CMD_F_RESET) { /* RESET: the subscriptions end, quietly */
        ps_end(c, false);
        return -1;
    }
    if (!(req->cmd_flags & CMD_F_PUBSUB)) return -1;
    uint8_t kind = (req->cmd_flags & CMD_F_PS_PATTERN) ? PROTO_PS_PATTERN
                   : (req->cmd_flags & CMD_F_PS_SHARD) ? PROTO_PS_SHARD
                                                       : PROTO_PS_CHANNEL;
    if (req->cmd_flags & CMD_F_PS_UNSUB) return ps_unsubscribe(c, req, kind);
    return ps_subscribe(c, req, kind);
}

void pubsub_client_close(struct conn *c)
{
    ps_end(c, true);
}

/* --- the subscribed connection's role ---------------------------------------------------------- */

/* A message of one of the client's names: queued on the client as a reply of no request. */
static void ps_deliver(struct ps_link *lk, struct msg *m, const struct proto_ps_msg *pm)
{
    struct pubsub *ps = lk->ps;
    struct conn *c = ps->c;
    uint8_t stack[256];
    uint8_t *name = pm->name_len <= sizeof(stack) ? stack : malloc(pm->name_len);
    bool have = false;
    if (name != NULL && !c->kill) {
        size_t n = msg_copy_out(m, pm->name_start, name, pm->name_len);
        have = n == pm->name_len && *ps_slot(ps, pm->kind, name, n) != NULL;
    }
    if (name != stack) free(name);
    if (!have) { /* unsubscribed meanwhile (or never subscribed: a request that failed) */
        msg_put(&c->loop->msgs, m);
        return;
    }
    if (lk->d != NULL && c->sess.variant != lk->d->variant) { /* the client switched protocol (HELLO) */
        struct msg *t = msg_get(&c->loop->msgs);
        const char *type = &c->pool->proto->pubsub->message_type[c->sess.variant];
        if (t == NULL || msg_append_literal(t, type, 1) < 0 || msg_append_slice(t, m, 1, m->len) < 0) {
            if (t != NULL) msg_put(&c->loop->msgs, t);
            msg_put(&c->loop->msgs, m);
            return;
        }
        msg_put(&c->loop->msgs, m);
        m = t;
    }
    if (request_push(c, m) < 0) log_warn("client %lu: out of memory for a message: dropped", (unsigned long)c->id);
}

/* A confirmation or an error on lk: its head request has one more. A refused request whose names
 * leave the client with none ends its state (lk with it: the caller uses it no more). */
static void ps_confirmed(struct ps_link *lk, struct msg *m, bool error)
{
    struct conn *c = lk->ps->c;
    struct loop *l = c->loop;
    struct ps_wait *w = ps_wait_head(lk);
    if (w == NULL) return; /* a confirmation nobody waits for */
    if (error && w->op != NULL && w->op->err == 0) { /* the server refused the whole request */
        w->op->err = EINVAL;
        struct textbuf *t = &w->op->err_text;
        for (uint32_t i = 0; i < m->nspans; i++)
            textbuf_add(t, m->spans[i].mb->data + m->spans[i].off, m->spans[i].len);
    }
    if (!error && --w->confirms_left > 0) return;
    ps_op_step(l, ps_wait_pop(lk), false, true);
    /* (a name leaves the set here only by a rollback; this closes lk's connection, which is
     * being read: conn_recv stops) */
    if (c->psub != NULL && c->psub->nnames == 0) ps_end(c, false);
}

static int pubsub_on_msg(struct conn *d, struct msg *m)
{
    struct ps_link *lk = (struct ps_link *)d->holder;
    if (d->nsent > 0 || lk == NULL) return server_on_reply(d, m); /* a set-up request's reply */
    struct proto_ps_msg pm;
    d->pool->proto->pubsub->classify(m, &pm);
    switch (pm.what) {
    case PROTO_PS_MESSAGE:
        ps_deliver(lk, m, &pm);
        return 0;
    case PROTO_PS_CONFIRM:
    case PROTO_PS_ERROR:
        ps_confirmed(lk, m, pm.what == PROTO_PS_ERROR);
        break;
    default: break;
    }
    msg_put(&d->loop->msgs, m);
    return 0;
}

static void pubsub_msg_begin(struct conn *d)
{
    parse_state_reset(&d->rd.ps);
    d->rd.ps.want_elems = true; /* the kind of message and its channel */
}

static void pubsub_on_readable(struct conn *d)
{
    bool eof = false;
    int rc = conn_recv(d, &eof, pubsub_on_msg);
    if (rc < 0) server_conn_close(d, (rc == -EPROTO || rc == -E2BIG) ? EINVAL : -rc);
    else if (eof) server_conn_close(d, ECONNRESET);
}

const struct conn_ops pubsub_conn_ops = {
    .role = "subscribed",
    .on_writable = server_on_writable,
    .on_readable = pubsub_on_readable,
    .flush = server_flush,
    .msg_begin = pubsub_msg_begin,
    .parse = server_parse,
    .on_handshake = server_on_handshake,
    .on_close = dedicated_on_close,
    .msg_max = UINT64_MAX,
};

void pubsub_client_state(const struct conn *c, struct proto_client_state *st)
{
    memset(st, 0, sizeof(*st));
    if (c->psub == NULL) return;
    st->subscribed = true;
    for (int k = 0; k < PROTO_PS_KINDS; k++) st->subs[k] = c->psub->count[k];
}
