/*
 * proto_drv.h - the unit tests' driver that feeds bytes to a proto_ops parser through the core's
 * own read-and-parse loop (src/proto/reader.c, as src/core/conn.c drives it): each read asks
 * reader_room for room (a read larger than the room becomes several room-sized reads, as a socket's
 * would), copies the bytes there and hands them to reader_parse; reader_trim ends each read. The
 * reader's sink wraps the parser with the checks. When the reader moves a full mbuf's unconsumed
 * tail to a fresh mbuf, the old tail is overwritten (and under ASan poisoned while a msg keeps the
 * old mbuf: tests/common/reader_scrub.h), so a parser keeping pointers into unconsumed bytes reads
 * garbage; when the tail alone fills an mbuf (-E2BIG) the driver gives up, as the core does.
 *
 * It checks the parser contract (src/proto/proto.h) on every call: *consumed is set and
 * consumed <= len; after PARSE_AGAIN a second call with the same bytes consumes nothing and
 * leaves the parse state untouched; PARSE_DONE consumed something; PARSE_ERROR names its error;
 * parse_reset keeps want_elems; and every completed msg's bytes are exactly the bytes fed, in
 * order, less its trim bytes at their end, then its tail (the edits msg_finish applies). Used by test_redis, test_redis_rsp, test_redis_hello and test_memcache.
 *
 * Threads: the test's only.
 */
#ifndef NC_TEST_PROTO_DRV_H
#define NC_TEST_PROTO_DRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg/mbuf.h"
#include "msg/msg.h"
#include "proto/proto.h"
#include "proto/reader.h"

/* pools shared by the drivers (and fragments) of one test */
struct tenv {
    struct mbuf_pool mp;
    struct msg_pool pp;
};

void tenv_init(struct tenv *e, size_t mbuf_size);
/* Checks that every mbuf and msg went back (no leak), then frees the pools. */
void tenv_deinit(struct tenv *e);

struct drv {
    struct tenv *env;
    const struct proto_ops *ops;
    bool rsp;                 /* parse responses */
    bool want_elems;          /* set in the parse state before each msg (a test may change it) */
    uint8_t opts;             /* parse_state.opts before each request (0: a pool's defaults) */
    const void *table;        /* parse_state.table before each msg (NULL: the protocol's own) */
    struct reader rd;         /* the read buffer, the msg being parsed, the parse state */
    struct msg **out;         /* completed msgs, in order (a test may take one: set it NULL) */
    size_t nout, out_cap;
    bool failed;              /* PARSE_ERROR seen, or gave up on a token larger than an mbuf */
    bool gave_up;
    const char *error;        /* ps.error of the PARSE_ERROR */
    uint8_t *input;           /* every byte read into an mbuf, in order */
    size_t ninput, input_cap;
    size_t ndone;             /* of them, the bytes of the completed msgs */
};

void drv_init(struct drv *d, struct tenv *e, const struct proto_ops *ops, bool rsp, bool want_elems);
/* tenv_init(e, mbuf_size) + drv_init(); drv_close() undoes both (and checks for leaks). */
void drv_open(struct drv *d, struct tenv *e, size_t mbuf_size, const struct proto_ops *ops,
              bool rsp, bool want_elems);
void drv_close(struct drv *d);
/* One read of len bytes from the socket (a burst: reads of the room the reader gives, then
 * reader_trim). */
void drv_read(struct drv *d, const void *data, size_t len);
/* Reads data in pieces of step bytes (0: all at once). */
void drv_feed(struct drv *d, const void *data, size_t len, size_t step);
/* Two reads: [0, cut) and [cut, len). */
void drv_feed2(struct drv *d, const void *data, size_t len, size_t cut);
/* Reads ending at each of cuts[0..ncuts) (increasing offsets), then one up to len. */
void drv_feed_cuts(struct drv *d, const void *data, size_t len, const size_t *cuts, size_t ncuts);
/* Takes completed msg i out of the driver (the caller puts it). */
struct msg *drv_take(struct drv *d, size_t i);
/* Bytes received but not yet part of a completed msg (the msg in progress plus the tail). */
uint64_t drv_pending(const struct drv *d);
/* Puts every msg it still holds, then reader_deinit. */
void drv_deinit(struct drv *d);

/* The outcome of feeding a stream to a fresh driver: one summary line per parsed msg. */
struct drv_run {
    char **lines;
    size_t n;
    bool failed;
    bool gave_up;
    const char *error;
    uint64_t pending;   /* bytes after the last complete msg */
};
typedef char *(*drv_summary_fn)(const struct msg *m); /* a heap string */
/* Feeds in[0..len): in two reads split at cut if cut != SIZE_MAX, else in steps of step bytes. */
void drv_run(struct drv_run *r, const struct proto_ops *ops, bool rsp, bool want_elems,
             size_t mbuf, const char *in, size_t len, size_t step, size_t cut, drv_summary_fn fn);
/* The same with reads ending at each of cuts[0..ncuts), then one up to len. */
void drv_run_cuts(struct drv_run *r, const struct proto_ops *ops, bool rsp, bool want_elems,
                  size_t mbuf, const char *in, size_t len, const size_t *cuts, size_t ncuts,
                  drv_summary_fn fn);
/* A run as text (a heap string): one line per msg, then "ERROR <text>", "GAVE UP" or "PENDING"
 * when the stream did not end cleanly; each line ends in '\n'. */
char *drv_run_text(const struct drv_run *r);
/* The run text of in[0..n) read in pieces ending at cuts[0..ncuts), mbufs of mbuf bytes, opts the
 * parse state's opts before each msg (a heap string). */
char *drv_transcript(const struct proto_ops *ops, bool rsp, bool want_elems, uint8_t opts, size_t mbuf,
                     const char *in, size_t n, const size_t *cuts, size_t ncuts, drv_summary_fn fn);
/* Asserts that in[0..n) gives the run text expect (drv_run_text of fn's lines) in one read, split
 * in two reads at every byte, and one byte at a time, with 512-byte and 16 kB mbufs; opts is the
 * parse state's opts before each msg. */
void drv_check_stream(const struct proto_ops *ops, bool rsp, bool want_elems, uint8_t opts,
                      const char *in, size_t n, const char *expect, drv_summary_fn fn);
/* drv_check_stream of requests parsed with a pool's command table (parse_state.table). */
void drv_check_stream_table(const struct proto_ops *ops, const void *table, const char *in, size_t n,
                            const char *expect, drv_summary_fn fn);
void drv_run_free(struct drv_run *r);
/* Asserts that b found what a found; frees b. */
void drv_run_same(const struct drv_run *a, struct drv_run *b);

/* A small deterministic PRNG for randomized tests (xorshift64*); *state must not be 0. */
uint64_t test_rand(uint64_t *state);

/*
 * Feeds in[0..len) once in one read (the reference) and then n_splits times in random pieces
 * (sizes up to max_step, drawn from *seed), all with mbufs of mbuf bytes: every run must find
 * the same msgs and the same error. With small_mbuf != 0, runs n_splits more times with mbufs of
 * that size, only to check for crashes and leaks (a token may then not fit an mbuf).
 */
void drv_fuzz_splits(const struct proto_ops *ops, bool rsp, bool want_elems, const char *in,
                     size_t len, size_t mbuf, size_t small_mbuf, int n_splits, size_t max_step,
                     uint64_t *seed, drv_summary_fn fn);

/* A msg's bytes as a NUL-terminated heap string (the caller frees it). */
char *msg_text(const struct msg *m);
/* Bytes [start, end) of m as a NUL-terminated heap string. */
char *msg_range_text(const struct msg *m, uint64_t start, uint64_t end);

/* Builds a RESP request from argv (lengths from strlen) into out; returns its length. */
size_t resp_build(char *out, size_t size, int argc, const char *const *argv);
/* Splits line on single spaces into argv (pointers into a copy kept in buf); returns argc. */
int split_words(const char *line, char *buf, size_t size, const char **argv, int max);

#endif
