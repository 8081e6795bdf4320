/*
 * request.c - request dispatch, fragments and completion (see request.h).
 *
 * Threads: the loop owning the client. Every function here runs on that loop's thread.
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
#include "core/loop.h"
#include "core/pool.h"
#include "core/server.h"

#define REPLY_MAX 512
#define REQUEST_STACK_KEYS 64 /* a multi-key request's routing up to this many keys: no malloc */

static int request_reply_text(struct loop *l, struct msg *req, const char *text, size_t len)
{
    struct msg *rsp = msg_get(&l->msgs);
    if (rsp == NULL) return -ENOMEM;
    if (msg_append_literal(rsp, text, len) < 0) {
        msg_put(&l->msgs, rsp);
        return -ENOMEM;
    }
    if (req->peer) msg_put(&l->msgs, req->peer);
    req->peer = rsp;
    rsp->peer = req;
    return 0;
}

static void request_reply_error(struct loop *l, struct msg *req, int err)
{
    char buf[REPLY_MAX];
    const struct proto_ops *proto = req->owner->pool->proto;
    size_t n = proto->error_reply(err, buf, sizeof(buf));
    if (request_reply_text(l, req, buf, n) < 0) log_error("out of memory for an error reply");
}

/* The request is answered: write it out when its turn comes, or drop it if the client left. */
static void request_done(struct loop *l, struct msg *req)
{
    req->done = true;
    if (req->owner == NULL) {
        request_free(l, req);
        return;
    }
    client_reply_ready(req->owner, req);
}

static void request_fail(struct loop *l, struct msg *req, int err)
{
    req->err = err;
    request_complete(l, req);
}

void request_free(struct loop *l, struct msg *req)
{
    if (req->peer) msg_put(&l->msgs, req->peer);
    for (uint32_t i = 0; i < req->nfrags; i++) {
        struct msg *f = req->frags[i];
        if (f == NULL) continue;
        if (f->peer) msg_put(&l->msgs, f->peer);
        msg_put(&l->msgs, f);
    }
    msg_put(&l->msgs, req);
}

/* Every fragment of owner has finished: build its reply. */
static void request_finish_fragments(struct loop *l, struct msg *owner)
{
    const struct proto_ops *proto = owner->owner ? owner->owner->pool->proto : NULL;
    if (owner->err == 0 && proto != NULL) {
        struct msg *rsp = msg_get(&l->msgs);
        int rc = rsp ? proto->coalesce(owner, rsp) : -ENOMEM;
        if (rc < 0) {
            if (rsp) msg_put(&l->msgs, rsp);
            owner->err = rc == -ENOMEM ? ENOMEM : EINVAL;
        } else {
            owner->peer = rsp;
            rsp->peer = owner;
        }
    }
    /* the coalesced reply holds references on the fragments' reply bytes: free the fragments */
    for (uint32_t i = 0; i < owner->nfrags; i++) {
        struct msg *f = owner->frags[i];
        if (f->peer) msg_put(&l->msgs, f->peer);
        msg_put(&l->msgs, f);
        owner->frags[i] = NULL;
    }
    if (owner->err != 0 && owner->owner != NULL) request_reply_error(l, owner, owner->err);
    request_done(l, owner);
}

void request_complete(struct loop *l, struct msg *req)
{
    if (req->swallow) {
        if (req->peer && req->peer->rsp_type == RSP_ERROR)
            log_warn("a connection set-up command (redis: AUTH/SELECT) was refused by the server");
        request_free(l, req);
        return;
    }
    if (req->frag_owner != NULL) {
        struct msg *owner = req->frag_owner;
        owner->nfrags_done++;
        if (req->err != 0 && owner->err == 0) owner->err = req->err;
        if (owner->nfrags_done == owner->nfrags) request_finish_fragments(l, owner);
        return;
    }
    if (req->noreply) {
        if (req->peer) {
            msg_put(&l->msgs, req->peer);
            req->peer = NULL;
        }
    } else if (req->err != 0 && req->owner != NULL) {
        request_reply_error(l, req, req->err);
    }
    request_done(l, req);
}

static void request_forward_one(struct loop *l, struct msg *req, uint32_t sidx, uint64_t hint)
{
    struct pool_rt *p = req->frag_owner ? req->frag_owner->owner->pool : req->owner->pool;
    int rc = -ECONNREFUSED;
    if (sidx != DIST_NONE && sidx < p->nservers) rc = server_enqueue(&p->servers[sidx], req, hint);
    if (rc < 0) {
        STATS_POOL_ADD(p->st, forward_error, 1);
        request_fail(l, req, -rc);
    }
}

static void request_forward(struct loop *l, struct conn *c, struct msg *req)
{
    struct pool_rt *p = c->pool;
    if (req->cmd_flags & CMD_F_ANY_SERVER) {
        request_forward_one(l, req, l->rr++ % p->nservers, c->id);
        return;
    }
    if (req->nkeys == 0) { /* the command table requires a key; be safe */
        request_fail(l, req, EINVAL);
        return;
    }
    uint32_t first = pool_rt_route(p, req->keys[0].ptr, req->keys[0].len);
    if (!(req->cmd_flags & CMD_F_FRAG_MASK) || req->nkeys < 2 || first == DIST_NONE) {
        request_forward_one(l, req, first, c->id);
        return;
    }
    uint32_t stack_where[REQUEST_STACK_KEYS];
    uint32_t *where = req->nkeys <= REQUEST_STACK_KEYS ? stack_where : malloc(sizeof(uint32_t) * req->nkeys);
    if (where == NULL) {
        request_fail(l, req, ENOMEM);
        return;
    }
    bool one_server = true;
    where[0] = first;
    for (uint32_t i = 1; i < req->nkeys; i++) {
        where[i] = pool_rt_route(p, req->keys[i].ptr, req->keys[i].len);
        if (where[i] == DIST_NONE) {
            if (where != stack_where) free(where);
            request_fail(l, req, ECONNREFUSED);
            return;
        }
        if (where[i] != first) one_server = false;
    }
    if (one_server) { /* the server's own reply is the reply: no split needed */
        if (where != stack_where) free(where);
        request_forward_one(l, req, first, c->id);
        return;
    }
    int rc = p->proto->fragment(req, where, &l->msgs);
    if (where != stack_where) free(where);
    if (rc < 0) {
        request_fail(l, req, -rc);
        return;
    }
    /* enqueue every fragment; a failure completes that fragment (the owner finishes when all do) */
    uint32_t n = req->nfrags;
    STATS_POOL_ADD(p->st, fragments, n);
    for (uint32_t i = 0; i < n; i++) {
        struct msg *f = req->frags[i];
        f->frag_owner = req;
        f->t_start = req->t_start;
        request_forward_one(l, f, f->server_idx, c->id);
    }
}

/* A request its protocol may answer itself (proto_ops.local). Returns -1 when it is to be
 * forwarded, else what request_dispatch returns. */
static int request_local(struct conn *c, struct msg *req)
{
    struct loop *l = c->loop;
    struct msg *rsp = msg_get(&l->msgs);
    int rc = rsp != NULL ? c->pool->proto->local(&c->sess, c->pool->cp, req, rsp) : -ENOMEM;
    if (rc == PROTO_FORWARD) {
        msg_put(&l->msgs, rsp);
        return -1;
    }
    if (rc < 0 || rsp->len == 0) { /* out of memory, or no reply at all (memcached noreply) */
        if (rsp != NULL) msg_put(&l->msgs, rsp);
        if (rc < 0) {
            request_fail(l, req, ENOMEM);
            return 0;
        }
    } else {
        req->peer = rsp;
        rsp->peer = req;
    }
    if (rc == PROTO_ANSWERED_CLOSE) c->closing = true;
    request_done(l, req);
    return rc == PROTO_ANSWERED_CLOSE ? 1 : 0;
}

int request_dispatch(struct conn *c, struct msg *req)
{
    struct loop *l = c->loop;
    if (c->pool->gen != l->gen && c->nreqs == 0 && client_follow_reload(c) < 0) {
        /* cannot happen: a client of a removed pool stops reading at the reload */
        c->closing = true;
        conn_want_read(c, false);
    }
    req->owner = c;
    req->t_start = l->read_usec;
    TAILQ_INSERT_TAIL(&c->reqs, req, client_link);
    c->nreqs++;
    if (client_req_queued(c, req)) { /* over its limit: dropped, so nothing is sent for it */
        request_done(l, req);
        return 1;
    }

    if (req->reject != REJECT_NONE || req->quit || (req->cmd_flags & CMD_F_LOCAL_MASK) || !c->sess.admitted) {
        int rc = request_local(c, req);
        if (rc >= 0) return rc;
    }
    request_forward(l, c, req);
    return 0;
}

/* The slowlog entry of a request that took usec (its keys and name are still valid here). */
static void request_record_slow(struct loop *l, const struct msg *req, uint64_t usec)
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
    stats_slowlog_record(&l->stats->slowlog, &r, nc_usec_wall());
}

void request_record_latency(struct loop *l, struct msg *req, struct stats_pool_block *ps, uint64_t now)
{
    uint64_t usec = now > req->t_start ? now - req->t_start : 0;
    stats_hist_record(&ps->request_latency, usec);
    if (stats_slowlog_wants(&l->stats->slowlog, usec)) request_record_slow(l, req, usec);
}

void request_protocol_error(struct conn *c, const char *why)
{
    struct loop *l = c->loop;
    struct msg *req = msg_get(&l->msgs);
    c->closing = true;
    if (req == NULL) return;
    req->owner = c;
    TAILQ_INSERT_TAIL(&c->reqs, req, client_link);
    c->nreqs++;
    client_req_queued(c, req);
    char buf[REPLY_MAX];
    size_t n = c->pool->proto->protocol_error_reply(why, buf, sizeof(buf));
    request_reply_text(l, req, buf, n);
    request_done(l, req);
}
