/*
 * test_memcache_oom.c - memcache_proto under allocation failures: malloc, calloc and realloc are
 * wrapped (-Wl,--wrap, see memcache.mk) to fail at the k-th call for every k, through fragment,
 * coalesce and parse_req. Each must fail with -ENOMEM / PARSE_ERROR "out of memory" leaving
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

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static long allocs_before_failure = -1; /* -1: never fail */

static bool should_fail(void)
{
    if (allocs_before_failure < 0) return false;
    if (allocs_before_failure == 0) return true;
    allocs_before_failure--;
    return false;
}

void *__wrap_malloc(size_t n)
{
    return should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : __real_realloc(p, n);
}

struct ctx {
    struct mbuf_pool mp;
    struct msg_pool pp;
};

/* Parses one whole message from s into a new msg (no failures injected). */
static struct msg *parse(struct ctx *c, const char *s, bool rsp)
{
    struct parse_state ps;
    memset(&ps, 0, sizeof(ps));
    ps.want_elems = rsp;
    parse_state_reset(&ps);
    struct mbuf *mb = mbuf_get(&c->mp);
    size_t n = strlen(s), consumed = 0;
    assert_true(n <= mb->cap);
    memcpy(mb->data, s, n);
    mb->len = (uint32_t)n;
    struct msg *m = msg_get(&c->pp);
    int rc = rsp ? memcache_proto.parse_rsp(&ps, m, mb->data, n, &consumed)
                 : memcache_proto.parse_req(&ps, m, mb->data, n, &consumed);
    assert_int_equal(rc, PARSE_DONE);
    assert_int_equal(consumed, n);
    assert_int_equal(msg_append(m, mb, 0, (uint32_t)n), 0);
    mbuf_unref(mb);
    parse_state_free(&ps);
    return m;
}

static const uint32_t servers[] = { 0, 1, 2, 0, 1, 2, 2, 1, 0 };
static const char request[] = "get a b c d e f g h i\r\n";

static void test_fragment_oom(void **state)
{
    (void)state;
    struct ctx c;
    mbuf_pool_init(&c.mp, 512, 0);
    msg_pool_init(&c.pp, 0); /* every msg_get allocates */
    int rc = -ENOMEM;
    long k;
    for (k = 0; rc != 0; k++) {
        struct msg *req = parse(&c, request, false);
        allocs_before_failure = k;
        rc = memcache_proto.fragment(req, servers, req->nkeys, &c.pp);
        allocs_before_failure = -1;
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
    msg_pool_deinit(&c.pp);
    mbuf_pool_deinit(&c.mp);
}

static void test_coalesce_oom(void **state)
{
    (void)state;
    struct ctx c;
    mbuf_pool_init(&c.mp, 512, 0);
    msg_pool_init(&c.pp, 0);
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
        allocs_before_failure = k;
        rc = memcache_proto.coalesce(NULL, req, rsp);
        allocs_before_failure = -1;
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
    msg_pool_deinit(&c.pp);
    mbuf_pool_deinit(&c.mp);
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
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct msg_pool pp;
        msg_pool_init(&pp, 0);
        const uint8_t *buf = (const uint8_t *)cases[i].text;
        size_t n = strlen(cases[i].text);
        int rc = PARSE_ERROR;
        for (long k = 0; rc != PARSE_DONE; k++) {
            struct parse_state ps;
            memset(&ps, 0, sizeof(ps));
            ps.want_elems = true;
            parse_state_reset(&ps);
            struct msg *m = msg_get(&pp);
            size_t consumed = 0;
            allocs_before_failure = k;
            rc = cases[i].rsp ? memcache_proto.parse_rsp(&ps, m, buf, n, &consumed)
                              : memcache_proto.parse_req(&ps, m, buf, n, &consumed);
            allocs_before_failure = -1;
            if (rc == PARSE_ERROR) {
                assert_string_equal(ps.error, "out of memory");
            } else {
                assert_int_equal(rc, PARSE_DONE);
                assert_int_equal(consumed, n);
            }
            parse_state_free(&ps);
            msg_put(&pp, m);
        }
        assert_int_equal(pp.nlive, 0);
        msg_pool_deinit(&pp);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fragment_oom),
        cmocka_unit_test(test_coalesce_oom),
        cmocka_unit_test(test_parse_oom),
    };
    return cmocka_run_group_tests_name("memcache_oom", tests, NULL, NULL);
}
