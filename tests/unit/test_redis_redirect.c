/*
 * test_redis_redirect.c - unit tests of Redis Cluster's redirections in the redis reply parser
 * (proto/redis_rsp.c marks -MOVED, -ASK, -TRYAGAIN at the top level only, split anywhere) and of
 * where they point (proto/redis_cluster.c: host and port, IPv6 in brackets, bad targets refused).
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/util.h"
#include "proto/proto.h"
#include "proto/redis.h"
#include "proto_drv.h"

#define BIG_MBUF 16384
#define SMALL_MBUF 512

/* Redis Cluster's redirections: the kind the parser marks, and where redirect_target points. */
struct redirect_vector {
    const char *in;
    uint8_t kind;
    const char *host; /* NULL: no target */
    uint16_t port;
};

static const struct redirect_vector redirect_vectors[] = {
    { "-MOVED 3999 127.0.0.1:6381\r\n", MSG_REDIRECT_MOVED, "127.0.0.1", 6381 },
    { "-ASK 3999 10.0.0.2:7000\r\n", MSG_REDIRECT_ASK, "10.0.0.2", 7000 },
    { "-MOVED 1 [::1]:7001\r\n", MSG_REDIRECT_MOVED, "::1", 7001 },
    { "-MOVED 1 redis-7.example.internal:30001\r\n", MSG_REDIRECT_MOVED, "redis-7.example.internal", 30001 },
    { "-TRYAGAIN Multiple keys request during rehashing of slot\r\n", MSG_REDIRECT_TRYAGAIN, NULL, 0 },
    { "-MOVED 3999\r\n", MSG_REDIRECT_MOVED, NULL, 0 },
    { "-MOVED 3999 127.0.0.1:0\r\n", MSG_REDIRECT_MOVED, NULL, 0 },
    { "-MOVED 3999 127.0.0.1:70000\r\n", MSG_REDIRECT_MOVED, NULL, 0 },
    { "-MOVED 3999 :6379\r\n", MSG_REDIRECT_MOVED, NULL, 0 },
    { "-MOVEDX 3999 127.0.0.1:6381\r\n", MSG_REDIRECT_NONE, NULL, 0 },
    { "-ASKING\r\n", MSG_REDIRECT_NONE, NULL, 0 },
    { "-CLUSTERDOWN The cluster is down\r\n", MSG_REDIRECT_NONE, NULL, 0 },
    { "-ERR MOVED 1 127.0.0.1:1\r\n", MSG_REDIRECT_NONE, NULL, 0 },
    { "*1\r\n-MOVED 1 127.0.0.1:1\r\n", MSG_REDIRECT_NONE, NULL, 0 }, /* an element, not the reply */
};

static void test_rsp_redirects(void **state)
{
    (void)state;
    for (size_t i = 0; i < NC_ARRAY_LEN(redirect_vectors); i++) {
        const struct redirect_vector *v = &redirect_vectors[i];
        size_t len = strlen(v->in);
        for (size_t cut = 0; cut <= len; cut++) {
            struct tenv e;
            struct drv d;
            drv_open(&d, &e, cut % 2 ? SMALL_MBUF : BIG_MBUF, &redis_proto, true, false);
            drv_feed2(&d, v->in, len, cut);
            assert_false(d.failed);
            assert_int_equal(d.nout, 1);
            const struct msg *m = d.out[0];
            if (m->rsp_redirect != v->kind) print_error("vector %zu (cut %zu): %s", i, cut, v->in);
            assert_int_equal(m->rsp_redirect, v->kind);
            char host[64];
            uint16_t port = 0;
            int rc = redis_proto.redirect_target(m, host, sizeof(host), &port);
            if (v->kind != MSG_REDIRECT_NONE && v->host != NULL) {
                assert_int_equal(rc, 0);
                assert_string_equal(host, v->host);
                assert_int_equal(port, v->port);
            } else if (v->kind != MSG_REDIRECT_NONE) {
                assert_int_equal(rc, -1);
            }
            drv_close(&d);
        }
    }
    char tiny[4];
    struct tenv e;
    struct drv d;
    uint16_t port;
    drv_open(&d, &e, BIG_MBUF, &redis_proto, true, false);
    drv_feed(&d, redirect_vectors[0].in, strlen(redirect_vectors[0].in), 0);
    assert_int_equal(redis_proto.redirect_target(d.out[0], tiny, sizeof(tiny), &port), -1); /* no room */
    drv_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rsp_redirects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
