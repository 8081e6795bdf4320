/*
 * dedicated.c - dedicated server connections (see dedicated.h): the set of each backend, the
 * role's ops (the server role's, plus telling the holder when the socket closes).
 *
 * Threads: the owning loop only.
 */
#include "config.h"
#include "core/dedicated.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "core/backend.h"
#include "core/loop.h"
#include "core/server.h"
#include "proto/proto.h"

/* The held count of d's backend and the stats gauge of its server follow each other. (A backend
 * being released has no owner's be any more; no client holds its connections then.) */
static void dedicated_held(struct conn *d, int dir)
{
    struct backend *be = d->server->be;
    if (be != NULL) be->ndheld = (uint32_t)((int64_t)be->ndheld + dir);
    STATS_SERVER_ADD(d->server->st, dedicated_connections, dir);
}

/* A new dedicated connection in be's set, for clients of protocol variant. */
static struct conn *dedicated_create(struct server_rt *s, struct backend *be, uint8_t variant)
{
    if (be->ndconns == be->dconns_cap) {
        uint32_t ncap = be->dconns_cap ? be->dconns_cap * 2 : 4;
        struct conn **n = realloc(be->dconns, sizeof(*n) * ncap);
        if (n == NULL) return NULL;
        be->dconns = n;
        be->dconns_cap = ncap;
    }
    struct conn *d = conn_create(s->pool->loop, &dedicated_conn_ops, be->owner->pool);
    if (d == NULL) return NULL;
    d->server = be->owner;
    d->slot = be->ndconns;
    d->variant = variant;
    be->dconns[be->ndconns++] = d;
    return d;
}

int dedicated_limit(const struct server_rt *s)
{
    return s->be->owner->pool->cp->dedicated_connections;
}

int dedicated_acquire(struct server_rt *s, struct dedicated_holder *h, uint8_t variant, struct conn **out)
{
    struct backend *be = s->be;
    if ((int64_t)be->ndheld >= (int64_t)dedicated_limit(s)) return -EBUSY;
    struct conn *d = NULL;
    for (uint32_t i = 0; i < be->ndconns; i++) {
        struct conn *f = be->dconns[i];
        if (f->holder != NULL || f->variant != variant) continue;
        if (d == NULL || (!conn_open(d) && conn_open(f))) d = f; /* an open one saves a connect */
    }
    if (d == NULL && (d = dedicated_create(s, be, variant)) == NULL) return -ENOMEM;
    d->holder = h;
    dedicated_held(d, 1);
    *out = d;
    return 0;
}

/* Queues the protocol's clean-up request on d (open). Returns 0 or -errno. */
static int dedicated_queue_clean(struct conn *d)
{
    const char *text = d->pool->proto->txn_clean_request;
    if (text == NULL) return 0;
    struct msg *m = msg_get(&d->loop->msgs);
    if (m == NULL) return -ENOMEM;
    int rc = msg_append_literal(m, text, strlen(text));
    if (rc == 0) {
        m->swallow = true;
        rc = server_conn_enqueue(d, m, d->server->idx);
    }
    if (rc < 0) msg_put(&d->loop->msgs, m);
    return rc;
}

void dedicated_release(struct conn *d, bool clean)
{
    if (d->holder == NULL) return;
    d->holder = NULL;
    dedicated_held(d, -1);
    if (clean && conn_open(d) && dedicated_queue_clean(d) < 0) {
        log_warn("server %s: cannot clean a dedicated connection: closing it", d->server->cs->stats_name);
        server_conn_close(d, ENOMEM);
    }
}

int dedicated_move(struct conn *d, struct server_rt *s, uint8_t variant, struct msg *req, bool ask, struct conn **out)
{
    struct loop *l = d->loop;
    struct conn *n;
    int rc = dedicated_acquire(s, d->holder, variant, &n);
    if (rc < 0) return rc;
    if (ask) {
        struct msg *a = s->pool->proto->asking(&l->msgs);
        rc = a != NULL ? server_conn_enqueue(n, a, s->idx) : -ENOMEM;
        if (rc < 0 && a != NULL) msg_put(&l->msgs, a);
    }
    if (rc == 0) rc = server_conn_enqueue(n, req, s->idx);
    if (rc < 0) { /* cannot connect */
        dedicated_release(n, false);
        return rc;
    }
    dedicated_release(d, false);
    *out = n;
    return 0;
}

void dedicated_on_close(struct conn *d, int err)
{
    struct dedicated_holder *h = d->holder;
    if (h == NULL) return;
    d->holder = NULL;
    dedicated_held(d, -1);
    h->lost(h, d, err);
}

const struct conn_ops dedicated_conn_ops = {
    .role = "dedicated",
    .on_writable = server_on_writable,
    .on_readable = server_on_readable,
    .flush = server_flush,
    .sink = SERVER_SINK,
    .on_handshake = server_on_handshake,
    .on_close = dedicated_on_close,
};
