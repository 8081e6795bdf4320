/*
 * reader.c - the read-and-parse loop (see reader.h).
 *
 * Threads: the owner of the reader.
 */
#include "config.h"
#include "proto/reader.h"

#include <errno.h>
#include <string.h>

int reader_room(struct reader *r, struct mbuf_pool *mp, uint8_t **at, uint32_t *room)
{
    struct mbuf *rb = r->buf;
    if (rb == NULL || mbuf_room(rb) == 0) {
        struct mbuf *nb = mbuf_get(mp);
        if (nb == NULL) return -ENOMEM;
        if (rb != NULL) {
            uint32_t tail = rb->len - r->pos;
            if (tail > 0 && r->pos == 0) { /* a token as large as a whole mbuf */
                mbuf_unref(nb);
                return -E2BIG;
            }
            memcpy(nb->data, rb->data + r->pos, tail);
            nb->len = tail;
            mbuf_unref(rb);
        }
        r->buf = rb = nb;
        r->pos = 0;
    }
    *at = rb->data + rb->len;
    *room = mbuf_room(rb);
    return 0;
}

int reader_parse(struct reader *r, uint32_t n, struct msg_pool *pp, const struct reader_sink *sink,
                 void *ctx)
{
    struct mbuf *rb = r->buf;
    rb->len += n;
    while (r->pos < rb->len) {
        if (r->msg == NULL) {
            r->msg = msg_get(pp);
            if (r->msg == NULL) return -ENOMEM;
            sink->begin(ctx, &r->ps);
        }
        size_t consumed = 0;
        int st = sink->parse(ctx, &r->ps, r->msg, rb->data + r->pos, rb->len - r->pos, &consumed);
        if (consumed > 0) {
            if (msg_append(r->msg, rb, r->pos, (uint32_t)consumed) < 0) return -ENOMEM;
            r->pos += (uint32_t)consumed;
            if (r->msg->len > sink->msg_max) return -EMSGSIZE;
        }
        if (st == PARSE_ERROR) return -EPROTO;
        if (st == PARSE_AGAIN) break;
        struct msg *m = r->msg;
        r->msg = NULL;
        int rc = sink->on_msg(ctx, m);
        if (rc != 0) return rc;
        if (r->buf != rb) return 0; /* reset under us (the connection closed) */
    }
    return 0;
}

void reader_trim(struct reader *r)
{
    struct mbuf *rb = r->buf;
    if (rb != NULL && r->pos == rb->len && (r->msg == NULL || rb->len == 0 || mbuf_room(rb) == 0)) {
        mbuf_unref(rb);
        r->buf = NULL;
        r->pos = 0;
    }
}

void reader_reset(struct reader *r, struct msg_pool *pp)
{
    if (r->buf != NULL) mbuf_unref(r->buf);
    r->buf = NULL;
    r->pos = 0;
    if (r->msg != NULL) msg_put(pp, r->msg);
    r->msg = NULL;
}

void reader_deinit(struct reader *r, struct msg_pool *pp)
{
    reader_reset(r, pp);
    parse_state_free(&r->ps);
}
