/*
 * reader.h - the read-and-parse loop every connection's bytes go through: the read buffer (an
 * mbuf the socket's bytes land in), the message being parsed, the parser's state, and the loop
 * that hands the unconsumed bytes to a protocol parser and each completed message to its side.
 *
 * The core's connections (core/conn.c), the unit tests' parser driver (tests/unit/proto_drv.c)
 * and the fuzz harness (tests/fuzz/fuzz_feed.c) all run this code: a parser is tested and fuzzed
 * as it runs. Where the bytes come from (a socket through its transport, a test's buffer) is the
 * caller's: it asks for room (reader_room), fills it, and says how much (reader_parse).
 *
 * The buffer's life: bytes read go to the end of the current mbuf. A message's bytes stay where
 * they were read (the message holds references on the chunks: zero copy). When an mbuf is full,
 * its unconsumed tail (the start of a token the parser could not finish) moves to a fresh mbuf;
 * a tail that fills a whole mbuf is a token larger than the buffer size (-E2BIG).
 *
 * The loop's functions are inline, compiled into their caller (the core's conn_recv: the loop
 * runs twice per proxied request): no call for the loop itself; the sink's functions are called
 * through its pointers.
 *
 * Threads: a reader belongs to the owner of its connection (one loop's thread; a test's, a
 * fuzzer's); the pools it takes from too.
 */
#ifndef NC_READER_H
#define NC_READER_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "msg/mbuf.h"
#include "msg/msg.h"
#include "proto/proto.h"

struct reader {
    struct mbuf *buf;              /* current read buffer (NULL when idle) */
    struct msg *msg;               /* message being parsed (NULL between messages) */
    struct parse_state ps;
    uint32_t pos;                  /* first byte of buf not yet consumed by the parser */
};

/* What one side of a connection does with the bytes it reads (ctx: the side's own object). */
struct reader_sink {
    /* A new message is about to be parsed into m: reset ps for it (parse_state_reset, and
     * want_elems as that side wants it). */
    void (*begin)(void *ctx, struct parse_state *ps);
    /* The protocol parser (proto.h's contract: proto_ops.parse_req or parse_rsp). */
    int (*parse)(void *ctx, struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                 size_t *consumed);
    /* m is complete (taken over). Non-zero stops the loop and is returned by reader_parse. */
    int (*on_msg)(void *ctx, struct msg *m);
    uint64_t msg_max;              /* a larger message is refused (-EMSGSIZE) */
};

/*
 * Room for the next read: *at and *room (> 0) say where and how much. Returns 0, -ENOMEM, or
 * -E2BIG when the unconsumed tail alone fills a whole mbuf (a token larger than the buffer size).
 */
static inline int reader_room(struct reader *r, struct mbuf_pool *mp, uint8_t **at, uint32_t *room)
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

/*
 * n bytes were read into the room reader_room gave: parses every message they complete, applies
 * the edits the parser recorded in it (msg_finish: trim, tail) and calls sink->on_msg for each. Returns 0 (all consumed, or the rest waits for more bytes), on_msg's
 * non-zero value, -EPROTO (a parse error: ps.error says why), -EMSGSIZE (over msg_max) or
 * -ENOMEM. When on_msg resets the reader (reader_reset: the connection was closed under it), the
 * loop stops and returns 0.
 */
static inline int reader_parse(struct reader *r, uint32_t n, struct msg_pool *pp, const struct reader_sink *sink,
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
        /* the parser's edits (msg.h): a reply's terminator cut, a request's appended */
        if (__builtin_expect((m->trim | m->tail_len) != 0, 0) && msg_finish(m) < 0) return -ENOMEM;
        r->msg = NULL;
        int rc = sink->on_msg(ctx, m);
        if (rc != 0) return rc;
        if (r->buf != rb) return 0; /* reset under us (the connection closed) */
    }
    return 0;
}

/*
 * After a burst of reads: an idle reader holds no buffer. One in the middle of a message keeps
 * its buffer while that has bytes of the message and room (the message pins it anyway), so the
 * next bytes go on filling it: a fresh buffer per read would let a peer that sends a message one
 * byte at a time pin a whole chunk per byte.
 */
static inline void reader_trim(struct reader *r)
{
    struct mbuf *rb = r->buf;
    if (rb != NULL && r->pos == rb->len && (r->msg == NULL || rb->len == 0 || mbuf_room(rb) == 0)) {
        mbuf_unref(rb);
        r->buf = NULL;
        r->pos = 0;
    }
}

/* Drops the buffer and the partial message (the parse state's memory stays for reuse). */
void reader_reset(struct reader *r, struct msg_pool *pp);

/* reader_reset, and frees the parse state's memory. */
void reader_deinit(struct reader *r, struct msg_pool *pp);

#endif
