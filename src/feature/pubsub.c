/*
 * pubsub.c - a client's Pub/Sub subscriptions (see pubsub.h and notes/pubsub.md): the commands
 * ((P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, the restricted subscribed mode, RESET) and the role ops of a
 * subscribed dedicated connection (the messages and confirmations it reads). The set of names is
 * pubsub_set.c's; the state, its links and the requests waiting for confirmations are
 * pubsub_link.c's (pubsub_int.h).
 *
 * Threads: the loop owning the client (and its dedicated connections).
 */
#include "config.h"
#include "feature/pubsub.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "core/dedicated.h"
#include "core/loop.h"
#include "core/pool.h"
#include "feature/pubsub_int.h"
#include "core/request.h"
#include "core/server.h"

#define PS_REPLY_MAX 512

/* --- the commands ---------------------------------------------------------------------------- */

/* After a request of the client: with no name left, its links are dropped and its state freed (a
 * SUBSCRIBE still waiting then is answered: its names are gone already). */
static void ps_maybe_end(struct conn *c)
{
    struct pubsub *ps = ps_of(c);
    if (ps != NULL && ps->nnames == 0) ps_end(c, false);
}

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

/* The server a channel (shard channel) lives on, or DIST_NONE. */
static uint32_t ps_route(struct conn *c, const struct msg_key *k)
{
    uint32_t s = pool_rt_route(c->pool, k->ptr, k->len);
    return s < c->pool->nservers ? s : DIST_NONE;
}

/* The links (P|S)SUBSCRIBE req needs, taken, and each name in b on its server (a pattern on every
 * server not ejected; an ejected one is marked as missing the client's patterns). Stops at the
 * first failure: -ECONNREFUSED (a name with no server to go to), or ps_link_take's error with
 * *bad the server it could not take a link to. Returns 0 or that error. */
static int ps_subscribe_links(struct conn *c, struct pubsub *ps, struct msg *req, uint8_t kind,
                              struct ps_batch *b, uint32_t *bad)
{
    struct pool_rt *p = c->pool;
    int rc = 0;
    for (uint32_t i = 0; i < req->nkeys && rc == 0; i++) {
        const struct msg_key *k = &req->keys[i];
        if (kind == PROTO_PS_PATTERN) {
            bool any = false;
            uint32_t from = 0, to = p->nshards;
            if (pool_rt_by_slot(p)) { /* a Redis Cluster delivers every message on every node: one */
                from = pool_rt_any_master(p, 0);
                to = from == DIST_NONE ? 0 : from + 1;
            }
            for (uint32_t s = from; s < to && rc == 0; s++) {
                if (topo_slot_empty(p->route->set, s)) continue; /* a cluster's place with no node */
                if (pool_server_ejected(p->shared, s)) { /* as the fan-out commands; until it is back */
                    if (!ps->links[s].pat_missing) ps->nmissing++;
                    ps->links[s].pat_missing = true;
                    continue;
                }
                if ((rc = ps_link_take(c, ps, s)) < 0) *bad = s;
                else ps_batch_add(c, b, s, k->ptr, k->len);
                any = true;
            }
            if (!any) rc = -ECONNREFUSED;
            continue;
        }
        uint32_t s = ps_route(c, k);
        if (s == DIST_NONE) rc = -ECONNREFUSED;
        else if ((rc = ps_link_take(c, ps, s)) < 0) *bad = s;
        else ps_batch_add(c, b, s, k->ptr, k->len);
    }
    return rc;
}

/* (P|S)SUBSCRIBE req, sent to its servers: its names join the client's set, and their
 * confirmations, in the order of the arguments, are op's reply (written once every server
 * confirmed). */
static void ps_subscribe_confirm(struct conn *c, struct pubsub *ps, struct msg *req, uint8_t kind,
                                 struct ps_op *op)
{
    const struct proto_pubsub *pp = c->pool->proto->pubsub;
    for (uint32_t i = 0; i < req->nkeys; i++) {
        const struct msg_key *k = &req->keys[i];
        uint32_t s = kind == PROTO_PS_PATTERN ? DIST_NONE : ps_route(c, k);
        int added = ps_add(ps, kind, k->ptr, k->len, s);
        if (added < 0) op->reply.failed = true;
        else if (op->added != NULL) op->added[i] = (uint8_t)added;
        pp->confirm(&op->reply, c->sess.variant, kind, false, k->ptr, k->len, ps_count(ps, kind));
    }
}

/* (P|S)SUBSCRIBE name...: the links it needs, the requests to their servers, and the
 * confirmations, written once every server confirmed. */
static int ps_subscribe(struct conn *c, struct msg *req, uint8_t kind)
{
    struct pubsub *ps = ps_get(c);
    if (ps == NULL) return ps_fail(c, req, ENOMEM);
    struct ps_batch b;
    if (ps_batch_init(&b, ps->nlinks) < 0) {
        ps_batch_free(&b);
        return ps_fail(c, req, ENOMEM);
    }
    uint32_t bad = 0;
    int rc = ps_subscribe_links(c, ps, req, kind, &b, &bad);
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
        ps_op_orphan(ps, op);
        free(op->added);
        free(op);
        return ps_fail(c, req, err);
    }
    ps_subscribe_confirm(c, ps, req, kind, op);
    op->servers_left = nsent;
    if (nsent == 0) ps_op_finish(c->loop, op, false, false); /* cannot happen: each name has a server */
    else ps_arm_timer(ps);
    return 0;
}

/* e's name (of the kind being unsubscribed) into b, on each of its servers the client has a link
 * to: a pattern's are all the servers, a channel's the one it is on. */
static void ps_batch_unsub(struct conn *c, struct pubsub *ps, struct ps_batch *b, const struct ps_name *e)
{
    if (e->kind == PROTO_PS_PATTERN) {
        for (uint32_t s = 0; s < ps->nlinks; s++)
            if (ps->links[s].d != NULL) ps_batch_add(c, b, s, e->bytes, e->len);
    } else if (e->server < ps->nlinks && ps->links[e->server].d != NULL) {
        ps_batch_add(c, b, e->server, e->bytes, e->len);
    }
}

/* (P|S)UNSUBSCRIBE with no name: every name of the kind leaves the set, unsubscribed on its
 * servers (into b) and confirmed (into reply) with the count after it; with none, one
 * confirmation with no name. */
static void ps_unsubscribe_all(struct conn *c, struct pubsub *ps, uint8_t kind, struct ps_batch *b,
                               struct textbuf *reply)
{
    const struct proto_pubsub *pp = c->pool->proto->pubsub;
    uint8_t v = c->sess.variant;
    uint32_t removed = 0;
    for (uint32_t i = 0; i < ps->nbuckets; i++) {
        struct ps_name **at = &ps->table[i];
        while (*at != NULL) {
            struct ps_name *e = *at;
            if (e->kind != kind) {
                at = &e->next;
                continue;
            }
            ps_batch_unsub(c, ps, b, e);
            ps->count[kind]--;
            pp->confirm(reply, v, kind, true, e->bytes, e->len, ps_count(ps, kind));
            ps->count[kind]++;
            ps_unlink(ps, at);
            removed++;
        }
    }
    if (removed == 0) pp->confirm(reply, v, kind, true, NULL, 0, ps_count(ps, kind));
}

/* (P|S)UNSUBSCRIBE [name...]: answered at once from the client's set; the names it had are
 * unsubscribed on their servers (nobody waits for those confirmations), or, with nothing left,
 * the links are dropped. */
static int ps_unsubscribe(struct conn *c, struct msg *req, uint8_t kind)
{
    struct pubsub *ps = ps_of(c);
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
    if (req->nkeys == 0) ps_unsubscribe_all(c, ps, kind, &b, &reply);
    for (uint32_t i = 0; i < req->nkeys; i++) {
        const struct msg_key *k = &req->keys[i];
        struct ps_name **at = ps_slot(ps, kind, k->ptr, k->len);
        if (*at != NULL) {
            ps_batch_unsub(c, ps, &b, *at);
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

/* feature_ops.gate: req of subscribed client c is one the protocol refuses in its subscribed mode,
 * or answers otherwise (redis RESP2: PING): answers it, returns true. Asked when req's turn comes
 * (request_run; a held one's when the transaction lets it go on). */
static bool pubsub_gate(struct conn *c, struct msg *req)
{
    struct pubsub *ps = ps_of(c);
    if (ps == NULL || ps->nnames == 0 || req->reject != REJECT_NONE || !c->sess.admitted) return false;
    char buf[PS_REPLY_MAX];
    size_t n = c->pool->proto->pubsub->subscribed_reply(req, c->sess.variant, buf, sizeof(buf));
    if (n == 0) return false;
    request_answer(c, req, buf, n);
    return true;
}

/* feature_ops.serve: a CMD_F_PUBSUB command, RESET (which ends the subscriptions), or any
 * request of a subscribed client (its gate ran already). Returns -1 when it is not pub/sub's to
 * serve (the core serves it as usual), else what request_dispatch returns. */
static int pubsub_serve(struct conn *c, struct msg *req)
{
    if (req->reject != REJECT_NONE || req->quit || !c->sess.admitted) return -1;
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

/* feature_ops.close: c is closing: its waiting requests are marked done (freed with the client),
 * its dedicated connections closed, its state freed. */
static void pubsub_client_close(struct conn *c)
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
    if (ps_of(c) != NULL && ps_of(c)->nnames == 0) ps_end(c, false);
}

static int pubsub_on_msg(void *ctx, struct msg *m)
{
    struct conn *d = ctx;
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

static void pubsub_msg_begin(void *ctx, struct parse_state *ps)
{
    (void)ctx;
    parse_state_reset(ps);
    ps->want_elems = true; /* the kind of message and its channel */
}

static void pubsub_on_readable(struct conn *d)
{
    bool eof = false;
    int rc = conn_recv(d, &eof);
    if (rc < 0) server_conn_close(d, (rc == -EPROTO || rc == -E2BIG) ? EINVAL : -rc);
    else if (eof) server_conn_close(d, ECONNRESET);
}

const struct conn_ops pubsub_conn_ops = {
    .role = "subscribed",
    .on_writable = server_on_writable,
    .on_readable = pubsub_on_readable,
    .flush = server_flush,
    .sink = { .begin = pubsub_msg_begin, .parse = server_parse, .on_msg = pubsub_on_msg,
              .msg_max = UINT64_MAX },
    .on_handshake = server_on_handshake,
    .on_close = dedicated_on_close,
};

/* feature_ops.waits: a subscriber waits for its messages (it is never idle). */
static bool pubsub_waits(const struct conn *c)
{
    (void)c;
    return true;
}

/* feature_ops.describe: what c's line in a list of clients shows of its subscriptions. */
static void pubsub_describe(const struct conn *c, struct proto_client_state *st)
{
    st->subscribed = true;
    for (int k = 0; k < PROTO_PS_KINDS; k++) st->subs[k] = ps_of(c)->count[k];
}

const struct feature_ops pubsub_feature = {
    .name = "pub/sub",
    .slot = FEATURE_SLOT_PUBSUB,
    .loop_slot = FEATURE_NONE,
    .serve_flags = CMD_F_PUBSUB | CMD_F_RESET,
    .gate = pubsub_gate,
    .serve = pubsub_serve,
    .close = pubsub_client_close,
    .waits = pubsub_waits,
    .describe = pubsub_describe,
};
