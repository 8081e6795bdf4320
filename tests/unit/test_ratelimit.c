/*
 * test_ratelimit.c - unit tests of the log line limiter (common/ratelimit.h): the first event of a
 * window passes, the burst bounds the lines of a window, the next window's first line reports the
 * events refused, a clock reading older than the window stays inside it, and threads hammering
 * one limiter get exactly one line per window and lose no event.
 *
 * Threads: the test's; one test runs RL_THREADS threads on one limiter.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <cmocka.h>

#include "common/ratelimit.h"

#define MS 1000u /* usec */
#define RL_THREADS 4
#define RL_EVENTS 20000

static void test_first_passes_then_suppressed(void **state)
{
    (void)state;
    struct nc_ratelimit rl;
    uint64_t sup = 99;
    nc_ratelimit_init(&rl, 1000, 1);
    assert_true(nc_ratelimit_allow(&rl, 5000 * MS, &sup));
    assert_int_equal(sup, 0);
    for (int i = 0; i < 1000; i++) assert_false(nc_ratelimit_allow(&rl, (5000 + (uint64_t)i % 999) * MS, &sup));
    /* the next window: one line, that says how many were refused */
    assert_true(nc_ratelimit_allow(&rl, 6000 * MS, &sup));
    assert_int_equal(sup, 1000);
    assert_false(nc_ratelimit_allow(&rl, 6999 * MS, &sup));
    assert_true(nc_ratelimit_allow(&rl, 60000 * MS, &sup));
    assert_int_equal(sup, 1);
}

static void test_time_zero_and_default(void **state)
{
    (void)state;
    struct nc_ratelimit rl;
    uint64_t sup;
    nc_ratelimit_init(&rl, 0, 0);
    assert_int_equal(rl.interval_ms, nc_ratelimit_default_ms);
    assert_int_equal(rl.burst, 1);
    assert_true(nc_ratelimit_allow(&rl, 0, &sup)); /* a clock at 0 still opens a window */
    assert_false(nc_ratelimit_allow(&rl, 0, &sup));
    assert_false(nc_ratelimit_allow(&rl, ((uint64_t)nc_ratelimit_default_ms - 1) * MS, &sup));
    assert_true(nc_ratelimit_allow(&rl, (uint64_t)nc_ratelimit_default_ms * MS, &sup));
    assert_int_equal(sup, 2);
}

static void test_burst(void **state)
{
    (void)state;
    struct nc_ratelimit rl;
    uint64_t sup;
    nc_ratelimit_init(&rl, 100, 3);
    for (int i = 0; i < 3; i++) {
        assert_true(nc_ratelimit_allow(&rl, 1000 * MS, &sup));
        assert_int_equal(sup, 0);
    }
    for (int i = 0; i < 5; i++) assert_false(nc_ratelimit_allow(&rl, 1050 * MS, &sup));
    assert_true(nc_ratelimit_allow(&rl, 1100 * MS, &sup));
    assert_int_equal(sup, 5);
    assert_true(nc_ratelimit_allow(&rl, 1101 * MS, &sup)); /* the same window's second line */
    assert_int_equal(sup, 0);
}

static void test_older_reading_stays_in_window(void **state)
{
    (void)state;
    struct nc_ratelimit rl;
    uint64_t sup;
    nc_ratelimit_init(&rl, 1000, 1);
    assert_true(nc_ratelimit_allow(&rl, 5000 * MS, &sup));
    /* a thread that read the clock before the window opened */
    assert_false(nc_ratelimit_allow(&rl, 4990 * MS, &sup));
    assert_true(nc_ratelimit_allow(&rl, 6000 * MS, &sup));
    assert_int_equal(sup, 1);
}

struct rl_run {
    struct nc_ratelimit *rl;
    uint64_t allowed, reported;
};

static pthread_barrier_t rl_start;

static void *rl_hammer(void *arg)
{
    struct rl_run *r = arg;
    pthread_barrier_wait(&rl_start);
    for (uint64_t i = 0; i < RL_EVENTS; i++) {
        uint64_t sup;
        /* every thread walks the same 10 windows of 100 ms */
        if (nc_ratelimit_allow(r->rl, (1000 + i * 1000 / RL_EVENTS) * MS + i % 100 * 10, &sup)) {
            r->allowed++;
            r->reported += sup;
        }
    }
    return NULL;
}

static void test_threads_one_line_per_window(void **state)
{
    (void)state;
    struct nc_ratelimit rl;
    nc_ratelimit_init(&rl, 100, 1);
    pthread_t t[RL_THREADS];
    struct rl_run runs[RL_THREADS] = { 0 };
    assert_int_equal(pthread_barrier_init(&rl_start, NULL, RL_THREADS), 0);
    for (int i = 0; i < RL_THREADS; i++) {
        runs[i].rl = &rl;
        assert_int_equal(pthread_create(&t[i], NULL, rl_hammer, &runs[i]), 0);
    }
    uint64_t allowed = 0, reported = 0;
    for (int i = 0; i < RL_THREADS; i++) {
        pthread_join(t[i], NULL);
        allowed += runs[i].allowed;
        reported += runs[i].reported;
    }
    pthread_barrier_destroy(&rl_start);
    /* times 1000..1999 ms: a window opens at most every 100 ms (a thread behind the others is
     * inside the newest window, never opens an older one): at most 10 lines; nothing is lost */
    assert_true(allowed >= 5 && allowed <= 10);
    uint64_t left = atomic_load(&rl.suppressed);
    assert_int_equal(allowed + reported + left, (uint64_t)RL_THREADS * RL_EVENTS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_passes_then_suppressed),
        cmocka_unit_test(test_time_zero_and_default),
        cmocka_unit_test(test_burst),
        cmocka_unit_test(test_older_reading_stays_in_window),
        cmocka_unit_test(test_threads_one_line_per_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
