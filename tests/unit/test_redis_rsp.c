/*
 * test_redis_rsp.c - unit tests of the redis response parser (every RESP2 and RESP3 type alone
 * and nested, attributes, nil, nesting to depth 1000 and past the limit, top-level elements, fatal
 * errors, malformed replies of each type, every split point, long values over small mbufs) and of
 * fragment + coalesce for MGET, DEL, UNLINK, TOUCH, EXISTS and MSET with keys spread over 3
 * servers, their fake replies (RESP2 and RESP3) parsed by the response parser.
 * Threads: the test's only.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/util.h"
#include "proto/proto.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"
#include "proto_drv.h"

#define BIG_MBUF 16384
#define SMALL_MBUF 512

/* ---------------------------------------------------------------- response types */

struct rsp_vector {
    const char *in;
    uint8_t type;
    int64_t integer;
    bool fatal;
};

static const struct rsp_vector rsp_vectors[] = {
    { "+OK\r\n", RSP_STATUS, 0, false },
    { "+\r\n", RSP_STATUS, 0, false },
    { "-ERR unknown command 'foo'\r\n", RSP_ERROR, 0, false },
    { "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", RSP_ERROR, 0, false },
    { ":42\r\n", RSP_INTEGER, 42, false },
    { ":-7\r\n", RSP_INTEGER, -7, false },
    { ":0\r\n", RSP_INTEGER, 0, false },
    { ":9223372036854775807\r\n", RSP_INTEGER, INT64_MAX, false },
    { "$3\r\nfoo\r\n", RSP_BULK, 0, false },
    { "$0\r\n\r\n", RSP_BULK, 0, false },
    { "$4\r\n\r\n\r\n\r\n", RSP_BULK, 0, false },
    { "$-1\r\n", RSP_NIL_BULK, 0, false },
    { "*0\r\n", RSP_ARRAY, 0, false },
    { "*-1\r\n", RSP_NIL_ARRAY, 0, false },
    { "*2\r\n$1\r\na\r\n:1\r\n", RSP_ARRAY, 0, false },
    { "*1\r\n-LOADING in an array\r\n", RSP_ARRAY, 0, false },
    { "*3\r\n*0\r\n*-1\r\n*1\r\n$-1\r\n", RSP_ARRAY, 0, false },
    { "*2\r\n+OK\r\n-ERR x\r\n", RSP_ARRAY, 0, false },
    /* fatal errors */
    { "-LOADING Redis is loading the dataset in memory\r\n", RSP_ERROR, 0, true },
    { "-LOADING\r\n", RSP_ERROR, 0, true },
    { "-LOADINGX\r\n", RSP_ERROR, 0, false },
    { "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n",
      RSP_ERROR, 0, true },
    { "-BUSYKEY Target key name already exists.\r\n", RSP_ERROR, 0, false },
    { "-BUSYGROUP Consumer Group name already exists\r\n", RSP_ERROR, 0, false },
    { "-NOAUTH Authentication required.\r\n", RSP_ERROR, 0, true },
    { "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.\r\n",
      RSP_ERROR, 0, true },
    { "-ERR max number of clients reached\r\n", RSP_ERROR, 0, true },
    { "-ERR max number of clients\r\n", RSP_ERROR, 0, false },
    { "-OOM command not allowed when used memory > 'maxmemory'.\r\n", RSP_ERROR, 0, false },
    { "-MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist\r\n",
      RSP_ERROR, 0, true },
    { "-READONLY You can't write against a read only replica.\r\n", RSP_ERROR, 0, false },
    { "-\r\n", RSP_ERROR, 0, false },
};

static void test_rsp_types(void **state)
{
    (void)state;
    for (size_t i = 0; i < NC_ARRAY_LEN(rsp_vectors); i++) {
        const struct rsp_vector *v = &rsp_vectors[i];
        size_t len = strlen(v->in);
        for (size_t cut = 0; cut <= len + 1; cut++) {
            struct tenv e;
            struct drv d;
            drv_open(&d, &e, cut % 2 ? SMALL_MBUF : BIG_MBUF, &redis_proto, true, cut % 3 == 0);
            if (cut == len + 1) drv_feed(&d, v->in, len, 1);
            else drv_feed2(&d, v->in, len, cut);
            assert_false(d.failed);
            assert_int_equal(d.nout, 1);
            assert_int_equal(drv_pending(&d), 0);
            struct msg *m = d.out[0];
            assert_int_equal(m->len, len);
            if (m->rsp_type != v->type || m->rsp_fatal != v->fatal)
                print_error("vector %zu: %s", i, v->in);
            assert_int_equal(m->rsp_type, v->type);
            assert_int_equal(m->rsp_fatal, v->fatal);
            if (v->type == RSP_INTEGER) assert_int_equal(m->integer, v->integer);
            drv_close(&d);
        }
    }
}

struct rsp_err_vector {
    const char *in;
    const char *error;
};

static const struct rsp_err_vector rsp_err_vectors[] = {
    { "?x\r\n", "unknown reply type" },
    { "*2\r\n:1\r\n?\r\n", "unknown reply type" },
    { "$abc\r\n", "invalid bulk length" },
    { "$-2\r\n", "invalid bulk length" },
    { "$01\r\n", "invalid bulk length" },
    { "*-2\r\n", "invalid array length" },
    { "*1\r\n*x\r\n", "invalid array length" },
    { ":abc\r\n", "invalid integer reply" },
    { ":1\n:2\r\n", "invalid integer reply" },
    { ":1111111111111111111111111111111111111111\r\n", "invalid integer reply" },
    { "$3\r\nabcXY", "expected CRLF after bulk data" },
    /* RESP3 */
    { ";4\r\nHell\r\n", "unknown reply type" },
    { ".\r\n", "unknown reply type" },
    { "*1\r\n.\r\n", "unknown reply type" },
    { "$?\r\n;4\r\nHell\r\n;0\r\n", "streamed replies are not supported" },
    { "*?\r\n:1\r\n.\r\n", "streamed replies are not supported" },
    { "%?\r\n+a\r\n:1\r\n.\r\n", "streamed replies are not supported" },
    { "~?\r\n", "streamed replies are not supported" },
    { "*2\r\n:1\r\n~?\r\n", "streamed replies are not supported" },
    { ":?\r\n", "invalid integer reply" },
    { "%-1\r\n", "invalid map length" },
    { "%x\r\n", "invalid map length" },
    { "%4611686018427387904\r\n", "invalid map length" },
    { "*1\r\n%01\r\n", "invalid map length" },
    { "~-1\r\n", "invalid set length" },
    { "~1x\r\n", "invalid set length" },
    { "|-1\r\n", "invalid attribute length" },
    { "|4611686018427387904\r\n", "invalid attribute length" },
    { "*1\r\n|1\r\n+a\r\n|\r\n", "invalid attribute length" },
    { ">-1\r\n", "invalid push length" },
    { ">\r\n", "invalid push length" },
    { "!-1\r\n", "invalid blob error length" },
    { "!a\r\n", "invalid blob error length" },
    { "!3\r\nERRxx", "expected CRLF after bulk data" },
    { "*1\r\n!3\r\nERR\n\n", "expected CRLF after bulk data" },
    { "!60\r\nLOADING Redis is loading the dataset in memory ..........\r\n:1\r\n",
      "expected CRLF after bulk data" },
    { "=3\r\ntxt\r\n", "invalid verbatim string length" },
    { "=-1\r\n", "invalid verbatim string length" },
    { "=5\r\ntxt_x\r\n", "invalid verbatim string format" },
    { "*1\r\n=8\r\ntxtx:abc\r\n", "invalid verbatim string format" },
    { "=4\r\ntxt:XY", "expected CRLF after bulk data" },
    { "_x\r\n", "invalid null reply" },
    { "_\r\r", "invalid null reply" },
    { "_\n", "invalid null reply" },
    { "*2\r\n_\r\n_ \r\n", "invalid null reply" },
    { "#x\r\n", "invalid boolean reply" },
    { "#T\r\n", "invalid boolean reply" },
    { "#\r\n", "invalid boolean reply" },
    { "#tt\r\n", "invalid boolean reply" },
    { "#t\n", "invalid boolean reply" },
    { ",\r\n", "invalid double reply" },
    { ",1.\r\n", "invalid double reply" },
    { ",.5\r\n", "invalid double reply" },
    { ",-.5\r\n", "invalid double reply" },
    { ",1e\r\n", "invalid double reply" },
    { ",1e+\r\n", "invalid double reply" },
    { ",1e5.0\r\n", "invalid double reply" },
    { ",1.5.2\r\n", "invalid double reply" },
    { ",--1\r\n", "invalid double reply" },
    { ",+1\r\n", "invalid double reply" },
    { ",-\r\n", "invalid double reply" },
    { ",1.5x\r\n", "invalid double reply" },
    { ",1 \r\n", "invalid double reply" },
    { ",in\r\n", "invalid double reply" },
    { ",infx\r\n", "invalid double reply" },
    { ",infinityx\r\n", "invalid double reply" },
    { ",inf(1)\r\n", "invalid double reply" },
    { ",nan(\r\n", "invalid double reply" },
    { ",nan(a b)\r\n", "invalid double reply" },
    { ",nan()x\r\n", "invalid double reply" },
    { ",1\rx", "invalid double reply" },
    { ",1\n:1\r\n", "invalid double reply" },
    { "(\r\n", "invalid big number reply" },
    { "(1.5\r\n", "invalid big number reply" },
    { "(-\r\n", "invalid big number reply" },
    { "(12a\r\n", "invalid big number reply" },
    { "(inf\r\n", "invalid big number reply" },
    { "(1e5\r\n", "invalid big number reply" },
    { "(1\r1", "invalid big number reply" },
    { "|1\r\n+a\r\n+b\r\n(1x\r\n", "invalid big number reply" },
};

/* Read k (0 <= k < len + 2) of in[0..len): all at once (0), byte by byte (1), or in two reads cut
 * at byte k - 2; into small mbufs for odd k, big ones else. Opens d and feeds it; returns whether
 * elements are recorded (not for k % 3 == 1). */
static bool feed_kth(struct drv *d, struct tenv *e, const char *in, size_t len, size_t k)
{
    bool want = k % 3 != 1;
    drv_open(d, e, k % 2 ? SMALL_MBUF : BIG_MBUF, &redis_proto, true, want);
    if (k < 2) drv_feed(d, in, len, k);
    else drv_feed2(d, in, len, k - 2);
    return want;
}

static void test_rsp_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < NC_ARRAY_LEN(rsp_err_vectors); i++) {
        const struct rsp_err_vector *v = &rsp_err_vectors[i];
        size_t len = strlen(v->in);
        for (size_t k = 0; k < len + 2; k++) {
            struct tenv e;
            struct drv d;
            feed_kth(&d, &e, v->in, len, k);
            if (!d.failed || strcmp(d.error, v->error) != 0)
                print_error("error vector %zu (k %zu): %s\n", i, k, v->in);
            assert_true(d.failed);
            assert_false(d.gave_up);
            assert_string_equal(d.error, v->error);
            drv_close(&d);
        }
    }
}

/* ---------------------------------------------------------------- RESP3 types */

struct resp3_vector {
    const char *in;
    uint8_t type;
    bool fatal;
    int64_t integer;
    int nelems;              /* with want_elems: the top-level elements, each as text */
    const char *elems[6];
};

static const struct resp3_vector resp3_vectors[] = {
    /* alone */
    { "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", RSP_MAP, false, 0, 4,
      { "+first\r\n", ":1\r\n", "+second\r\n", ":2\r\n" } },
    { "%0\r\n", RSP_MAP, false, 0, 0, { NULL } },
    { "~3\r\n+orange\r\n#t\r\n:100\r\n", RSP_SET, false, 0, 3, { "+orange\r\n", "#t\r\n", ":100\r\n" } },
    { "~0\r\n", RSP_SET, false, 0, 0, { NULL } },
    { ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n", RSP_PUSH, false, 0, 3,
      { "$7\r\nmessage\r\n", "$2\r\nch\r\n", "$5\r\nhello\r\n" } },
    { ">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nkey\r\n", RSP_PUSH, false, 0, 2,
      { "$10\r\ninvalidate\r\n", "*1\r\n$3\r\nkey\r\n" } },
    { ">0\r\n", RSP_PUSH, false, 0, 0, { NULL } },
    { ",1.23\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",10\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",0\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",-1.5e+20\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",1E5\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",0.5e-3\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",-1.7976931348623157e+308\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",inf\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",-inf\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",nan\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",-nan\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",NAN\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",nan(0x7_ff)\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",nan()\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { ",-Infinity\r\n", RSP_DOUBLE, false, 0, 0, { NULL } },
    { "#t\r\n", RSP_BOOL, false, 0, 0, { NULL } },
    { "#f\r\n", RSP_BOOL, false, 0, 0, { NULL } },
    { "_\r\n", RSP_NULL, false, 0, 0, { NULL } },
    { "(3492890328409238509324850943850943825024385\r\n", RSP_BIGNUM, false, 0, 0, { NULL } },
    { "(-1\r\n", RSP_BIGNUM, false, 0, 0, { NULL } },
    { "(0\r\n", RSP_BIGNUM, false, 0, 0, { NULL } },
    { "=15\r\ntxt:Some string\r\n", RSP_VERBATIM, false, 0, 0, { NULL } },
    { "=4\r\nmkd:\r\n", RSP_VERBATIM, false, 0, 0, { NULL } },
    { "=6\r\ntxt:\r\n\r\n", RSP_VERBATIM, false, 0, 0, { NULL } },
    { "!21\r\nSYNTAX invalid syntax\r\n", RSP_BLOB_ERROR, false, 0, 0, { NULL } },
    { "!0\r\n\r\n", RSP_BLOB_ERROR, false, 0, 0, { NULL } },
    { "!13\r\nBUSY x\r\ny z\r\n\r\n", RSP_BLOB_ERROR, true, 0, 0, { NULL } },
    /* the -LOADING/-BUSY/... list applies to blob errors */
    { "!7\r\nLOADING\r\n", RSP_BLOB_ERROR, true, 0, 0, { NULL } },
    { "!8\r\nLOADINGX\r\n", RSP_BLOB_ERROR, false, 0, 0, { NULL } },
    { "!46\r\nLOADING Redis is loading the dataset in memory\r\n", RSP_BLOB_ERROR, true, 0, 0, { NULL } },
    { "!33\r\nERR max number of clients reached\r\n", RSP_BLOB_ERROR, true, 0, 0, { NULL } },
    { "!35\r\nMASTERDOWN Link with MASTER is down\r\n", RSP_BLOB_ERROR, true, 0, 0, { NULL } },
    { "!31\r\nNOAUTH Authentication required.\r\n", RSP_BLOB_ERROR, true, 0, 0, { NULL } },
    { "!65\r\nBUSY bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n", RSP_BLOB_ERROR,
      true, 0, 0, { NULL } },
    { "!65\r\nBUSYbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\r\n", RSP_BLOB_ERROR,
      false, 0, 0, { NULL } },
    /* attributes before a value at the top level: the reply is the value's type */
    { "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
      "*2\r\n:2039123\r\n:9543892\r\n", RSP_ARRAY, false, 0, 2, { ":2039123\r\n", ":9543892\r\n" } },
    { "|1\r\n+ttl\r\n:3600\r\n:5\r\n", RSP_INTEGER, false, 5, 0, { NULL } },
    { "|0\r\n+OK\r\n", RSP_STATUS, false, 0, 0, { NULL } },
    { "|1\r\n+a\r\n+b\r\n-LOADING x\r\n", RSP_ERROR, true, 0, 0, { NULL } },
    { "|1\r\n+a\r\n+b\r\n!7\r\nLOADING\r\n", RSP_BLOB_ERROR, true, 0, 0, { NULL } },
    { "|1\r\n+a\r\n+b\r\n|1\r\n+c\r\n+d\r\n_\r\n", RSP_NULL, false, 0, 0, { NULL } },
    { "|1\r\n*1\r\n:1\r\n%1\r\n+x\r\n+y\r\n$1\r\nv\r\n", RSP_BULK, false, 0, 0, { NULL } },
    { "|1\r\n+a\r\n|1\r\n+in\r\n+attr\r\n+b\r\n:7\r\n", RSP_INTEGER, false, 7, 0, { NULL } },
    { "|2\r\n+a\r\n:1\r\n+b\r\n:2\r\n>1\r\n+x\r\n", RSP_PUSH, false, 0, 1, { "+x\r\n" } },
    { "|1\r\n+a\r\n+b\r\n%1\r\n+k\r\n+v\r\n", RSP_MAP, false, 0, 2, { "+k\r\n", "+v\r\n" } },
    { "|1\r\n+a\r\n+b\r\n$-1\r\n", RSP_NIL_BULK, false, 0, 0, { NULL } },
    /* nested: inside arrays, maps, sets, attributes before elements */
    { "*3\r\n:1\r\n:2\r\n|1\r\n+ttl\r\n:3600\r\n:3\r\n", RSP_ARRAY, false, 0, 3,
      { ":1\r\n", ":2\r\n", "|1\r\n+ttl\r\n:3600\r\n:3\r\n" } },
    { "*3\r\n$2\r\nv0\r\n_\r\n$0\r\n\r\n", RSP_ARRAY, false, 0, 3, { "$2\r\nv0\r\n", "_\r\n", "$0\r\n\r\n" } },
    { "*5\r\n#t\r\n#f\r\n_\r\n,nan\r\n(-12\r\n", RSP_ARRAY, false, 0, 5,
      { "#t\r\n", "#f\r\n", "_\r\n", ",nan\r\n", "(-12\r\n" } },
    { "%2\r\n|1\r\n+a\r\n+b\r\n+key\r\n~2\r\n,1.5\r\n(12\r\n=5\r\ntxt:x\r\n!3\r\nERR\r\n", RSP_MAP, false,
      0, 4, { "|1\r\n+a\r\n+b\r\n+key\r\n", "~2\r\n,1.5\r\n(12\r\n", "=5\r\ntxt:x\r\n", "!3\r\nERR\r\n" } },
    { "*1\r\n%1\r\n+k\r\n*1\r\n~1\r\n|1\r\n+a\r\n+b\r\n=5\r\ntxt:x\r\n", RSP_ARRAY, false, 0, 1,
      { "%1\r\n+k\r\n*1\r\n~1\r\n|1\r\n+a\r\n+b\r\n=5\r\ntxt:x\r\n" } },
    { "~2\r\n|1\r\n+a\r\n+b\r\n:1\r\n%0\r\n", RSP_SET, false, 0, 2, { "|1\r\n+a\r\n+b\r\n:1\r\n", "%0\r\n" } },
    { "*2\r\n|0\r\n:1\r\n|0\r\n|0\r\n:2\r\n", RSP_ARRAY, false, 0, 2, { "|0\r\n:1\r\n", "|0\r\n|0\r\n:2\r\n" } },
    { "*2\r\n|1\r\n+a\r\n*1\r\n:1\r\n:2\r\n:3\r\n", RSP_ARRAY, false, 0, 2,
      { "|1\r\n+a\r\n*1\r\n:1\r\n:2\r\n", ":3\r\n" } },
    { "*2\r\n!3\r\nERR\r\n!7\r\nLOADING\r\n", RSP_ARRAY, false, 0, 2, { "!3\r\nERR\r\n", "!7\r\nLOADING\r\n" } },
    { "*1\r\n>1\r\n:1\r\n", RSP_ARRAY, false, 0, 1, { ">1\r\n:1\r\n" } },
    { "%1\r\n%1\r\n_\r\n#f\r\n|1\r\n%1\r\n+x\r\n,inf\r\n~1\r\n*0\r\n:1\r\n", RSP_MAP, false, 0, 2,
      { "%1\r\n_\r\n#f\r\n", "|1\r\n%1\r\n+x\r\n,inf\r\n~1\r\n*0\r\n:1\r\n" } },
    { ">4\r\n$7\r\nmessage\r\n|1\r\n+a\r\n+b\r\n$2\r\nch\r\n=6\r\ntxt:hi\r\n%1\r\n_\r\n_\r\n", RSP_PUSH,
      false, 0, 4, { "$7\r\nmessage\r\n", "|1\r\n+a\r\n+b\r\n$2\r\nch\r\n", "=6\r\ntxt:hi\r\n", "%1\r\n_\r\n_\r\n" } },
};

static void test_resp3_types(void **state)
{
    (void)state;
    for (size_t i = 0; i < NC_ARRAY_LEN(resp3_vectors); i++) {
        const struct resp3_vector *v = &resp3_vectors[i];
        size_t len = strlen(v->in);
        for (size_t k = 0; k < len + 2; k++) {
            struct tenv e;
            struct drv d;
            bool want = feed_kth(&d, &e, v->in, len, k);
            if (d.failed || d.nout != 1 || d.out[0]->rsp_type != v->type ||
                d.out[0]->rsp_fatal != v->fatal)
                print_error("resp3 vector %zu (k %zu): %s\n", i, k, v->in);
            assert_false(d.failed);
            assert_int_equal(d.nout, 1);
            assert_int_equal(drv_pending(&d), 0);
            struct msg *m = d.out[0];
            assert_int_equal(m->len, len);
            assert_int_equal(m->rsp_type, v->type);
            assert_int_equal(m->rsp_fatal, v->fatal);
            if (v->type == RSP_INTEGER) assert_int_equal(m->integer, v->integer);
            assert_int_equal(m->nelems, want ? (uint32_t)v->nelems : 0);
            for (uint32_t j = 0; j < m->nelems; j++) {
                char *t = msg_range_text(m, m->elems[j].start, m->elems[j].end);
                assert_string_equal(t, v->elems[j]);
                free(t);
            }
            drv_close(&d);
        }
    }
}

/* All the RESP3 vectors, then all the RESP2 ones, as one stream. */
static size_t build_resp23_stream(char *out, size_t size, size_t *nmsgs)
{
    size_t n = 0;
    *nmsgs = 0;
    for (size_t i = 0; i < NC_ARRAY_LEN(resp3_vectors); i++, (*nmsgs)++)
        n += (size_t)snprintf(out + n, size - n, "%s", resp3_vectors[i].in);
    for (size_t i = 0; i < NC_ARRAY_LEN(rsp_vectors); i++, (*nmsgs)++)
        n += (size_t)snprintf(out + n, size - n, "%s", rsp_vectors[i].in);
    assert_true(n < size);
    return n;
}

/* Long RESP3 values crossing 512-byte mbufs: doubles and big numbers of thousands of digits (a
 * module's long double), verbatim strings, blob errors, maps. */
static size_t build_resp3_long(char *out, size_t size, size_t *nmsgs)
{
    size_t n = 0;
    n += (size_t)snprintf(out + n, size - n, ",-1");
    for (int i = 0; i < 3000; i++) out[n++] = (char)('0' + i % 10);
    n += (size_t)snprintf(out + n, size - n, ".5");
    for (int i = 0; i < 900; i++) out[n++] = (char)('0' + i % 7);
    n += (size_t)snprintf(out + n, size - n, "e-1234\r\n(");
    for (int i = 0; i < 2000; i++) out[n++] = (char)('1' + i % 9);
    n += (size_t)snprintf(out + n, size - n, "\r\n=1504\r\ntxt:");
    for (int i = 0; i < 1500; i++) out[n++] = (char)(i % 50 == 0 ? '\n' : 'a' + i % 26);
    n += (size_t)snprintf(out + n, size - n, "\r\n!1000\r\nLOADING ");
    for (int i = 0; i < 992; i++) out[n++] = (char)('A' + i % 26);
    n += (size_t)snprintf(out + n, size - n, "\r\n|1\r\n+big\r\n$600\r\n");
    for (int i = 0; i < 600; i++) out[n++] = 'x';
    n += (size_t)snprintf(out + n, size - n, "\r\n%%2\r\n=700\r\nmkd:");
    for (int i = 0; i < 696; i++) out[n++] = '#';
    n += (size_t)snprintf(out + n, size - n, "\r\n,nan(");
    for (int i = 0; i < 800; i++) out[n++] = (char)('a' + i % 26);
    n += (size_t)snprintf(out + n, size - n, ")\r\n+k\r\n>1\r\n(-");
    for (int i = 0; i < 700; i++) out[n++] = '9';
    n += (size_t)snprintf(out + n, size - n, "\r\n");
    *nmsgs = 5;
    assert_true(n < size);
    return n;
}

/* ---------------------------------------------------------------- streams, elements */

static char *rsp_summary(const struct msg *m)
{
    size_t size = 256 + (size_t)m->nelems * 48 + (size_t)m->len;
    char *s = malloc(size);
    assert_non_null(s);
    int n = snprintf(s, size, "len=%" PRIu64 " type=%d int=%" PRId64 " fatal=%d elems=", m->len,
                     m->rsp_type, m->integer, m->rsp_fatal);
    for (uint32_t i = 0; i < m->nelems; i++)
        n += snprintf(s + n, size - (size_t)n, "[%" PRIu64 ",%" PRIu64 ")", m->elems[i].start,
                      m->elems[i].end);
    char *t = msg_text(m);
    snprintf(s + n, size - (size_t)n, " %s", t);
    free(t);
    return s;
}

/* a stream of replies of every kind, long lines and bulks crossing 512-byte mbufs */
static size_t build_rsp_stream(char *out, size_t size)
{
    size_t n = 0;
    n += (size_t)snprintf(out + n, size - n, "+OK\r\n:12\r\n$-1\r\n*-1\r\n*0\r\n$0\r\n\r\n");
    n += (size_t)snprintf(out + n, size - n, "*4\r\n$1\r\na\r\n$-1\r\n*2\r\n:1\r\n:2\r\n+OK\r\n");
    n += (size_t)snprintf(out + n, size - n, "-BUSY Redis is busy running a script. You can only "
                                             "call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n");
    n += (size_t)snprintf(out + n, size - n, "+");
    for (int i = 0; i < 700; i++) out[n++] = (char)('a' + i % 26);
    n += (size_t)snprintf(out + n, size - n, "\r\n-ERR ");
    for (int i = 0; i < 700; i++) out[n++] = (char)('a' + i % 26);
    n += (size_t)snprintf(out + n, size - n, "\r\n*3\r\n$1500\r\n");
    for (int i = 0; i < 1500; i++) out[n++] = (char)('0' + i % 10);
    n += (size_t)snprintf(out + n, size - n, "\r\n*2\r\n*1\r\n*0\r\n-ERR nested\r\n:-5\r\n");
    n += (size_t)snprintf(out + n, size - n, "-LOADING Redis is loading the dataset in memory\r\n");
    assert_true(n < size);
    return n;
}

/* The stream parsed whole, then cut in two at every byte and read in steps of 1 to 50 bytes into
 * small mbufs, with and without elements: every run finds the same msgs. */
static void check_every_split(const char *in, size_t len, size_t nmsgs)
{
    for (int want = 0; want <= 1; want++) {
        struct drv_run ref, r;
        drv_run(&ref, &redis_proto, true, want, BIG_MBUF, in, len, 0, SIZE_MAX, rsp_summary);
        assert_false(ref.failed);
        assert_int_equal(ref.n, nmsgs);
        assert_int_equal(ref.pending, 0);
        for (size_t cut = 0; cut <= len; cut++) {
            drv_run(&r, &redis_proto, true, want, SMALL_MBUF, in, len, 0, cut, rsp_summary);
            drv_run_same(&ref, &r);
        }
        for (size_t step = 1; step <= 50; step++) {
            drv_run(&r, &redis_proto, true, want, SMALL_MBUF, in, len, step, SIZE_MAX, rsp_summary);
            drv_run_same(&ref, &r);
        }
        drv_run_free(&ref);
    }
}

static void test_rsp_stream_every_split(void **state)
{
    (void)state;
    static char in[8192];
    size_t len = build_rsp_stream(in, sizeof(in));
    check_every_split(in, len, 12);
}

static void test_resp3_stream_every_split(void **state)
{
    (void)state;
    static char in[32768];
    size_t nmsgs;
    size_t len = build_resp23_stream(in, sizeof(in), &nmsgs);
    check_every_split(in, len, nmsgs);
    len = build_resp3_long(in, sizeof(in), &nmsgs);
    check_every_split(in, len, nmsgs);
}

static size_t random_reply(char *out, size_t size, uint64_t *seed, int depth, bool resp3);

/* A random RESP3 reply (text: a word of wl bytes for the string types). */
static size_t random_reply3(char *out, size_t size, uint64_t *seed, int depth, const char *word,
                            size_t wl)
{
    static const char *const doubles[] = { "1.5", "-0.25e-3", "10", "0", "inf", "-inf", "nan",
                                           "-nan", "1E+300", "nan(x1)", "-1.7976931348623157e+308" };
    switch (test_rand(seed) % (depth > 0 ? 12 : 8)) {
    case 0: return (size_t)snprintf(out, size, "_\r\n");
    case 1: return (size_t)snprintf(out, size, test_rand(seed) % 2 ? "#t\r\n" : "#f\r\n");
    case 2: return (size_t)snprintf(out, size, ",%s\r\n",
                                    doubles[test_rand(seed) % NC_ARRAY_LEN(doubles)]);
    case 3: return (size_t)snprintf(out, size, "(%s%" PRIu64 "%" PRIu64 "\r\n",
                                    test_rand(seed) % 2 ? "-" : "", test_rand(seed), test_rand(seed));
    case 4: return (size_t)snprintf(out, size, "=%zu\r\ntxt:%s\r\n", wl + 4, word);
    case 5: return (size_t)snprintf(out, size, "!%zu\r\n%s\r\n", wl, word);
    case 6: return (size_t)snprintf(out, size, "!%d\r\nLOADING\r\nx\r\n\r\n", 12);
    case 7: return random_reply(out, size, seed, 0, false);
    case 11: { /* an attribute, then the value it describes */
        int k = (int)(test_rand(seed) % 3);
        size_t n = (size_t)snprintf(out, size, "|%d\r\n", k);
        for (int i = 0; i < 2 * k; i++) n += random_reply(out + n, size - n, seed, depth - 1, true);
        return n + random_reply(out + n, size - n, seed, depth - 1, true);
    }
    default: {
        static const char agg[] = "%~>";
        char t = agg[test_rand(seed) % 3];
        int k = (int)(test_rand(seed) % 5);
        size_t n = (size_t)snprintf(out, size, "%c%d\r\n", t, k);
        for (int i = 0; i < (t == '%' ? 2 * k : k); i++)
            n += random_reply(out + n, size - n, seed, depth - 1, true);
        return n;
    }
    }
}

/* Appends a random reply of depth at most depth (RESP2 types only unless resp3). */
static size_t random_reply(char *out, size_t size, uint64_t *seed, int depth, bool resp3)
{
    static const char text[] = "abc XYZ-:*$+\t";
    char word[64];
    size_t wl = (size_t)(test_rand(seed) % 20);
    if (test_rand(seed) % 8 == 0) wl = (size_t)(test_rand(seed) % 60);
    for (size_t i = 0; i < wl; i++) word[i] = text[test_rand(seed) % (sizeof(text) - 1)];
    word[wl] = '\0';
    if (resp3 && test_rand(seed) % 2) return random_reply3(out, size, seed, depth, word, wl);
    switch (test_rand(seed) % (depth > 0 ? 8 : 6)) {
    case 0: return (size_t)snprintf(out, size, "+%s\r\n", word);
    case 1: return (size_t)snprintf(out, size, "-%s\r\n", test_rand(seed) % 3 ? word : "LOADING x");
    case 2: return (size_t)snprintf(out, size, ":%" PRId64 "\r\n", (int64_t)test_rand(seed));
    case 3: return (size_t)snprintf(out, size, "$-1\r\n");
    case 4: return (size_t)snprintf(out, size, test_rand(seed) % 2 ? "*-1\r\n" : "*0\r\n");
    case 5: return (size_t)snprintf(out, size, "$%zu\r\n%s\r\n", wl, word);
    default: {
        int k = 1 + (int)(test_rand(seed) % 5);
        size_t n = (size_t)snprintf(out, size, "*%d\r\n", k);
        for (int i = 0; i < k; i++) n += random_reply(out + n, size - n, seed, depth - 1, resp3);
        return n;
    }
    }
}

/* rounds streams of random valid replies (RESP3 types too with resp3), then junk_rounds streams of
 * bytes from junk: split at random, into big and small mbufs, each finds what it finds whole. */
static void random_streams(uint64_t seed, int rounds, bool resp3, const char *junk, int junk_rounds)
{
    char *in = malloc(1 << 20);
    assert_non_null(in);
    for (int round = 0; round < rounds; round++) {
        size_t len = 0;
        int n = 1 + (int)(test_rand(&seed) % 20);
        for (int i = 0; i < n; i++) len += random_reply(in + len, (1 << 20) - len, &seed, 5, resp3);
        bool want = round % 2;
        struct drv_run ref; /* every reply is valid */
        drv_run(&ref, &redis_proto, true, want, BIG_MBUF * 4, in, len, 0, SIZE_MAX, rsp_summary);
        if (ref.failed) print_error("%s\n%.*s\n", ref.error, (int)len, in);
        assert_false(ref.failed);
        assert_int_equal(ref.n, n);
        assert_int_equal(ref.pending, 0);
        drv_run_free(&ref);
        drv_fuzz_splits(&redis_proto, true, want, in, len, BIG_MBUF * 4, SMALL_MBUF, 20,
                        1 + len / 8, &seed, rsp_summary);
        drv_fuzz_splits(&redis_proto, true, want, in, len, BIG_MBUF * 4, 0, 3, 3, &seed,
                        rsp_summary);
    }
    size_t njunk = strlen(junk);
    for (int round = 0; round < junk_rounds; round++) {
        size_t len = 1 + (size_t)(test_rand(&seed) % 300);
        for (size_t i = 0; i < len; i++) in[i] = junk[test_rand(&seed) % njunk];
        drv_fuzz_splits(&redis_proto, true, round % 2, in, len, BIG_MBUF, SMALL_MBUF, 4,
                        1 + len / 4, &seed, rsp_summary);
    }
    free(in);
}

static void test_random_replies(void **state)
{
    (void)state;
    random_streams(0xD1B54A32D192ED03ULL, 60, false, "*$:+-\r\n0123456789abc ", 300);
}

static void test_random_resp3_replies(void **state)
{
    (void)state;
    random_streams(0x9E3779B97F4A7C15ULL, 80, true,
                   "*$:+-%~|>,#_(=!?.;\r\n0123456789eE.tfinaINA():xt ", 600);
}

static void test_rsp_elems(void **state)
{
    (void)state;
    static const char in[] = "*4\r\n$1\r\na\r\n$-1\r\n*2\r\n:1\r\n:2\r\n+OK\r\n"
                             "*2\r\n-ERR x\r\n$2\r\nbc\r\n"
                             ":3\r\n";
    for (size_t step = 0; step <= 1; step++) {
        struct tenv e;
        struct drv d;
        drv_open(&d, &e, SMALL_MBUF, &redis_proto, true, true);
        drv_feed(&d, in, sizeof(in) - 1, step);
        assert_int_equal(d.nout, 3);
        struct msg *m = d.out[0];
        assert_int_equal(m->nelems, 4);
        static const uint64_t b[][2] = { { 4, 11 }, { 11, 16 }, { 16, 28 }, { 28, 33 } };
        for (size_t i = 0; i < 4; i++) {
            assert_int_equal(m->elems[i].start, b[i][0]);
            assert_int_equal(m->elems[i].end, b[i][1]);
            assert_null(m->elems[i].key);
        }
        m = d.out[1]; /* offsets are the msg's own */
        assert_int_equal(m->nelems, 2);
        char *t = msg_range_text(m, m->elems[1].start, m->elems[1].end);
        assert_string_equal(t, "$2\r\nbc\r\n");
        free(t);
        assert_int_equal(m->elems[0].start, 4);
        assert_int_equal(d.out[2]->nelems, 0);
        drv_close(&d);
    }
    /* not asked: none recorded */
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, SMALL_MBUF, &redis_proto, true, false);
    drv_feed(&d, in, sizeof(in) - 1, 0);
    assert_int_equal(d.nout, 3);
    assert_int_equal(d.out[0]->nelems, 0);
    drv_close(&d);
}

/* D(0) = ":0\r\n", D(n) = "*2\r\n" D(n-1) ":n\r\n" */
static size_t build_deep(char *out, int depth)
{
    size_t n = 0;
    for (int i = 0; i < depth; i++) n += (size_t)sprintf(out + n, "*2\r\n");
    n += (size_t)sprintf(out + n, ":0\r\n");
    for (int i = 1; i <= depth; i++) n += (size_t)sprintf(out + n, ":%d\r\n", i);
    return n;
}

/* A reply of type type nested deep, of 2 top-level elements (the second one tail bytes long), fed
 * whole and in steps into small mbufs, then the reply next (of type next_type): the parser is
 * ready for it. */
static void check_deep_reply(const char *in, size_t len, size_t tail, uint8_t type,
                             const char *next, uint8_t next_type)
{
    static const size_t steps[] = { 0, 1, 3, 100 };
    for (size_t s = 0; s < NC_ARRAY_LEN(steps); s++) {
        struct tenv e;
        struct drv d;
        drv_open(&d, &e, SMALL_MBUF, &redis_proto, true, true);
        drv_feed(&d, in, len, steps[s]);
        drv_feed(&d, next, strlen(next), 0);
        assert_false(d.failed);
        assert_int_equal(d.nout, 2);
        struct msg *m = d.out[0];
        assert_int_equal(m->len, len);
        assert_int_equal(m->rsp_type, type);
        assert_int_equal(m->nelems, 2);
        assert_int_equal(m->elems[0].start, 4);
        assert_int_equal(m->elems[0].end, len - tail);
        assert_int_equal(m->elems[1].start, len - tail);
        assert_int_equal(m->elems[1].end, len);
        assert_true(d.rd.ps.stack_cap >= 1000);
        assert_int_equal(d.out[1]->rsp_type, next_type);
        drv_close(&d);
    }
}

static void test_rsp_nested_depth_1000(void **state)
{
    (void)state;
    char *in = malloc(65536);
    assert_non_null(in);
    size_t len = build_deep(in, 1000);
    check_deep_reply(in, len, strlen(":1000\r\n"), RSP_ARRAY, "$-1\r\n", RSP_NIL_BULK);
    /* 1000 levels of one-element arrays around a nil */
    len = 0;
    for (int i = 0; i < 1000; i++) len += (size_t)sprintf(in + len, "*1\r\n");
    len += (size_t)sprintf(in + len, "*-1\r\n");
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, SMALL_MBUF, &redis_proto, true, false);
    drv_feed(&d, in, len, 1);
    assert_int_equal(d.nout, 1);
    assert_int_equal(d.out[0]->len, len);
    drv_close(&d);
    free(in);
}

static void test_rsp_too_deep(void **state)
{
    (void)state;
    size_t size = (REDIS_MAX_DEPTH + 2) * 4 + 16;
    char *in = malloc(size);
    assert_non_null(in);
    size_t len = 0;
    for (int i = 0; i <= REDIS_MAX_DEPTH; i++) len += (size_t)sprintf(in + len, "*1\r\n");
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, BIG_MBUF, &redis_proto, true, false);
    drv_feed(&d, in, len, 0);
    assert_true(d.failed);
    assert_string_equal(d.error, "reply nested too deep");
    drv_close(&d);
    free(in);
}

/* What redis-server 7.0 sent a client after HELLO 3: the HELLO map, DEBUG PROTOCOL of each type
 * (an attribute before a reply, a push before one), HGETALL, SMEMBERS, ZSCORE, MGET of a missing
 * key, a client-tracking invalidation push after a SET's +OK, an error, an error script reply,
 * LATENCY DOCTOR's verbatim string, ZRANGE WITHSCORES. */
static const char redis7_resp3[] =
    "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n"
    "$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:3\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
    "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n+OK\r\n:2\r\n"
    ":2\r\n:1\r\n$11\r\nHello World\r\n:12345\r\n,3.141\r\n(123456799999999999999999999999999"
    "9999\r\n"
    "_\r\n*3\r\n:0\r\n:1\r\n:2\r\n~3\r\n:0\r\n:1\r\n:2\r\n%3\r\n:0\r\n"
    "#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n|1\r\n$14\r\nkey-popularity\r\n"
    "*2\r\n$7\r\nkey:123\r\n:90\r\n$39\r\nSome real reply following the attribute\r\n"
    ">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n$40\r\nSome real reply following the push reply"
    "\r\n"
    "=29\r\ntxt:This is a verbatim\nstring\r\n#t\r\n#f\r\n%2\r\n$1\r\n"
    "a\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n~2\r\n$1\r\nx\r\n$1\r\n"
    "y\r\n,1.5\r\n*2\r\n$1\r\nv\r\n_\r\n_\r\n+OK\r\n$1\r\nv\r\n+OK\r\n"
    ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n-ERR unknown command 'XX_NOSUCH', with args "
    "beginning with: \r\n"
    "-LOADING fake\r\n=292\r\ntxt:I'm sorry, Dave, I can't do that. Latency monitoring is dis"
    "abled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <millis"
    "econds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to t"
    "ake a look at https://redis.io/topics/latency-monitor.\n\r\n"
    "*1\r\n*2\r\n$1\r\nm\r\n,1.5\r\n+OK\r\n+PONG\r\n";

static void test_resp3_from_redis7(void **state)
{
    (void)state;
    static const struct {
        uint8_t type;
        uint32_t nelems;
    } want[] = {
        { RSP_MAP, 14 }, { RSP_STATUS, 0 }, { RSP_INTEGER, 0 }, { RSP_INTEGER, 0 },
        { RSP_INTEGER, 0 }, { RSP_BULK, 0 }, { RSP_INTEGER, 0 }, { RSP_DOUBLE, 0 },
        { RSP_BIGNUM, 0 }, { RSP_NULL, 0 }, { RSP_ARRAY, 3 }, { RSP_SET, 3 }, { RSP_MAP, 6 },
        { RSP_BULK, 0 }, { RSP_PUSH, 2 }, { RSP_BULK, 0 }, { RSP_VERBATIM, 0 }, { RSP_BOOL, 0 },
        { RSP_BOOL, 0 }, { RSP_MAP, 4 }, { RSP_SET, 2 }, { RSP_DOUBLE, 0 }, { RSP_ARRAY, 2 },
        { RSP_NULL, 0 }, { RSP_STATUS, 0 }, { RSP_BULK, 0 }, { RSP_STATUS, 0 }, { RSP_PUSH, 2 },
        { RSP_ERROR, 0 }, { RSP_ERROR, 0 }, { RSP_VERBATIM, 0 }, { RSP_ARRAY, 1 },
        { RSP_STATUS, 0 }, { RSP_STATUS, 0 },
    };
    size_t len = sizeof(redis7_resp3) - 1;
    struct tenv e;
    struct drv d;
    drv_open(&d, &e, SMALL_MBUF, &redis_proto, true, true);
    drv_feed(&d, redis7_resp3, len, 7);
    assert_false(d.failed);
    assert_int_equal(drv_pending(&d), 0);
    assert_int_equal(d.nout, NC_ARRAY_LEN(want));
    for (size_t i = 0; i < NC_ARRAY_LEN(want); i++) {
        assert_int_equal(d.out[i]->rsp_type, want[i].type);
        assert_int_equal(d.out[i]->nelems, want[i].nelems);
        assert_int_equal(d.out[i]->rsp_fatal, i == 29); /* -LOADING fake */
    }
    assert_int_equal(d.out[2]->integer, 2);
    assert_int_equal(d.out[6]->integer, 12345);
    char *t = msg_range_text(d.out[22], d.out[22]->elems[1].start, d.out[22]->elems[1].end);
    assert_string_equal(t, "_\r\n"); /* MGET of a missing key */
    free(t);
    drv_close(&d);
    check_every_split(redis7_resp3, len, NC_ARRAY_LEN(want));
}

/* D3(0) = "_\r\n"; D3(n) = "%1\r\n" "|1\r\n+a\r\n:n\r\n" D3(n-1) "~1\r\n#t\r\n" (an attribute
 * before each key, a set as each value) */
static size_t build_deep3(char *out, int depth)
{
    size_t n = 0;
    for (int i = depth; i >= 1; i--) n += (size_t)sprintf(out + n, "%%1\r\n|1\r\n+a\r\n:%d\r\n", i);
    n += (size_t)sprintf(out + n, "_\r\n");
    for (int i = 1; i <= depth; i++) n += (size_t)sprintf(out + n, "~1\r\n#t\r\n");
    return n;
}

static void test_resp3_nested_deep(void **state)
{
    (void)state;
    char *in = malloc(65536);
    assert_non_null(in);
    /* the key (with the attribute before it) and the value */
    size_t len = build_deep3(in, 1000);
    check_deep_reply(in, len, strlen("~1\r\n#t\r\n"), RSP_MAP, "_\r\n", RSP_NULL);
    /* 1000 attributes, each one's value led by the next one, then the reply */
    len = 0;
    for (int i = 0; i < 1000; i++) len += (size_t)sprintf(in + len, "|1\r\n+k\r\n");
    for (int i = 0; i < 1000; i++) len += (size_t)sprintf(in + len, ":%d\r\n", i);
    len += (size_t)sprintf(in + len, ":42\r\n");
    for (int want = 0; want <= 1; want++) {
        struct tenv e;
        struct drv d;
        drv_open(&d, &e, SMALL_MBUF, &redis_proto, true, want);
        drv_feed(&d, in, len, 1);
        assert_false(d.failed);
        assert_int_equal(d.nout, 1);
        assert_int_equal(d.out[0]->len, len);
        assert_int_equal(d.out[0]->rsp_type, RSP_INTEGER);
        assert_int_equal(d.out[0]->integer, 42);
        assert_int_equal(d.out[0]->nelems, 0);
        drv_close(&d);
    }
    free(in);
    /* past the limit, with maps and attributes */
    static const char *const levels[] = { "%1\r\n+k\r\n", "|1\r\n+k\r\n", "~1\r\n", ">1\r\n" };
    for (size_t l = 0; l < NC_ARRAY_LEN(levels); l++) {
        size_t ll = strlen(levels[l]);
        in = malloc((REDIS_MAX_DEPTH + 1) * ll + 1);
        assert_non_null(in);
        len = 0;
        for (int i = 0; i <= REDIS_MAX_DEPTH; i++) {
            memcpy(in + len, levels[l], ll);
            len += ll;
        }
        struct tenv e;
        struct drv d;
        drv_open(&d, &e, BIG_MBUF, &redis_proto, true, false);
        drv_feed(&d, in, len, 0);
        assert_true(d.failed);
        assert_string_equal(d.error, "reply nested too deep");
        drv_close(&d);
        free(in);
    }
}

static void test_rsp_big_bulk_small_mbufs(void **state)
{
    (void)state;
    size_t vlen = 100000;
    char *in = malloc(vlen + 64);
    assert_non_null(in);
    size_t n = (size_t)sprintf(in, "$%zu\r\n", vlen);
    for (size_t i = 0; i < vlen; i++) in[n++] = (char)('a' + i % 26);
    n += (size_t)sprintf(in + n, "\r\n:1\r\n");
    static const size_t steps[] = { 0, 1, 479, 480, 481, 4096 };
    for (size_t s = 0; s < NC_ARRAY_LEN(steps); s++) {
        struct tenv e;
        struct drv d;
        drv_open(&d, &e, SMALL_MBUF, &redis_proto, true, true);
        drv_feed(&d, in, n, steps[s]);
        assert_false(d.failed);
        assert_int_equal(d.nout, 2);
        assert_int_equal(d.out[0]->rsp_type, RSP_BULK);
        assert_int_equal(d.out[0]->len, n - 4);
        assert_true(d.out[0]->nspans > 200);
        char *t = msg_text(d.out[0]);
        assert_memory_equal(t, in, n - 4);
        free(t);
        assert_int_equal(d.out[1]->integer, 1);
        drv_close(&d);
    }
    free(in);
}

/* ---------------------------------------------------------------- fragment + coalesce */

struct ftest {
    struct tenv e;
    struct drv rq;     /* parsed the client's request */
    struct drv rs;     /* parsed the fragments' fake replies */
    struct msg *req;
    int argc;
    const char *argv[1024];
    char wbuf[32768];
};

/* Parses the request line (RESP or inline, fed in steps of step bytes). */
static void ft_init(struct ftest *t, const char *line, bool inl, size_t mbuf, size_t step)
{
    memset(t, 0, sizeof(*t));
    t->argc = split_words(line, t->wbuf, sizeof(t->wbuf), t->argv, (int)NC_ARRAY_LEN(t->argv));
    size_t size = strlen(line) * 2 + 64 * 16;
    char *in = malloc(size);
    assert_non_null(in);
    size_t len = inl ? (size_t)snprintf(in, size, "%s\r\n", line)
                     : resp_build(in, size, t->argc, t->argv);
    drv_open(&t->rq, &t->e, mbuf, &redis_proto, false, false);
    drv_feed(&t->rq, in, len, step);
    free(in);
    assert_false(t->rq.failed);
    assert_int_equal(t->rq.nout, 1);
    t->req = t->rq.out[0];
    assert_int_equal(t->req->reject, REJECT_NONE);
    drv_init(&t->rs, &t->e, &redis_proto, true, true);
}

/* Puts the fragments (the core's job) and everything else; checks no leak. */
static void ft_deinit(struct ftest *t)
{
    for (uint32_t f = 0; f < t->req->nfrags; f++) msg_put(&t->e.pp, t->req->frags[f]);
    drv_deinit(&t->rs);
    drv_deinit(&t->rq);
    tenv_deinit(&t->e);
}

/* Checks the fragments against what they should be: one per server in order of first use,
 * "*N\r\n$len\r\n<lowercase name>\r\n" then the keys (and MSET values) of that server. */
static void ft_check_frags(struct ftest *t, const uint32_t *servers)
{
    struct msg *req = t->req;
    bool mset = (req->cmd_flags & CMD_F_FRAG_MSET) != 0;
    uint32_t order[128], nf = 0;
    for (uint32_t i = 0; i < req->nkeys; i++) {
        uint32_t f = 0;
        while (f < nf && order[f] != servers[i]) f++;
        if (f == nf) order[nf++] = servers[i];
        assert_int_equal(req->key_frag[i], f);
    }
    assert_int_equal(req->nfrags, nf);
    assert_int_equal(req->nfrags_done, 0);
    char name[32];
    snprintf(name, sizeof(name), "%s", redis_cmds[req->cmd].name);
    for (uint32_t f = 0; f < nf; f++) {
        struct msg *fr = req->frags[f];
        const char *av[1024];
        int ac = 0;
        av[ac++] = name;
        uint32_t fk = 0;
        for (uint32_t i = 0; i < req->nkeys; i++) {
            if (servers[i] != order[f]) continue;
            int ai = mset ? 1 + 2 * (int)i : 1 + (int)i;
            av[ac++] = t->argv[ai];
            if (mset) av[ac++] = t->argv[ai + 1];
            /* the fragment's key points at the request's key bytes */
            assert_ptr_equal(fr->keys[fk].ptr, req->keys[i].ptr);
            assert_int_equal(fr->keys[fk].len, req->keys[i].len);
            char want[8192];
            resp_build(want, sizeof(want), mset ? 2 : 1, &t->argv[ai]);
            char *got = msg_range_text(fr, fr->keys[fk].start, fr->keys[fk].end);
            assert_string_equal(got, strchr(want, '\n') + 1);
            free(got);
            fk++;
        }
        assert_int_equal(fr->nkeys, fk);
        char want[65536];
        resp_build(want, sizeof(want), ac, av);
        char *got = msg_text(fr);
        assert_string_equal(got, want);
        free(got);
        assert_ptr_equal(fr->frag_owner, req);
        assert_int_equal(fr->server_idx, order[f]);
        assert_int_equal(fr->cmd, req->cmd);
        assert_int_equal(fr->cmd_flags, req->cmd_flags);
        assert_int_equal(fr->nargs, (uint64_t)ac);
        assert_ptr_equal(fr->name, req->name);
        assert_int_equal(fr->reject, REJECT_NONE);
    }
}

/* Parses replies[f] as fragment f's reply and pairs them. */
static void ft_replies(struct ftest *t, const char *const *replies)
{
    size_t first = t->rs.nout;
    for (uint32_t f = 0; f < t->req->nfrags; f++) drv_feed(&t->rs, replies[f], strlen(replies[f]), 1);
    assert_false(t->rs.failed);
    assert_int_equal(t->rs.nout, first + t->req->nfrags);
    for (uint32_t f = 0; f < t->req->nfrags; f++) t->req->frags[f]->peer = t->rs.out[first + f];
}

/* Coalesces into a fresh msg; returns the rc, its text in *text (caller frees). */
static int ft_coalesce(struct ftest *t, char **text, struct msg **out)
{
    struct msg *rsp = msg_get(&t->e.pp);
    assert_non_null(rsp);
    int rc = redis_proto.coalesce(NULL, t->req, rsp);
    *text = msg_text(rsp);
    if (out != NULL) *out = rsp;
    else msg_put(&t->e.pp, rsp);
    return rc;
}

/*
 * Parses line, fragments it over servers (no pool mbuf taken: fragments are slices and literals),
 * checks the fragments, parses replies[f] as fragment f's reply (want_elems as said) and coalesces.
 * The coalesce rc must be want_rc; when 0, the reply is want with type want_type, else it is empty.
 */
struct roundtrip {
    const char *line;
    bool inl;
    size_t mbuf, step;
    const uint32_t *servers;
    uint32_t nfrags;
    const char *const *replies;
    bool no_elems;
    int want_rc;
    const char *want;
    uint8_t want_type;
};

static void roundtrip(const struct roundtrip *r)
{
    struct ftest t;
    ft_init(&t, r->line, r->inl, r->mbuf ? r->mbuf : BIG_MBUF, r->step);
    uint64_t nlive = t.e.mp.nlive;
    assert_int_equal(redis_proto.fragment(t.req, r->servers, t.req->nkeys, &t.e.pp), 0);
    assert_int_equal(t.e.mp.nlive, nlive);
    assert_int_equal(t.req->nfrags, r->nfrags);
    ft_check_frags(&t, r->servers);
    if (r->replies != NULL) {
        t.rs.want_elems = !r->no_elems;
        ft_replies(&t, r->replies);
        char *text;
        struct msg *rsp;
        int rc = ft_coalesce(&t, &text, &rsp);
        if (rc != r->want_rc) print_error("%s: coalesce rc %d\n", r->line, rc);
        assert_int_equal(rc, r->want_rc);
        if (rc == 0) {
            assert_string_equal(text, r->want);
            assert_int_equal(rsp->rsp_type, r->want_type);
        } else {
            assert_int_equal(rsp->len, 0); /* replies are checked before anything is built */
        }
        free(text);
        msg_put(&t.e.pp, rsp);
    }
    ft_deinit(&t);
}

static const uint32_t servers9[] = { 2, 0, 2, 1, 1, 0, 2, 0, 1 };

static void test_fragment_mget(void **state)
{
    (void)state;
    /* frag 0 = server 2: k0 k2 k6; frag 1 = server 0: key1 k5 k7; frag 2 = server 1: k3 k4 k8;
     * RESP2 replies, then RESP3 ones: "_" nulls, other element types, attributes before elements
     * (kept) and before a whole reply (left out of the rebuilt one) */
    static const char *const replies[2][3] = {
        { "*3\r\n$2\r\nv0\r\n$-1\r\n$0\r\n\r\n", "*3\r\n$4\r\nval1\r\n$2\r\nv5\r\n*1\r\n:7\r\n",
          "*3\r\n$-1\r\n$2\r\nv4\r\n$2\r\nv8\r\n" },
        { "|1\r\n+a\r\n+b\r\n*3\r\n$2\r\nv0\r\n_\r\n|1\r\n+ttl\r\n:9\r\n$0\r\n\r\n",
          "*3\r\n_\r\n$2\r\nv5\r\n_\r\n", "*3\r\n$2\r\nv3\r\n,1.5\r\n%1\r\n+k\r\n#t\r\n" },
    };
    static const char *const want[2] = {
        "*9\r\n$2\r\nv0\r\n$4\r\nval1\r\n$-1\r\n$-1\r\n$2\r\nv4\r\n"
        "$2\r\nv5\r\n$0\r\n\r\n*1\r\n:7\r\n$2\r\nv8\r\n",
        "*9\r\n$2\r\nv0\r\n_\r\n_\r\n$2\r\nv3\r\n,1.5\r\n$2\r\nv5\r\n"
        "|1\r\n+ttl\r\n:9\r\n$0\r\n\r\n_\r\n%1\r\n+k\r\n#t\r\n",
    };
    for (int r = 0; r < 2; r++)
        for (int inl = 0; inl <= 1; inl++)
            roundtrip(&(struct roundtrip){
                .line = "MGET k0 key1 k2 k3 k4 k5 k6 k7 k8", .inl = inl, .mbuf = SMALL_MBUF,
                .step = 3 - (size_t)r, .servers = servers9, .nfrags = 3, .replies = replies[r],
                .want_type = RSP_ARRAY, .want = want[r] });
}

static void test_fragment_sum_commands(void **state)
{
    (void)state;
    static const char *const names[] = { "DEL", "UNLINK", "TOUCH", "EXISTS", "exists" };
    /* RESP2, then RESP3 (attributes before the integers) */
    static const char *const replies[2][3] = {
        { ":3\r\n", ":0\r\n", ":2\r\n" },
        { "|1\r\n+a\r\n+b\r\n:3\r\n", ":0\r\n", "|0\r\n:2\r\n" },
    };
    for (size_t c = 0; c < NC_ARRAY_LEN(names); c++) {
        char line[256];
        snprintf(line, sizeof(line), "%s k0 key1 k2 k3 k4 k5 k6 k7 k8", names[c]);
        for (int k = 0; k < 4; k++)
            roundtrip(&(struct roundtrip){ .line = line, .inl = k % 2, .servers = servers9,
                                           .nfrags = 3, .replies = replies[k / 2],
                                           .want = ":5\r\n", .want_type = RSP_INTEGER });
    }
}

static const char *const ok3[] = { "+OK\r\n", "+OK\r\n", "+OK\r\n" };

static void test_fragment_mset(void **state)
{
    (void)state;
    /* RESP3: +OK after an attribute */
    static const char *const ok3_attr[] = { "|1\r\n+a\r\n+b\r\n+OK\r\n", "+OK\r\n",
                                            "|1\r\n+x\r\n$2\r\nOK\r\n+OK\r\n" };
    for (int k = 0; k < 4; k++)
        roundtrip(&(struct roundtrip){
            .line = "MSET k0 v0 key1 value1 k2 v2 k3 v3 k4 v4 k5 v5 k6 v6 k7 v7 k8 v8", .inl = k % 2,
            .mbuf = SMALL_MBUF, .step = 1, .servers = servers9, .nfrags = 3,
            .replies = k < 2 ? ok3 : ok3_attr, .want = "+OK\r\n", .want_type = RSP_STATUS });
}

static void test_fragment_big_values(void **state)
{
    (void)state;
    /* MSET with 3000-byte values over 512-byte mbufs: the groups are slices over many mbufs */
    size_t vlen = 3000;
    char *line = malloc(6 * (vlen + 8) + 16);
    assert_non_null(line);
    size_t n = (size_t)sprintf(line, "MSET");
    for (int k = 0; k < 5; k++) {
        n += (size_t)sprintf(line + n, " key%d ", k);
        for (size_t i = 0; i < vlen; i++) line[n++] = (char)('a' + (i + (size_t)k) % 26);
        line[n] = '\0';
    }
    static const uint32_t servers[] = { 1, 1, 0, 1, 2 };
    static const size_t steps[] = { 0, 1, 100 };
    for (size_t s = 0; s < NC_ARRAY_LEN(steps); s++)
        roundtrip(&(struct roundtrip){ .line = line, .mbuf = SMALL_MBUF, .step = steps[s],
                                       .servers = servers, .nfrags = 3, .replies = ok3,
                                       .want = "+OK\r\n", .want_type = RSP_STATUS });
    free(line);
}

static void test_fragment_one_or_many_servers(void **state)
{
    (void)state;
    static const uint32_t servers[] = { 7, 7, 7 };
    static const char *const replies[] = { "*3\r\n$1\r\nA\r\n$1\r\nB\r\n$1\r\nC\r\n" };
    roundtrip(&(struct roundtrip){ .line = "MGET a b c", .servers = servers, .nfrags = 1,
                                   .replies = replies, .want = replies[0],
                                   .want_type = RSP_ARRAY });
    /* many keys, many servers */
    char line[8192];
    uint32_t many[500];
    size_t n = (size_t)sprintf(line, "DEL");
    for (uint32_t i = 0; i < 500; i++) {
        n += (size_t)sprintf(line + n, " k%u", i);
        many[i] = (i * 7919u) % 97u;
    }
    roundtrip(&(struct roundtrip){ .line = line, .servers = many, .nfrags = 97 });
}

struct bad_case {
    const char *line;
    const char *replies[3];
    int rc;
    const char *text;   /* the coalesced reply when rc == 0 (an error reply) */
    uint8_t type;       /* its type: RSP_ERROR when 0 */
};

static const struct bad_case bad_cases[] = {
    { "MGET k0 key1 k2 k3", { "*2\r\n$1\r\na\r\n$1\r\nb\r\n", ":1\r\n", "*1\r\n$1\r\nc\r\n" },
      -EINVAL, NULL, 0 },
    { "MGET k0 key1 k2 k3", { "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n:1\r\n:2\r\n",
                              "*1\r\n$1\r\nc\r\n" }, -EINVAL, NULL, 0 },
    { "MGET k0 key1 k2 k3", { "*-1\r\n", "*1\r\n:1\r\n", "*1\r\n$1\r\nc\r\n" }, -EINVAL, NULL, 0 },
    { "MGET k0 key1 k2 k3", { "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "+OK\r\n", "*1\r\n$1\r\nc\r\n" },
      -EINVAL, NULL, 0 },
    { "DEL k0 key1 k2 k3", { ":1\r\n", "$1\r\n1\r\n", ":1\r\n" }, -EINVAL, NULL, 0 },
    { "DEL k0 key1 k2 k3", { ":9223372036854775807\r\n", ":1\r\n", ":0\r\n" }, -EINVAL, NULL, 0 },
    { "MSET k0 a key1 b k2 c k3 d", { "+OK\r\n", "+QUEUED\r\n", "+OK\r\n" }, -EINVAL, NULL, 0 },
    { "MSET k0 a key1 b k2 c k3 d", { "+OK\r\n", ":1\r\n", "+OK\r\n" }, -EINVAL, NULL, 0 },
    /* an error reply: the first one (in fragment order) is the whole command's reply */
    { "MGET k0 key1 k2 k3", { "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "-LOADING Redis is loading\r\n",
                              "-ERR other\r\n" }, 0, "-LOADING Redis is loading\r\n", 0 },
    { "MSET k0 a key1 b k2 c k3 d", { "+OK\r\n", "+OK\r\n",
                                      "-OOM command not allowed when used memory > 'maxmemory'.\r\n" },
      0, "-OOM command not allowed when used memory > 'maxmemory'.\r\n", 0 },
    { "EXISTS k0 key1 k2 k3", { "-WRONGTYPE x\r\n", ":1\r\n", ":1\r\n" }, 0, "-WRONGTYPE x\r\n", 0 },
    /* RESP3: a type no RESP2 reply would have there */
    { "MGET k0 key1 k2 k3", { "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "%1\r\n+k\r\n+v\r\n",
                              "*1\r\n$1\r\nc\r\n" }, -EINVAL, NULL, 0 },
    { "MGET k0 key1 k2 k3", { "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "_\r\n", "*1\r\n_\r\n" },
      -EINVAL, NULL, 0 },
    { "MGET k0 key1 k2 k3", { "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "~1\r\n:1\r\n",
                              "*1\r\n_\r\n" }, -EINVAL, NULL, 0 },
    { "MGET k0 key1 k2 k3", { "*2\r\n$1\r\na\r\n$1\r\nb\r\n", ">2\r\n+message\r\n+x\r\n",
                              "*1\r\n_\r\n" }, -EINVAL, NULL, 0 },
    { "DEL k0 key1 k2 k3", { ":1\r\n", ",1\r\n", ":1\r\n" }, -EINVAL, NULL, 0 },
    { "DEL k0 key1 k2 k3", { ":1\r\n", "(1\r\n", ":1\r\n" }, -EINVAL, NULL, 0 },
    { "DEL k0 key1 k2 k3", { "#t\r\n", ":1\r\n", ":1\r\n" }, -EINVAL, NULL, 0 },
    { "MSET k0 a key1 b k2 c k3 d", { "+OK\r\n", "|1\r\n+a\r\n+b\r\n+OKAY\r\n", "+OK\r\n" },
      -EINVAL, NULL, 0 },
    { "MSET k0 a key1 b k2 c k3 d", { "+OK\r\n", "|1\r\n+a\r\n+b\r\n++OK\r\n", "+OK\r\n" },
      -EINVAL, NULL, 0 },
    { "MSET k0 a key1 b k2 c k3 d", { "+OK\r\n", "|1\r\n+a\r\n$5\r\n\n+OK\r\r\n+X\r\n", "+OK\r\n" },
      -EINVAL, NULL, 0 },
    { "MSET k0 a key1 b k2 c k3 d", { "+OK\r\n", "=6\r\ntxt:OK\r\n", "+OK\r\n" }, -EINVAL, NULL, 0 },
    /* RESP3 errors: a blob error is an error reply too */
    { "MGET k0 key1 k2 k3", { "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "!7\r\nLOADING\r\n",
                              "-ERR other\r\n" }, 0, "!7\r\nLOADING\r\n", RSP_BLOB_ERROR },
    { "DEL k0 key1 k2 k3", { "-ERR first\r\n", "!5\r\nERR x\r\n", ":1\r\n" }, 0, "-ERR first\r\n", 0 },
    { "MSET k0 a key1 b k2 c k3 d", { "+OK\r\n", "+OK\r\n", "|1\r\n+a\r\n+b\r\n!6\r\nOOM \r\n\r\n" },
      0, "|1\r\n+a\r\n+b\r\n!6\r\nOOM \r\n\r\n", RSP_BLOB_ERROR },
};

static void test_coalesce_bad_replies(void **state)
{
    (void)state;
    static const uint32_t servers[] = { 0, 1, 0, 2 };
    for (size_t i = 0; i < NC_ARRAY_LEN(bad_cases); i++) {
        const struct bad_case *b = &bad_cases[i];
        roundtrip(&(struct roundtrip){ .line = b->line, .servers = servers, .nfrags = 3,
                                       .replies = b->replies, .want_rc = b->rc, .want = b->text,
                                       .want_type = b->type ? b->type : RSP_ERROR });
    }
    /* MGET replies parsed without want_elems cannot be coalesced */
    static const uint32_t two[] = { 0, 1 };
    static const char *const replies[] = { "*1\r\n$1\r\nA\r\n", "*1\r\n$1\r\nB\r\n" };
    roundtrip(&(struct roundtrip){ .line = "MGET a b", .servers = two, .nfrags = 2,
                                   .replies = replies, .no_elems = true, .want_rc = -EINVAL });
}

/* Pub/Sub (redis_pubsub.c): what a reply read on a subscribed connection is, fed in one read and
 * byte by byte into small buffers (elements spanning buffers). */
static void test_pubsub_classify(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        enum proto_ps_what what;
        uint8_t kind;
        const char *name;
    } cases[] = {
        { "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n", PROTO_PS_CONFIRM, PROTO_PS_CHANNEL, NULL },
        { ">3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n", PROTO_PS_CONFIRM, PROTO_PS_PATTERN, NULL },
        { ">3\r\n$10\r\nssubscribe\r\n$1\r\ns\r\n:1\r\n", PROTO_PS_CONFIRM, PROTO_PS_SHARD, NULL },
        { "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n", PROTO_PS_MESSAGE, PROTO_PS_CHANNEL, "ch" },
        { ">4\r\n$8\r\npmessage\r\n$2\r\np*\r\n$2\r\npx\r\n$1\r\nv\r\n", PROTO_PS_MESSAGE, PROTO_PS_PATTERN, "p*" },
        { ">3\r\n$8\r\nsmessage\r\n$0\r\n\r\n$1\r\nv\r\n", PROTO_PS_MESSAGE, PROTO_PS_SHARD, "" },
        { "-ERR unknown command 'SSUBSCRIBE'\r\n", PROTO_PS_ERROR, 0, NULL },
        { "+OK\r\n", PROTO_PS_OTHER, 0, NULL },
        { "*2\r\n$4\r\npong\r\n$0\r\n\r\n", PROTO_PS_OTHER, 0, NULL },
        { "*3\r\n$7\r\nmessage\r\n:1\r\n$1\r\nv\r\n", PROTO_PS_OTHER, 0, NULL },     /* channel not a string */
        { "*4\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nv\r\n$1\r\nw\r\n", PROTO_PS_OTHER, 0, NULL }, /* 4 elements */
        { "*3\r\n$10\r\nsubscribes\r\n$1\r\na\r\n:1\r\n", PROTO_PS_OTHER, 0, NULL },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) {
        for (size_t step = 0; step < 2; step++) {
            struct tenv e;
            struct drv d;
            drv_open(&d, &e, step ? 64 : BIG_MBUF, &redis_proto, true, true);
            drv_feed(&d, cases[i].in, strlen(cases[i].in), step);
            assert_false(d.failed);
            assert_int_equal(d.nout, 1);
            struct proto_ps_msg pm;
            redis_proto.pubsub->classify(d.out[0], &pm);
            assert_int_equal(pm.what, cases[i].what);
            if (pm.what == PROTO_PS_CONFIRM || pm.what == PROTO_PS_MESSAGE) assert_int_equal(pm.kind, cases[i].kind);
            if (cases[i].name != NULL) {
                char name[16] = { 0 };
                assert_int_equal(pm.name_len, strlen(cases[i].name));
                msg_copy_out(d.out[0], pm.name_start, name, pm.name_len);
                assert_string_equal(name, cases[i].name);
            }
            drv_close(&d);
        }
    }
}

/* The confirmations the proxy writes, RESP2 and RESP3, and RESP2's subscribed-mode replies. */
static void test_pubsub_texts(void **state)
{
    (void)state;
    const struct proto_pubsub *pp = redis_proto.pubsub;
    struct textbuf t = { 0 };
    pp->confirm(&t, 0, PROTO_PS_CHANNEL, false, (const uint8_t *)"ch", 2, 3);
    pp->confirm(&t, 1, PROTO_PS_PATTERN, true, NULL, 0, 0);
    pp->confirm(&t, 0, PROTO_PS_SHARD, true, NULL, 0, 1);
    const char *want = "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:3\r\n"
                       ">3\r\n$12\r\npunsubscribe\r\n_\r\n:0\r\n"
                       "*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:1\r\n";
    assert_int_equal(t.len, strlen(want));
    assert_memory_equal(t.data, want, t.len);
    textbuf_deinit(&t);
    pp->request(&t, PROTO_PS_SHARD, false, 2);
    pp->arg(&t, (const uint8_t *)"a", 1);
    pp->arg(&t, (const uint8_t *)"bc", 2);
    want = "*3\r\n$10\r\nSSUBSCRIBE\r\n$1\r\na\r\n$2\r\nbc\r\n";
    assert_int_equal(t.len, strlen(want));
    assert_memory_equal(t.data, want, t.len);
    textbuf_deinit(&t);

    static const struct {
        const char *req;
        uint8_t variant;
        const char *reply; /* NULL: allowed, served as usual */
    } cases[] = {
        { "PING", 0, "*2\r\n$4\r\npong\r\n$0\r\n\r\n" },
        { "PING hi", 0, "*2\r\n$4\r\npong\r\n$2\r\nhi\r\n" },
        { "PING", 1, NULL },
        { "GET k", 1, NULL },
        { "SUBSCRIBE a", 0, NULL },
        { "punsubscribe", 0, NULL },
        { "QUIT", 0, NULL },
        { "RESET", 0, NULL },
        { "GET k", 0, "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "
                      "are allowed in this context\r\n" },
        { "Client SetName x", 0, "-ERR Can't execute 'client|setname': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
                                 "PING / QUIT / RESET are allowed in this context\r\n" },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) {
        struct tenv e;
        struct drv d;
        char line[64], buf[512];
        drv_open(&d, &e, BIG_MBUF, &redis_proto, false, false);
        int n = snprintf(line, sizeof(line), "%s\r\n", cases[i].req);
        drv_feed(&d, line, (size_t)n, 0);
        assert_int_equal(d.nout, 1);
        size_t len = pp->subscribed_reply(d.out[0], cases[i].variant, buf, sizeof(buf));
        if (cases[i].reply == NULL) {
            assert_int_equal(len, 0);
        } else {
            assert_int_equal(len, strlen(cases[i].reply));
            assert_memory_equal(buf, cases[i].reply, len);
        }
        drv_close(&d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rsp_types),
        cmocka_unit_test(test_rsp_errors),
        cmocka_unit_test(test_resp3_types),
        cmocka_unit_test(test_rsp_stream_every_split),
        cmocka_unit_test(test_resp3_stream_every_split),
        cmocka_unit_test(test_random_replies),
        cmocka_unit_test(test_random_resp3_replies),
        cmocka_unit_test(test_resp3_from_redis7),
        cmocka_unit_test(test_rsp_elems),
        cmocka_unit_test(test_rsp_nested_depth_1000),
        cmocka_unit_test(test_rsp_too_deep),
        cmocka_unit_test(test_resp3_nested_deep),
        cmocka_unit_test(test_rsp_big_bulk_small_mbufs),
        cmocka_unit_test(test_fragment_mget),
        cmocka_unit_test(test_fragment_sum_commands),
        cmocka_unit_test(test_fragment_mset),
        cmocka_unit_test(test_fragment_big_values),
        cmocka_unit_test(test_fragment_one_or_many_servers),
        cmocka_unit_test(test_coalesce_bad_replies),
        cmocka_unit_test(test_pubsub_classify),
        cmocka_unit_test(test_pubsub_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
