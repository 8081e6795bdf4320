/*
 * test_stats_slowlog.c - unit tests of the slowlog rings: threshold, wrap-around, newest-first
 * merge of several rings by time, truncation of long names and keys, len/reset, and a worker that
 * finds the ring locked dropping its entry instead of waiting.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stats/stats_slowlog.h"

static struct stats_slowlog *ring_new(uint32_t worker, uint64_t threshold)
{
    struct stats_slowlog *sl = malloc(sizeof(*sl));
    assert_non_null(sl);
    assert_int_equal(stats_slowlog_init(sl), 0);
    stats_slowlog_configure(sl, worker, threshold);
    return sl;
}

static void ring_free(struct stats_slowlog *sl)
{
    stats_slowlog_deinit(sl);
    free(sl);
}

static void record(struct stats_slowlog *sl, uint64_t start, uint64_t dur, const char *cmd, const char *key)
{
    struct stats_slow_req r = {
        .duration_usec = dur,
        .pool = "p1",
        .server = "s2",
        .cmd = (const uint8_t *)cmd,
        .cmd_len = strlen(cmd),
        .key = (const uint8_t *)key,
        .key_len = key ? strlen(key) : 0,
    };
    stats_slowlog_record(sl, &r, start + dur);
}

static void test_threshold(void **state)
{
    (void)state;
    struct stats_slowlog *sl = malloc(sizeof(*sl));
    assert_non_null(sl);
    assert_int_equal(stats_slowlog_init(sl), 0); /* off until configured */
    assert_false(stats_slowlog_wants(sl, UINT64_MAX - 1));
    stats_slowlog_configure(sl, 0, 100);
    assert_false(stats_slowlog_wants(sl, 99));
    assert_true(stats_slowlog_wants(sl, 100));
    stats_slowlog_configure(sl, 0, 0);
    assert_true(stats_slowlog_wants(sl, 0)); /* -S 0: every request */
    ring_free(sl);
}

static void test_entry_fields(void **state)
{
    (void)state;
    struct stats_slowlog *sl = ring_new(3, 10);
    record(sl, 1000000, 25000, "get", "user:1");
    record(sl, 2000000, 30000, "ping", NULL);
    struct stats_slowlog *logs[] = { sl };
    struct stats_slow_entry e[4];
    assert_int_equal(stats_slowlog_collect(logs, 1, e, 4), 2);
    assert_int_equal(e[0].start_usec, 2000000);
    assert_false(e[0].has_key);
    assert_int_equal(e[1].id, 1);
    assert_int_equal(e[1].worker, 3);
    assert_string_equal(e[1].pool, "p1");
    assert_string_equal(e[1].server, "s2");
    assert_int_equal(e[1].start_usec, 1000000);
    assert_int_equal(e[1].duration_usec, 25000);
    assert_int_equal(e[1].cmd_len, 3);
    assert_memory_equal(e[1].cmd, "get", 3);
    assert_true(e[1].has_key);
    assert_int_equal(e[1].key_len, 6);
    assert_memory_equal(e[1].key, "user:1", 6);
    ring_free(sl);
}

static void test_wraps_and_keeps_newest(void **state)
{
    (void)state;
    struct stats_slowlog *sl = ring_new(0, 0);
    for (uint64_t i = 1; i <= STATS_SLOWLOG_CAP + 37; i++) record(sl, i * 10, 5, "set", "k");
    struct stats_slowlog *logs[] = { sl };
    assert_int_equal(stats_slowlog_len(logs, 1), STATS_SLOWLOG_CAP);
    struct stats_slow_entry *e = calloc(STATS_SLOWLOG_CAP, sizeof(*e));
    size_t n = stats_slowlog_collect(logs, 1, e, STATS_SLOWLOG_CAP);
    assert_int_equal(n, STATS_SLOWLOG_CAP);
    assert_int_equal(e[0].id, STATS_SLOWLOG_CAP + 37);
    assert_int_equal(e[n - 1].id, 38);
    for (size_t i = 1; i < n; i++) assert_true(e[i - 1].start_usec > e[i].start_usec);
    assert_int_equal(stats_slowlog_collect(logs, 1, e, 5), 5); /* max < held */
    assert_int_equal(e[4].id, STATS_SLOWLOG_CAP + 33);
    free(e);
    ring_free(sl);
}

static void test_merges_rings_by_time(void **state)
{
    (void)state;
    struct stats_slowlog *a = ring_new(0, 0), *b = ring_new(1, 0), *c = ring_new(2, 0);
    record(a, 100, 1, "get", "a1");
    record(b, 150, 1, "get", "b1");
    record(a, 200, 1, "get", "a2");
    record(c, 250, 1, "get", "c1");
    record(b, 300, 1, "get", "b2");
    record(c, 300, 1, "get", "c2"); /* same start: the higher worker first */
    struct stats_slowlog *logs[] = { a, b, c };
    struct stats_slow_entry e[8];
    size_t n = stats_slowlog_collect(logs, 3, e, 8);
    assert_int_equal(n, 6);
    static const char *order[] = { "c2", "b2", "c1", "a2", "b1", "a1" };
    for (size_t i = 0; i < n; i++) assert_memory_equal(e[i].key, order[i], 2);
    assert_int_equal(stats_slowlog_len(logs, 3), 6);
    stats_slowlog_reset(logs, 3);
    assert_int_equal(stats_slowlog_len(logs, 3), 0);
    assert_int_equal(stats_slowlog_collect(logs, 3, e, 8), 0);
    record(b, 400, 1, "del", "b3"); /* usable after a reset */
    assert_int_equal(stats_slowlog_collect(logs, 3, e, 8), 1);
    ring_free(a);
    ring_free(b);
    ring_free(c);
}

static void test_truncates_long_names(void **state)
{
    (void)state;
    struct stats_slowlog *sl = ring_new(0, 0);
    char key[300], cmd[64];
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = '\0';
    memset(cmd, 'c', sizeof(cmd) - 1);
    cmd[sizeof(cmd) - 1] = '\0';
    record(sl, 10, 10, cmd, key);
    struct stats_slowlog *logs[] = { sl };
    struct stats_slow_entry e;
    assert_int_equal(stats_slowlog_collect(logs, 1, &e, 1), 1);
    assert_int_equal(e.key_len, 299);
    assert_int_equal(e.cmd_len, STATS_SLOWLOG_CMD_MAX);
    assert_memory_equal(e.key, key, STATS_SLOWLOG_KEY_MAX);
    ring_free(sl);
}

static void test_locked_ring_drops_instead_of_waiting(void **state)
{
    (void)state;
    struct stats_slowlog *sl = ring_new(0, 0);
    pthread_mutex_lock(&sl->lock); /* the stats thread is reading it */
    record(sl, 10, 10, "get", "x");
    pthread_mutex_unlock(&sl->lock);
    struct stats_slowlog *logs[] = { sl };
    assert_int_equal(stats_slowlog_len(logs, 1), 0);
    assert_int_equal(stats_slowlog_dropped(logs, 1), 1);
    record(sl, 20, 10, "get", "y");
    assert_int_equal(stats_slowlog_len(logs, 1), 1);
    ring_free(sl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_entry_fields),
        cmocka_unit_test(test_wraps_and_keeps_newest),
        cmocka_unit_test(test_merges_rings_by_time),
        cmocka_unit_test(test_truncates_long_names),
        cmocka_unit_test(test_locked_ring_drops_instead_of_waiting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
