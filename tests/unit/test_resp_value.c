/*
 * test_resp_value.c - unit tests of the RESP reply reader the Sentinel source uses
 * (topo/resp_value.h): every type, nested arrays, replies cut at every byte (more is needed,
 * never a wrong value), RESP3 maps read flat, field lookup, and what is refused (not RESP, past
 * the depth and size limits).
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "topo/resp_value.h"

static void parse_all(const char *text, struct resp_value *v)
{
    ssize_t n = resp_value_parse(text, strlen(text), v);
    assert_int_equal(n, (ssize_t)strlen(text));
}

static void test_scalars(void **state)
{
    (void)state;
    struct resp_value v;
    parse_all("+OK\r\n", &v);
    assert_int_equal(v.type, RESP_STATUS);
    assert_string_equal(v.str, "OK");
    resp_value_free(&v);
    parse_all("-ERR No such master with that name\r\n", &v);
    assert_int_equal(v.type, RESP_ERROR);
    assert_string_equal(v.str, "ERR No such master with that name");
    resp_value_free(&v);
    parse_all(":-42\r\n", &v);
    assert_int_equal(v.type, RESP_INT);
    assert_int_equal(v.num, -42);
    resp_value_free(&v);
    parse_all("$-1\r\n", &v);
    assert_int_equal(v.type, RESP_NIL);
    resp_value_free(&v);
    parse_all("$5\r\na\r\nbc\r\n", &v); /* a bulk holds CR LF */
    assert_int_equal(v.type, RESP_BULK);
    assert_int_equal(v.len, 5);
    assert_memory_equal(v.str, "a\r\nbc", 5);
    resp_value_free(&v);
}

static const char master_reply[] = "*8\r\n$4\r\nname\r\n$6\r\nshard0\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n"
                                   "$4\r\nport\r\n$4\r\n7101\r\n$12\r\nconfig-epoch\r\n$1\r\n3\r\n";

static void test_fields_of_a_flat_array(void **state)
{
    (void)state;
    struct resp_value v;
    parse_all(master_reply, &v);
    assert_int_equal(v.type, RESP_ARRAY);
    assert_int_equal(v.n, 8);
    assert_string_equal(resp_value_field(&v, "ip"), "127.0.0.1");
    assert_string_equal(resp_value_field(&v, "port"), "7101");
    assert_string_equal(resp_value_field(&v, "config-epoch"), "3");
    assert_null(resp_value_field(&v, "flags"));
    assert_string_equal(resp_value_str(&v, 1), "shard0");
    assert_null(resp_value_str(&v, 8));
    resp_value_free(&v);
    parse_all("%1\r\n+ip\r\n+::1\r\n", &v); /* a RESP3 map reads as a flat array */
    assert_string_equal(resp_value_field(&v, "ip"), "::1");
    resp_value_free(&v);
}

static void test_every_cut_needs_more(void **state)
{
    (void)state;
    const char msg[] = "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$6\r\nshard0\r\n";
    for (size_t cut = 0; cut < strlen(msg); cut++) {
        struct resp_value v;
        assert_int_equal(resp_value_parse(msg, cut, &v), 0);
    }
    struct resp_value v;
    parse_all(msg, &v);
    assert_string_equal(resp_value_str(&v, 1), "+switch-master");
    resp_value_free(&v);
}

static void test_refused(void **state)
{
    (void)state;
    struct resp_value v;
    const char *bad[] = { "?x\r\n", ":12a\r\n", "$3\r\nabcd\r\n", "*x\r\n", "$99999999\r\n" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(resp_value_parse(bad[i], strlen(bad[i]), &v), -1);
    char deep[64] = "";
    for (int i = 0; i <= RESP_VALUE_MAX_DEPTH; i++) strcat(deep, "*1\r\n");
    strcat(deep, ":1\r\n");
    assert_int_equal(resp_value_parse(deep, strlen(deep), &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_fields_of_a_flat_array),
        cmocka_unit_test(test_every_cut_needs_more),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
