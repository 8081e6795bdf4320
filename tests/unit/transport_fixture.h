/*
 * transport_fixture.h - a transport of the tests (net/transport.h) that does what a TLS one does
 * to the core, on a protocol of its own, so that the core's generic machinery for it runs:
 *
 * - a handshake of round trips: the side that connects (server connections) writes "HSK1" and
 *   waits for "HSK2"; the side that accepts (client connections) waits for "HSK1" and answers
 *   "HSK2". Each step that cannot go on returns -EAGAIN with `want` set, and one step of each side
 *   wants WRITE although it could go on (as OpenSSL may): the connecting side's first, the
 *   accepting side's once "HSK1" is read. Other bytes fail it (-EPROTO, why() says what came);
 * - bytes held: a read takes bytes from the socket into a private buffer (all it has, or `take`
 *   at most, as a TLS read takes a record) and hands out `hold` at most; pending() says it holds
 *   some;
 * - reads that want WRITE: every Nth read that has bytes to hand out takes all the socket has and
 *   returns -EAGAIN wanting the socket writable instead; what it holds is handed out only by the
 *   retry (pending() is false meanwhile: the socket signals nothing, only a write event can
 *   resume it, as a TLS record whose processing must first write);
 * - writes that want READ: every Nth writev that finds bytes to read on the socket (FIONREAD)
 *   writes nothing and wants the socket readable; its retry takes those bytes into the buffer
 *   (protocol bytes: handed out later, in order) before it writes;
 * - a write that waits for the peer (a TLS renegotiation): switched on for a side, the next writev
 *   of one of its connections writes nothing and wants READ until the peer's "RNEG" came (the
 *   transport's own message, not handed out), however often it is called meanwhile.
 *
 * Each side of a pool has a struct tt_side: the context the pool is given, the behaviours the test
 * switches, and counts of what its connections did (a test shows that its path ran).
 *
 * Threads: the test's only.
 */
#ifndef NC_TEST_TRANSPORT_FIXTURE_H
#define NC_TEST_TRANSPORT_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "net/transport.h"

#define TT_WHY_MAX 96

struct tt_side {
    struct transport_ctx ctx;  /* the pool's: ops tt_ops, impl this side */
    bool connects;             /* writes HSK1 (the server connections' side) */
    /* behaviours (0: off) */
    size_t take;               /* bytes a read takes from the socket at most (0: all it has) */
    size_t hold;               /* bytes a read hands out at most (0: as many as asked) */
    unsigned read_stall_every; /* every Nth read with bytes to hand out wants WRITE first */
    unsigned write_stall_every; /* every Nth writev finding bytes to read wants READ first */
    bool renegotiate;          /* the next writev waits for the peer's RNEG (then off again) */
    /* what its connections did */
    unsigned opened, closed;
    unsigned handshakes;       /* done */
    unsigned handshake_fails;
    unsigned eager_wants;      /* handshake steps that wanted WRITE although they could go on */
    unsigned held_reads;       /* reads that left bytes held (pending) */
    unsigned read_stalls, write_stalls;
    unsigned reneg_waits;      /* writevs that found no RNEG yet */
    unsigned why_asked;        /* why() called with a failure to tell */
    char why[TT_WHY_MAX];      /* the last failure's words */
};

/* A side with no behaviour switched on; connects: the server connections' side. */
void tt_side_init(struct tt_side *s, bool connects);
/* Connections of the side whose state is not freed yet (opened and not closed). */
unsigned tt_side_live(const struct tt_side *s);

#endif
