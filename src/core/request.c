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
#include "core/fair.h"
#include "core/park.h"
#include "core/replica.h"
#include "core/feature.h"
#include "core/loop.h"
#include "core/pool.h"
#include "core/refused.h"
#include "core/server.h"

#define REPLY_MAX 512
#define REQUEST_STACK_KEYS 64 /* a multi-key request's routing up to this many keys: no malloc */

static int request_reply_text(struct loop *l, struct msg *req, const char *text, size_t len)
{
    struct msg *rsp = msg_get(&l->msgs);
    if (rsp == NULL) return -ENOMEM;
    if (msg_append_copy(rsp, text, len) < 0) {
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
    size_t n = proto->error_reply(req, err, buf, sizeof(buf));
    if (request_reply_text(l, req, buf, n) < 0) log_error("out of memory for an error reply");
}

/* The request is answered: write it out when its turn comes, or drop it if the client left. */
static void request_done(struct loop *l, struct msg *req)
{
    if (req->owner == NULL) {
        req->done = true;
        request_free(l, req);
        return;
    }
    client_req_mark_done(req->owner, req);
    client_reply_ready(req->owner, req);
    if (req->fair_cost != 0) fair_done(req->owner, req); /* held ones may go now */
}

void request_fail(struct loop *l, struct msg *req, int err)
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

/* Whether none of owner's fragments has a reply (a CMD_F_FRAG_PARTIAL request fails then, with
 * the error of its first fragment). */
static int request_frags_none_answered(const struct msg *owner)
{
    if (owner->nfrags == 0) return 0; /* the protocol answers without a server */
    for (uint32_t i = 0; i < owner->nfrags; i++) {
        const struct msg *f = owner->frags[i];
        if (f->err == 0 && f->peer != NULL) return 0;
    }
    return owner->nfrags > 0 && owner->frags[0]->err != 0 ? owner->frags[0]->err : ECONNREFUSED;
}

/* The bytes of owner's fragments' replies. */
static uint64_t request_frags_bytes(const struct msg *owner)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < owner->nfrags; i++) {
        if (owner->frags[i]->peer != NULL) n += owner->frags[i]->peer->len;
    }
    return n;
}

/* Every fragment of owner has finished: build its reply. */
static void request_finish_fragments(struct loop *l, struct msg *owner)
{
    struct conn *c = owner->owner;
    if (c != NULL) client_hold_for(c, owner, -(int64_t)request_frags_bytes(owner)); /* the merged reply
                                    * is counted instead (client_reply_ready) */
    if (owner->err == 0 && (owner->cmd_flags & CMD_F_FRAG_PARTIAL))
        owner->err = request_frags_none_answered(owner);
    if (owner->err == 0 && c != NULL) {
        struct proto_view v = {
            .sess = &c->sess,
            .cp = c->pool->cp,
            .pool_clients = atomic_load_explicit(pool_nclients(c->pool->shared), memory_order_relaxed),
        };
        struct msg *rsp = msg_get(&l->msgs);
        int rc = rsp ? c->pool->proto->coalesce(&v, owner, rsp) : -ENOMEM;
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
    if (owner->noreply) { /* memcached flush_all noreply: the client reads nothing */
        if (owner->peer != NULL) msg_put(&l->msgs, owner->peer);
        owner->peer = NULL;
    } else if (owner->err != 0 && c != NULL) {
        request_reply_error(l, owner, owner->err);
    }
    request_done(l, owner);
}

void request_complete(struct loop *l, struct msg *req)
{
    if (req->swallow) {
        if (req->peer && req->peer->rsp_type == RSP_ERROR)
            log_warn("a command of the proxy's own (redis: HELLO/AUTH/SELECT on connect, UNWATCH) "
                     "was refused by the server");
        request_free(l, req);
        return;
    }
    if (req->frag_owner != NULL) {
        struct msg *owner = req->frag_owner;
        owner->nfrags_done++;
        /* its reply is held until the merge: its client's (client_mem.h) */
        if (req->peer != NULL && owner->owner != NULL)
            client_hold_for(owner->owner, owner, (int64_t)req->peer->len);
        if (req->err != 0 && owner->err == 0 && !(owner->cmd_flags & CMD_F_FRAG_PARTIAL))
            owner->err = req->err;
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

/* Queues req (of client c, or a fragment of one of its requests) on server sidx: a connection of
 * the protocol variant c speaks, chosen by c's id. */
static void request_forward_one(struct loop *l, const struct conn *c, struct msg *req, uint32_t sidx)
{
    struct pool_rt *p = c->pool;
    int rc = -ECONNREFUSED;
    if (p->nshards != p->nservers && sidx != DIST_NONE) sidx = replica_route(p, req, sidx, &l->rr);
    if (p->route->any_hold && sidx < p->nservers && p->route->set->servers[sidx].hold &&
        park_held_write(l, p, req, sidx))
        return; /* a failover of its master is under way: it goes where the master moves */
    if (sidx != DIST_NONE && sidx < p->nservers)
        rc = server_enqueue(&p->servers[sidx], req, c->id, c->sess.variant);
    if (rc < 0) {
        STATS_POOL_ADD(p->st, forward_error, 1);
        request_fail(l, req, -rc);
    }
}

int request_push(struct conn *c, struct msg *rsp)
{
    struct loop *l = c->loop;
    struct msg *req = msg_get(&l->msgs);
    if (req == NULL) {
        msg_put(&l->msgs, rsp);
        return -ENOMEM;
    }
    req->owner = c;
    TAILQ_INSERT_TAIL(&c->reqs, req, client_link);
    c->nreqs++;
    client_req_queued(c, req); /* over its limit: it is closed from the flush queue all the same */
    req->peer = rsp;
    rsp->peer = req;
    request_done(l, req);
    return 0;
}

void request_answer(struct conn *c, struct msg *req, const char *text, size_t len)
{
    struct loop *l = c->loop;
    if (request_reply_text(l, req, text, len) < 0) {
        request_fail(l, req, ENOMEM);
        return;
    }
    request_done(l, req);
}

/* Splits req into fragments for the servers where[0..n) (the protocol's fragment()) and queues
 * them; a fragment that cannot be queued completes failed (the owner finishes when all have).
 * slots: where[] holds hash slots (a pool that routes by slot): a fragment per slot, sent to the
 * slot's server. */
static void request_send_fragments(struct loop *l, struct conn *c, struct msg *req, const uint32_t *where,
                                   uint32_t n, bool slots)
{
    struct pool_rt *p = c->pool;
    int rc = p->proto->fragment(req, where, n, &l->msgs);
    if (rc < 0) {
        request_fail(l, req, -rc);
        return;
    }
    uint32_t nf = req->nfrags;
    if (nf == 0) { /* the protocol's coalesce() answers from nothing (redis SCAN past the last
                    * server, keys of XREAD on several servers) */
        request_finish_fragments(l, req);
        return;
    }
    STATS_POOL_ADD(p->st, fragments, nf);
    for (uint32_t i = 0; i < nf; i++) {
        struct msg *f = req->frags[i];
        f->frag_owner = req;
        f->t_start = req->t_start;
        if (slots) f->server_idx = dist_dispatch(p->route->dist, f->server_idx);
        request_forward_one(l, c, f, f->server_idx);
    }
}

/* A CMD_F_FRAG_ALL request: one fragment to each server of the pool in the distribution (an
 * ejected one is left out); the usual error when there is none. */
static void request_fan_out(struct loop *l, struct conn *c, struct msg *req)
{
    struct pool_rt *p = c->pool;
    uint32_t stack_where[REQUEST_STACK_KEYS];
    uint32_t *where = p->nshards <= REQUEST_STACK_KEYS ? stack_where : malloc(sizeof(uint32_t) * p->nshards);
    if (where == NULL) {
        request_fail(l, req, ENOMEM);
        return;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->nshards; i++) {
        if (!pool_server_ejected(p->shared, i) && !topo_slot_empty(p->route->set, i)) where[n++] = i;
    }
    if (n == 0) request_fail(l, req, ECONNREFUSED);
    else request_send_fragments(l, c, req, where, n, false);
    if (where != stack_where) free(where);
}

void request_forward(struct loop *l, struct conn *c, struct msg *req)
{
    if (!fair_admit(c, req)) { /* its share of the server connections is in flight: later */
        fair_hold(c, req);
        return;
    }
    request_route(l, c, req);
}

/* The hot keys' sample: req's keys (its first HOTKEYS_REQ_KEYS) are counted for its pool, and the
 * countdown to the next sample starts again. Out of the plain path's way: one request in
 * loop.hotkeys_every gets here. */
__attribute__((noinline, cold)) static void request_sample_keys(struct loop *l, struct pool_rt *p,
                                                                const struct msg *req)
{
    struct stats_hotkeys *h = NULL;
    uint32_t seed = (l->id + 1) * 2654435761u + p->shared->idx; /* the gaps differ per worker and pool */
    if (l->hotkeys_every != 0) h = stats_pool_hotkeys(p->st, l->hotkeys_every, seed);
    if (h == NULL) { /* off (or out of memory: not tried again for a while) */
        p->hot_countdown = UINT32_MAX;
        return;
    }
    uint32_t n = req->nkeys < HOTKEYS_REQ_KEYS ? req->nkeys : HOTKEYS_REQ_KEYS;
    for (uint32_t i = 0; i < n; i++) stats_hotkeys_add(h, req->keys[i].ptr, req->keys[i].len, l->read_usec);
    p->hot_countdown = stats_hotkeys_gap(h);
}

void request_route(struct loop *l, struct conn *c, struct msg *req)
{
    struct pool_rt *p = c->pool;
    if (req->cmd_flags & (CMD_F_ANY_SERVER | CMD_F_FRAG_ALL)) {
        if (req->cmd_flags & CMD_F_ANY_SERVER) request_forward_one(l, c, req, pool_rt_any_master(p, l->rr++));
        else request_fan_out(l, c, req);
        return;
    }
    if (req->nkeys == 0) { /* a command of keys that names none (redis XINFO HELP, XREAD without
                            * STREAMS): any server answers it, with its help or its error */
        request_forward_one(l, c, req, pool_rt_any_master(p, l->rr++));
        return;
    }
    if (__builtin_expect(--p->hot_countdown == 0, 0)) request_sample_keys(l, p, req);
    uint32_t first = pool_rt_route(p, req->keys[0].ptr, req->keys[0].len);
    if (!(req->cmd_flags & CMD_F_FRAG_MASK) || req->nkeys < 2 || first == DIST_NONE) {
        request_forward_one(l, c, req, first);
        return;
    }
    uint32_t stack_where[REQUEST_STACK_KEYS];
    uint32_t *where = req->nkeys <= REQUEST_STACK_KEYS ? stack_where : malloc(sizeof(uint32_t) * req->nkeys);
    if (where == NULL) {
        request_fail(l, req, ENOMEM);
        return;
    }
    bool one_server = true, slots = pool_rt_by_slot(p); /* a cluster's: one fragment per slot */
    where[0] = slots ? pool_rt_slot(p, req->keys[0].ptr, req->keys[0].len) : first;
    for (uint32_t i = 1; i < req->nkeys; i++) {
        where[i] = slots ? pool_rt_slot(p, req->keys[i].ptr, req->keys[i].len)
                         : pool_rt_route(p, req->keys[i].ptr, req->keys[i].len);
        if (where[i] == DIST_NONE) {
            if (where != stack_where) free(where);
            request_fail(l, req, ECONNREFUSED);
            return;
        }
        if (where[i] != where[0]) one_server = false;
    }
    if (one_server || (slots && (req->cmd_flags & CMD_F_FRAG_ONE)))
        request_forward_one(l, c, req, first); /* the server's own reply is the reply (a cluster
                                                * node's -CROSSSLOT for keys of several slots) */
    else request_send_fragments(l, c, req, where, req->nkeys, slots);
    if (where != stack_where) free(where);
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
    if (rc > PROTO_ANSWERED_CLOSE && feature_local(c, req, rsp, rc)) return 0; /* a feature's to
                                    * complete (CLIENT LIST: gathered from every loop) */
    if (rc < 0 || rc > PROTO_ANSWERED_CLOSE || rsp->len == 0) { /* out of memory, or no reply at all (memcached noreply) */
        if (rsp != NULL) msg_put(&l->msgs, rsp);
        if (rc < 0) {
            request_fail(l, req, ENOMEM);
            return 0;
        }
    } else {
        req->peer = rsp;
        rsp->peer = req;
    }
    if (rc == PROTO_ANSWERED_CLOSE) c->closing = c->quit = true;
    request_done(l, req);
    return rc == PROTO_ANSWERED_CLOSE ? 1 : 0;
}

int request_serve(struct conn *c, struct msg *req)
{
    if (c->feat_on != 0 || (req->cmd_flags & c->loop->feature_flags)) {
        int rc = feature_serve(c, req);
        if (rc >= 0) return rc;
    }
    if (req->reject != REJECT_NONE || req->quit || (req->cmd_flags & CMD_F_LOCAL_MASK) || !c->sess.admitted) {
        if (req->reject != REJECT_NONE) refused_note(c, req);
        int rc = request_local(c, req);
        if (rc >= 0) return rc;
    }
    request_forward(c->loop, c, req);
    return 0;
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

    /* one test for everything off the plain path: rejects, the proxy's own answers, the
     * features' commands and clients in a feature's state (core/feature.h) */
    if (req->reject != REJECT_NONE || req->quit || (req->cmd_flags & (CMD_F_LOCAL_MASK | l->feature_flags)) ||
        !c->sess.admitted || c->feat_on != 0)
        return feature_dispatch(c, req);
    request_forward(l, c, req);
    return 0;
}

int request_run(struct conn *c, struct msg *req)
{
    if (c->feat_on != 0 && feature_gate(c, req)) return 0;
    return request_serve(c, req);
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
