/*
 * test_textbuf.c - unit tests of the growable text buffer (common/textbuf.h): a zeroed buffer has
 * no limit and grows past many reallocations, formatted appends longer than the small stack
 * buffer, numbers at their extremes, a limit that fails the append that would pass it (and every
 * later one) while keeping what came before, and reset/deinit.
 *
 * Threads: the test's.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/textbuf.h"

static void test_zeroed_has_no_limit(void **state)
{
    (void)state;
    struct textbuf b = { 0 };
    char chunk[1000];
    memset(chunk, 'x', sizeof(chunk));
    for (int i = 0; i < 3000; i++) textbuf_add(&b, chunk, sizeof(chunk)); /* 3 MB: many doublings */
    assert_false(textbuf_failed(&b));
    assert_int_equal(b.len, 3000u * sizeof(chunk));
    assert_true(b.cap >= b.len);
    assert_int_equal(b.data[b.len - 1], 'x');
    textbuf_deinit(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
}

static void test_formats_and_numbers(void **state)
{
    (void)state;
    struct textbuf b = { 0 };
    char big[600];
    memset(big, 'y', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    textbuf_addf(&b, "<%s>", big); /* longer than the stack buffer of addf */
    assert_int_equal(b.len, sizeof(big) + 1);
    assert_int_equal(b.data[0], '<');
    assert_int_equal(b.data[b.len - 1], '>');
    textbuf_reset(&b);
    textbuf_add_u64(&b, UINT64_MAX);
    textbuf_addc(&b, ' ');
    textbuf_add_i64(&b, INT64_MIN);
    textbuf_addc(&b, ' ');
    textbuf_add_u64(&b, 0);
    textbuf_adds(&b, "!");
    assert_int_equal(b.len, strlen("18446744073709551615 -9223372036854775808 0!"));
    assert_memory_equal(b.data, "18446744073709551615 -9223372036854775808 0!", b.len);
    textbuf_deinit(&b);
}

static void test_limit_fails_and_sticks(void **state)
{
    (void)state;
    struct textbuf b;
    textbuf_init(&b, 10);
    textbuf_adds(&b, "0123456789"); /* exactly the limit */
    assert_false(textbuf_failed(&b));
    textbuf_addc(&b, 'z');
    assert_true(textbuf_failed(&b));
    assert_int_equal(b.len, 10);
    textbuf_adds(&b, ""); /* nothing to add: still failed, nothing changed */
    textbuf_reset(&b);
    assert_false(textbuf_failed(&b));
    assert_int_equal(b.len, 0);
    textbuf_addf(&b, "%s", "longer than ten bytes");
    assert_true(textbuf_failed(&b));
    textbuf_adds(&b, "a");
    assert_int_equal(b.len, 0);
    textbuf_deinit(&b);
    assert_int_equal(b.limit, 10); /* deinit keeps the limit: the buffer may be used again */
    textbuf_adds(&b, "abc");
    assert_false(textbuf_failed(&b));
    assert_memory_equal(b.data, "abc", 3);
    textbuf_deinit(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zeroed_has_no_limit),
        cmocka_unit_test(test_formats_and_numbers),
        cmocka_unit_test(test_limit_fails_and_sticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
