/*
 * test_msg.c - unit tests of mbuf and msg: spans, merging, slices across mbufs, literals, keys
 * and their cap, a msg's own chunk (reused, or replaced while a slice of it lives on), short copies
 * (msg_append_copy: the own chunk, then a literal), a split's arrays kept across reuses
 * (msg_frags_array, msg_key_frag_array), trimming a msg's end and the parser's edits (msg_finish).
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

static void fill(struct mbuf *mb, const char *s)
{
    size_t n = strlen(s);
    memcpy(mb->data + mb->len, s, n);
    mb->len += (uint32_t)n;
}

/* A test's pools: 1 kB chunks, 8 of each kept. */
struct pools {
    struct mbuf_pool mp;
    struct msg_pool pp;
};

static void pools_open(struct pools *p)
{
    mbuf_pool_init(&p->mp, 1024, 8);
    msg_pool_init(&p->pp, 8);
}

/* Checks that every chunk and msg went back, then frees the pools. */
static void pools_close(struct pools *p)
{
    assert_int_equal(p->mp.nlive, 0);
    assert_int_equal(p->pp.nlive, 0);
    msg_pool_deinit(&p->pp);
    mbuf_pool_deinit(&p->mp);
}

static void test_append_merges_adjacent(void **state)
{
    (void)state;
    struct pools p;
    pools_open(&p);
    struct mbuf *mb = mbuf_get(&p.mp);
    fill(mb, "hello world");
    struct msg *m = msg_get(&p.pp);
    assert_int_equal(msg_append(m, mb, 0, 5), 0);
    assert_int_equal(msg_append(m, mb, 5, 6), 0);
    assert_int_equal(m->nspans, 1);
    assert_int_equal(m->len, 11);
    assert_int_equal(mb->refs, 2);
    mbuf_unref(mb);
    msg_put(&p.pp, m);
    pools_close(&p);
}

static void test_slice_across_mbufs(void **state)
{
    (void)state;
    struct pools p;
    pools_open(&p);
    struct mbuf *a = mbuf_get(&p.mp), *b = mbuf_get(&p.mp);
    fill(a, "0123456789");
    fill(b, "abcdefghij");
    struct msg *src = msg_get(&p.pp), *dst = msg_get(&p.pp);
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
    msg_put(&p.pp, src);
    msg_put(&p.pp, dst);
    pools_close(&p);
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
    struct pools p;
    pools_open(&p);
    struct msg *m = msg_get(&p.pp);
    static const uint8_t k[] = "k";
    for (uint32_t i = 0; i < MSG_KEYS_MAX; i++) assert_int_equal(msg_add_key(m, k, 1, i, i + 1), 0);
    assert_int_equal(m->nkeys, MSG_KEYS_MAX);
    assert_int_equal(msg_add_key(m, k, 1, 0, 1), -E2BIG);
    assert_int_equal(m->nkeys, MSG_KEYS_MAX);
    msg_put(&p.pp, m);
    msg_pool_deinit(&p.pp);
}

static char *text_of(const struct msg *m, char *out, size_t size)
{
    size_t n = msg_copy_out(m, 0, out, size - 1);
    assert_int_equal(n, m->len);
    out[n] = '\0';
    return out;
}

/* A pooled msg keeps its own chunk: the next msg_get of it reuses it, emptied, with no allocation. */
static void test_own_reused(void **state)
{
    (void)state;
    struct pools p;
    pools_open(&p);
    struct msg *m = msg_get(&p.pp);
    assert_null(m->own);
    uint8_t *at = msg_own(m, 10);
    assert_non_null(at);
    struct mbuf *own = m->own;
    assert_ptr_equal(at, own->data);
    assert_int_equal(msg_append_own(m, "MN\r\n", 4), 0);
    assert_int_equal(own->len, 14);
    assert_int_equal(own->refs, 2); /* the msg and its span */
    char out[64];
    assert_string_equal(text_of(m, out, sizeof(out)), "MN\r\n");
    msg_put(&p.pp, m);
    struct msg *again = msg_get(&p.pp);
    assert_ptr_equal(again, m);
    assert_ptr_equal(again->own, own);
    assert_int_equal(own->refs, 1);
    assert_int_equal(own->len, 0);
    assert_int_equal(again->len, 0);
    assert_ptr_equal(msg_own(again, 3), own->data);
    msg_put(&p.pp, again);
    pools_close(&p); /* frees the chunk with the msg (ASan: no leak) */
}

/* A slice of a msg's own bytes taken by another msg keeps them: the msg gets a fresh chunk. */
static void test_own_replaced_while_a_slice_lives(void **state)
{
    (void)state;
    struct pools p;
    pools_open(&p);
    struct msg *m = msg_get(&p.pp), *dst = msg_get(&p.pp);
    assert_int_equal(msg_append_own(m, "HD\r\n", 4), 0);
    struct mbuf *own = m->own;
    assert_int_equal(msg_append_slice(dst, m, 0, 4), 0);
    assert_int_equal(own->refs, 3);
    msg_put(&p.pp, m);
    assert_int_equal(own->refs, 1); /* dst's span only */
    struct msg *again = msg_get(&p.pp);
    assert_ptr_equal(again, m);
    assert_null(again->own);
    assert_int_equal(msg_append_own(again, "XX", 2), 0);
    assert_ptr_not_equal(again->own, own);
    char out[64];
    assert_string_equal(text_of(dst, out, sizeof(out)), "HD\r\n"); /* untouched */
    assert_string_equal(text_of(again, out, sizeof(out)), "XX");
    msg_put(&p.pp, again);
    msg_put(&p.pp, dst); /* the last reference: the old chunk is freed */
    pools_close(&p);
}

/* msg_own hands out at most MSG_OWN_CAP bytes per use of a msg; a msg freed (no room in the pool)
 * frees its chunk. */
static void test_own_capacity(void **state)
{
    (void)state;
    struct msg_pool pp;
    msg_pool_init(&pp, 0);
    struct msg *m = msg_get(&pp);
    assert_non_null(msg_own(m, MSG_OWN_CAP - 1));
    assert_non_null(msg_own(m, 1));
    assert_null(msg_own(m, 1));
    assert_int_equal(msg_append_own(m, "x", 1), -ENOMEM);
    assert_int_equal(msg_append_own(m, "", 0), 0); /* nothing to append: nothing asked */
    assert_int_equal(m->len, 0);
    msg_put(&pp, m);
    assert_int_equal(pp.nfree, 0);
    msg_pool_deinit(&pp);
}

/* msg_append_copy writes into the own chunk while it has room, then falls back to a literal
 * chunk: the bytes are the same either way. */
static void test_append_copy_own_then_literal(void **state)
{
    (void)state;
    struct pools p;
    pools_open(&p);
    struct msg *m = msg_get(&p.pp);
    assert_int_equal(msg_append_copy(m, "*2\r\n", 4), 0);
    struct mbuf *own = m->own;
    assert_non_null(own);
    assert_int_equal(m->nspans, 1);
    assert_non_null(msg_own(m, MSG_OWN_CAP - 4)); /* the chunk is full now */
    assert_int_equal(msg_append_copy(m, "$3\r\nfoo\r\n", 9), 0);
    assert_int_equal(m->nspans, 2);
    assert_ptr_not_equal(m->spans[1].mb, own); /* a literal */
    assert_int_equal(msg_append_copy(m, "", 0), 0);
    char out[64];
    assert_string_equal(text_of(m, out, sizeof(out)), "*2\r\n$3\r\nfoo\r\n");
    msg_put(&p.pp, m);
    pools_close(&p);
}

/* A split's arrays stay with the msg: the next use gets the same memory (frags zeroed) with no
 * allocation, msg_put leaves them alone, an array of another origin is freed by msg_put, and a
 * msg whose arrays grew past 64 entries is freed rather than pooled. */
static void test_frag_arrays_kept(void **state)
{
    (void)state;
    struct pools p;
    pools_open(&p);
    struct msg *m = msg_get(&p.pp), *f = msg_get(&p.pp);
    struct msg **frags = msg_frags_array(m, 3);
    uint32_t *key_frag = msg_key_frag_array(m, 10);
    assert_non_null(frags);
    assert_non_null(key_frag);
    frags[1] = f;
    key_frag[9] = 2;
    m->frags = frags;
    m->key_frag = key_frag;
    m->nfrags = 3;
    msg_put(&p.pp, m);
    assert_null(m->frags);
    struct msg *again = msg_get(&p.pp);
    assert_ptr_equal(again, m);
    assert_ptr_equal(msg_frags_array(again, 2), frags);
    assert_null(frags[0]);
    assert_null(frags[1]); /* zeroed for its new use */
    assert_ptr_equal(msg_key_frag_array(again, 10), key_frag);
    again->frags = calloc(1, sizeof(struct msg *)); /* another origin's array: msg_put frees it */
    msg_put(&p.pp, again);
    struct msg *big = msg_get(&p.pp);
    assert_non_null(msg_frags_array(big, 65));
    uint32_t nfree = p.pp.nfree;
    msg_put(&p.pp, big);
    assert_int_equal(p.pp.nfree, nfree); /* freed, not kept (ASan: no leak) */
    msg_put(&p.pp, f);
    pools_close(&p);
}

/* msg_trim_tail cuts across spans, unreferencing the ones it empties, down to nothing. */
static void test_trim_tail(void **state)
{
    (void)state;
    struct pools p;
    pools_open(&p);
    struct mbuf *a = mbuf_get(&p.mp), *b = mbuf_get(&p.mp);
    fill(a, "hello");
    fill(b, " world");
    struct msg *m = msg_get(&p.pp);
    assert_int_equal(msg_append(m, a, 0, 5), 0);
    assert_int_equal(msg_append(m, b, 0, 6), 0);
    assert_int_equal(msg_append_literal(m, "MN\r\n", 4), 0);
    assert_int_equal(m->nspans, 3);
    char out[64];
    msg_trim_tail(m, 4); /* exactly the last span */
    assert_int_equal(m->nspans, 2);
    assert_string_equal(text_of(m, out, sizeof(out)), "hello world");
    msg_trim_tail(m, 8); /* across a span boundary */
    assert_int_equal(m->nspans, 1);
    assert_int_equal(b->refs, 1);
    assert_string_equal(text_of(m, out, sizeof(out)), "hel");
    msg_trim_tail(m, 0);
    assert_int_equal(m->len, 3);
    msg_trim_tail(m, 100); /* more than it has: empty */
    assert_int_equal(m->len, 0);
    assert_int_equal(m->nspans, 0);
    assert_int_equal(a->refs, 1);
    mbuf_unref(a);
    mbuf_unref(b);
    msg_put(&p.pp, m);
    pools_close(&p);
}

/* The parser's edits: trim cut first, then the tail appended from the msg's own chunk. */
static void test_finish(void **state)
{
    (void)state;
    struct pools p;
    pools_open(&p);
    struct mbuf *a = mbuf_get(&p.mp);
    fill(a, "EN\r\nMN\r\nmg k q\r\n");
    char out[64];
    struct msg *rsp = msg_get(&p.pp), *req = msg_get(&p.pp), *both = msg_get(&p.pp);
    assert_int_equal(msg_append(rsp, a, 0, 8), 0);
    rsp->trim = 4;
    assert_int_equal(msg_finish(rsp), 0);
    assert_string_equal(text_of(rsp, out, sizeof(out)), "EN\r\n");
    assert_null(rsp->own); /* no tail: nothing of its own */
    assert_int_equal(msg_append(req, a, 8, 8), 0);
    static const uint8_t term[] = "mn\r\n";
    req->tail = term;
    req->tail_len = 4;
    assert_int_equal(msg_finish(req), 0);
    assert_string_equal(text_of(req, out, sizeof(out)), "mg k q\r\nmn\r\n");
    assert_int_equal(req->nspans, 2);
    assert_int_equal(msg_append(both, a, 4, 4), 0); /* "MN\r\n" alone: trimmed to nothing */
    both->trim = 4;
    both->tail = term;
    both->tail_len = 2;
    assert_int_equal(msg_finish(both), 0);
    assert_string_equal(text_of(both, out, sizeof(out)), "mn");
    assert_int_equal(both->nspans, 1);
    mbuf_unref(a);
    msg_put(&p.pp, rsp);
    msg_put(&p.pp, req);
    msg_put(&p.pp, both);
    pools_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_merges_adjacent),
        cmocka_unit_test(test_slice_across_mbufs),
        cmocka_unit_test(test_pool_bounds_free_list),
        cmocka_unit_test(test_keys_capped),
        cmocka_unit_test(test_own_reused),
        cmocka_unit_test(test_own_replaced_while_a_slice_lives),
        cmocka_unit_test(test_own_capacity),
        cmocka_unit_test(test_append_copy_own_then_literal),
        cmocka_unit_test(test_frag_arrays_kept),
        cmocka_unit_test(test_trim_tail),
        cmocka_unit_test(test_finish),
    };
    return cmocka_run_group_tests_name("msg", tests, NULL, NULL);
}
