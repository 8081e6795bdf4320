/*
 * proto_feed.h - a test driver that feeds bytes to a proto_ops parser the way the core does: reads
 * land in mbufs of the pool's chunk size, the parser sees the unconsumed bytes of the current mbuf,
 * consumed bytes are appended to the msg being parsed, and when an mbuf is full its unconsumed
 * tail moves to a new one (a tail filling a whole mbuf gives up, as the core does).
 *
 * It also checks the contract on every call: consumed <= len; after PARSE_AGAIN a second call
 * with the same bytes consumes nothing and leaves the parse state untouched; every message's bytes
 * are exactly the bytes fed, in order.
 *
 * Threads: the test's only.
 */
#ifndef NC_TEST_PROTO_FEED_H
#define NC_TEST_PROTO_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg/mbuf.h"
#include "msg/msg.h"
#include "proto/proto.h"

enum feed_status { FEED_OK = 0, FEED_ERROR, FEED_GAVE_UP };

struct feed {
    const struct proto_ops *ops;
    bool rsp;                   /* parse replies instead of requests */
    struct mbuf_pool *mp;
    struct msg_pool *pp;
    struct parse_state ps;
    struct mbuf *mb;            /* the mbuf being read into */
    uint32_t pos;               /* its first unconsumed byte */
    struct msg *cur;            /* the message being parsed */
    struct msg **out;           /* parsed messages, in order (the feed owns them) */
    size_t nout, out_cap;
    enum feed_status status;
    uint8_t *input;             /* every byte fed, to check the messages' bytes */
    size_t ninput, input_cap;
};

void feed_init(struct feed *f, const struct proto_ops *ops, bool rsp, bool want_elems,
               struct mbuf_pool *mp, struct msg_pool *pp);
/* Puts every message, the mbuf and the parse state. */
void feed_deinit(struct feed *f);
/* Feeds n bytes; returns the status (sticky once not FEED_OK). */
enum feed_status feed_bytes(struct feed *f, const void *data, size_t n);
/* Takes message i out of the feed (the caller puts it). */
struct msg *feed_take(struct feed *f, size_t i);

/* Describes a message into a malloc'd string. */
typedef char *(*feed_describe_fn)(const struct msg *m);

/*
 * Runs a whole stream through a fresh feed in pieces: cuts[0..ncuts) are increasing offsets
 * where a read ends. Returns a malloc'd transcript: one line per message (describe), then
 * "ERROR <text>", "GAVE UP" or "PENDING <n bytes>" when the stream did not end cleanly.
 */
char *feed_transcript(const struct proto_ops *ops, bool rsp, size_t chunk_size,
                      feed_describe_fn describe, const void *data, size_t n,
                      const size_t *cuts, size_t ncuts);

#endif
