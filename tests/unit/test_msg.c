/*
 * test_msg.c - unit tests of mbuf and msg: spans, merging, slices across mbufs, literals, keys
 * and their cap.
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "msg/mbuf.h"
#include "msg/msg.h"

static void fill(struct mbuf *mb, const char *s)
{
    size_t n = strlen(s);
    memcpy(mb->data + mb->len, s, n);
    mb->len += (uint32_t)n;
}

static void test_append_merges_adjacent(void **state)
{
    (void)state;
    struct mbuf_pool mp;
    struct msg_pool pp;
    mbuf_pool_init(&mp, 1024, 8);
    msg_pool_init(&pp, 8);
    struct mbuf *mb = mbuf_get(&mp);
    fill(mb, "hello world");
    struct msg *m = msg_get(&pp);
    assert_int_equal(msg_append(m, mb, 0, 5), 0);
    assert_int_equal(msg_append(m, mb, 5, 6), 0);
    assert_int_equal(m->nspans, 1);
    assert_int_equal(m->len, 11);
    assert_int_equal(mb->refs, 2);
    mbuf_unref(mb);
    msg_put(&pp, m);
    assert_int_equal(mp.nlive, 0);
    assert_int_equal(pp.nlive, 0);
    msg_pool_deinit(&pp);
    mbuf_pool_deinit(&mp);
}

static void test_slice_across_mbufs(void **state)
{
    (void)state;
    struct mbuf_pool mp;
    struct msg_pool pp;
    mbuf_pool_init(&mp, 1024, 8);
    msg_pool_init(&pp, 8);
    struct mbuf *a = mbuf_get(&mp), *b = mbuf_get(&mp);
    fill(a, "0123456789");
    fill(b, "abcdefghij");
    struct msg *src = msg_get(&pp), *dst = msg_get(&pp);
    assert_int_equal(msg_append(src, a, 2, 8), 0);  /* "23456789" */
    assert_int_equal(msg_append(src, b, 0, 10), 0); /* "abcdefghij" */
    assert_int_equal(msg_append_literal(dst, "<", 1), 0);
    assert_int_equal(msg_append_slice(dst, src, 5, 12), 0); /* "789abcd" */
    assert_int_equal(msg_append_literal(dst, ">", 1), 0);
    char out[32] = { 0 };
    assert_int_equal(msg_copy_out(dst, 0, out, sizeof(out)), 9);
    assert_string_equal(out, "<789abcd>");
    assert_int_equal(msg_append_slice(dst, src, 3, 100), -EINVAL);
    mbuf_unref(a);
    mbuf_unref(b);
    msg_put(&pp, src);
    msg_put(&pp, dst);
    assert_int_equal(mp.nlive, 0);
    msg_pool_deinit(&pp);
    mbuf_pool_deinit(&mp);
}

static void test_pool_bounds_free_list(void **state)
{
    (void)state;
    struct mbuf_pool mp;
    mbuf_pool_init(&mp, 512, 2);
    struct mbuf *m[5];
    for (int i = 0; i < 5; i++) m[i] = mbuf_get(&mp);
    for (int i = 0; i < 5; i++) mbuf_unref(m[i]);
    assert_int_equal(mp.nfree, 2);
    assert_int_equal(mp.nlive, 0);
    mbuf_pool_deinit(&mp);
    assert_int_equal(mp.nfree, 0);
}

static void test_keys_capped(void **state)
{
    (void)state;
    struct msg_pool pp;
    msg_pool_init(&pp, 8);
    struct msg *m = msg_get(&pp);
    static const uint8_t k[] = "k";
    for (uint32_t i = 0; i < MSG_KEYS_MAX; i++) assert_int_equal(msg_add_key(m, k, 1, i, i + 1), 0);
    assert_int_equal(m->nkeys, MSG_KEYS_MAX);
    assert_int_equal(msg_add_key(m, k, 1, 0, 1), -E2BIG);
    assert_int_equal(m->nkeys, MSG_KEYS_MAX);
    msg_put(&pp, m);
    msg_pool_deinit(&pp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_merges_adjacent),
        cmocka_unit_test(test_slice_across_mbufs),
        cmocka_unit_test(test_pool_bounds_free_list),
        cmocka_unit_test(test_keys_capped),
    };
    return cmocka_run_group_tests_name("msg", tests, NULL, NULL);
}
