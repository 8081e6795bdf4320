/*
 * test_stats_hotkeys.c - unit tests of the hot key sampler (stats/stats_hotkeys.h): a Zipf-like
 * stream's true top keys come first with counts within the sketch's error, a key holding half the
 * stream is first, the window forgets old epochs, workers' windows merge by summing a key's
 * rates, long and binary keys, the gaps between samples, the triple buffer (and a writer thread
 * publishing while a reader takes, for the TSan stage).
 *
 * Threads: the test's, plus the writer thread of test_publish_while_reading.
 */
#include "config.h"
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "stats/stats_hotkeys.h"

#define SEC 1000000u
#define T0 (100u * SEC)   /* a start time far from 0 (0 means "never" in a list) */

/* A deterministic PRNG (xorshift64*), the tests' own. */
static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state >> 12;
    rnd_state ^= rnd_state << 25;
    rnd_state ^= rnd_state >> 27;
    return rnd_state * 2685821657736338717ull;
}

static void add_str(struct stats_hotkeys *h, const char *key, uint64_t now)
{
    stats_hotkeys_add(h, (const uint8_t *)key, strlen(key), now);
}

static void add_num(struct stats_hotkeys *h, unsigned n, uint64_t now)
{
    char key[32];
    snprintf(key, sizeof(key), "key:%u", n);
    add_str(h, key, now);
}

static bool entry_is(const struct hotkeys_entry *e, const char *key)
{
    return e->len == strlen(key) && memcmp(e->key, key, e->len) == 0;
}

/* Ranks 0..NZIPF-1 weighted 1/(r+1): the cumulative table and a draw from it. */
#define NZIPF 5000
static double zipf_cum[NZIPF];
static void zipf_init(void)
{
    double sum = 0;
    for (unsigned r = 0; r < NZIPF; r++) zipf_cum[r] = (sum += 1.0 / (r + 1));
    for (unsigned r = 0; r < NZIPF; r++) zipf_cum[r] /= sum;
}
static unsigned zipf_draw(void)
{
    double u = (double)(rnd() >> 11) / 9007199254740992.0;
    unsigned lo = 0, hi = NZIPF - 1;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (zipf_cum[mid] < u) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void test_zipf_top_keys(void **state)
{
    (void)state;
    enum { N = 200000 };
    static uint32_t truth[NZIPF];
    memset(truth, 0, sizeof(truth));
    zipf_init();
    struct stats_hotkeys *h = stats_hotkeys_create(1, 7);
    assert_non_null(h);
    for (unsigned i = 0; i < N; i++) {
        unsigned r = zipf_draw();
        truth[r]++;
        add_num(h, r, T0 + (uint64_t)i * (SEC / 2) / N); /* all within one epoch */
    }
    stats_hotkeys_rotate(h, T0 + SEC);
    const struct hotkeys_list *l = stats_hotkeys_take(h);
    assert_int_equal(l->total, N);
    assert_int_equal(l->n, HOTKEYS_TOP);
    /* the sketch overestimates a count by at most e*N/width with probability 1 - e^-depth */
    double err = exp(1.0) * N / HOTKEYS_CMS_WIDTH;
    for (unsigned r = 0; r < 8; r++) { /* the 8 heaviest ranks, in order: they are far apart */
        char key[32];
        snprintf(key, sizeof(key), "key:%u", r);
        if (!entry_is(&l->e[r], key)) fail_msg("place %u holds '%.*s', not '%s'", r, (int)l->e[r].len, l->e[r].key, key);
        assert_true(l->e[r].count >= truth[r]);
        assert_true(l->e[r].count <= truth[r] + err);
    }
    for (unsigned i = 1; i < l->n; i++) assert_true(l->e[i - 1].count >= l->e[i].count);
    stats_hotkeys_destroy(h);
}

/* A key holding half of a stream whose other half spreads over 1000 keys: first. */
static void test_half_is_first(void **state)
{
    (void)state;
    enum { N = 20000 };
    struct stats_hotkeys *h = stats_hotkeys_create(1, 3);
    assert_non_null(h);
    for (unsigned i = 0; i < N; i++) {
        uint64_t now = T0 + (uint64_t)i * 100; /* 2 s: two epochs */
        if (rnd() & 1) add_str(h, "hot", now);
        else add_num(h, (unsigned)(rnd() % 1000), now);
    }
    stats_hotkeys_rotate(h, T0 + 2 * SEC);
    const struct hotkeys_list *l = stats_hotkeys_take(h);
    assert_true(entry_is(&l->e[0], "hot"));
    assert_true(l->e[0].count > N * 45 / 100 && l->e[0].count < N * 55 / 100);
    struct hotkey out[4];
    double total = 0;
    assert_int_equal(stats_hotkeys_merge(&l, 1, T0 + 2 * SEC, out, 4, &total), 4);
    assert_true(total > 0.99 * N / 2.0 && total < 1.01 * N / 2.0); /* N keys over 2 s */
    assert_true(out[0].rate > 0.45 * total && out[0].rate < 0.55 * total);
    stats_hotkeys_destroy(h);
}

static bool list_has(const struct hotkeys_list *l, const char *key)
{
    for (uint32_t i = 0; i < l->n; i++) {
        if (entry_is(&l->e[i], key)) return true;
    }
    return false;
}

/* A key hot in one epoch only leaves the window HOTKEYS_EPOCHS epochs later; a window its worker
 * stopped publishing fades, then counts for nothing. */
static void test_window_forgets(void **state)
{
    (void)state;
    struct stats_hotkeys *h = stats_hotkeys_create(1, 5);
    assert_non_null(h);
    for (unsigned i = 0; i < 100; i++) add_str(h, "old", T0 + i); /* epoch 0 */
    for (unsigned e = 1; e <= HOTKEYS_EPOCHS + 1; e++) {
        /* the first sample of epoch e ends epoch e-1 and publishes epochs e-3 .. e-1 */
        for (unsigned i = 0; i < 100; i++) add_str(h, "new", T0 + e * SEC + i);
        const struct hotkeys_list *l = stats_hotkeys_take(h);
        assert_int_equal(l->end_usec, T0 + e * SEC);
        assert_true(list_has(l, "new") == (e >= 2));
        assert_true(list_has(l, "old") == (e <= HOTKEYS_EPOCHS));
    }
    const struct hotkeys_list *l = stats_hotkeys_take(h);
    struct hotkey out[2];
    double fresh = 0, faded = 0, gone = 0;
    assert_int_equal(stats_hotkeys_merge(&l, 1, l->end_usec, out, 2, &fresh), 1);
    assert_int_equal(stats_hotkeys_merge(&l, 1, l->end_usec + 4 * SEC, out, 2, &faded), 1);
    assert_true(faded < fresh);
    assert_int_equal(stats_hotkeys_merge(&l, 1, l->end_usec + HOTKEYS_STALE_USEC + 1, out, 2, &gone), 0);
    assert_true(gone == 0);
    stats_hotkeys_destroy(h);
}

/* Two workers' windows: the same key's rates add up; one worker's own keys stay apart. */
static void test_merge_sums_workers(void **state)
{
    (void)state;
    struct stats_hotkeys *a = stats_hotkeys_create(1, 1), *b = stats_hotkeys_create(1, 2);
    assert_non_null(a);
    assert_non_null(b);
    for (unsigned i = 0; i < 300; i++) add_str(a, "shared", T0 + i);
    for (unsigned i = 0; i < 100; i++) add_str(a, "only-a", T0 + i);
    for (unsigned i = 0; i < 200; i++) add_str(b, "shared", T0 + i);
    for (unsigned i = 0; i < 250; i++) add_str(b, "only-b", T0 + i);
    stats_hotkeys_rotate(a, T0 + SEC);
    stats_hotkeys_rotate(b, T0 + SEC);
    const struct hotkeys_list *lists[] = { stats_hotkeys_take(a), NULL, stats_hotkeys_take(b) };
    struct hotkey out[8];
    double total = 0;
    assert_int_equal(stats_hotkeys_merge(lists, 3, T0 + SEC, out, 8, &total), 3);
    assert_true(fabs(total - 850) < 1e-6); /* every = 1, one second */
    assert_int_equal(out[0].len, 6);
    assert_memory_equal(out[0].key, "shared", 6);
    assert_true(fabs(out[0].rate - 500) < 1e-6);
    assert_memory_equal(out[1].key, "only-b", 6);
    assert_true(fabs(out[1].rate - 250) < 1e-6);
    assert_memory_equal(out[2].key, "only-a", 6);
    /* the sampling scales the counts: a worker sampling 1 in 4 counts each sample 4 times */
    struct stats_hotkeys *c = stats_hotkeys_create(4, 9);
    for (unsigned i = 0; i < 50; i++) add_str(c, "shared", T0 + i);
    stats_hotkeys_rotate(c, T0 + SEC);
    const struct hotkeys_list *two[] = { stats_hotkeys_take(c), lists[0] };
    assert_int_equal(stats_hotkeys_merge(two, 2, T0 + SEC, out, 1, &total), 1);
    assert_true(fabs(out[0].rate - 500) < 1e-6);
    stats_hotkeys_destroy(a);
    stats_hotkeys_destroy(b);
    stats_hotkeys_destroy(c);
}

/* Keys longer than the prefix kept are told apart by their hash; bytes are bytes (NUL, 0xff). */
static void test_long_and_binary_keys(void **state)
{
    (void)state;
    struct stats_hotkeys *h = stats_hotkeys_create(1, 11);
    uint8_t k1[300], k2[300];
    memset(k1, 'x', sizeof(k1));
    memcpy(k2, k1, sizeof(k2));
    k2[299] = 'y';                                  /* same first 128 bytes, same length */
    const uint8_t bin[] = { 'a', 0, 0xff, '\n', '"', 'b' };
    for (unsigned i = 0; i < 30; i++) stats_hotkeys_add(h, k1, sizeof(k1), T0 + i);
    for (unsigned i = 0; i < 20; i++) stats_hotkeys_add(h, k2, sizeof(k2), T0 + i);
    for (unsigned i = 0; i < 10; i++) stats_hotkeys_add(h, bin, sizeof(bin), T0 + i);
    for (unsigned i = 0; i < 5; i++) stats_hotkeys_add(h, bin, 2, T0 + i); /* "a\0": a prefix of it */
    stats_hotkeys_rotate(h, T0 + SEC);
    const struct hotkeys_list *l = stats_hotkeys_take(h);
    assert_int_equal(l->n, 4);
    assert_int_equal(l->e[0].count, 30);
    assert_int_equal(l->e[0].len, 300);
    assert_memory_equal(l->e[0].key, k1, HOTKEYS_KEY_MAX);
    assert_int_equal(l->e[1].count, 20);
    assert_int_equal(l->e[1].len, 300);
    assert_true(l->e[0].hash != l->e[1].hash);
    assert_int_equal(l->e[2].len, sizeof(bin));
    assert_memory_equal(l->e[2].key, bin, sizeof(bin));
    assert_int_equal(l->e[3].len, 2);
    assert_int_equal(l->e[3].count, 5);
    assert_int_equal(stats_hotkeys_hash(k1, 300), l->e[0].hash);
    assert_true(stats_hotkeys_hash(bin, 0) != stats_hotkeys_hash(bin, 1));
    stats_hotkeys_destroy(h);
}

/* The gaps stay within every/2 .. every*3/2 and average every; every = 1 samples each request. */
static void test_gaps(void **state)
{
    (void)state;
    struct stats_hotkeys *h = stats_hotkeys_create(16, 42);
    uint64_t sum = 0;
    bool seen_lo = false, seen_hi = false;
    for (unsigned i = 0; i < 10000; i++) {
        uint32_t g = stats_hotkeys_gap(h);
        assert_true(g >= 8 && g <= 24);
        seen_lo |= g == 8;
        seen_hi |= g == 24;
        sum += g;
    }
    assert_true(seen_lo && seen_hi);
    assert_true(sum > 10000 * 15 && sum < 10000 * 17);
    stats_hotkeys_destroy(h);
    h = stats_hotkeys_create(1, 42);
    for (unsigned i = 0; i < 100; i++) assert_int_equal(stats_hotkeys_gap(h), 1);
    stats_hotkeys_destroy(h);
}

/* take: the same window until a newer one is published; the first take sees an empty one. */
static void test_take(void **state)
{
    (void)state;
    struct stats_hotkeys *h = stats_hotkeys_create(1, 13);
    const struct hotkeys_list *l = stats_hotkeys_take(h);
    assert_int_equal(l->n, 0);
    assert_int_equal(l->end_usec, 0);
    add_str(h, "a", T0);
    stats_hotkeys_rotate(h, T0 + SEC);
    const struct hotkeys_list *l1 = stats_hotkeys_take(h);
    assert_true(list_has(l1, "a"));
    assert_ptr_equal(stats_hotkeys_take(h), l1);
    for (unsigned e = 2; e < 6; e++) { /* published twice between takes: the newer one is taken */
        add_str(h, "b", T0 + e * SEC);
        stats_hotkeys_rotate(h, T0 + e * SEC + 1);
        stats_hotkeys_rotate(h, T0 + e * SEC + 2);
        const struct hotkeys_list *ln = stats_hotkeys_take(h);
        assert_int_equal(ln->end_usec, T0 + e * SEC + 2);
    }
    stats_hotkeys_destroy(h);
}

#define WRITER_EPOCHS 300

static void *writer_main(void *arg)
{
    struct stats_hotkeys *h = arg;
    for (unsigned e = 1; e <= WRITER_EPOCHS; e++) {
        for (unsigned i = 0; i < e % 7 + 1; i++) add_num(h, e, T0 + e * SEC + i);
        stats_hotkeys_rotate(h, T0 + e * SEC + SEC / 2);
    }
    return NULL;
}

/* A writer publishing while the reader takes: every window read is whole (its end time goes up,
 * its entries sorted and counted within its total). */
static void test_publish_while_reading(void **state)
{
    (void)state;
    struct stats_hotkeys *h = stats_hotkeys_create(1, 17);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, writer_main, h), 0);
    uint64_t last_end = 0;
    for (unsigned i = 0; i < 200000 && last_end < T0 + WRITER_EPOCHS * SEC + SEC / 2; i++) {
        const struct hotkeys_list *l = stats_hotkeys_take(h);
        assert_true(l->end_usec >= last_end);
        last_end = l->end_usec;
        uint64_t sum = 0;
        for (uint32_t k = 0; k < l->n; k++) {
            sum += l->e[k].count;
            if (k > 0) assert_true(l->e[k - 1].count >= l->e[k].count);
        }
        assert_true(sum <= l->total);
    }
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(stats_hotkeys_take(h)->end_usec, T0 + WRITER_EPOCHS * SEC + SEC / 2);
    stats_hotkeys_destroy(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zipf_top_keys),
        cmocka_unit_test(test_half_is_first),
        cmocka_unit_test(test_window_forgets),
        cmocka_unit_test(test_merge_sums_workers),
        cmocka_unit_test(test_long_and_binary_keys),
        cmocka_unit_test(test_gaps),
        cmocka_unit_test(test_take),
        cmocka_unit_test(test_publish_while_reading),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
