/*
 * test_secret.c - unit tests of the constant-time password comparison (common/secret.h): equal
 * passwords only, whatever the lengths; a given password longer than the secret that repeats it is
 * not equal; an empty secret equals nothing.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/secret.h"

static bool eq(const char *given, const char *secret)
{
    return nc_secret_equal(given, strlen(given), secret, strlen(secret));
}

static void test_equal_only_when_equal(void **state)
{
    (void)state;
    assert_true(eq("s3cret", "s3cret"));
    assert_false(eq("s3creT", "s3cret"));  /* the last byte */
    assert_false(eq("S3cret", "s3cret"));  /* the first */
    assert_false(eq("s3cre", "s3cret"));   /* a prefix */
    assert_false(eq("s3crets3cret", "s3cret")); /* the secret twice: compared against it again */
    assert_false(eq("s3cretX", "s3cret"));
    assert_false(eq("", "s3cret"));
    assert_true(nc_secret_equal("a\0b", 3, "a\0b", 3)); /* bytes, not strings */
    assert_false(nc_secret_equal("a\0c", 3, "a\0b", 3));
}

static void test_empty_secret_equals_nothing(void **state)
{
    (void)state;
    assert_false(eq("", ""));
    assert_false(eq("x", ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_only_when_equal),
        cmocka_unit_test(test_empty_secret_equals_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
