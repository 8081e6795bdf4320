/*
 * test_txn.c - unit tests of transactions and blocking commands (core/txn.c,
 * notes/transactions.md, notes/blocking-commands.md), black-box at the loop level through
 * core_harness: what the fake redis servers receive, on which of their connections, and what the
 * client reads, in which order.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core_harness.h"

#define KEY_MAX 32

/* GET key from client c on server s, answered "$-1": returns the connection it went on. */
static size_t get_nil(struct harness *h, int c, size_t s, const char *key)
{
    return ch_relay(h, c, s, ch_resp(h, "GET %s", key), "$-1\r\n");
}

/* WATCH key from client c on server s, answered "+OK": returns the connection it went on. */
static size_t watch(struct harness *h, int c, size_t s, const char *key)
{
    return ch_relay(h, c, s, ch_resp(h, "WATCH %s", key), "+OK\r\n");
}

/* MULTI..EXEC: answered +OK and +QUEUED by the proxy, nothing sent before EXEC; then MULTI, the
 * command and EXEC leave together on a dedicated connection, not the client's shared one, and
 * only EXEC's reply reaches the client. The connection is kept for the next transaction. */
static void test_multi_exec(void **state)
{
    struct harness *h = *state;
    char k[KEY_MAX];
    ch_key_on(h, 0, "k", k, sizeof(k));
    int c = ch_client(h);
    size_t shared = get_nil(h, c, 0, k);

    ch_send(h, c, ch_resp(h, "MULTI;SET %s v", k));
    ch_expect(h, c, "+OK\r\n+QUEUED\r\n");
    ch_assert_quiet(h); /* the SET went nowhere */
    assert_int_equal(ch_srv_nconns(h, 0), 1);
    assert_int_equal(ch_srv_nconns(h, 1), 0);

    ch_send(h, c, ch_resp(h, "EXEC"));
    size_t d = ch_srv_expect(h, 0, ch_resp(h, "MULTI;SET %s v;EXEC", k));
    assert_int_not_equal(d, shared);
    ch_srv_send(h, 0, d, "+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n");
    ch_expect(h, c, "*1\r\n+OK\r\n");

    assert_int_equal(get_nil(h, c, 0, k), shared); /* plain requests: the shared connection */
    ch_send(h, c, ch_resp(h, "MULTI;INCR %s;EXEC", k));
    ch_expect(h, c, "+OK\r\n+QUEUED\r\n");
    ch_srv_expect_on(h, 0, d, ch_resp(h, "MULTI;INCR %s;EXEC", k)); /* given back, taken again */
    ch_srv_send(h, 0, d, "+OK\r\n+QUEUED\r\n*1\r\n:1\r\n");
    ch_expect(h, c, "*1\r\n:1\r\n");
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 2);
    assert_int_equal(ch_srv_nconns(h, 1), 0);
}

/* Keys on two servers: the crossing command is refused with both servers' names, EXEC answers
 * EXECABORT, and nothing reaches any server. The client goes on normally. */
static void test_cross_server_refused(void **state)
{
    struct harness *h = *state;
    char k0[KEY_MAX], k1[KEY_MAX];
    ch_keys_apart(h, k0, k1, KEY_MAX);
    int c = ch_client(h);
    ch_send(h, c, ch_resp(h, "MULTI;SET %s x;SET %s y;EXEC", k0, k1));
    ch_expect(h, c, "+OK\r\n+QUEUED\r\n");
    ch_expect(h, c, "-ERR keys of one transaction on two servers, 's1' and 's2' (hash tags keep them on one)\r\n");
    ch_expect(h, c, "-EXECABORT Transaction discarded because of previous errors.\r\n");
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 0);
    assert_int_equal(ch_srv_nconns(h, 1), 0);
    ch_send(h, c, ch_resp(h, "EXEC"));
    ch_expect(h, c, "-ERR EXEC without MULTI\r\n");
    get_nil(h, c, 1, k1);
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 0);
}

/* WATCH takes a dedicated connection and keeps it: plain requests meanwhile use the shared one,
 * the transaction goes on the WATCH's. EXEC ends the WATCH: the client leaving then sends no
 * UNWATCH, and the connection stays open. */
static void test_watch_until_exec(void **state)
{
    struct harness *h = *state;
    char k[KEY_MAX];
    ch_key_on(h, 1, "w", k, sizeof(k));
    int c = ch_client(h);
    size_t d = watch(h, c, 1, k);

    size_t shared = get_nil(h, c, 1, k);
    assert_int_not_equal(shared, d);

    ch_send(h, c, ch_resp(h, "MULTI;SET %s v;EXEC", k));
    ch_expect(h, c, "+OK\r\n+QUEUED\r\n");
    ch_srv_expect_on(h, 1, d, ch_resp(h, "MULTI;SET %s v;EXEC", k));
    ch_srv_send(h, 1, d, "+OK\r\n+QUEUED\r\n*-1\r\n"); /* the WATCH aborted it */
    ch_expect(h, c, "*-1\r\n");

    ch_close(h, c);
    ch_assert_quiet(h);
    assert_false(ch_srv_closed(h, 1, d));
    assert_int_equal(ch_srv_nconns(h, 1), 2);
    assert_int_equal(ch_srv_nconns(h, 0), 0);
}

/* UNWATCH goes on the WATCH's connection and gives it back; a client that leaves while watching
 * gets UNWATCH sent for it, and the connection, clean and open, serves the next client. */
static void test_unwatch_and_leave(void **state)
{
    struct harness *h = *state;
    char k[KEY_MAX];
    ch_key_on(h, 0, "u", k, sizeof(k));
    int c = ch_client(h);
    size_t d = watch(h, c, 0, k);
    assert_int_equal(ch_relay(h, c, 0, ch_resp(h, "UNWATCH"), "+OK\r\n"), d);
    ch_send(h, c, ch_resp(h, "UNWATCH")); /* nothing watched: the proxy's */
    ch_expect(h, c, "+OK\r\n");

    assert_int_equal(watch(h, c, 0, k), d); /* the same connection */
    ch_close(h, c);
    ch_srv_expect_on(h, 0, d, "*1\r\n$7\r\nUNWATCH\r\n");
    ch_srv_send(h, 0, d, "+OK\r\n"); /* the proxy's own: dropped */

    int c2 = ch_client(h);
    assert_int_equal(watch(h, c2, 0, k), d); /* the same connection */
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 1);
}

/* DISCARD drops the queue (nothing sent) and the WATCH (UNWATCH on its connection). */
static void test_discard_with_watch(void **state)
{
    struct harness *h = *state;
    char k[KEY_MAX];
    ch_key_on(h, 0, "d", k, sizeof(k));
    int c = ch_client(h);
    size_t d = watch(h, c, 0, k);
    ch_send(h, c, ch_resp(h, "MULTI;SET %s v;DISCARD;EXEC", k));
    ch_expect(h, c, "+OK\r\n+QUEUED\r\n+OK\r\n-ERR EXEC without MULTI\r\n");
    ch_srv_expect_on(h, 0, d, "*1\r\n$7\r\nUNWATCH\r\n");
    ch_srv_send(h, 0, d, "+OK\r\n");
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 1);
}

/* A request for the dedicated connection waits for the client's earlier requests: WATCH after a
 * GET still unanswered is not sent (no dedicated connection is even opened) until the GET is. */
static void test_watch_waits_for_earlier(void **state)
{
    struct harness *h = *state;
    char k[KEY_MAX];
    ch_key_on(h, 1, "e", k, sizeof(k));
    int c = ch_client(h);
    ch_send(h, c, ch_resp(h, "GET %s;WATCH %s", k, k));
    size_t shared = ch_srv_expect(h, 1, ch_resp(h, "GET %s", k));
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 1), 1);
    ch_srv_send(h, 1, shared, "$1\r\nx\r\n");
    ch_expect(h, c, "$1\r\nx\r\n");
    size_t d = ch_srv_expect(h, 1, ch_resp(h, "WATCH %s", k));
    assert_int_not_equal(d, shared);
    ch_srv_send(h, 1, d, "+OK\r\n");
    ch_expect(h, c, "+OK\r\n");
    ch_assert_quiet(h);
}

/* A request pipelined behind EXEC waits for EXEC's answer and is answered after it. */
static void test_after_exec_in_order(void **state)
{
    struct harness *h = *state;
    char k0[KEY_MAX], k1[KEY_MAX];
    ch_keys_apart(h, k0, k1, KEY_MAX);
    int c = ch_client(h);
    ch_send(h, c, ch_resp(h, "MULTI;SET %s v;EXEC;GET %s", k0, k1));
    ch_expect(h, c, "+OK\r\n+QUEUED\r\n");
    size_t d = ch_srv_expect(h, 0, ch_resp(h, "MULTI;SET %s v;EXEC", k0));
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 1), 0); /* the GET waits */
    ch_srv_send(h, 0, d, "+OK\r\n+QUEUED\r\n*1\r\n+OK\r\n");
    size_t g = ch_srv_expect(h, 1, ch_resp(h, "GET %s", k1));
    ch_srv_send(h, 1, g, "$1\r\nw\r\n");
    ch_expect(h, c, "*1\r\n+OK\r\n$1\r\nw\r\n");
    ch_assert_quiet(h);
}

/* BLPOP goes on a dedicated connection; the request behind it waits for its answer; then the
 * connection goes back to its set (the next BLPOP takes it again). */
static void test_blpop_dedicated(void **state)
{
    struct harness *h = *state;
    char k[KEY_MAX], reply[128];
    ch_key_on(h, 0, "q", k, sizeof(k));
    int c = ch_client(h);
    size_t shared = get_nil(h, c, 0, k);
    ch_send(h, c, ch_resp(h, "BLPOP %s 0;GET %s", k, k));
    size_t b = ch_srv_expect(h, 0, ch_resp(h, "BLPOP %s 0", k));
    assert_int_not_equal(b, shared);
    ch_assert_quiet(h); /* the GET waits */
    snprintf(reply, sizeof(reply), "*2\r\n$%zu\r\n%s\r\n$3\r\njob\r\n", strlen(k), k);
    ch_srv_send(h, 0, b, reply);
    ch_expect(h, c, reply);
    ch_srv_expect_on(h, 0, shared, ch_resp(h, "GET %s", k));
    ch_srv_send(h, 0, shared, "$-1\r\n");
    ch_expect(h, c, "$-1\r\n");

    assert_int_equal(ch_relay(h, c, 0, ch_resp(h, "BLPOP %s 1", k), "*-1\r\n"), b); /* given back */
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 2);
}

/* A blocking command's keys on two servers: refused, nothing sent. */
static void test_blpop_cross_refused(void **state)
{
    struct harness *h = *state;
    char k0[KEY_MAX], k1[KEY_MAX];
    ch_keys_apart(h, k0, k1, KEY_MAX);
    int c = ch_client(h);
    ch_send(h, c, ch_resp(h, "BLPOP %s %s 0", k0, k1));
    ch_expect(h, c, "-ERR keys of one blocking command on two servers, 's1' and 's2' (hash tags keep them on one)\r\n");
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0) + ch_srv_nconns(h, 1), 0);
}

/* A client that leaves while blocked: its connection is closed (the server would hand the next
 * client the pop), and the next BLPOP opens another one. */
static void test_blocked_client_leaves(void **state)
{
    struct harness *h = *state;
    char k[KEY_MAX];
    ch_key_on(h, 1, "q", k, sizeof(k));
    int c = ch_client(h);
    ch_send(h, c, ch_resp(h, "BLPOP %s 0", k));
    size_t b = ch_srv_expect(h, 1, ch_resp(h, "BLPOP %s 0", k));
    ch_close(h, c);
    ch_srv_wait_closed(h, 1, b);

    int c2 = ch_client(h);
    assert_int_not_equal(ch_relay(h, c2, 1, ch_resp(h, "BLPOP %s 0", k), "*-1\r\n"), b);
    ch_assert_quiet(h);
}

static int setup_one_dedicated(void **state)
{
    *state = ch_new(2, "  dedicated_connections: 1\n");
    return 0;
}

/* dedicated_connections reached: WATCH, EXEC and BLPOP of another client are refused at once,
 * nothing sent; once the holder gives its connection back, the next one takes it. */
static void test_dedicated_exhausted(void **state)
{
    struct harness *h = *state;
    const char busy[] = "-ERR no dedicated connection free to server 's1' (dedicated_connections: 1)\r\n";
    char k[KEY_MAX];
    ch_key_on(h, 0, "f", k, sizeof(k));
    int c = ch_client(h), c2 = ch_client(h);
    size_t d = watch(h, c, 0, k);
    ch_send(h, c2, ch_resp(h, "WATCH %s;BLPOP %s 0;MULTI;SET %s v;EXEC", k, k, k));
    ch_expect(h, c2, busy);
    ch_expect(h, c2, busy);
    ch_expect(h, c2, "+OK\r\n+QUEUED\r\n");
    ch_expect(h, c2, busy);
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 1);
    assert_int_equal(ch_relay(h, c, 0, ch_resp(h, "UNWATCH"), "+OK\r\n"), d);
    assert_int_equal(watch(h, c2, 0, k), d);
    ch_assert_quiet(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_multi_exec, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_cross_server_refused, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_watch_until_exec, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_unwatch_and_leave, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_discard_with_watch, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_watch_waits_for_earlier, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_after_exec_in_order, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_blpop_dedicated, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_blpop_cross_refused, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_blocked_client_leaves, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_dedicated_exhausted, setup_one_dedicated, ch_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
