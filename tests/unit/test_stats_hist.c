/*
 * test_stats_hist.c - unit tests of the latency histograms: fine bucket mapping and ranges, the
 * coarse buckets at their bounds and meitu's folded from them, sums, merges, quantiles, and a
 * reader summing while a writer thread records (single writer, relaxed atomics: run it under TSan
 * too).
 *
 * Threads: the test's, plus one writer thread in test_concurrent_reader.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stats/stats_hist.h"

static void test_fine_buckets_hold_their_values(void **state)
{
    (void)state;
    unsigned prev = 0;
    for (uint64_t v = 0; v < 200000; v++) {
        unsigned b = stats_hist_bucket(v);
        uint64_t lo, hi;
        stats_hist_bucket_range(b, &lo, &hi);
        assert_true(lo <= v && v <= hi);
        assert_true(b >= prev); /* monotone */
        prev = b;
        if (v >= 16) assert_true((hi - lo + 1) * 8 <= lo); /* width <= 12.5% of lo */
    }
    for (unsigned shift = 17; shift < 64; shift++) {
        uint64_t v = ((uint64_t)1 << shift) + 12345;
        unsigned b = stats_hist_bucket(v);
        uint64_t lo, hi;
        stats_hist_bucket_range(b, &lo, &hi);
        assert_true(b < STATS_HIST_NBUCKETS);
        assert_true(lo <= v && v <= hi);
    }
    assert_int_equal(stats_hist_bucket(UINT64_MAX), STATS_HIST_NBUCKETS - 1);
}

static void test_fine_buckets_tile_the_range(void **state)
{
    (void)state;
    uint64_t expect_lo = 0;
    for (unsigned b = 0; b < STATS_HIST_NBUCKETS; b++) {
        uint64_t lo, hi;
        stats_hist_bucket_range(b, &lo, &hi);
        assert_true(lo == expect_lo); /* no gap, no overlap */
        assert_true(hi >= lo);
        if (b + 1 < STATS_HIST_NBUCKETS) expect_lo = hi + 1;
        else assert_true(hi == UINT64_MAX);
    }
}

static void test_coarse_bounds(void **state)
{
    (void)state;
    static const uint32_t us[] = { 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000,
                                   200000, 500000, 1000000, 2000000, 3000000, 5000000, 10000000 };
    assert_int_equal(STATS_LAT_NBOUNDS, sizeof(us) / sizeof(us[0]));
    for (unsigned i = 0; i < STATS_LAT_NBOUNDS; i++) {
        assert_int_equal(stats_lat_bound_usec[i], us[i]);
        assert_int_equal(stats_hist_coarse(us[i]), i);      /* <= bound: this bucket */
        assert_int_equal(stats_hist_coarse(us[i] + 1), i + 1);
    }
    assert_int_equal(stats_hist_coarse(0), 0);
    assert_int_equal(stats_hist_coarse(UINT64_MAX), STATS_LAT_NBOUNDS);
    /* meitu's bounds are all coarse bounds, so its buckets are exact sums of coarse ones */
    static const uint32_t ms[] = { 1, 10, 20, 50, 100, 200, 500, 1000, 2000, 3000 };
    assert_int_equal(STATS_LAT_JSON_NBOUNDS, sizeof(ms) / sizeof(ms[0]));
    for (unsigned j = 0; j < STATS_LAT_JSON_NBOUNDS; j++) {
        assert_int_equal(stats_lat_json_bound_msec[j], ms[j]);
        bool found = false;
        for (unsigned i = 0; i < STATS_LAT_NBOUNDS; i++) found |= stats_lat_bound_usec[i] == ms[j] * 1000u;
        assert_true(found);
    }
}

/* meitu's buckets of the JSON: a value on a bound in that bound's bucket, beyond 3 s in +inf */
static void test_json_buckets(void **state)
{
    (void)state;
    struct stats_hist *h = calloc(1, sizeof(*h));
    assert_non_null(h);
    static const uint64_t v[] = { 0, 50, 51, 999, 1000, 1001, 10000, 10001, 20000, 3000000, 3000001,
                                  10000000, UINT64_MAX / 4 };
    static const uint64_t want[STATS_LAT_JSON_NBUCKETS] = { 5, 2, 2, 0, 0, 0, 0, 0, 0, 1, 3 };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) stats_hist_record(h, v[i]);
    struct stats_hist_sum s;
    memset(&s, 0, sizeof(s));
    stats_hist_sum_add(&s, h);
    uint64_t out[STATS_LAT_JSON_NBUCKETS];
    stats_hist_json_buckets(&s, out);
    uint64_t total = 0;
    for (unsigned j = 0; j < STATS_LAT_JSON_NBUCKETS; j++) {
        if (out[j] != want[j]) fail_msg("bucket %u: %lu, want %lu", j, (unsigned long)out[j], (unsigned long)want[j]);
        total += out[j];
    }
    assert_int_equal(total, s.count);
    free(h);
}

static struct stats_hist *hist_new(void)
{
    struct stats_hist *h = calloc(1, sizeof(*h));
    assert_non_null(h);
    return h;
}

static void test_record_and_sum(void **state)
{
    (void)state;
    struct stats_hist *h = hist_new();
    stats_hist_record(h, 0);
    stats_hist_record(h, 999);
    stats_hist_record(h, 1000);
    stats_hist_record(h, 1001);
    stats_hist_record(h, 4000000);
    struct stats_hist_sum s;
    memset(&s, 0, sizeof(s));
    stats_hist_sum_add(&s, h);
    assert_int_equal(s.count, 5);
    assert_int_equal(s.sum_usec, 0 + 999 + 1000 + 1001 + 4000000);
    assert_int_equal(s.max_usec, 4000000);
    assert_int_equal(s.coarse[0], 1);                 /* <= 50 us */
    assert_int_equal(s.coarse[4], 2);                 /* (500, 1000] us */
    assert_int_equal(s.coarse[5], 1);                 /* (1, 2] ms */
    assert_int_equal(s.coarse[16], 1);                /* (3, 5] s */
    uint64_t fine = 0;
    for (unsigned i = 0; i < STATS_HIST_NBUCKETS; i++) fine += s.bucket[i];
    assert_int_equal(fine, 5);
    free(h);
}

static void test_quantiles(void **state)
{
    (void)state;
    struct stats_hist *h = hist_new();
    struct stats_hist_sum s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(stats_hist_quantile(&s, 50, 100), 0); /* empty */
    for (uint64_t v = 1; v <= 1000; v++) stats_hist_record(h, v);
    stats_hist_sum_add(&s, h);
    uint64_t p50 = stats_hist_quantile(&s, 50, 100);
    uint64_t p99 = stats_hist_quantile(&s, 99, 100);
    uint64_t p999 = stats_hist_quantile(&s, 999, 1000);
    uint64_t p100 = stats_hist_quantile(&s, 1, 1);
    assert_true(p50 >= 500 && p50 <= 500 + 500 / 8);
    assert_true(p99 >= 990 && p99 <= 1000); /* never above the max */
    assert_true(p999 >= 999 && p999 <= 1000);
    assert_int_equal(p100, 1000);
    assert_true(p50 <= p99 && p99 <= p999);
    free(h);

    /* small values are exact */
    h = hist_new();
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < 9; i++) stats_hist_record(h, 3);
    stats_hist_record(h, 7);
    stats_hist_sum_add(&s, h);
    assert_int_equal(stats_hist_quantile(&s, 50, 100), 3);
    assert_int_equal(stats_hist_quantile(&s, 90, 100), 3);
    assert_int_equal(stats_hist_quantile(&s, 91, 100), 7);
    free(h);
}

static void test_one_outlier_is_p999_of_a_thousand(void **state)
{
    (void)state;
    struct stats_hist *h = hist_new();
    struct stats_hist_sum s;
    memset(&s, 0, sizeof(s));
    for (int i = 0; i < 999; i++) stats_hist_record(h, 100);
    stats_hist_record(h, 250000);
    stats_hist_sum_add(&s, h);
    uint64_t p99 = stats_hist_quantile(&s, 99, 100);
    assert_true(p99 >= 100 && p99 <= 112);
    assert_int_equal(stats_hist_quantile(&s, 999, 1000), p99); /* rank 999 is still 100 us */
    assert_int_equal(stats_hist_quantile(&s, 1, 1), 250000);
    free(h);
}

static void test_merge_equals_sum_of_blocks(void **state)
{
    (void)state;
    struct stats_hist *a = hist_new(), *b = hist_new();
    for (uint64_t v = 0; v < 5000; v += 7) stats_hist_record(a, v * 13);
    for (uint64_t v = 0; v < 5000; v += 3) stats_hist_record(b, v * 101);
    struct stats_hist_sum sa, sb, both, merged;
    memset(&sa, 0, sizeof(sa));
    memset(&sb, 0, sizeof(sb));
    memset(&both, 0, sizeof(both));
    stats_hist_sum_add(&sa, a);
    stats_hist_sum_add(&sb, b);
    stats_hist_sum_add(&both, a);
    stats_hist_sum_add(&both, b);
    merged = sa;
    stats_hist_sum_merge(&merged, &sb);
    assert_memory_equal(&merged, &both, sizeof(merged));
    assert_int_equal(merged.count, sa.count + sb.count);
    free(a);
    free(b);
}

#define WRITES 200000

static void *writer(void *arg)
{
    struct stats_hist *h = arg;
    for (uint64_t i = 0; i < WRITES; i++) stats_hist_record(h, i % 5000);
    return NULL;
}

static void test_concurrent_reader(void **state)
{
    (void)state;
    struct stats_hist *h = hist_new();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer, h), 0);
    uint64_t last = 0;
    for (int i = 0; i < 200; i++) {
        struct stats_hist_sum s;
        memset(&s, 0, sizeof(s));
        stats_hist_sum_add(&s, h);
        assert_true(s.count >= last); /* a counter read never goes back */
        last = s.count;
    }
    pthread_join(t, NULL);
    struct stats_hist_sum s;
    memset(&s, 0, sizeof(s));
    stats_hist_sum_add(&s, h);
    assert_int_equal(s.count, WRITES);
    assert_int_equal(s.max_usec, 4999);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fine_buckets_hold_their_values),
        cmocka_unit_test(test_fine_buckets_tile_the_range),
        cmocka_unit_test(test_coarse_bounds),
        cmocka_unit_test(test_json_buckets),
        cmocka_unit_test(test_record_and_sum),
        cmocka_unit_test(test_quantiles),
        cmocka_unit_test(test_one_outlier_is_p999_of_a_thousand),
        cmocka_unit_test(test_merge_equals_sum_of_blocks),
        cmocka_unit_test(test_concurrent_reader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
