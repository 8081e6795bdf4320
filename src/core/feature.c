/*
 * feature.c - the walks of a loop's feature table (see feature.h). Each hook point is one loop
 * over a table of a few entries; the plain path reaches none of them (request_dispatch's one test).
 *
 * Threads: the loop owning the client (feature_loop_msg_free: the thread tearing an inbox down).
 */
#include "config.h"
#include "core/feature.h"

#include <string.h>

#include "core/client.h"
#include "core/conn.h"
#include "core/loop.h"
#include "core/request.h"

const struct feature_table feature_table_none = { .ops = NULL, .n = 0 };

void feature_install(struct loop *l, const struct feature_table *t)
{
    uint32_t flags = 0;
    for (uint32_t i = 0; i < t->n; i++) flags |= t->ops[i]->order_flags | t->ops[i]->serve_flags;
    l->features = t;
    l->feature_flags = flags;
}

uint32_t feature_index(const struct loop *l, const struct feature_ops *f)
{
    for (uint32_t i = 0; i < l->features->n; i++) {
        if (l->features->ops[i] == f) return i;
    }
    return UINT32_MAX;
}

void feature_attach(struct conn *c, const struct feature_ops *f, void *st)
{
    c->feat[f->slot] = st;
    c->feat_on |= (uint8_t)(1u << f->slot);
    client_features_on(c, true);
}

void feature_detach(struct conn *c, const struct feature_ops *f)
{
    c->feat[f->slot] = NULL;
    c->feat_on &= (uint8_t)~(1u << f->slot);
    if (c->feat_on == 0) client_features_on(c, false);
}

/* Whether f has c's state. */
static bool feature_holds(const struct conn *c, const struct feature_ops *f)
{
    return f->slot != FEATURE_NONE && c->feat[f->slot] != NULL;
}

int feature_dispatch(struct conn *c, struct msg *req)
{
    const struct feature_table *t = c->loop->features;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct feature_ops *f = t->ops[i];
        if (f->dispatch == NULL || !((req->cmd_flags & f->order_flags) || feature_holds(c, f))) continue;
        int rc = f->dispatch(c, req);
        if (rc >= 0) return rc;
    }
    return request_run(c, req);
}

bool feature_gate(struct conn *c, struct msg *req)
{
    const struct feature_table *t = c->loop->features;
    for (uint32_t i = 0; c->feat_on != 0 && i < t->n; i++) {
        const struct feature_ops *f = t->ops[i];
        if (f->gate != NULL && feature_holds(c, f) && f->gate(c, req)) return true;
    }
    return false;
}

int feature_serve(struct conn *c, struct msg *req)
{
    const struct feature_table *t = c->loop->features;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct feature_ops *f = t->ops[i];
        if (f->serve == NULL || !((req->cmd_flags & f->serve_flags) || feature_holds(c, f))) continue;
        int rc = f->serve(c, req);
        if (rc >= 0) return rc;
    }
    return -1;
}

bool feature_local(struct conn *c, struct msg *req, struct msg *rsp, int code)
{
    const struct feature_table *t = c->loop->features;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct feature_ops *f = t->ops[i];
        if (f->local == NULL || f->local_code != code) continue;
        f->local(c, req, rsp);
        return true;
    }
    return false;
}

void feature_written(struct conn *c)
{
    const struct feature_table *t = c->loop->features;
    for (uint32_t i = 0; i < t->n; i++) {
        const struct feature_ops *f = t->ops[i];
        if (f->written != NULL && feature_holds(c, f)) f->written(c);
    }
}

bool feature_blocked(const struct conn *c)
{
    const struct feature_table *t = c->loop->features;
    for (uint32_t i = 0; c->feat_on != 0 && i < t->n; i++) {
        const struct feature_ops *f = t->ops[i];
        if (f->blocked != NULL && feature_holds(c, f) && f->blocked(c)) return true;
    }
    return false;
}

bool feature_waits(const struct conn *c)
{
    const struct feature_table *t = c->loop->features;
    for (uint32_t i = 0; c->feat_on != 0 && i < t->n; i++) {
        const struct feature_ops *f = t->ops[i];
        if (f->waits != NULL && feature_holds(c, f) && f->waits(c)) return true;
    }
    return false;
}

void feature_close(struct conn *c)
{
    const struct feature_table *t = c->loop->features;
    for (uint32_t i = 0; c->feat_on != 0 && i < t->n; i++) {
        const struct feature_ops *f = t->ops[i];
        if (f->close != NULL && feature_holds(c, f)) f->close(c);
    }
}

void feature_describe(const struct conn *c, struct proto_client_state *st)
{
    memset(st, 0, sizeof(*st));
    const struct feature_table *t = c->loop->features;
    for (uint32_t i = 0; c->feat_on != 0 && i < t->n; i++) {
        const struct feature_ops *f = t->ops[i];
        if (f->describe != NULL && feature_holds(c, f)) f->describe(c, st);
    }
}

void feature_loop_msg(struct loop *l, struct loop_msg *m)
{
    const struct feature_table *t = l->features;
    if (m->feature < t->n && t->ops[m->feature]->loop_msg != NULL) t->ops[m->feature]->loop_msg(l, m);
}

void feature_loop_msg_free(const struct feature_table *t, struct loop_msg *m)
{
    if (m->feature < t->n && t->ops[m->feature]->loop_msg_free != NULL) t->ops[m->feature]->loop_msg_free(m);
}

void feature_loop_deinit(struct loop *l)
{
    const struct feature_table *t = l->features;
    for (uint32_t i = 0; t != NULL && i < t->n; i++) {
        if (t->ops[i]->loop_deinit != NULL) t->ops[i]->loop_deinit(l);
    }
}
