/*
 * clientlist.c - a list of a pool's clients gathered over every loop (see clientlist.h).
 *
 * Threads: clientlist_serve and the gatherings on the asking loop's thread; a question is
 * rendered on the thread of the loop it was posted to (its own clients only); the message moves
 * between them by post(), never shared.
 */
#include "config.h"
#include "core/clientlist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "conf/conf.h"
#include "core/conn.h"
#include "core/loop.h"
#include "core/pool.h"
#include "core/request.h"

/* One CLIENT LIST waiting for the other loops' answers. */
struct clientlist_gather {
    TAILQ_ENTRY(clientlist_gather) link;
    uint64_t token;
    struct msg *req;              /* its owner may have left meanwhile (req->owner NULL) */
    const struct proto_ops *proto;
    uint8_t variant;              /* the client's, when it asked */
    uint32_t pending;             /* answers still to come */
    uint32_t nparts;
    int err;                      /* 0, or -ENOMEM: the request fails */
    struct textbuf *parts;        /* the lines of each loop, by loop id */
};

/* Appends to t the lines of loop l's clients of the pool named pool (of protocol proto) that f
 * names. */
static void clientlist_render(struct loop *l, const char *pool, const struct proto_ops *proto,
                              const struct proto_list_filter *f, struct textbuf *t)
{
    struct conn *c;
    TAILQ_FOREACH(c, &l->clients, link)
    {
        if (c->pool->proto != proto || strcmp(c->pool->cp->name, pool) != 0) continue;
        bool subscribed = c->psub != NULL;
        if (proto_list_match(f, c->sess.id, subscribed)) proto->client_line(t, &c->sess, c->pool->cp, subscribed);
    }
}

void clientlist_msg_free(struct loop_msg *m)
{
    if (m == NULL) return;
    free(m->pool);
    proto_list_filter_free(&m->filter);
    textbuf_deinit(&m->text);
    free(m);
}

static struct loop_msg *clientlist_msg_new(struct loop *l, const struct clientlist_gather *g, const char *pool,
                                           const struct proto_list_filter *f)
{
    struct loop_msg *m = calloc(1, sizeof(*m));
    if (m == NULL) return NULL;
    m->from = l->id;
    m->token = g->token;
    m->proto = g->proto;
    if ((m->pool = strdup(pool)) == NULL || proto_list_filter_copy(&m->filter, f) < 0) {
        clientlist_msg_free(m);
        return NULL;
    }
    return m;
}

static void clientlist_gather_free(struct clientlist_gather *g)
{
    for (uint32_t i = 0; i < g->nparts; i++) textbuf_deinit(&g->parts[i]);
    free(g->parts);
    free(g);
}

/* Every answer of g is in: its request gets the lines in loop order (or fails). */
static void clientlist_finish(struct loop *l, struct clientlist_gather *g)
{
    struct msg *req = g->req;
    int err = g->err;
    if (req->owner != NULL && err == 0) {
        struct textbuf all = { 0 };
        for (uint32_t i = 0; i < g->nparts; i++) {
            if (textbuf_failed(&g->parts[i])) err = -ENOMEM;
            else if (g->parts[i].len > 0) textbuf_add(&all, g->parts[i].data, g->parts[i].len);
        }
        struct msg *rsp = err == 0 && !textbuf_failed(&all) ? msg_get(&l->msgs) : NULL;
        if (rsp != NULL && g->proto->list_reply(g->variant, all.data, all.len, rsp) == 0) {
            req->peer = rsp;
            rsp->peer = req;
        } else {
            if (rsp != NULL) msg_put(&l->msgs, rsp);
            err = -ENOMEM;
        }
        textbuf_deinit(&all);
    }
    clientlist_gather_free(g);
    if (err != 0) {
        log_warn("worker %u: out of memory for a list of clients", l->id);
        request_fail(l, req, -err);
    } else {
        request_complete(l, req); /* freed here when its client left */
    }
}

void clientlist_serve(struct conn *c, struct msg *req, struct msg *rsp)
{
    struct loop *l = c->loop;
    const struct proto_ops *proto = c->pool->proto;
    struct proto_list_filter f;
    int rc = proto->list_filter(req, &f, rsp);
    if (rc != 0) { /* its arguments' error, or out of memory */
        if (rc < 0) {
            msg_put(&l->msgs, rsp);
            request_fail(l, req, ENOMEM);
            return;
        }
        req->peer = rsp;
        rsp->peer = req;
        request_complete(l, req);
        return;
    }
    msg_put(&l->msgs, rsp);
    /* parts: one per loop, by id (alone, with -T 1: its own only) */
    uint32_t npeers = l->peers.post != NULL ? l->peers.n : 0;
    uint32_t n = npeers > l->id ? npeers : l->id + 1;
    struct clientlist_gather *g = calloc(1, sizeof(*g));
    if (g == NULL || (g->parts = calloc(n, sizeof(*g->parts))) == NULL) {
        free(g);
        proto_list_filter_free(&f);
        request_fail(l, req, ENOMEM);
        return;
    }
    g->nparts = n;
    g->token = ++l->clientlist_token;
    g->req = req;
    g->proto = proto;
    g->variant = c->sess.variant;
    const char *pool = c->pool->cp->name;
    clientlist_render(l, pool, proto, &f, &g->parts[l->id]);
    for (uint32_t i = 0; i < npeers && f.type != PROTO_LIST_NONE; i++) {
        if (i == l->id) continue;
        struct loop_msg *m = clientlist_msg_new(l, g, pool, &f);
        if (m == NULL) {
            g->err = -ENOMEM; /* the request fails once the questions already sent are back */
            break;
        }
        g->pending++;
        l->peers.post(l->peers.arg, i, m);
    }
    proto_list_filter_free(&f);
    if (g->pending == 0) clientlist_finish(l, g);
    else TAILQ_INSERT_TAIL(&l->clientlists, g, link);
}

/* Another loop's question: render this loop's clients into it and send it back. */
static void clientlist_answer(struct loop *l, struct loop_msg *m)
{
    m->at = l->id;
    m->answered = true;
    clientlist_render(l, m->pool, m->proto, &m->filter, &m->text);
    if (textbuf_failed(&m->text)) {
        textbuf_deinit(&m->text);
        m->err = -ENOMEM;
    }
    l->peers.post(l->peers.arg, m->from, m);
}

void clientlist_on_msg(struct loop *l, struct loop_msg *m)
{
    if (!m->answered) {
        clientlist_answer(l, m);
        return;
    }
    struct clientlist_gather *g;
    TAILQ_FOREACH(g, &l->clientlists, link)
    {
        if (g->token == m->token) break;
    }
    if (g != NULL && m->at < g->nparts) {
        if (m->err != 0) g->err = m->err;
        textbuf_deinit(&g->parts[m->at]);
        g->parts[m->at] = m->text; /* taken over */
        memset(&m->text, 0, sizeof(m->text));
    }
    clientlist_msg_free(m);
    if (g != NULL && --g->pending == 0) {
        TAILQ_REMOVE(&l->clientlists, g, link);
        clientlist_finish(l, g);
    }
}

void clientlist_loop_deinit(struct loop *l)
{
    struct clientlist_gather *g;
    while ((g = TAILQ_FIRST(&l->clientlists)) != NULL) {
        TAILQ_REMOVE(&l->clientlists, g, link);
        struct msg *req = g->req;
        if (req->owner == NULL) request_free(l, req); /* its client is closed: orphaned */
        clientlist_gather_free(g);
    }
}
