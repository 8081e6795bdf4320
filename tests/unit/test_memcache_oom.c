/*
 * test_memcache_oom.c - memcache_proto under allocation failures: malloc, calloc and realloc are
 * wrapped (-Wl,--wrap: oom_alloc.h) to fail at the k-th call for every k, through fragment,
 * coalesce, parse_req (meta commands' decoded keys too), the reader's edits (msg_finish) and mn's
 * reply, and the binary protocol's: a keyed request, a quiet one's NOOP tail, stat and flush over
 * every server, the replies local() writes (noop, quit, refusals). Each must fail with -ENOMEM / PARSE_ERROR "out of memory" leaving
 * nothing allocated (mbuf and msg pools back to their counts; ASan checks the rest).
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "msg/mbuf.h"
#include "msg/msg.h"
#include "proto/memcache_bin.h"
#include "proto/proto.h"
#include "bin_pkt.h"
#include "oom_alloc.h"

/* A whole message of text (no failure). */
static struct msg *parse(struct oom_pools *c, const char *s, bool rsp)
{
    return oom_parse(c, &memcache_proto, s, strlen(s), rsp);
}

static const uint32_t servers[] = { 0, 1, 2, 0, 1, 2, 2, 1, 0 };
static const char request[] = "get a b c d e f g h i\r\n";


/* Puts a coalesced request, its fragments, their replies and its reply: nothing is left live. */
static void put_coalesced(struct oom_pools *c, struct msg *req, struct msg *rsp)
{
    for (uint32_t j = 0; j < req->nfrags; j++) {
        msg_put(&c->pp, req->frags[j]->peer);
        msg_put(&c->pp, req->frags[j]);
    }
    msg_put(&c->pp, req);
    msg_put(&c->pp, rsp);
    assert_int_equal(c->pp.nlive, 0);
    assert_int_equal(c->mp.nlive, 0);
}

/* fragment() of the request s[0..n) over where[0..nwhere) with the k-th allocation and those
 * after it failing, for every k: -ENOMEM with nothing left, or 3 fragments (after more than
 * min_k allocations). */
static void fragment_oom(const char *s, size_t n, const uint32_t *where, uint32_t nwhere, long min_k)
{
    struct oom_pools c;
    oom_pools_init(&c, 512); /* every msg_get allocates */
    int rc = -ENOMEM;
    long k;
    for (k = 0; rc != 0; k++) {
        struct msg *req = oom_parse(&c, &memcache_proto, s, n, false);
        oom_fail_after(k);
        rc = memcache_proto.fragment(req, where, nwhere, &c.pp);
        oom_stop();
        if (rc == 0) {
            assert_int_equal(req->nfrags, 3);
            for (uint32_t j = 0; j < req->nfrags; j++) msg_put(&c.pp, req->frags[j]);
        } else {
            assert_int_equal(rc, -ENOMEM);
            assert_null(req->frags);
            assert_null(req->key_frag);
            assert_int_equal(req->nfrags, 0);
            assert_int_equal(c.pp.nlive, 1);
        }
        msg_put(&c.pp, req);
        assert_int_equal(c.pp.nlive, 0);
        assert_int_equal(c.mp.nlive, 0);
    }
    assert_true(k > min_k);
    oom_pools_deinit(&c);
}

static void test_fragment_oom(void **state)
{
    (void)state;
    fragment_oom(request, strlen(request), servers, 9, 5);
}

static void test_coalesce_oom(void **state)
{
    (void)state;
    struct oom_pools c;
    oom_pools_init(&c, 512);
    static const char *const replies[] = {
        "VALUE a 0 1\r\nA\r\nVALUE i 0 1\r\nI\r\nEND\r\n",
        "VALUE b 0 1\r\nB\r\nVALUE h 0 1\r\nH\r\nEND\r\n",
        "VALUE f 0 1\r\nF\r\nEND\r\n",
    };
    int rc = -ENOMEM;
    long k;
    for (k = 0; rc != 0; k++) {
        struct msg *req = parse(&c, request, false);
        assert_int_equal(memcache_proto.fragment(req, servers, req->nkeys, &c.pp), 0);
        for (uint32_t j = 0; j < req->nfrags; j++) req->frags[j]->peer = parse(&c, replies[j], true);
        struct msg *rsp = msg_get(&c.pp);
        oom_fail_after(k);
        rc = memcache_proto.coalesce(NULL, req, rsp);
        oom_stop();
        if (rc == 0) {
            static const char want[] = "VALUE a 0 1\r\nA\r\nVALUE b 0 1\r\nB\r\nVALUE f 0 1\r\nF\r\n"
                                       "VALUE h 0 1\r\nH\r\nVALUE i 0 1\r\nI\r\nEND\r\n";
            char got[sizeof(want)] = { 0 };
            assert_int_equal(rsp->len, sizeof(want) - 1);
            msg_copy_out(rsp, 0, got, rsp->len);
            assert_string_equal(got, want);
        } else {
            assert_int_equal(rc, -ENOMEM);
        }
        put_coalesced(&c, req, rsp);
    }
    assert_true(k > 2);
    oom_pools_deinit(&c);
}

/* A key or an element that cannot be recorded stops the stream with "out of memory". */
static void test_parse_oom(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        bool rsp;
    } cases[] = {
        { "get a b c d e f g h i\r\n", false },
        { "VALUE a 0 1\r\nA\r\nVALUE b 0 1\r\nB\r\nEND\r\n", true },
        { "mg Zm9v b v q\r\n", false }, /* a meta key decoded into the msg's own chunk */
        { "ms Zm9v 2 b q\r\nhi\r\n", false },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = PARSE_ERROR;
        for (long k = 0; rc != PARSE_DONE; k++) rc = oom_parse_at(&memcache_proto, cases[i].text, cases[i].rsp, k, NULL);
    }
}

/* The edits the reader applies (a quiet meta request's terminator, from the msg's own chunk) and
 * mn's reply: -ENOMEM with nothing changed, then fine once memory comes back. */
static void test_own_oom(void **state)
{
    (void)state;
    struct oom_pools c;
    oom_pools_init(&c, 512);
    struct msg *req = parse(&c, "mg k v q\r\n", false);
    assert_int_equal(req->tail_len, 4);
    uint64_t len = req->len;
    oom_fail_after(0);
    assert_int_equal(msg_finish(req), -ENOMEM);
    oom_stop();
    assert_int_equal(req->len, len);
    assert_int_equal(msg_finish(req), 0);
    assert_int_equal(req->len, len + 4);
    struct msg *mn = parse(&c, "mn\r\n", false), *rsp = msg_get(&c.pp);
    struct proto_session s;
    memset(&s, 0, sizeof(s));
    oom_fail_after(0);
    assert_int_equal(memcache_proto.local(&s, NULL, mn, rsp), -ENOMEM);
    oom_stop();
    assert_int_equal(rsp->len, 0);
    assert_int_equal(memcache_proto.local(&s, NULL, mn, rsp), PROTO_ANSWERED);
    assert_int_equal(rsp->len, 4);
    msg_put(&c.pp, rsp);
    msg_put(&c.pp, mn);
    msg_put(&c.pp, req);
    oom_pools_deinit(&c);
}

/* ---- the binary protocol ---- */

static struct msg *parse_bin(struct oom_pools *c, const struct bpk *b, bool rsp)
{
    return oom_parse_opts(c, &memcache_proto, (const char *)b->p, b->n, rsp, rsp ? MC_RSP_BIN : 0);
}

/* stat and flushq to 3 servers. */
static void test_bin_fragment_oom(void **state)
{
    (void)state;
    static const uint8_t opcodes[] = { 0x10, 0x18 };
    static const uint32_t where[3] = { 4, 5, 6 };
    for (size_t i = 0; i < sizeof(opcodes); i++) {
        struct bpk b = { 0 };
        bpk_req(&b, opcodes[i], "", 0, 0, 1);
        fragment_oom((const char *)b.p, b.n, where, 3, 3);
        bpk_free(&b);
    }
}

/* The packets of a coalesced reply: how many, the last one's opcode and key length. */
static int bin_packets(const struct msg *rsp, uint8_t *last_op, uint32_t *last_key)
{
    uint8_t h[24];
    int n = 0;
    for (uint64_t at = 0; at < rsp->len; n++) {
        assert_int_equal(msg_copy_out(rsp, at, h, sizeof(h)), sizeof(h));
        assert_int_equal(h[0], 0x81);
        *last_op = h[1];
        *last_key = bpk_u16(h + 2);
        at += 24 + bpk_u32(h + 8);
        assert_true(at <= rsp->len);
    }
    return n;
}

/* stat (two servers answered, one failed) and flushq (a server's error, re-headed): -ENOMEM, or
 * the whole reply. */
static void test_bin_coalesce_oom(void **state)
{
    (void)state;
    static const uint32_t where[3] = { 0, 1, 2 };
    struct bpk req_b[2] = { { 0 } }, rsp_b[2][3] = { { { 0 } } };
    bpk_req(&req_b[0], 0x10, "", 0, 0, 7);
    bpk_rsp(&rsp_b[0][0], 0x10, 0, NULL, "curr_items", "3", 7);
    bpk_rsp(&rsp_b[0][0], 0x10, 0, NULL, NULL, NULL, 7);
    bpk_rsp(&rsp_b[0][1], 0x10, 0, NULL, "get_hits", "4", 7);
    bpk_rsp(&rsp_b[0][1], 0x10, 0, NULL, NULL, NULL, 7);
    bpk_rsp(&rsp_b[0][2], 0x10, 0x0086, NULL, NULL, "Temporary failure", 7);
    bpk_req(&req_b[1], 0x18, "", 0, 0, 8);
    bpk_rsp(&rsp_b[1][0], 0x08, 0, NULL, NULL, NULL, 8);
    bpk_rsp(&rsp_b[1][1], 0x08, 0x0086, NULL, NULL, "Temporary failure", 8);
    bpk_rsp(&rsp_b[1][2], 0x08, 0, NULL, NULL, NULL, 8);
    struct proto_view v = { .pool_clients = 1 };
    for (int i = 0; i < 2; i++) {
        struct oom_pools c;
        oom_pools_init(&c, 512);
        int rc = -ENOMEM;
        long k;
        for (k = 0; rc != 0; k++) {
            struct msg *req = parse_bin(&c, &req_b[i], false);
            assert_int_equal(memcache_proto.fragment(req, where, 3, &c.pp), 0);
            for (uint32_t j = 0; j < 3; j++) req->frags[j]->peer = parse_bin(&c, &rsp_b[i][j], true);
            struct msg *rsp = msg_get(&c.pp);
            oom_fail_after(k);
            rc = memcache_proto.coalesce(&v, req, rsp);
            oom_stop();
            uint8_t op = 0;
            uint32_t key = 0;
            if (rc == 0 && i == 0) { /* 10 statistics (2 summed), the closing packet */
                assert_int_equal(bin_packets(rsp, &op, &key), 11);
                assert_int_equal(op, 0x10);
                assert_int_equal(key, 0);
            } else if (rc == 0) { /* the error, with the client's opcode */
                assert_int_equal(bin_packets(rsp, &op, &key), 1);
                assert_int_equal(op, 0x18);
                assert_int_equal(rsp->len, rsp_b[1][1].n);
            } else {
                assert_int_equal(rc, -ENOMEM);
            }
            put_coalesced(&c, req, rsp);
        }
        assert_true(k > 1);
        oom_pools_deinit(&c);
        bpk_free(&req_b[i]);
        for (int j = 0; j < 3; j++) bpk_free(&rsp_b[i][j]);
    }
}

/* A binary request's key that cannot be recorded stops the stream with "out of memory"; a quiet
 * one's NOOP tail is -ENOMEM with nothing changed, then fine. */
static void test_bin_parse_oom(void **state)
{
    (void)state;
    struct bpk b = { 0 };
    bpk_req(&b, 0x01, "key", 8, 5, 1);
    int rc = PARSE_ERROR;
    uint32_t nkeys = 0;
    for (long k = 0; rc != PARSE_DONE; k++)
        rc = oom_parse_bytes_at(&memcache_proto, (const char *)b.p, b.n, false, k, &nkeys);
    assert_int_equal(nkeys, 1);
    struct oom_pools c;
    oom_pools_init(&c, 512);
    bpk_reset(&b);
    bpk_req(&b, 0x09, "key", 0, 0, 1);
    struct msg *req = parse_bin(&c, &b, false);
    assert_int_equal(req->tail_len, 24);
    oom_fail_after(0);
    assert_int_equal(msg_finish(req), -ENOMEM);
    oom_stop();
    assert_int_equal(req->len, b.n);
    assert_int_equal(msg_finish(req), 0);
    assert_int_equal(req->len, b.n + 24);
    msg_put(&c.pp, req);
    oom_pools_deinit(&c);
    bpk_free(&b);
}

/* The replies local() writes (noop, quit, a refusal): -ENOMEM with nothing written, then fine. */
static void test_bin_local_oom(void **state)
{
    (void)state;
    struct oom_pools c;
    oom_pools_init(&c, 512);
    struct bpk b[3] = { { 0 } };
    bpk_req(&b[0], 0x0a, "", 0, 0, 1);
    bpk_req(&b[1], 0x07, "", 0, 0, 2);
    bpk_req(&b[2], 0x21, "", 0, 0, 3); /* not served: "Unknown command" */
    static const int want[3] = { PROTO_ANSWERED, PROTO_ANSWERED_CLOSE, PROTO_ANSWERED };
    static const size_t want_len[3] = { 24, 24, 24 + 15 };
    for (int i = 0; i < 3; i++) {
        struct msg *req = parse_bin(&c, &b[i], false), *rsp = msg_get(&c.pp);
        struct proto_session s;
        memset(&s, 0, sizeof(s));
        oom_fail_after(0);
        assert_int_equal(memcache_proto.local(&s, NULL, req, rsp), -ENOMEM);
        oom_stop();
        assert_int_equal(rsp->len, 0);
        assert_int_equal(memcache_proto.local(&s, NULL, req, rsp), want[i]);
        assert_int_equal(rsp->len, want_len[i]);
        msg_put(&c.pp, rsp);
        msg_put(&c.pp, req);
        bpk_free(&b[i]);
    }
    oom_pools_deinit(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fragment_oom),
        cmocka_unit_test(test_coalesce_oom),
        cmocka_unit_test(test_parse_oom),
        cmocka_unit_test(test_own_oom),
        cmocka_unit_test(test_bin_fragment_oom),
        cmocka_unit_test(test_bin_coalesce_oom),
        cmocka_unit_test(test_bin_parse_oom),
        cmocka_unit_test(test_bin_local_oom),
    };
    return cmocka_run_group_tests_name("memcache_oom", tests, NULL, NULL);
}
