/*
 * clientlist.c - a list of a pool's clients gathered over every loop (see clientlist.h).
 *
 * Threads: clientlist_serve and the gatherings on the asking loop's thread; a question is
 * rendered on the thread of the loop it was posted to (its own clients only); the message moves
 * between them by post(), never shared.
 */
#include "config.h"
#include "feature/clientlist.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "conf/conf.h"
#include "core/conn.h"
#include "core/loop.h"
#include "core/pool.h"
#include "core/request.h"
#include "feature/slots.h"

/* One CLIENT LIST waiting for the other loops' answers. */
struct clientlist_gather;
TAILQ_HEAD(clientlist_tqh, clientlist_gather);
struct clientlist_gather {
    TAILQ_ENTRY(clientlist_gather) link;
    uint64_t token;
    struct msg *req;              /* its owner may have left meanwhile (req->owner NULL) */
    const struct proto_ops *proto;
    uint8_t variant;              /* the client's, when it asked */
    uint32_t pending;             /* answers still to come */
    uint32_t nparts;
    int err;                      /* 0, or -ENOMEM: the request fails */
    struct proto_list_filter filter; /* by_id: the order of the reply */
    struct clientlist_part *parts; /* the lines of each loop, by loop id */
};

/* A loop's gatherings (its state slot, loop.feat). */
struct clientlist_loop {
    struct clientlist_tqh gathers;
    uint64_t token;
};

/* l's state, made when first needed (NULL: out of memory). */
static struct clientlist_loop *clientlist_loop_get(struct loop *l)
{
    struct clientlist_loop *cl = l->feat[FEATURE_LOOP_SLOT_CLIENTLIST];
    if (cl == NULL && (cl = calloc(1, sizeof(*cl))) != NULL) {
        TAILQ_INIT(&cl->gathers);
        l->feat[FEATURE_LOOP_SLOT_CLIENTLIST] = cl;
    }
    return cl;
}

static void clientlist_part_free(struct clientlist_part *p)
{
    textbuf_deinit(&p->text);
    free(p->lines);
    memset(p, 0, sizeof(*p));
}

/* Records where the line of client id is in p (text[off..]). */
static void clientlist_part_note(struct clientlist_part *p, uint64_t id, size_t off)
{
    if (p->nlines == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 16;
        struct clientlist_line *lines = realloc(p->lines, sizeof(*lines) * cap);
        if (lines == NULL) {
            p->failed = true;
            return;
        }
        p->lines = lines;
        p->cap = cap;
    }
    p->lines[p->nlines++] = (struct clientlist_line){ .id = id, .off = off, .len = p->text.len - off };
}

/* Appends client c's line to p (st: what its features show of it). */
static void clientlist_line(struct conn *c, const struct proto_client_state *st, struct clientlist_part *p,
                            bool by_id)
{
    size_t off = p->text.len;
    c->pool->proto->client_line(&p->text, &c->sess, c->pool->cp, st);
    if (by_id) clientlist_part_note(p, c->sess.id, off);
    if (textbuf_failed(&p->text)) p->failed = true;
}

/* Appends to p the lines of loop l's clients of the pool named pool (of protocol proto) that f
 * names. */
static void clientlist_render(struct loop *l, const char *pool, const struct proto_ops *proto,
                              const struct proto_list_filter *f, struct clientlist_part *p)
{
    struct conn *c;
    TAILQ_FOREACH(c, &l->clients, link)
    {
        if (c->pool->proto != proto || strcmp(c->pool->cp->name, pool) != 0) continue;
        struct proto_client_state st;
        feature_describe(c, &st);
        if (proto_list_match(f, c->sess.id, st.subscribed)) clientlist_line(c, &st, p, f->by_id);
    }
}

static void clientlist_msg_free(struct clientlist_msg *m)
{
    if (m == NULL) return;
    free(m->pool);
    proto_list_filter_free(&m->filter);
    clientlist_part_free(&m->part);
    free(m);
}

static struct clientlist_msg *clientlist_msg_new(struct loop *l, const struct clientlist_gather *g,
                                                const char *pool, const struct proto_list_filter *f)
{
    struct clientlist_msg *m = calloc(1, sizeof(*m));
    if (m == NULL) return NULL;
    m->head.feature = feature_index(l, &clientlist_feature);
    m->head.from = l->id;
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
    for (uint32_t i = 0; i < g->nparts; i++) clientlist_part_free(&g->parts[i]);
    free(g->parts);
    proto_list_filter_free(&g->filter);
    free(g);
}

/* A rendered line wherever it is (clientlist_by_id). */
struct clientlist_found {
    uint64_t id;
    const char *ptr;
    size_t len;
};

static int clientlist_found_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct clientlist_found *)a)->id, y = ((const struct clientlist_found *)b)->id;
    return x < y ? -1 : x > y;
}

/* With an ID filter: the lines of g's parts in the order of the ids asked for, a line as often
 * as its id is (redis's order). Returns 0 or -ENOMEM. */
static int clientlist_by_id(const struct clientlist_gather *g, struct textbuf *all)
{
    size_t n = 0;
    for (uint32_t i = 0; i < g->nparts; i++) n += g->parts[i].nlines;
    if (n == 0) return 0;
    struct clientlist_found *found = malloc(sizeof(*found) * n);
    if (found == NULL) return -ENOMEM;
    n = 0;
    for (uint32_t i = 0; i < g->nparts; i++) {
        const struct clientlist_part *p = &g->parts[i];
        for (uint32_t j = 0; j < p->nlines; j++)
            found[n++] = (struct clientlist_found){ p->lines[j].id, p->text.data + p->lines[j].off, p->lines[j].len };
    }
    qsort(found, n, sizeof(*found), clientlist_found_cmp);
    for (uint32_t i = 0; i < g->filter.nids; i++) {
        struct clientlist_found key = { .id = g->filter.ids[i] };
        const struct clientlist_found *f = bsearch(&key, found, n, sizeof(*found), clientlist_found_cmp);
        if (f != NULL) textbuf_add(all, f->ptr, f->len);
    }
    free(found);
    return 0;
}

/* Every answer of g is in: its request gets the lines in loop order, or in the order of the ids
 * asked for (or fails). */
static void clientlist_finish(struct loop *l, struct clientlist_gather *g)
{
    struct msg *req = g->req;
    int err = g->err;
    if (req->owner != NULL && err == 0) {
        struct textbuf all = { 0 };
        for (uint32_t i = 0; i < g->nparts; i++) {
            if (g->parts[i].failed) err = -ENOMEM;
            else if (!g->filter.by_id && g->parts[i].text.len > 0)
                textbuf_add(&all, g->parts[i].text.data, g->parts[i].text.len);
        }
        if (err == 0 && g->filter.by_id) err = clientlist_by_id(g, &all);
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

/* The protocol's checks of req's arguments (rsp: its reply, taken over). Returns 0 with *f set
 * when the gathering goes on, else 1 (req answered or failed). */
static int clientlist_check(struct conn *c, struct msg *req, struct msg *rsp, struct proto_list_filter *f)
{
    struct loop *l = c->loop;
    int rc = c->pool->proto->list_filter(req, f, rsp); /* kept by the gathering: the order of ID */
    if (rc == 0) {
        msg_put(&l->msgs, rsp);
        return 0;
    }
    if (rc < 0) { /* out of memory */
        msg_put(&l->msgs, rsp);
        request_fail(l, req, ENOMEM);
        return 1;
    }
    req->peer = rsp; /* its arguments' error */
    rsp->peer = req;
    request_complete(l, req);
    return 1;
}

/* Sends g's question to every other loop. */
static void clientlist_ask(struct loop *l, struct clientlist_gather *g, const char *pool, uint32_t npeers)
{
    for (uint32_t i = 0; i < npeers && g->filter.type != PROTO_LIST_NONE; i++) {
        if (i == l->id) continue;
        struct clientlist_msg *m = clientlist_msg_new(l, g, pool, &g->filter);
        if (m == NULL) {
            g->err = -ENOMEM; /* the request fails once the questions already sent are back */
            break;
        }
        g->pending++;
        l->peers.post(l->peers.arg, i, &m->head);
    }
}

/* feature_ops.local: req of client c, which the protocol's local() answered PROTO_CLIENT_LIST
 * (rsp: an empty msg, taken over). Answers an error at once, or starts the gathering. */
static void clientlist_serve(struct conn *c, struct msg *req, struct msg *rsp)
{
    struct loop *l = c->loop;
    struct proto_list_filter f;
    if (clientlist_check(c, req, rsp, &f) != 0) return;
    /* parts: one per loop, by id (alone, with -T 1: its own only) */
    uint32_t npeers = l->peers.post != NULL ? l->peers.n : 0;
    uint32_t n = npeers > l->id ? npeers : l->id + 1;
    struct clientlist_loop *cl = clientlist_loop_get(l);
    struct clientlist_gather *g = cl != NULL ? calloc(1, sizeof(*g)) : NULL;
    if (g == NULL || (g->parts = calloc(n, sizeof(*g->parts))) == NULL) {
        free(g);
        proto_list_filter_free(&f);
        request_fail(l, req, ENOMEM);
        return;
    }
    g->nparts = n;
    g->token = ++cl->token;
    g->req = req;
    g->proto = c->pool->proto;
    g->variant = c->sess.variant;
    g->filter = f;
    if (f.type == PROTO_LIST_SELF) { /* CLIENT INFO */
        struct proto_client_state st;
        feature_describe(c, &st);
        clientlist_line(c, &st, &g->parts[l->id], false);
        clientlist_finish(l, g);
        return;
    }
    clientlist_render(l, c->pool->cp->name, g->proto, &f, &g->parts[l->id]);
    clientlist_ask(l, g, c->pool->cp->name, npeers);
    if (g->pending == 0) clientlist_finish(l, g);
    else TAILQ_INSERT_TAIL(&cl->gathers, g, link);
}

/* Another loop's question: render this loop's clients into it and send it back. */
static void clientlist_answer(struct loop *l, struct clientlist_msg *m)
{
    m->at = l->id;
    m->answered = true;
    clientlist_render(l, m->pool, m->proto, &m->filter, &m->part);
    l->peers.post(l->peers.arg, m->head.from, &m->head);
}

/* feature_ops.loop_msg: a question to answer, or an answer to one of l's gatherings. */
static void clientlist_on_msg(struct loop *l, struct loop_msg *lm)
{
    struct clientlist_msg *m = (struct clientlist_msg *)lm;
    if (!m->answered) {
        clientlist_answer(l, m);
        return;
    }
    struct clientlist_loop *cl = l->feat[FEATURE_LOOP_SLOT_CLIENTLIST]; /* it asked: it has one */
    struct clientlist_gather *g = NULL;
    if (cl != NULL) {
        TAILQ_FOREACH(g, &cl->gathers, link)
        {
            if (g->token == m->token) break;
        }
    }
    if (g != NULL && m->at < g->nparts) {
        clientlist_part_free(&g->parts[m->at]);
        g->parts[m->at] = m->part; /* taken over */
        memset(&m->part, 0, sizeof(m->part));
    }
    clientlist_msg_free(m);
    if (g != NULL && --g->pending == 0) {
        TAILQ_REMOVE(&cl->gathers, g, link);
        clientlist_finish(l, g);
    }
}

/* feature_ops.loop_msg_free */
static void clientlist_on_msg_free(struct loop_msg *m)
{
    clientlist_msg_free((struct clientlist_msg *)m);
}

/* feature_ops.loop_deinit: l is torn down (its clients closed): its gatherings are freed with
 * their requests. */
static void clientlist_loop_deinit(struct loop *l)
{
    struct clientlist_loop *cl = l->feat[FEATURE_LOOP_SLOT_CLIENTLIST];
    if (cl == NULL) return;
    struct clientlist_gather *g;
    while ((g = TAILQ_FIRST(&cl->gathers)) != NULL) {
        TAILQ_REMOVE(&cl->gathers, g, link);
        struct msg *req = g->req;
        if (req->owner == NULL) request_free(l, req); /* its client is closed: orphaned */
        clientlist_gather_free(g);
    }
    free(cl);
    l->feat[FEATURE_LOOP_SLOT_CLIENTLIST] = NULL;
}

const struct feature_ops clientlist_feature = {
    .name = "client list",
    .slot = FEATURE_NONE,
    .loop_slot = FEATURE_LOOP_SLOT_CLIENTLIST,
    .local_code = PROTO_CLIENT_LIST,
    .local = clientlist_serve,
    .loop_msg = clientlist_on_msg,
    .loop_msg_free = clientlist_on_msg_free,
    .loop_deinit = clientlist_loop_deinit,
};
