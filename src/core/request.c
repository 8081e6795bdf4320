/*
 * request.c - request dispatch, fragments and completion (see request.h).
 *
 * Threads: the worker owning the client. Every function here runs on that worker's loop.
 */
#include "config.h"
#include "core/request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "core/client.h"
#include "core/server.h"
#include "thread/worker.h"

#define REPLY_MAX 512
#define REQUEST_STACK_KEYS 64 /* a multi-key request's routing up to this many keys: no malloc */

static int request_reply_text(struct worker *w, struct msg *req, const char *text, size_t len)
{
    struct msg *rsp = msg_get(&w->msgs);
    if (rsp == NULL) return -ENOMEM;
    if (msg_append_literal(rsp, text, len) < 0) {
        msg_put(&w->msgs, rsp);
        return -ENOMEM;
    }
    if (req->peer) msg_put(&w->msgs, req->peer);
    req->peer = rsp;
    rsp->peer = req;
    return 0;
}

static void request_reply_error(struct worker *w, struct msg *req, int err)
{
    char buf[REPLY_MAX];
    const struct proto_ops *proto = req->owner->pool->proto;
    size_t n = proto->error_reply(err, buf, sizeof(buf));
    if (request_reply_text(w, req, buf, n) < 0) log_error("out of memory for an error reply");
}

/* The request is answered: write it out when its turn comes, or drop it if the client left. */
static void request_done(struct worker *w, struct msg *req)
{
    req->done = true;
    if (req->owner == NULL) {
        request_free(w, req);
        return;
    }
    client_reply_ready(req->owner, req);
}

static void request_answer(struct worker *w, struct msg *req, const char *text)
{
    if (request_reply_text(w, req, text, strlen(text)) < 0) req->err = ENOMEM;
    request_done(w, req);
}

static void request_fail(struct worker *w, struct msg *req, int err)
{
    req->err = err;
    request_complete(w, req);
}

void request_free(struct worker *w, struct msg *req)
{
    if (req->peer) msg_put(&w->msgs, req->peer);
    for (uint32_t i = 0; i < req->nfrags; i++) {
        struct msg *f = req->frags[i];
        if (f == NULL) continue;
        if (f->peer) msg_put(&w->msgs, f->peer);
        msg_put(&w->msgs, f);
    }
    msg_put(&w->msgs, req);
}

/* Every fragment of owner has finished: build its reply. */
static void request_finish_fragments(struct worker *w, struct msg *owner)
{
    const struct proto_ops *proto = owner->owner ? owner->owner->pool->proto : NULL;
    if (owner->err == 0 && proto != NULL) {
        struct msg *rsp = msg_get(&w->msgs);
        int rc = rsp ? proto->coalesce(owner, rsp) : -ENOMEM;
        if (rc < 0) {
            if (rsp) msg_put(&w->msgs, rsp);
            owner->err = rc == -ENOMEM ? ENOMEM : EINVAL;
        } else {
            owner->peer = rsp;
            rsp->peer = owner;
        }
    }
    /* the coalesced reply holds references on the fragments' reply bytes: free the fragments */
    for (uint32_t i = 0; i < owner->nfrags; i++) {
        struct msg *f = owner->frags[i];
        if (f->peer) msg_put(&w->msgs, f->peer);
        msg_put(&w->msgs, f);
        owner->frags[i] = NULL;
    }
    if (owner->err != 0 && owner->owner != NULL) request_reply_error(w, owner, owner->err);
    request_done(w, owner);
}

void request_complete(struct worker *w, struct msg *req)
{
    if (req->swallow) {
        if (req->peer && req->peer->rsp_type == RSP_ERROR)
            log_warn("a connection set-up command (AUTH/SELECT) was refused by the server");
        request_free(w, req);
        return;
    }
    if (req->frag_owner != NULL) {
        struct msg *owner = req->frag_owner;
        owner->nfrags_done++;
        if (req->err != 0 && owner->err == 0) owner->err = req->err;
        if (owner->nfrags_done == owner->nfrags) request_finish_fragments(w, owner);
        return;
    }
    if (req->noreply) {
        if (req->peer) {
            msg_put(&w->msgs, req->peer);
            req->peer = NULL;
        }
    } else if (req->err != 0 && req->owner != NULL) {
        request_reply_error(w, req, req->err);
    }
    request_done(w, req);
}

static void request_forward_one(struct worker *w, struct msg *req, uint32_t sidx, uint64_t hint)
{
    struct pool_rt *p = req->frag_owner ? req->frag_owner->owner->pool : req->owner->pool;
    int rc = -ECONNREFUSED;
    if (sidx != DIST_NONE && sidx < p->nservers) rc = server_enqueue(&p->servers[sidx], req, hint);
    if (rc < 0) {
        STATS_POOL_ADD(p->st, forward_error, 1);
        request_fail(w, req, -rc);
    }
}

static void request_forward(struct worker *w, struct conn *c, struct msg *req)
{
    struct pool_rt *p = c->pool;
    if (req->cmd_flags & CMD_F_ANY_SERVER) {
        request_forward_one(w, req, w->rr++ % p->nservers, c->id);
        return;
    }
    if (req->nkeys == 0) { /* the command table requires a key; be safe */
        request_fail(w, req, EINVAL);
        return;
    }
    uint32_t first = pool_rt_route(p, req->keys[0].ptr, req->keys[0].len);
    if (!(req->cmd_flags & CMD_F_FRAG_MASK) || req->nkeys < 2 || first == DIST_NONE) {
        request_forward_one(w, req, first, c->id);
        return;
    }
    uint32_t stack_where[REQUEST_STACK_KEYS];
    uint32_t *where = req->nkeys <= REQUEST_STACK_KEYS ? stack_where : malloc(sizeof(uint32_t) * req->nkeys);
    if (where == NULL) {
        request_fail(w, req, ENOMEM);
        return;
    }
    bool one_server = true;
    where[0] = first;
    for (uint32_t i = 1; i < req->nkeys; i++) {
        where[i] = pool_rt_route(p, req->keys[i].ptr, req->keys[i].len);
        if (where[i] == DIST_NONE) {
            if (where != stack_where) free(where);
            request_fail(w, req, ECONNREFUSED);
            return;
        }
        if (where[i] != first) one_server = false;
    }
    if (one_server) { /* the server's own reply is the reply: no split needed */
        if (where != stack_where) free(where);
        request_forward_one(w, req, first, c->id);
        return;
    }
    int rc = p->proto->fragment(req, where, &w->msgs);
    if (where != stack_where) free(where);
    if (rc < 0) {
        request_fail(w, req, -rc);
        return;
    }
    /* enqueue every fragment; a failure completes that fragment (the owner finishes when all do) */
    uint32_t n = req->nfrags;
    STATS_POOL_ADD(p->st, fragments, n);
    for (uint32_t i = 0; i < n; i++) {
        struct msg *f = req->frags[i];
        f->frag_owner = req;
        f->t_start = req->t_start;
        request_forward_one(w, f, f->server_idx, c->id);
    }
}

static const char *request_auth_check(const struct conf_pool *cp, struct conn *c, const struct msg *req)
{
    if (cp->redis_auth == NULL) return "-ERR Client sent AUTH, but no password is set\r\n";
    if (req->nkeys == 0) return "-ERR wrong number of arguments for 'auth' command\r\n";
    const struct msg_key *pw = &req->keys[req->nkeys - 1];
    size_t len = strlen(cp->redis_auth);
    if (pw->len == len && memcmp(pw->ptr, cp->redis_auth, len) == 0) {
        c->authed = true;
        return "+OK\r\n";
    }
    c->authed = false;
    return "-ERR invalid password\r\n";
}

/* PING is answered as redis does: +PONG, or the message echoed as a bulk string. */
static void request_ping(struct worker *w, struct msg *req)
{
    if (req->nkeys == 0) {
        request_answer(w, req, "+PONG\r\n");
        return;
    }
    if (req->nkeys > 1) {
        request_answer(w, req, "-ERR wrong number of arguments for 'ping' command\r\n");
        return;
    }
    char head[32];
    const struct msg_key *k = &req->keys[0];
    int n = snprintf(head, sizeof(head), "$%u\r\n", k->len);
    struct msg *rsp = msg_get(&w->msgs);
    if (rsp == NULL || msg_append_literal(rsp, head, (size_t)n) < 0 ||
        msg_append_literal(rsp, k->ptr, k->len) < 0 || msg_append_literal(rsp, "\r\n", 2) < 0) {
        if (rsp) msg_put(&w->msgs, rsp);
        request_fail(w, req, ENOMEM);
        return;
    }
    req->peer = rsp;
    rsp->peer = req;
    request_done(w, req);
}

int request_dispatch(struct conn *c, struct msg *req)
{
    struct worker *w = c->w;
    if (c->pool->gen != w->gen && c->nq1 == 0 && client_follow_reload(c) < 0) {
        /* cannot happen: a client of a removed pool stops reading at the reload */
        c->closing = true;
        conn_want_read(c, false);
    }
    const struct conf_pool *cp = c->pool->cp;
    req->owner = c;
    req->t_start = w->read_usec;
    TAILQ_INSERT_TAIL(&c->q1, req, client_link);
    c->nq1++;
    if (client_req_queued(c, req)) { /* over its limit: dropped, so nothing is sent for it */
        request_done(w, req);
        return 1;
    }

    if (req->reject != REJECT_NONE) {
        /* memcached reject with noreply: memcached sends nothing either (no peer: none written) */
        if (!req->noreply) {
            char buf[REPLY_MAX];
            size_t n = c->pool->proto->reject_reply(req, buf, sizeof(buf));
            if (request_reply_text(w, req, buf, n) < 0) req->err = ENOMEM;
        }
        if (req->quit) c->closing = true; /* unsupported with noreply (memcache_req.c) */
        request_done(w, req);
        return req->quit ? 1 : 0;
    }
    if (req->quit) {
        c->closing = true;
        if (cp->redis) request_answer(w, req, "+OK\r\n");
        else request_done(w, req);
        return 1;
    }
    if (cp->redis && cp->redis_auth != NULL && !c->authed && !(req->cmd_flags & CMD_F_AUTH)) {
        request_answer(w, req, "-NOAUTH Authentication required.\r\n");
        return 0;
    }
    if (req->cmd_flags & CMD_F_AUTH) {
        request_answer(w, req, request_auth_check(cp, c, req));
        return 0;
    }
    if (req->cmd_flags & CMD_F_LOCAL_PING) {
        request_ping(w, req);
        return 0;
    }
    request_forward(w, c, req);
    return 0;
}

/* The slowlog entry of a request that took usec (its keys and name are still valid here). */
static void request_record_slow(struct worker *w, const struct msg *req, uint64_t usec)
{
    const struct msg_key *k = req->nkeys > 0 ? &req->keys[0] : NULL;
    const struct pool_rt *p = req->owner->pool; /* the generation that routed it (see client.h) */
    const char *server = STATS_SLOW_NONE;
    if (req->nfrags > 0) server = STATS_SLOW_MANY;
    else if (req->t_sent != 0 && req->server_idx < p->nservers) server = p->servers[req->server_idx].st->name;
    struct stats_slow_req r = {
        .duration_usec = usec,
        .pool = p->st->name,
        .server = server,
        .cmd = req->name,
        .cmd_len = req->name_len,
        .key = k != NULL ? k->ptr : NULL,
        .key_len = k != NULL ? k->len : 0,
    };
    stats_slowlog_record(&w->stats->slowlog, &r, nc_usec_wall());
}

void request_record_latency(struct worker *w, struct msg *req, struct stats_pool_block *ps, uint64_t now)
{
    uint64_t usec = now > req->t_start ? now - req->t_start : 0;
    stats_hist_record(&ps->request_latency, usec);
    if (stats_slowlog_wants(&w->stats->slowlog, usec)) request_record_slow(w, req, usec);
}

void request_protocol_error(struct conn *c, const char *why)
{
    struct worker *w = c->w;
    struct msg *req = msg_get(&w->msgs);
    c->closing = true;
    if (req == NULL) return;
    req->owner = c;
    TAILQ_INSERT_TAIL(&c->q1, req, client_link);
    c->nq1++;
    client_req_queued(c, req);
    char buf[REPLY_MAX];
    int n = c->pool->cp->redis ? snprintf(buf, sizeof(buf), "-ERR Protocol error: %s\r\n", why)
                               : snprintf(buf, sizeof(buf), "CLIENT_ERROR %s\r\n", why);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof(buf)) n = (int)sizeof(buf) - 1;
    request_reply_text(w, req, buf, (size_t)n);
    request_done(w, req);
}
