/*
 * txn.c - a client's transaction (see txn.h and notes/transactions.md).
 *
 * Threads: the loop owning the client.
 */
#include "config.h"
#include "feature/txn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/client.h"
#include "core/dedicated.h"
#include "core/loop.h"
#include "core/pool.h"
#include "core/request.h"
#include "core/server.h"
#include "feature/slots.h"

/* What a transaction's queued commands may hold (their bytes, the read buffers they keep alive,
 * their msgs); a command past it is refused and aborts the transaction. */
#define TXN_HELD_MAX (256u << 20)
#define TXN_MSG_COST 512u
#define TXN_REPLY_MAX 512

struct txn {
    struct dedicated_holder holder; /* what its dedicated connection knows it by (first member) */
    struct conn *dconn;           /* the dedicated connection it holds, or NULL */
    struct conn *bconn;           /* the connection its blocking command (the barrier) is on: dconn
                                   * (watching that server) or one of its own; NULL: none */
    struct msg *multi;            /* the client's MULTI, written first at EXEC (its bytes, shared) */
    struct msg_tqh queue;         /* the commands queued since MULTI (their bytes, shared), in order */
    uint64_t held;                /* what the queue keeps alive (TXN_HELD_MAX) */
    const struct mbuf *held_mb;   /* the read buffer last charged to held */
    uint64_t barrier;             /* id of the client's request on dconn not yet answered (0: none):
                                   * later requests wait for it */
    uint32_t nwait;               /* the client's requests held back (msg.txn_wait) */
    uint32_t server;              /* the server its keys map to (when has_server): an index in the
                                   * client's pool, which does not change while c has it */
    int err;                      /* dconn closed while it held a WATCH: EXEC fails with it */
    bool has_server;
    bool in_multi;
    bool aborted;                 /* a command after MULTI was refused: EXEC answers EXECABORT */
    bool watching;                /* a WATCH is in place on dconn */
};

static void txn_dedicated_lost(struct dedicated_holder *h, struct conn *d, int err);
static bool txn_dedicated_redirect(struct dedicated_holder *h, struct conn *d, struct msg *req, uint32_t server, bool ask);
extern const struct feature_ops txn_feature;

/* c's transaction state, NULL when it has none. */
static inline struct txn *txn_of(const struct conn *c)
{
    return c->feat[FEATURE_SLOT_TXN];
}

static struct txn *txn_get(struct conn *c)
{
    struct txn *t = txn_of(c);
    if (t == NULL) {
        t = calloc(1, sizeof(*t));
        if (t == NULL) return NULL;
        TAILQ_INIT(&t->queue);
        t->holder.lost = txn_dedicated_lost;
        t->holder.redirect = txn_dedicated_redirect;
        feature_attach(c, &txn_feature, t);
    }
    return t;
}

static void txn_free(struct conn *c)
{
    free(txn_of(c));
    feature_detach(c, &txn_feature);
}

/* Frees c's state once nothing is left in it: the client is back on the plain path. */
static void txn_maybe_free(struct conn *c)
{
    struct txn *t = txn_of(c);
    if (t == NULL || t->in_multi || t->dconn != NULL || t->bconn != NULL || t->err != 0 || t->barrier != 0 ||
        t->nwait > 0)
        return;
    txn_free(c);
}

static int txn_answer(struct conn *c, struct msg *req, enum proto_txn_reply what, const char *a,
                      const char *b)
{
    char buf[TXN_REPLY_MAX];
    size_t n = c->pool->proto->txn_reply(what, a, b, buf, sizeof(buf));
    request_answer(c, req, buf, n);
    txn_maybe_free(c);
    return 0;
}

static int txn_fail(struct conn *c, struct msg *req, int err)
{
    request_fail(c->loop, req, err);
    txn_maybe_free(c);
    return 0;
}

static const char *txn_server_name(const struct conn *c, uint32_t server)
{
    return c->pool->servers[server].cs->stats_name;
}

/* Holds req back (its turn comes in txn_resume). */
static int txn_hold(struct conn *c, struct msg *req)
{
    struct txn *t = txn_get(c);
    if (t == NULL) return txn_fail(c, req, ENOMEM);
    req->txn_wait = true;
    t->nwait++;
    return 0;
}

/* Whether a request of c before req has no answer yet. */
static bool txn_earlier_pending(const struct conn *c, const struct msg *req)
{
    for (const struct msg *m = TAILQ_FIRST(&c->reqs); m != NULL && m != req; m = TAILQ_NEXT(m, client_link)) {
        if (!m->done) return true;
    }
    return false;
}

/*
 * The server every routing key of req maps to, given *server (valid when *has) for the keys seen
 * so far: updates them. Returns 0; -EXDEV when a key maps to another server (*other: it); or
 * -ECONNREFUSED when a key has no live server. Keyless commands (and the arguments of the
 * commands the proxy answers itself, PING's message) constrain nothing.
 */
static int txn_route(struct conn *c, const struct msg *req, uint32_t *server, bool *has, uint32_t *other)
{
    struct pool_rt *p = c->pool;
    if (req->cmd_flags & (CMD_F_ANY_SERVER | CMD_F_LOCAL_MASK)) return 0;
    for (uint32_t i = 0; i < req->nkeys; i++) {
        uint32_t s = pool_rt_route(p, req->keys[i].ptr, req->keys[i].len);
        if (s == DIST_NONE || s >= p->nservers) return -ECONNREFUSED;
        if (!*has) {
            *server = s;
            *has = true;
        } else if (s != *server) {
            *other = s;
            return -EXDEV;
        }
    }
    return 0;
}

/* A msg sharing req's bytes (no copy), with no owner: what the proxy writes for it later. */
static struct msg *txn_copy(struct loop *l, const struct msg *req)
{
    struct msg *q = msg_get(&l->msgs);
    if (q == NULL) return NULL;
    if (msg_append_slice(q, req, 0, req->len) < 0) {
        msg_put(&l->msgs, q);
        return NULL;
    }
    q->cmd = req->cmd;
    q->cmd_flags = req->cmd_flags;
    return q;
}

/* Charges q to t->held (the read buffers it keeps alive are paid once). */
static void txn_charge(struct txn *t, const struct msg *q)
{
    t->held += TXN_MSG_COST + q->len;
    for (uint32_t i = 0; i < q->nspans; i++) {
        const struct mbuf *mb = q->spans[i].mb;
        if (mb == t->held_mb) continue;
        t->held_mb = mb;
        t->held += sizeof(*mb) + mb->cap;
    }
}

static void txn_drop_queue(struct loop *l, struct txn *t)
{
    struct msg *q;
    while ((q = TAILQ_FIRST(&t->queue)) != NULL) {
        TAILQ_REMOVE(&t->queue, q, client_link);
        msg_put(&l->msgs, q);
    }
    if (t->multi != NULL) msg_put(&l->msgs, t->multi);
    t->multi = NULL;
    t->held = 0;
    t->held_mb = NULL;
}

/* The transaction is over (EXECABORT, DISCARD, a failure): its queue is dropped, its WATCH
 * released (UNWATCH on the dedicated connection, which goes back to its set). */
static void txn_end(struct conn *c, struct txn *t)
{
    txn_drop_queue(c->loop, t);
    if (t->dconn != NULL) dedicated_release(t->dconn, t->watching);
    t->dconn = NULL;
    t->in_multi = t->aborted = t->watching = t->has_server = false;
    t->err = 0;
}

/* Takes a dedicated connection to server for t (t->dconn, kept when it has one). Returns 0,
 * -EBUSY (all held) or -ENOMEM. */
static int txn_take(struct conn *c, struct txn *t, uint32_t server)
{
    if (t->dconn != NULL) return 0;
    if (server >= c->pool->nservers) return -ECONNREFUSED; /* no server holds a node (a cluster's) */
    int rc = dedicated_acquire(&c->pool->servers[server], &t->holder, c->sess.variant, &t->dconn);
    if (rc < 0) t->dconn = NULL;
    return rc;
}

/* Answers req when no dedicated connection to server could be had (rc from txn_take). */
static int txn_no_conn(struct conn *c, struct msg *req, uint32_t server, int rc)
{
    if (rc != -EBUSY) return txn_fail(c, req, -rc);
    char limit[24];
    snprintf(limit, sizeof(limit), "%d", dedicated_limit(&c->pool->servers[server]));
    return txn_answer(c, req, PROTO_TXN_BUSY, txn_server_name(c, server), limit);
}

static int txn_multi(struct conn *c, struct msg *req)
{
    struct txn *t = txn_of(c);
    if (t != NULL && t->in_multi) return txn_answer(c, req, PROTO_TXN_NESTED, NULL, NULL);
    if ((t = txn_get(c)) == NULL || (t->multi = txn_copy(c->loop, req)) == NULL)
        return txn_fail(c, req, ENOMEM);
    t->in_multi = true;
    t->aborted = false;
    return txn_answer(c, req, PROTO_TXN_OK, NULL, NULL);
}

/* A command after MULTI: checked, routed and held until EXEC. */
static int txn_queue(struct conn *c, struct txn *t, struct msg *req)
{
    if (((req->cmd_flags & CMD_F_LOCAL_MASK) && !(req->cmd_flags & CMD_F_TXN_SERVER)) ||
        (req->cmd_flags & CMD_F_PUBSUB)) {
        /* AUTH, HELLO, CLIENT, SELECT, INFO: the proxy's, not the server connection's; a
         * subscription must not be left on the dedicated connection */
        t->aborted = true;
        return txn_answer(c, req, PROTO_TXN_NOT_ALLOWED, NULL, NULL);
    }
    uint32_t server = t->server, other = 0;
    bool has = t->has_server;
    int rc = txn_route(c, req, &server, &has, &other);
    if (rc < 0) {
        t->aborted = true;
        if (rc == -EXDEV)
            return txn_answer(c, req, PROTO_TXN_CROSS, txn_server_name(c, server), txn_server_name(c, other));
        return txn_fail(c, req, -rc);
    }
    t->server = server;
    t->has_server = has;
    if (!t->aborted) { /* an aborted transaction only answers: its commands will never be sent */
        struct msg *q = txn_copy(c->loop, req);
        if (q == NULL) {
            t->aborted = true;
            return txn_fail(c, req, ENOMEM);
        }
        txn_charge(t, q);
        if (t->held > TXN_HELD_MAX) {
            msg_put(&c->loop->msgs, q);
            t->aborted = true;
            char max[24];
            snprintf(max, sizeof(max), "%u", TXN_HELD_MAX);
            return txn_answer(c, req, PROTO_TXN_TOO_LARGE, max, NULL);
        }
        TAILQ_INSERT_TAIL(&t->queue, q, client_link);
    }
    return txn_answer(c, req, PROTO_TXN_QUEUED, NULL, NULL);
}

static int txn_exec(struct conn *c, struct msg *req)
{
    struct txn *t = txn_of(c);
    if (t == NULL || !t->in_multi) return txn_answer(c, req, PROTO_TXN_EXEC_WITHOUT, NULL, NULL);
    if (t->aborted || t->err != 0) {
        int err = t->err;
        txn_end(c, t);
        if (err != 0) return txn_fail(c, req, err);
        return txn_answer(c, req, PROTO_TXN_EXECABORT, NULL, NULL);
    }
    if (txn_earlier_pending(c, req)) return txn_hold(c, req);
    if (!t->has_server) { /* keyless: any server */
        t->server = pool_rt_any_master(c->pool, c->loop->rr++);
        t->has_server = true;
    }
    int rc = txn_take(c, t, t->server);
    if (rc < 0) {
        uint32_t server = t->server;
        txn_end(c, t);
        return txn_no_conn(c, req, server, rc);
    }
    /* MULTI, the queued commands and EXEC, written together once the connection is flushed */
    struct conn *d = t->dconn;
    rc = server_conn_enqueue(d, t->multi, t->server); /* connects when needed */
    if (rc < 0) {
        txn_end(c, t);
        return txn_fail(c, req, -rc);
    }
    t->multi = NULL;
    struct msg *q;
    while (rc == 0 && (q = TAILQ_FIRST(&t->queue)) != NULL) {
        TAILQ_REMOVE(&t->queue, q, client_link);
        if ((rc = server_conn_enqueue(d, q, t->server)) < 0) msg_put(&c->loop->msgs, q);
    }
    if (rc == 0) rc = server_conn_enqueue(d, req, t->server);
    if (rc < 0) { /* not on an open connection; and it must never be left inside MULTI */
        server_conn_close(d, -rc);
        txn_end(c, t);
        return txn_fail(c, req, -rc);
    }
    /* EXEC ends the WATCH too: the connection goes back once EXEC is answered (txn_resume) */
    t->barrier = req->id;
    t->held = 0;
    t->held_mb = NULL;
    t->in_multi = t->aborted = t->watching = t->has_server = false;
    return 0;
}

static int txn_discard(struct conn *c, struct msg *req)
{
    struct txn *t = txn_of(c);
    if (t == NULL || !t->in_multi) return txn_answer(c, req, PROTO_TXN_DISCARD_WITHOUT, NULL, NULL);
    txn_end(c, t);
    return txn_answer(c, req, PROTO_TXN_OK, NULL, NULL);
}

static int txn_watch(struct conn *c, struct msg *req)
{
    struct txn *t = txn_of(c);
    if (t != NULL && t->in_multi) return txn_answer(c, req, PROTO_TXN_WATCH_INSIDE, NULL, NULL);
    uint32_t server = t != NULL ? t->server : 0, other = 0;
    bool has = t != NULL && t->has_server;
    int rc = txn_route(c, req, &server, &has, &other);
    if (rc == -EXDEV)
        return txn_answer(c, req, PROTO_TXN_CROSS, txn_server_name(c, server), txn_server_name(c, other));
    if (rc < 0) return txn_fail(c, req, -rc);
    if (txn_earlier_pending(c, req)) return txn_hold(c, req);
    if ((t = txn_get(c)) == NULL) return txn_fail(c, req, ENOMEM);
    bool took = t->dconn == NULL;
    if ((rc = txn_take(c, t, server)) < 0) return txn_no_conn(c, req, server, rc);
    if ((rc = server_conn_enqueue(t->dconn, req, server)) < 0) { /* cannot connect */
        if (took && t->dconn != NULL) dedicated_release(t->dconn, false);
        if (took) t->dconn = NULL;
        return txn_fail(c, req, -rc);
    }
    t->server = server;
    t->has_server = true;
    t->watching = true;
    t->barrier = req->id;
    return 0;
}

/* UNWATCH outside MULTI (inside, it is queued like any command). */
static int txn_unwatch(struct conn *c, struct msg *req)
{
    struct txn *t = txn_of(c);
    if (t == NULL || !t->watching) { /* nothing watched (or the WATCH was lost with its connection) */
        if (t != NULL) {
            t->err = 0;
            t->has_server = false;
        }
        return txn_answer(c, req, PROTO_TXN_OK, NULL, NULL);
    }
    if (txn_earlier_pending(c, req)) return txn_hold(c, req);
    int rc = server_conn_enqueue(t->dconn, req, t->server);
    if (rc < 0) { /* cannot happen: a watching connection is open */
        txn_end(c, t);
        return txn_fail(c, req, -rc);
    }
    t->watching = t->has_server = false;
    t->barrier = req->id; /* the connection goes back once UNWATCH is answered */
    return 0;
}

/*
 * A blocking command outside MULTI (CMD_F_BLOCK): sent, once every earlier request of c is
 * answered, on a dedicated connection to its keys' server (the WATCH's own when it is on that
 * server; a keyless one, which redis refuses at once, to any server); the client's later requests
 * wait for its answer, and the connection goes back to its set then (txn_resume).
 */
static int txn_block(struct conn *c, struct msg *req)
{
    uint32_t server = 0, other = 0;
    bool has = false;
    int rc = txn_route(c, req, &server, &has, &other);
    if (rc == -EXDEV)
        return txn_answer(c, req, PROTO_TXN_BLOCK_CROSS, txn_server_name(c, server), txn_server_name(c, other));
    if (rc < 0) return txn_fail(c, req, -rc);
    if (txn_earlier_pending(c, req)) return txn_hold(c, req);
    if (c->eof) return txn_fail(c, req, ECONNRESET); /* it left (redis drops such a client too) */
    if (!has) server = pool_rt_any_master(c->pool, c->loop->rr++);
    if (server >= c->pool->nservers) return txn_fail(c, req, ECONNREFUSED);
    struct txn *t = txn_get(c);
    if (t == NULL) return txn_fail(c, req, ENOMEM);
    struct conn *d = t->watching && t->server == server ? t->dconn : NULL;
    if (d == NULL && (rc = dedicated_acquire(&c->pool->servers[server], &t->holder, c->sess.variant, &d)) < 0)
        return txn_no_conn(c, req, server, rc);
    if ((rc = server_conn_enqueue(d, req, server)) < 0) { /* cannot connect */
        if (d != t->dconn) dedicated_release(d, false);
        return txn_fail(c, req, -rc);
    }
    t->bconn = d;
    t->barrier = req->id;
    conn_watch_hangup(c, true); /* seen leaving even while its reading is paused */
    req->t_start = 0; /* how long it blocked is no latency of the proxy's (histogram, slowlog) */
    return 0;
}

/* HELLO or RESET (CMD_F_SWITCH) outside MULTI, RESET inside: the client's later requests may use
 * the server connections of another protocol variant, so this one waits until every earlier
 * request is answered (none can be overtaken). RESET ends the transaction and the WATCH first. */
static int txn_switch(struct conn *c, struct msg *req)
{
    if (txn_earlier_pending(c, req)) return txn_hold(c, req);
    if ((req->cmd_flags & CMD_F_RESET) && txn_of(c) != NULL) txn_end(c, txn_of(c));
    int rc = request_serve(c, req);
    txn_maybe_free(c);
    return rc;
}

/* A request whose turn it is (nothing held before it, no barrier). */
static int txn_run(struct conn *c, struct msg *req)
{
    struct txn *t = txn_of(c);
    if (c->feat_on != 0 && feature_gate(c, req)) return 0; /* subscribed (RESP2): not allowed */
    if ((req->cmd_flags & CMD_F_SWITCH) && req->reject == REJECT_NONE &&
        ((req->cmd_flags & CMD_F_RESET) || t == NULL || !t->in_multi))
        return txn_switch(c, req);
    if (req->reject != REJECT_NONE || req->quit || !c->sess.admitted) {
        /* refused (unknown, wrong arity, NOAUTH): inside MULTI, redis aborts the transaction */
        if (t != NULL && t->in_multi && !req->quit) t->aborted = true;
        return request_serve(c, req);
    }
    switch (req->cmd_flags & CMD_F_TXN_MASK) {
    case CMD_F_MULTI: return txn_multi(c, req);
    case CMD_F_EXEC: return txn_exec(c, req);
    case CMD_F_DISCARD: return txn_discard(c, req);
    case CMD_F_WATCH: return txn_watch(c, req);
    case CMD_F_UNWATCH:
        if (t == NULL || !t->in_multi) return txn_unwatch(c, req);
        break;
    default: break;
    }
    if (t != NULL && t->in_multi) return txn_queue(c, t, req); /* redis runs it without blocking */
    if (req->cmd_flags & CMD_F_BLOCK) return txn_block(c, req);
    return request_serve(c, req);
}

static int txn_dispatch(struct conn *c, struct msg *req)
{
    struct txn *t = txn_of(c);
    if (t != NULL && (t->barrier != 0 || t->nwait > 0)) return txn_hold(c, req);
    return txn_run(c, req);
}

/* Drops the requests c holds back (they were never sent anywhere). */
static void txn_drop_held(struct conn *c)
{
    struct txn *t = txn_of(c);
    struct msg *req, *next;
    for (req = TAILQ_FIRST(&c->reqs); req != NULL && t->nwait > 0; req = next) {
        next = TAILQ_NEXT(req, client_link);
        if (!req->txn_wait) continue;
        client_req_unlink(c, req);
        client_hold(c, -(int64_t)req->held);
        t->nwait--;
        request_free(c->loop, req);
    }
}

/* Whether the barrier request (t->barrier) has its answer, or is gone (written to the client). */
static bool txn_barrier_done(const struct conn *c, const struct txn *t)
{
    const struct msg *req;
    TAILQ_FOREACH(req, &c->reqs, client_link)
    {
        if (req->id == t->barrier) return req->done;
        if (req->id > t->barrier) break; /* ids grow along the queue */
    }
    return true;
}

static void txn_resume(struct conn *c)
{
    struct txn *t = txn_of(c);
    if (t == NULL) return;
    if (t->barrier != 0) {
        if (!txn_barrier_done(c, t)) return;
        t->barrier = 0;
        if (t->bconn != NULL && t->bconn != t->dconn) dedicated_release(t->bconn, false);
        t->bconn = NULL;
        if (!c->mem_paused) conn_watch_hangup(c, false); /* (a client paused for -M keeps its watch) */
        if (t->dconn != NULL && !t->watching) { /* EXEC or UNWATCH answered: nothing is watched */
            dedicated_release(t->dconn, false);
            t->dconn = NULL;
        }
    }
    struct msg *req, *next;
    for (req = TAILQ_FIRST(&c->reqs); req != NULL && t->nwait > 0 && t->barrier == 0; req = next) {
        next = TAILQ_NEXT(req, client_link);
        if (!req->txn_wait) continue;
        req->txn_wait = false;
        t->nwait--;
        int stop = txn_run(c, req);
        if (txn_of(c) != t) return; /* freed: nothing was held behind it */
        if (req->txn_wait) break;   /* held again: an earlier request still has no answer */
        if (stop != 0) {            /* QUIT: what follows it is not served */
            txn_drop_held(c);
            c->closing = true;
            conn_want_read(c, false);
            break;
        }
    }
    txn_maybe_free(c);
}

/* c leaves while its blocking command is on t->bconn: when it has no answer yet, the server is
 * still blocked on that connection, which is closed (never given back: a later client would get
 * the answer); the request, taken off c's queue, is failed and freed there. */
static void txn_abandon_block(struct conn *c, struct txn *t)
{
    struct msg *req;
    TAILQ_FOREACH(req, &c->reqs, client_link)
    {
        if (req->id == t->barrier) break;
    }
    if (req == NULL || req->done) { /* answered: the connection is free */
        if (t->bconn != t->dconn) dedicated_release(t->bconn, false);
        t->bconn = NULL;
        return;
    }
    client_req_unlink(c, req);
    client_hold(c, -(int64_t)req->held);
    req->owner = NULL;
    server_conn_close(t->bconn, ECONNABORTED); /* t->bconn (and t->dconn if it is) lost */
}

static bool txn_blocked(const struct conn *c)
{
    return txn_of(c) != NULL && txn_of(c)->bconn != NULL;
}

static void txn_client_close(struct conn *c)
{
    struct txn *t = txn_of(c);
    if (t == NULL) return;
    txn_drop_held(c);
    if (t->bconn != NULL) txn_abandon_block(c, t);
    txn_end(c, t);
    txn_free(c);
}

/* dedicated_holder.redirect: the blocking command req on d (its own connection, not a WATCH's)
 * was redirected by a Redis Cluster: it goes to server on a connection taken for it, and d goes
 * back (nothing else is in flight on it). */
static bool txn_dedicated_redirect(struct dedicated_holder *h, struct conn *d, struct msg *req, uint32_t server, bool ask)
{
    struct txn *t = (struct txn *)h;
    struct conn *c = req->owner, *n;
    if (c == NULL || d != t->bconn || d == t->dconn || req->id != t->barrier || server >= c->pool->nservers ||
        dedicated_move(d, &c->pool->servers[server], c->sess.variant, req, ask, &n) < 0)
        return false;
    t->bconn = n;
    return true;
}

/* dedicated_holder.lost: the dedicated connection d of t (its WATCH's, or its blocking command's)
 * closed (err) while t held it. */
static void txn_dedicated_lost(struct dedicated_holder *h, struct conn *d, int err)
{
    struct txn *t = (struct txn *)h;
    if (d == t->bconn) t->bconn = NULL;
    if (d != t->dconn) return;
    t->dconn = NULL;
    if (t->watching) t->err = err != 0 ? err : ECONNRESET;
    t->watching = false;
    if (!t->in_multi) t->has_server = false;
}

const struct feature_ops txn_feature = {
    .name = "transactions",
    .slot = FEATURE_SLOT_TXN,
    .loop_slot = FEATURE_NONE,
    .order_flags = CMD_F_TXN_MASK | CMD_F_BLOCK,
    .dispatch = txn_dispatch,
    .written = txn_resume,
    .blocked = txn_blocked,
    .close = txn_client_close,
};
