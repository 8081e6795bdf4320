/*
 * test_manage_hotkeys.c - unit tests of the manage port's hot keys (manage/hotkeys_json.h): the
 * `hotkeys` command's JSON over the workers' samplers (keys merged over workers, highest rate
 * first, n keys of one pool, bytes escaped, long keys marked), its errors, its restriction, and
 * the Prometheus share gauge that names no key.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/clock.h"
#include "json_check.h"
#include "manage/hotkeys_json.h"
#include "manage/stats_prom.h"
#include "manage_fixture.h"

#define SEC 1000000u

/* The manage fixture, its source sampling every request (-H 1). */
static int hfix_setup(void **state)
{
    mfix_setup(state);
    struct mfix *m = *state;
    m->f.src.hotkeys_every = 1;
    return 0;
}

/* Worker w samples key (len bytes) n times in the second before now, every request (-H 1). */
static void sample(struct mfix *m, size_t w, const char *pool, const void *key, size_t len, unsigned n)
{
    struct stats_hotkeys *h = stats_pool_hotkeys(sfix_pb(&m->f, w, pool), 1, (uint32_t)w + 1);
    assert_non_null(h);
    uint64_t now = nc_usec_now();
    for (unsigned i = 0; i < n; i++) stats_hotkeys_add(h, key, len, now - SEC + i);
}

/* Every worker's sampler of pool publishes its window (ending now, one second long). */
static void publish(struct mfix *m, const char *pool)
{
    for (size_t w = 0; w < m->f.nworkers; w++) {
        struct stats_hotkeys *h = stats_pool_hotkeys(sfix_pb(&m->f, w, pool), 1, (uint32_t)w + 1);
        stats_hotkeys_rotate(h, nc_usec_now());
    }
}

static const struct jv *keys_of(const struct jv *doc, const char *pool)
{
    const struct jv *k = jv_path(doc, "pools", pool, "keys", NULL);
    assert_non_null(k);
    assert_int_equal(k->type, JV_ARRAY);
    return k;
}

static void test_hotkeys_json(void **state)
{
    struct mfix *m = *state;
    const uint8_t bin[] = { 'b', 0, '"', 0xff, '\\' };
    char longkey[200];
    memset(longkey, 'L', sizeof(longkey));
    sample(m, 0, "alpha", "hot", 3, 300);
    sample(m, 1, "alpha", "hot", 3, 200);
    sample(m, 1, "alpha", bin, sizeof(bin), 100);
    sample(m, 0, "alpha", longkey, sizeof(longkey), 50);
    publish(m, "alpha");
    char *r = mfix_run(m, "hotkeys alpha 3", MANAGE_OK);
    size_t len = strlen(r);
    assert_true(len > 2 && strcmp(r + len - 2, "\r\n") == 0);
    struct jv *doc = jv_parse(r, len);
    assert_non_null(doc);
    assert_int_equal(jv_get(doc, "sample_every")->i, 1);
    assert_int_equal(jv_get(doc, "window_seconds")->i, 3);
    assert_int_equal(jv_get(doc, "pools")->n, 1);   /* that pool only */
    const struct jv *k = keys_of(doc, "alpha");
    assert_int_equal(k->n, 3);
    assert_string_equal(jv_get(k->vals[0], "key")->s, "hot");
    assert_int_equal(jv_get(k->vals[0], "len")->i, 3);
    double rate = jv_get(k->vals[0], "rate")->num;
    assert_true(rate > 400 && rate < 600);          /* 500 in about a second, both workers */
    assert_null(jv_get(k->vals[0], "key_hex"));
    const struct jv *b = jv_get(k->vals[1], "key");  /* the binary key: escaped, exact in hex */
    assert_int_equal(b->slen, 7);                   /* 'b', NUL, '"', U+FFFD (3 bytes), '\\' */
    assert_memory_equal(b->s, "b\0\"\xef\xbf\xbd\\", 7);
    assert_string_equal(jv_get(k->vals[1], "key_hex")->s, "620022ff5c");
    assert_int_equal(jv_get(k->vals[2], "len")->i, 200);
    assert_true(jv_get(k->vals[2], "truncated")->b);
    assert_int_equal(strlen(jv_get(k->vals[2], "key")->s), HOTKEYS_KEY_MAX);
    double total = jv_path(doc, "pools", "alpha", "rate", NULL)->num;
    assert_true(total > 550 && total < 750);        /* 650 sampled keys */
    jv_free(doc);
    free(r);

    r = mfix_run(m, "hotkeys", MANAGE_OK); /* every pool, 10 keys at most */
    doc = jv_parse(r, strlen(r));
    assert_non_null(doc);
    assert_int_equal(jv_get(doc, "pools")->n, 2);
    assert_int_equal(keys_of(doc, "alpha")->n, 3);
    assert_int_equal(keys_of(doc, "we\"ird\\pool\tname \xc3\xa9")->n, 0);
    jv_free(doc);
    free(r);
}

static void test_hotkeys_errors(void **state)
{
    struct mfix *m = *state;
    char *r = mfix_run(m, "hotkeys nope", MANAGE_ERROR);
    assert_string_equal(r, "ERR: pool doesn't exist!\r\n");
    free(r);
    r = mfix_run(m, "hotkeys alpha 0", MANAGE_ERROR);
    assert_string_equal(r, "ERR: usage: hotkeys [<pool> [n]]\r\n");
    free(r);
    r = mfix_run(m, "hotkeys alpha -1", MANAGE_ERROR);
    free(r);
    r = mfix_run(m, "hotkeys alpha 2 3", MANAGE_ERROR);
    assert_string_equal(r, "ERR: usage: hotkeys [<pool> [n]]\r\n");
    free(r);
    sample(m, 0, "alpha", "k", 1, 10); /* n past the most kept: all there are */
    publish(m, "alpha");
    r = mfix_run(m, "hotkeys alpha 1000", MANAGE_OK);
    struct jv *doc = jv_parse(r, strlen(r));
    assert_int_equal(keys_of(doc, "alpha")->n, 1);
    jv_free(doc);
    free(r);
    /* untrusted and not authenticated: refused, as slowlog get is */
    struct manage_auth auth;
    mfix_untrusted(m, &auth);
    r = mfix_run(m, "hotkeys", MANAGE_ERROR);
    assert_non_null(strstr(r, "ERR: 'hotkeys' is refused: it needs a trusted client"));
    free(r);
    m->ctx.auth = NULL;
}

/* Prometheus: the share of the hottest key per pool, and no key name anywhere. */
static void test_prom_share(void **state)
{
    struct mfix *m = *state;
    sample(m, 0, "alpha", "secret-hot-key", 14, 300);
    sample(m, 1, "alpha", "secret-hot-key", 14, 100);
    for (unsigned i = 0; i < 400; i++) {
        char key[32];
        int n = snprintf(key, sizeof(key), "secret-%u", i);
        sample(m, i % 2, "alpha", key, (size_t)n, 1);
    }
    publish(m, "alpha");
    stats_snapshot_take(m->ctx.fresh, -1);
    textbuf_reset(&m->out);
    stats_prom_render(&m->out, m->ctx.fresh);
    char *text = sfix_cstr(&m->out);
    assert_null(strstr(text, "secret"));
    const char *g = strstr(text, "\nnutcrackers_pool_hottest_key_share{pool=\"alpha\"} ");
    assert_non_null(g);
    double share = strtod(g + strlen("\nnutcrackers_pool_hottest_key_share{pool=\"alpha\"} "), NULL);
    assert_true(fabs(share - 0.5) < 0.02);
    assert_non_null(strstr(text, "# TYPE nutcrackers_pool_hottest_key_share gauge\n"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_hotkeys_json, hfix_setup, mfix_teardown),
        cmocka_unit_test_setup_teardown(test_hotkeys_errors, hfix_setup, mfix_teardown),
        cmocka_unit_test_setup_teardown(test_prom_share, hfix_setup, mfix_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
