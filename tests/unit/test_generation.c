/*
 * test_generation.c - unit tests of what a reload builds on: a new runtime keeps the health of the
 * servers that stay (runtime_create with prev), backend identity (runtime_same_backend), counter
 * blocks found by name across generations (stats_bind), and the manage port's reload hand-off
 * (reload_req) across two threads.
 *
 * Threads: the test's, plus one answering thread in the reload_req test.
 */
#include "config.h"
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf/conf.h"
#include "core/route.h"
#include "core/runtime.h"
#include "core/runtime_stats.h"
#include "stats/stats.h"
#include "thread/reload_req.h"

#define NWORKERS 2

static const char gen1_yaml[] =
    "alpha:\n"
    "  listen: 127.0.0.1:22121\n"
    "  redis: true\n"
    "  auto_eject_hosts: true\n"
    "  server_failure_limit: 1\n"
    "  servers:\n"
    "   - 127.0.0.1:6379:1 s1\n"
    "   - 127.0.0.1:6380:1 s2\n"
    "beta:\n"
    "  listen: 127.0.0.1:22122\n"
    "  servers:\n"
    "   - 127.0.0.1:11211:1 m1\n";

/* alpha: s2 moved to another port, s3 added, hash changed; beta gone; gamma new */
static const char gen2_yaml[] =
    "alpha:\n"
    "  listen: 127.0.0.1:22121\n"
    "  redis: true\n"
    "  hash: murmur\n"
    "  auto_eject_hosts: true\n"
    "  server_failure_limit: 1\n"
    "  servers:\n"
    "   - 127.0.0.1:6379:1 s1\n"
    "   - 127.0.0.1:6390:1 s2\n"
    "   - 127.0.0.1:6381:1 s3\n"
    "gamma:\n"
    "  listen: 127.0.0.1:22123\n"
    "  servers:\n"
    "   - 127.0.0.1:11211:1 m1\n";

static struct runtime *load(const char *yaml, const struct runtime *prev)
{
    struct conf *c = conf_load_string(yaml, strlen(yaml), "test.yml", NULL, NULL);
    assert_non_null(c);
    struct runtime *rt = runtime_create(c, prev, NWORKERS);
    conf_unref(c); /* the runtime holds its own reference */
    assert_non_null(rt);
    return rt;
}

static void test_generation_and_health(void **state)
{
    (void)state;
    struct runtime *g1 = load(gen1_yaml, NULL);
    assert_int_equal(g1->generation, 1);
    assert_true(g1->loaded_at_usec > 0);
    struct pool_shared *a1 = runtime_pool_find(g1, "alpha");
    assert_non_null(a1);
    assert_null(runtime_pool_find(g1, "gamma"));
    /* eject s1 and s2 (failure limit 1) */
    assert_true(pool_server_failed(a1, 0, 1000));
    assert_true(pool_server_failed(a1, 1, 1000));
    assert_true(pool_server_ejected(a1, 0));

    struct runtime *g2 = load(gen2_yaml, g1);
    assert_int_equal(g2->generation, 2);
    struct pool_shared *a2 = runtime_pool_find(g2, "alpha");
    assert_non_null(a2);
    assert_true(pool_server_ejected(a2, 0));   /* s1 stays: still ejected */
    assert_false(pool_server_ejected(a2, 1));  /* s2 has a new address: a new server */
    assert_false(pool_server_ejected(a2, 2));  /* s3 is new */
    /* the new route skips s1: every key lands on s2 or s3 */
    for (int i = 0; i < 200; i++) {
        char key[16];
        int n = snprintf(key, sizeof(key), "k%d", i);
        uint32_t s = pool_route(a2, (const uint8_t *)key, (size_t)n);
        assert_true(s == 1 || s == 2);
    }
    /* the old generation lives on while referenced */
    struct runtime *held = runtime_get(g1);
    runtime_put(g1);
    assert_true(pool_server_ejected(a1, 0));
    runtime_put(held);
    runtime_put(g2);
}

static void test_same_backend(void **state)
{
    (void)state;
    struct runtime *g1 = load(gen1_yaml, NULL);
    struct runtime *g2 = load(gen2_yaml, g1);
    const struct conf_pool *a1 = runtime_pool_find(g1, "alpha")->cp, *a2 = runtime_pool_find(g2, "alpha")->cp;
    const struct conf_pool *b1 = runtime_pool_find(g1, "beta")->cp, *c2 = runtime_pool_find(g2, "gamma")->cp;
    /* a different hash does not matter to a connection; a new address or pool does */
    assert_true(runtime_same_backend(a1, &a1->servers[0], a2, &a2->servers[0]));
    assert_false(runtime_same_backend(a1, &a1->servers[1], a2, &a2->servers[1]));
    assert_false(runtime_same_backend(a1, &a1->servers[0], a2, &a2->servers[2]));
    assert_false(runtime_same_backend(b1, &b1->servers[0], c2, &c2->servers[0])); /* same address */
    runtime_put(g2);
    runtime_put(g1);

    static const char auth_yaml[] =
        "alpha:\n  listen: 127.0.0.1:22121\n  redis: true\n  redis_auth: secret\n"
        "  servers:\n   - 127.0.0.1:6379:1 s1\n";
    static const char db_yaml[] =
        "alpha:\n  listen: 127.0.0.1:22121\n  redis: true\n  redis_db: 3\n"
        "  servers:\n   - 127.0.0.1:6379:1 s1\n";
    static const char conns_yaml[] =
        "alpha:\n  listen: 127.0.0.1:22121\n  redis: true\n  server_connections: 2\n"
        "  servers:\n   - 127.0.0.1:6379:1 s1\n";
    static const char plain_yaml[] =
        "alpha:\n  listen: 127.0.0.1:22122\n  redis: true\n  timeout: 100\n"
        "  servers:\n   - 127.0.0.1:6379:1 s1\n";
    const char *variants[] = { auth_yaml, db_yaml, conns_yaml };
    struct runtime *plain = load(plain_yaml, NULL);
    const struct conf_pool *pp = plain->pools[0].cp;
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        struct runtime *v = load(variants[i], NULL);
        const struct conf_pool *vp = v->pools[0].cp;
        assert_false(runtime_same_backend(pp, &pp->servers[0], vp, &vp->servers[0]));
        assert_true(runtime_same_backend(vp, &vp->servers[0], vp, &vp->servers[0]));
        runtime_put(v);
    }
    runtime_put(plain);
}

static void test_stats_blocks_by_name(void **state)
{
    (void)state;
    struct stats_worker *w[NWORKERS];
    for (size_t i = 0; i < NWORKERS; i++) {
        w[i] = stats_worker_create();
        assert_non_null(w[i]);
    }
    struct runtime *g1 = load(gen1_yaml, NULL);
    assert_int_equal(stats_bind(g1, w, NWORKERS), 0);
    struct pool_shared *a1 = runtime_pool_find(g1, "alpha");
    STATS_POOL_ADD(a1->wstats[1], client_connections, 3);
    STATS_SERVER_ADD(a1->wservers[1 * 2 + 0], requests, 7);
    assert_ptr_not_equal(a1->wstats[0], a1->wstats[1]); /* one block per worker */

    struct runtime *g2 = load(gen2_yaml, g1);
    assert_int_equal(stats_bind(g2, w, NWORKERS), 0);
    struct pool_shared *a2 = runtime_pool_find(g2, "alpha");
    /* alpha and its s1 and s2 keep their blocks (so their counters); s3 is new and zero */
    assert_ptr_equal(a2->wstats[1], a1->wstats[1]);
    assert_ptr_equal(a2->wservers[1 * 3 + 0], a1->wservers[1 * 2 + 0]);
    assert_ptr_equal(a2->wservers[1 * 3 + 1], a1->wservers[1 * 2 + 1]);
    assert_int_equal(stats_ctr_get(&a2->wstats[1]->f[STATS_POOL_client_connections]), 3);
    assert_int_equal(stats_ctr_get(&a2->wservers[1 * 3 + 0]->f[STATS_SERVER_requests]), 7);
    assert_int_equal(stats_ctr_get(&a2->wservers[1 * 3 + 2]->f[STATS_SERVER_requests]), 0);
    assert_string_equal(a2->wservers[1 * 3 + 2]->name, "s3");
    /* gamma's m1 is not beta's m1 */
    struct pool_shared *b1 = runtime_pool_find(g1, "beta"), *c2 = runtime_pool_find(g2, "gamma");
    assert_ptr_not_equal(c2->wservers[0], b1->wservers[0]);
    assert_string_equal(c2->wstats[0]->name, "gamma");
    /* binding the same generation again adds nothing */
    struct runtime *g3 = load(gen2_yaml, g2);
    assert_int_equal(stats_bind(g3, w, NWORKERS), 0);
    assert_ptr_equal(runtime_pool_find(g3, "gamma")->wstats[0], c2->wstats[0]);
    runtime_put(g3);
    runtime_put(g2);
    runtime_put(g1);
    for (size_t i = 0; i < NWORKERS; i++) stats_worker_destroy(w[i]);
}

static void *answer_later(void *arg)
{
    usleep(50 * 1000);
    reload_req_answer(arg, "OK generation 9");
    reload_req_put(arg);
    return NULL;
}

static void test_reload_req(void **state)
{
    (void)state;
    atomic_bool stop;
    atomic_init(&stop, false);
    char out[64];
    /* answered from another thread while waiting */
    struct reload_req *r = reload_req_create();
    assert_non_null(r);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, answer_later, r), 0);
    assert_true(reload_req_wait(r, 5000, &stop, out, sizeof(out)));
    assert_string_equal(out, "OK generation 9");
    reload_req_put(r);
    pthread_join(t, NULL);
    /* no answer: gives up after the timeout, or at once when stopping; answering later is safe */
    r = reload_req_create();
    assert_false(reload_req_wait(r, 200, &stop, out, sizeof(out)));
    atomic_store(&stop, true);
    assert_false(reload_req_wait(r, 60000, &stop, out, sizeof(out)));
    reload_req_put(r);
    reload_req_answer(r, "late");
    reload_req_put(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generation_and_health),
        cmocka_unit_test(test_same_backend),
        cmocka_unit_test(test_stats_blocks_by_name),
        cmocka_unit_test(test_reload_req),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
