/*
 * test_memcache_oom.c - memcache_proto under allocation failures: malloc, calloc and realloc are
 * wrapped (-Wl,--wrap: oom_alloc.h) to fail at the k-th call for every k, through fragment,
 * coalesce, parse_req (meta commands' decoded keys too), the reader's edits (msg_finish) and mn's
 * reply. Each must fail with -ENOMEM / PARSE_ERROR "out of memory" leaving
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
#include "proto/proto.h"
#include "oom_alloc.h"

/* A whole message of text (no failure). */
static struct msg *parse(struct oom_pools *c, const char *s, bool rsp)
{
    return oom_parse(c, &memcache_proto, s, strlen(s), rsp);
}

static const uint32_t servers[] = { 0, 1, 2, 0, 1, 2, 2, 1, 0 };
static const char request[] = "get a b c d e f g h i\r\n";

static void test_fragment_oom(void **state)
{
    (void)state;
    struct oom_pools c;
    oom_pools_init(&c, 512); /* every msg_get allocates */
    int rc = -ENOMEM;
    long k;
    for (k = 0; rc != 0; k++) {
        struct msg *req = parse(&c, request, false);
        oom_fail_after(k);
        rc = memcache_proto.fragment(req, servers, req->nkeys, &c.pp);
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
    assert_true(k > 5);
    oom_pools_deinit(&c);
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
        for (uint32_t j = 0; j < req->nfrags; j++) {
            msg_put(&c.pp, req->frags[j]->peer);
            msg_put(&c.pp, req->frags[j]);
        }
        msg_put(&c.pp, req);
        msg_put(&c.pp, rsp);
        assert_int_equal(c.pp.nlive, 0);
        assert_int_equal(c.mp.nlive, 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fragment_oom),
        cmocka_unit_test(test_coalesce_oom),
        cmocka_unit_test(test_parse_oom),
        cmocka_unit_test(test_own_oom),
    };
    return cmocka_run_group_tests_name("memcache_oom", tests, NULL, NULL);
}
