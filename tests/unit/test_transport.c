/*
 * test_transport.c - unit tests of the core's generic machinery for transports that are not a
 * plain socket (core/conn.c, client.c, server.c; notes/transport.md): a handshake of several round
 * trips on client and server connections (what waits for it, its failures, its timeout), bytes
 * the transport holds that the socket never signals, reads that wait for the socket to be writable
 * and writes that wait for it to be readable (retried when that direction fires, not in every
 * round of the loop). Black-box at the loop level through core_harness, with the pool's two sides
 * given the tests' transport (transport_fixture.h): the fake servers and the test's clients speak
 * its handshake themselves, then RESP.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core_harness.h"
#include "stats/stats.h"
#include "transport_fixture.h"

#define KEY_MAX 32

/* The harness and the pool's two sides of the test transport. */
struct fx {
    struct tt_side cli;    /* the pool's clients (they accept: wait for HSK1) */
    struct tt_side srv;    /* its server connections (they connect: write HSK1) */
    struct harness *h;
};

static struct fx *fx_new(const char *pool_keys)
{
    struct fx *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    tt_side_init(&f->cli, false);
    tt_side_init(&f->srv, true);
    f->h = ch_new_with_transports(2, pool_keys, &f->cli.ctx, &f->srv.ctx);
    return f;
}

static int fx_setup(void **state)
{
    *state = fx_new(NULL);
    return 0;
}

static int fx_setup_db(void **state)
{
    *state = fx_new("  redis_db: 1\n");
    return 0;
}

static int fx_setup_timeout(void **state)
{
    *state = fx_new("  timeout: 300\n");
    return 0;
}

static int fx_teardown(void **state)
{
    struct fx *f = *state;
    ch_free(f->h);
    free(f);
    return 0;
}

/* Nothing unexpected reached anyone; the harness goes, and with it every connection: each one's
 * transport state was freed by its close. */
static void fx_end(struct fx *f)
{
    ch_assert_quiet(f->h);
    ch_free(f->h);
    f->h = NULL;
    assert_int_equal(tt_side_live(&f->cli), 0);
    assert_int_equal(tt_side_live(&f->srv), 0);
    assert_true(f->cli.opened > 0 && f->srv.opened > 0);
}

/* A new client that has done its handshake. */
static int client_hello(struct harness *h)
{
    int c = ch_client(h);
    ch_send(h, c, "HSK1");
    ch_expect(h, c, "HSK2");
    return c;
}

/* Server s answers the handshake of the proxy's next connection; returns that connection. */
static size_t server_hello(struct harness *h, size_t s)
{
    size_t k = ch_srv_expect(h, s, "HSK1");
    ch_srv_send(h, s, k, "HSK2");
    return k;
}

static uint64_t pool_counter(struct harness *h, size_t field)
{
    return stats_ctr_get(&ch_pool_stats(h)->f[field]);
}

/* A text that grows (requests and replies of many commands). */
struct text {
    char *p;
    size_t len, cap;
};

static void text_addf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_addf(struct text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p != NULL ? t->p + t->len : NULL, t->cap - t->len, fmt, ap);
        va_end(ap);
        assert_true(n >= 0);
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = (t->cap + (size_t)n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
}

static void text_get(struct text *t, const char *key)
{
    text_addf(t, "*2\r\n$3\r\nGET\r\n$%zu\r\n%s\r\n", strlen(key), key);
}

/* --- handshakes -------------------------------------------------------------------------------- */

/* A client's handshake, its hello in two pieces: nothing answered before the whole of it, then
 * HSK2; its pipelined requests go to both servers, whose connections do their own handshakes
 * first; the replies come back in order, and later round trips need no handshake. Each side's
 * steps wanted WRITE once while they could go on. */
static void test_client_handshake(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    char k0[KEY_MAX], k1[KEY_MAX];
    ch_keys_apart(h, k0, k1, KEY_MAX);
    int c = ch_client(h);
    ch_send(h, c, "HS");
    ch_assert_quiet(h);
    assert_int_equal(f->cli.handshakes, 0);
    ch_send(h, c, "K1");
    ch_expect(h, c, "HSK2");
    assert_int_equal(f->cli.handshakes, 1);

    ch_send(h, c, ch_resp(h, "SET %s v0;GET %s;GET %s", k0, k1, k0));
    size_t a = server_hello(h, 0), b = server_hello(h, 1);
    ch_srv_expect_on(h, 0, a, ch_resp(h, "SET %s v0;GET %s", k0, k0));
    ch_srv_expect_on(h, 1, b, ch_resp(h, "GET %s", k1));
    ch_srv_send(h, 1, b, "$2\r\nv1\r\n");
    ch_srv_send(h, 0, a, "+OK\r\n$2\r\nv0\r\n");
    ch_expect(h, c, "+OK\r\n$2\r\nv1\r\n$2\r\nv0\r\n");
    assert_int_equal(ch_relay(h, c, 1, ch_resp(h, "GET %s", k1), "$-1\r\n"), b);
    assert_int_equal(ch_relay(h, c, 0, ch_resp(h, "SET %s v2", k0), "+OK\r\n"), a);
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 1);
    assert_int_equal(ch_srv_nconns(h, 1), 1);
    assert_int_equal(f->srv.handshakes, 2);
    assert_int_equal(f->cli.eager_wants, 1);
    assert_int_equal(f->srv.eager_wants, 2);
    assert_int_equal(f->cli.handshake_fails + f->srv.handshake_fails, 0);
    fx_end(f);
}

/* A client whose hello is wrong is closed alone, with nothing written to it, and counted as a
 * client error; another client, before and after, is served. */
static void test_client_handshake_fails(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    char k[KEY_MAX];
    ch_key_on(h, 0, "k", k, sizeof(k));
    int c = client_hello(h);
    ch_send(h, c, ch_resp(h, "GET %s", k));
    size_t a = server_hello(h, 0);
    ch_srv_expect_on(h, 0, a, ch_resp(h, "GET %s", k));

    int bad = ch_client(h);
    ch_send(h, bad, "XXXX");
    ch_wait_closed(h, bad);
    assert_int_equal(f->cli.handshake_fails, 1);
    assert_int_equal(pool_counter(h, STATS_POOL_client_err), 1);
    if (f->cli.why_asked > 0) assert_non_null(strstr(f->cli.why, "'XXXX'")); /* a debug log line */

    ch_srv_send(h, 0, a, "$1\r\nx\r\n");
    ch_expect(h, c, "$1\r\nx\r\n");
    ch_relay(h, c, 0, ch_resp(h, "GET %s", k), "$-1\r\n");
    ch_assert_quiet(h);
    assert_int_equal(pool_counter(h, STATS_POOL_client_err), 1);
    assert_int_equal(pool_counter(h, STATS_POOL_client_connections), 1);
    fx_end(f);
}

/* A client's hello and its first requests in one write: the handshake read them all from the
 * socket, which signals nothing more; they are served once it is done. */
static void test_client_hello_with_requests(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    char k[KEY_MAX], bytes[256];
    ch_key_on(h, 1, "k", k, sizeof(k));
    int c = ch_client(h);
    snprintf(bytes, sizeof(bytes), "HSK1%s", ch_resp(h, "GET %s;GET %s", k, k));
    ch_send(h, c, bytes);
    ch_expect(h, c, "HSK2");
    size_t b = server_hello(h, 1);
    ch_srv_expect_on(h, 1, b, ch_resp(h, "GET %s;GET %s", k, k));
    ch_srv_send(h, 1, b, "$1\r\na\r\n$1\r\nb\r\n");
    ch_expect(h, c, "$1\r\na\r\n$1\r\nb\r\n");
    fx_end(f);
}

/* Requests queued while the server connection's handshake runs are written once it is done, the
 * set-up (redis_db: SELECT) first; its reply is the proxy's, the client gets its own. */
static void test_server_setup_after_handshake(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    char k[KEY_MAX];
    ch_key_on(h, 0, "k", k, sizeof(k));
    int c = client_hello(h);
    ch_send(h, c, ch_resp(h, "GET %s;SET %s v", k, k));
    size_t a = ch_srv_expect(h, 0, "HSK1");
    ch_assert_quiet(h); /* the set-up and the requests wait for the handshake */
    assert_int_equal(f->srv.eager_wants, 1);
    ch_srv_send(h, 0, a, "HSK2");
    ch_srv_expect_on(h, 0, a, ch_resp(h, "SELECT 1;GET %s;SET %s v", k, k));
    ch_srv_send(h, 0, a, "+OK\r\n$-1\r\n+OK\r\n");
    ch_expect(h, c, "$-1\r\n+OK\r\n");
    assert_int_equal(ch_relay(h, c, 0, ch_resp(h, "GET %s", k), "$1\r\nv\r\n"), a); /* no SELECT again */
    fx_end(f);
}

/* A client (*c, its handshake done) sends GET k, k a key of server s: the proxy connects to s and
 * writes its hello; returns that connection, whose handshake waits for s's answer. */
static size_t get_in_handshake(struct harness *h, size_t s, char k[KEY_MAX], int *c)
{
    ch_key_on(h, s, "k", k, KEY_MAX);
    *c = client_hello(h);
    ch_send(h, *c, ch_resp(h, "GET %s", k));
    return ch_srv_expect(h, s, "HSK1");
}

/* A server that answers the handshake wrongly fails it: the request waiting for it gets the
 * proxy's error for the failure (EPROTO's text), the connection is closed, the transport's words
 * for it were asked for (the log line); a later request connects again. */
static void test_server_handshake_fails(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    char k[KEY_MAX];
    int c;
    size_t a = get_in_handshake(h, 0, k, &c);
    ch_srv_send(h, 0, a, "NOPE");
    ch_expect(h, c, "-ERR Protocol error\r\n");
    ch_srv_wait_closed(h, 0, a);
    assert_int_equal(f->srv.handshake_fails, 1);
    assert_true(f->srv.why_asked > 0);
    assert_string_equal(f->srv.why, "expected 'HSK2', got 'NOPE'");

    ch_send(h, c, ch_resp(h, "GET %s", k));
    size_t a2 = server_hello(h, 0);
    assert_int_not_equal(a2, a);
    ch_srv_expect_on(h, 0, a2, ch_resp(h, "GET %s", k));
    ch_srv_send(h, 0, a2, "$1\r\nv\r\n");
    ch_expect(h, c, "$1\r\nv\r\n");
    assert_int_equal(f->srv.handshakes, 1);
    fx_end(f);
}

/* A server that never answers the handshake: the pool's timeout bounds it as it bounds a connect;
 * the request waiting for it gets the timeout's error and the connection is closed. */
static void test_server_handshake_times_out(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    char k[KEY_MAX];
    int c;
    size_t b = get_in_handshake(h, 1, k, &c);
    ch_expect(h, c, "-ERR Connection timed out\r\n"); /* within CH_WAIT_MS: far more than 300 ms */
    ch_srv_wait_closed(h, 1, b);
    assert_int_equal(f->srv.handshakes, 0);
    assert_int_equal(f->srv.handshake_fails, 0);
    fx_end(f);
}

/* --- bytes held by the transport ---------------------------------------------------------------- */

#define PIPELINE 50

/* 50 GETs in one write, on both servers, through transports that hand out 3 bytes a read: every
 * request reaches its server and every reply its client, in order, though the sockets signalled
 * each burst once. */
static void test_pending_pipeline(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    f->cli.hold = f->srv.hold = 3;
    struct text req = { 0 }, srv_req[2] = { { 0 }, { 0 } }, srv_rsp[2] = { { 0 }, { 0 } }, rsp = { 0 };
    char key[KEY_MAX];
    for (int i = 0; i < PIPELINE; i++) {
        size_t s = (size_t)(i % 2);
        ch_key_on(h, s, ch_text(h, "k%d-", i), key, sizeof(key));
        text_get(&req, key);
        text_get(&srv_req[s], key);
        text_addf(&srv_rsp[s], "$%d\r\nvalue%d\r\n", 5 + (i > 9) + 1, i);
        text_addf(&rsp, "$%d\r\nvalue%d\r\n", 5 + (i > 9) + 1, i);
    }
    int c = client_hello(h);
    ch_send(h, c, req.p);
    size_t k[2] = { server_hello(h, 0), server_hello(h, 1) };
    for (size_t s = 0; s < 2; s++) ch_srv_expect_on(h, s, k[s], srv_req[s].p);
    for (size_t s = 0; s < 2; s++) ch_srv_send(h, s, k[s], srv_rsp[s].p);
    ch_expect(h, c, rsp.p);
    assert_true(f->cli.held_reads > PIPELINE && f->srv.held_reads > PIPELINE);
    free(req.p);
    free(rsp.p);
    for (size_t s = 0; s < 2; s++) {
        free(srv_req[s].p);
        free(srv_rsp[s].p);
    }
    fx_end(f);
}

/* More requests than a client may have waiting for its server (client.c's back-pressure: 4096),
 * few enough that all of them fit in the socket at once (about 100 KB): the transport takes them
 * all, and holds those after the pause. */
#define DEEP 5000

/* A client that sends more requests than it may have waiting for a server: its reading pauses
 * while the transport holds the rest (the socket is drained); when a reply makes room, reading
 * resumes from what the transport holds, though the socket signals nothing. */
static void test_pending_after_pause(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    char k[KEY_MAX];
    ch_key_on(h, 0, "k", k, sizeof(k));
    f->cli.hold = 64; /* the pause comes soon after the 4096th request */
    struct text one = { 0 }, all = { 0 }, rsp = { 0 };
    static size_t rsp_at[DEEP + 1]; /* where reply i starts in rsp */
    text_get(&one, k);
    for (int i = 0; i < DEEP; i++) {
        text_get(&all, k);
        rsp_at[i] = rsp.len;
        text_addf(&rsp, "$%d\r\n%d\r\n", snprintf(NULL, 0, "%d", i), i);
    }
    rsp_at[DEEP] = rsp.len;
    int c = client_hello(h);
    ch_send(h, c, all.p);
    size_t a = server_hello(h, 0);
    /* the server answers what it got, round after round: the client's share of the connection
     * (core/fair.h) lets part of its requests go at a time, its reading pauses past 4096 queued,
     * and what the transport held is read once it resumes */
    size_t answered = 0;
    for (int round = 0; answered < DEEP; round++) {
        assert_true(round < DEEP);
        ch_settle(h); /* everything the proxy could send was sent */
        size_t got = ch_srv_unread(h, 0, a);
        assert_int_equal(got % one.len, 0);
        got /= one.len;
        assert_true(got > 0 && answered + got <= DEEP);
        if (round == 0) assert_true(got < DEEP); /* not all at once: the rest waits */
        char *reqs = strndup(all.p, got * one.len); /* the requests are all alike */
        char *replies = strndup(rsp.p + rsp_at[answered], rsp_at[answered + got] - rsp_at[answered]);
        assert_non_null(reqs);
        assert_non_null(replies);
        ch_srv_expect_on(h, 0, a, reqs);
        ch_srv_send(h, 0, a, replies);
        ch_expect(h, c, replies);
        free(reqs);
        free(replies);
        answered += got;
    }
    assert_true(f->cli.held_reads > 0); /* the transport held bytes while reading paused */
    free(one.p);
    free(all.p);
    free(rsp.p);
    fx_end(f);
}

/* --- reads that wait for writable, writes that wait for readable ---------------------------------- */

#define ROUNDS 16
#define PER_ROUND 12 /* requests a round, half on each server */

/* Round i's requests, as the client sends them (s < 0) or as server s receives them; or their
 * replies (reply). Values are unique per request and long enough that a round's bytes take many
 * reads of a few bytes. */
static void round_text(const char *keys[2], int i, int s, bool reply, struct text *t)
{
    t->len = 0;
    for (int j = 0; j < PER_ROUND; j++) {
        if (s >= 0 && j % 2 != s) continue;
        if (reply) text_addf(t, "$30\r\nvalue-of-round-%03d-request-%03d\r\n", i, j);
        else text_get(t, keys[j % 2]);
    }
}

/* A stream of rounds: round i's requests are written while the servers' replies to round i-1 are
 * written too, so that each connection has bytes to read when the proxy writes to it. Every
 * request reaches its server, every reply its client, in order. */
static void stream(struct harness *h, int c, const size_t conn[2], const char *keys[2])
{
    struct text t = { 0 };
    for (int i = 0; i <= ROUNDS; i++) {
        if (i < ROUNDS) {
            round_text(keys, i, -1, false, &t);
            ch_send(h, c, t.p);
        }
        for (int s = 0; s < 2 && i > 0; s++) {
            round_text(keys, i - 1, s, true, &t);
            ch_srv_send(h, (size_t)s, conn[s], t.p);
        }
        for (int s = 0; s < 2 && i < ROUNDS; s++) {
            round_text(keys, i, s, false, &t);
            ch_srv_expect_on(h, (size_t)s, conn[s], t.p);
        }
        if (i > 0) {
            round_text(keys, i - 1, -1, true, &t);
            ch_expect(h, c, t.p);
        }
    }
    free(t.p);
}

/* The behaviours of both sides: bytes taken and handed out per read, every how many reads and
 * writes wait for the other direction. */
static void set_waits(struct fx *f, size_t take, size_t hold, unsigned reads, unsigned writes)
{
    struct tt_side *side[2] = { &f->cli, &f->srv };
    for (int i = 0; i < 2; i++) {
        side[i]->take = take;
        side[i]->hold = hold;
        side[i]->read_stall_every = reads;
        side[i]->write_stall_every = writes;
    }
}

/* Streams of requests and replies, with reads that want the socket writable (holding what they
 * took: only the write event resumes them), then writes that want it readable (their retry takes
 * the bytes waiting, handed out later in order), then both, on client and server connections. */
static void test_cross_waits(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    char k0[KEY_MAX], k1[KEY_MAX];
    ch_keys_apart(h, k0, k1, KEY_MAX);
    const char *keys[2] = { k0, k1 };
    int c = client_hello(h);
    ch_send(h, c, ch_resp(h, "GET %s;GET %s", k0, k1));
    size_t conn[2] = { server_hello(h, 0), server_hello(h, 1) };
    for (size_t s = 0; s < 2; s++) {
        ch_srv_expect_on(h, s, conn[s], ch_resp(h, "GET %s", keys[s]));
        ch_srv_send(h, s, conn[s], "$-1\r\n");
    }
    ch_expect(h, c, "$-1\r\n$-1\r\n");

    set_waits(f, 0, 5, 3, 0);
    stream(h, c, conn, keys);
    assert_true(f->cli.read_stalls > 0 && f->srv.read_stalls > 0);

    set_waits(f, 7, 7, 0, 2);
    stream(h, c, conn, keys);
    assert_true(f->cli.write_stalls > 0 && f->srv.write_stalls > 0);

    set_waits(f, 7, 5, 4, 2);
    stream(h, c, conn, keys);
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 1);
    assert_int_equal(ch_srv_nconns(h, 1), 1);
    fx_end(f);
}

/* A write that waits for the peer (a renegotiation: the peer's message must come first) waits for
 * the socket to be readable, not retried in every round of the loop meanwhile (its own direction
 * is not armed: ch_assert_quiet), and is written once the peer's message came; on a server
 * connection, then on a client's, then on a client that no longer reads. */
static void test_write_waits_for_peer(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    char k[KEY_MAX];
    int c;
    size_t a = get_in_handshake(h, 0, k, &c);
    ch_srv_send(h, 0, a, "HSK2");
    ch_srv_expect_on(h, 0, a, ch_resp(h, "GET %s", k));
    ch_srv_send(h, 0, a, "$-1\r\n");
    ch_expect(h, c, "$-1\r\n");

    f->srv.renegotiate = true;
    ch_send(h, c, ch_resp(h, "GET %s", k));
    ch_assert_quiet(h); /* nothing reached the server */
    assert_int_equal(f->srv.reneg_waits, 1);
    ch_srv_send(h, 0, a, "RNEG");
    ch_srv_expect_on(h, 0, a, ch_resp(h, "GET %s", k));

    f->cli.renegotiate = true;
    ch_srv_send(h, 0, a, "$1\r\nv\r\n");
    ch_assert_quiet(h); /* nothing reached the client */
    assert_int_equal(f->cli.reneg_waits, 1);
    ch_send(h, c, "RNEG");
    ch_expect(h, c, "$1\r\nv\r\n");

    /* a client that no longer reads (it sent QUIT): the wait for the peer is armed all the same */
    int c2 = client_hello(h);
    ch_send(h, c2, ch_resp(h, "GET %s;QUIT", k));
    ch_srv_expect_on(h, 0, a, ch_resp(h, "GET %s", k));
    f->cli.renegotiate = true;
    ch_srv_send(h, 0, a, "$1\r\nw\r\n");
    ch_assert_quiet(h);
    ch_send(h, c2, "RNEG");
    ch_expect(h, c2, "$1\r\nw\r\n+OK\r\n");
    ch_wait_closed(h, c2);
    assert_int_equal(f->srv.reneg_waits + f->cli.reneg_waits, 3);
    fx_end(f);
}

/* --- dedicated connections ---------------------------------------------------------------------- */

/* A transaction's dedicated connection does its handshake before MULTI..EXEC is written; a
 * blocking command then takes it again (no new handshake), through transports that hold bytes and
 * make reads wait for the socket to be writable. */
static void test_dedicated_handshake(void **state)
{
    struct fx *f = *state;
    struct harness *h = f->h;
    set_waits(f, 0, 3, 4, 0);
    char k[KEY_MAX], reply[128];
    ch_key_on(h, 0, "q", k, sizeof(k));
    int c = client_hello(h);
    ch_send(h, c, ch_resp(h, "GET %s", k));
    size_t shared = server_hello(h, 0);
    ch_srv_expect_on(h, 0, shared, ch_resp(h, "GET %s", k));
    ch_srv_send(h, 0, shared, "$-1\r\n");
    ch_expect(h, c, "$-1\r\n");

    ch_send(h, c, ch_resp(h, "MULTI;SET %s v;EXEC", k));
    ch_expect(h, c, "+OK\r\n+QUEUED\r\n");
    size_t d = ch_srv_expect(h, 0, "HSK1");
    assert_int_not_equal(d, shared);
    ch_assert_quiet(h); /* the transaction waits for the handshake */
    ch_srv_send(h, 0, d, "HSK2");
    ch_srv_expect_on(h, 0, d, ch_resp(h, "MULTI;SET %s v;EXEC", k));
    ch_srv_send(h, 0, d, "+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n");
    ch_expect(h, c, "*1\r\n+OK\r\n");

    ch_send(h, c, ch_resp(h, "BLPOP %s 0;GET %s", k, k));
    ch_srv_expect_on(h, 0, d, ch_resp(h, "BLPOP %s 0", k));
    snprintf(reply, sizeof(reply), "*2\r\n$%zu\r\n%s\r\n$3\r\njob\r\n", strlen(k), k);
    ch_srv_send(h, 0, d, reply);
    ch_expect(h, c, reply);
    ch_srv_expect_on(h, 0, shared, ch_resp(h, "GET %s", k));
    ch_srv_send(h, 0, shared, "$1\r\nv\r\n");
    ch_expect(h, c, "$1\r\nv\r\n");
    assert_int_equal(ch_srv_nconns(h, 0), 2);
    assert_int_equal(f->srv.handshakes, 2);
    assert_true(f->cli.read_stalls > 0 && f->srv.read_stalls > 0);
    fx_end(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_client_handshake, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_client_handshake_fails, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_client_hello_with_requests, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_server_setup_after_handshake, fx_setup_db, fx_teardown),
        cmocka_unit_test_setup_teardown(test_server_handshake_fails, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_server_handshake_times_out, fx_setup_timeout, fx_teardown),
        cmocka_unit_test_setup_teardown(test_pending_pipeline, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_pending_after_pause, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_cross_waits, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_write_waits_for_peer, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_dedicated_handshake, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
