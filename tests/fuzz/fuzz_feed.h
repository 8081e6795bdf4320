/*
 * fuzz_feed.h - the libFuzzer harness shared by the protocol targets (tests/fuzz/fuzz_*.c): feeds
 * the fuzz input to a proto_ops parser through the core's own read-and-parse loop
 * (src/proto/reader.c, as src/core/conn.c drives it: reader_room, the read into the room, a read
 * larger than the room split as a socket's would be, reader_parse, reader_trim after each read),
 * checks the parser contract (proto.h) on every call and every message in the reader's sink,
 * overwrites (and ASan-poisons) a full mbuf's unconsumed tail once the reader has moved it
 * (tests/common/reader_scrub.h), and runs fragment()+coalesce() on multi-key requests with fake
 * replies.
 *
 * Input format (see notes/fuzzing.md): a 4-byte header, then the byte stream.
 *   h[0] bits 0-1  mbuf chunk size: 512, 549, 1024, 4096 bytes (header included)
 *   h[0] bit 2     want_elems for reply parsing
 *   h[0] bits 3-4  servers for fragments - 1 (1..4)
 *   h[0] bits 5-7  the parser's options (fz_opts): redis requests, bit 5: client_cluster_mode;
 *                  memcached replies: 1 a meta command's, 2 or 3 a quiet one's (MC_RSP_TERM);
 *                  4 or 5 a binary request's (MC_RSP_BIN), 6 or 7 a quiet binary one's
 *                  (MC_RSP_BIN | MC_RSP_TERM: every packet up to the NOOP's reply)
 *   h[1..3]        read sizes, used in turn (0: as much as the mbuf takes)
 * Shorter inputs are all header (defaults).
 *
 * Threads: the fuzzer's only.
 */
#ifndef NC_FUZZ_FEED_H
#define NC_FUZZ_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz_check.h"
#include "msg/mbuf.h"
#include "msg/msg.h"
#include "proto/proto.h"
#include "proto/reader.h"

enum fz_status { FZ_OK = 0, FZ_ERROR, FZ_GAVE_UP };

/*
 * The pools a feed draws from. mp/pp serve the stream itself; they keep no free chunk, so a stale
 * pointer into a returned mbuf or msg is a use-after-free under ASan. re_mp/re_pp serve the
 * harness's re-parses of copies it made (an element alone, a fragment, a coalesced reply, the
 * whole-reads reference run): they may keep free chunks (ASan's malloc and free are most of a
 * target's time), since what those re-parses check is what the parser records, not its lifetimes.
 */
struct fz_pools {
    struct mbuf_pool *mp;
    struct msg_pool *pp;
    struct mbuf_pool *re_mp;
    struct msg_pool *re_pp;
};

/* A growable byte buffer (harness scratch: reused, so no malloc per use). */
struct fz_buf {
    uint8_t *p;
    size_t n, cap;
};

/* Appends n bytes (keeps a NUL after them). */
void fz_buf_put(struct fz_buf *b, const void *d, size_t n);

struct fz_feed;
/* Called with each complete msg; the callee owns it (msg_put it, or keep it). */
typedef void (*fz_msg_fn)(struct fz_feed *f, struct msg *m, void *ctx);

struct fz_feed {
    const struct proto_ops *ops;
    bool rsp;                  /* parse_rsp instead of parse_req */
    bool want_elems;
    uint8_t opts;              /* parse_state.opts before each msg (0 unless the caller sets it) */
    struct mbuf_pool *mp;
    struct msg_pool *pp;
    struct fz_pools re;        /* for re-parses of this feed's elements: re_mp/re_pp of its pools */
    struct fz_buf bytes, elem; /* scratch: a msg's bytes, an element made a whole reply */
    struct reader rd;          /* the read buffer, the msg being parsed, the parse state */
    const uint8_t *stream;     /* every byte of the stream (fed or to come) */
    size_t fed;                /* bytes of stream read so far */
    uint64_t cur_start;        /* stream offset of the first byte of the msg being parsed */
    uint64_t done_end;         /* stream offset after the last complete msg */
    enum fz_status status;
    size_t nmsgs;
    bool nested;               /* a harness re-parse (fz_parse_all): elements not re-parsed alone */
    bool light;                /* a reference run: only what the summaries need is checked */
    fz_msg_fn on_msg;
    void *ctx;
};

#define FZ_MAX_SERVERS 4 /* servers a request may be split over (h[0] bits 3-4, plus 1) */

/* The header (h[0..3]) decoded. */
struct fz_params {
    size_t mbuf_size;
    bool want_elems;
    uint32_t nservers;
    uint8_t opts;              /* h[0] bits 5-7 (fz_opts) */
    uint8_t reads[3];
};

/* Decodes the header; data and size are advanced past it. */
void fz_params(struct fz_params *p, const uint8_t **data, size_t *size);
/* The parse_state.opts of each msg of a stream of ops (requests or replies) under header p. */
uint8_t fz_opts(const struct fz_params *p, const struct proto_ops *ops, bool rsp);

void fz_feed_init(struct fz_feed *f, const struct proto_ops *ops, bool rsp, bool want_elems,
                  const struct fz_pools *pools, const uint8_t *stream, fz_msg_fn on_msg,
                  void *ctx);
/* One read of the next n bytes of the stream (split further by the reader's room), then
 * reader_trim. */
void fz_feed_read(struct fz_feed *f, size_t n);
/* reader_deinit (the msg in progress, the read buffer, the parse state), frees the scratch. */
void fz_feed_deinit(struct fz_feed *f);

/*
 * Parses data[0..n) alone through a fresh feed in one read per reads[] cycle; stores up to max
 * complete msgs in out (the caller puts them; extra ones are put here). Returns the number of
 * complete msgs; *status and *left (bytes after the last complete msg) say how the stream ended.
 * Every check of the stream's feed runs, except that reply elements are not re-parsed alone
 * (the reply targets do that on the stream; a fake server reply's elements are checked by the
 * coalesced reply, byte for byte).
 */
size_t fz_parse_all(const struct proto_ops *ops, bool rsp, bool want_elems,
                    const struct fz_pools *pools, const uint8_t *data, size_t n,
                    const uint8_t reads[3], struct msg **out, size_t max, enum fz_status *status,
                    uint64_t *left);

/* Where p[0..len) lies in m (as an offset), if it lies inside one of m's spans. */
bool fz_offset_in(const struct msg *m, const uint8_t *p, uint32_t len, uint64_t *off);

/* A request with a tail (its bytes and the tail's) parsed again from a fresh state: exactly two
 * msgs, the first the same command, length and tail as m; out[] is the caller's to put. */
void fz_reparse_tail(const struct fz_feed *f, const struct msg *m, struct msg *out[2]);

/* The checks of a memcached binary-protocol request (b: its bytes) and of a reply parsed with
 * MC_RSP_BIN (fuzz_bin.c). */
void fz_check_bin_req(const struct fz_feed *f, const struct msg *m, const uint8_t *b);
void fz_check_bin_rsp(const struct fz_feed *f, const struct msg *m, const uint8_t *b);

/* A msg's bytes, copied into buf (replacing what it held; a NUL follows them); returns buf->p. */
uint8_t *fz_msg_bytes(const struct msg *m, struct fz_buf *buf);

/* A small deterministic PRNG (xorshift64*), seeded from the input. */
uint64_t fz_rand(uint64_t *state);
uint64_t fz_seed(const uint8_t *data, size_t n);

/*
 * A whole protocol target: the header, then the stream through a feed of ops (requests or
 * replies); each complete request with a CMD_F_FRAG_* command and >= 2 keys is split with
 * fragment(), every fragment is checked by parsing it again, each gets a fake reply (from a PRNG
 * seeded with the input) and coalesce() builds the client's reply, which must parse as one reply.
 * No mbuf or msg is left live at the end.
 */
int fz_run_proto(const struct proto_ops *ops, bool rsp, const uint8_t *data, size_t size);

#endif
