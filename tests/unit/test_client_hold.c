/*
 * test_client_hold.c - unit tests of the hold of a pipeline's first replies (core/client_hold.c
 * over core/flush_hold.c, notes/batch-wait.md), black-box at the loop level through
 * core_harness: a client pipelines a GET to each of two fake servers; what it reads, in which
 * order, and what the loop counted (reply_holds).
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
#include "stats/stats.h"

#define KEY_MAX 32
#define REPLY_A "$1\r\na\r\n"
#define REPLY_B "$1\r\nb\r\n"

static uint64_t holds(struct harness *h)
{
    return stats_ctr_get(&ch_worker_stats(h)->reply_holds);
}

static bool held_once(struct harness *h, void *arg)
{
    (void)arg;
    return holds(h) >= 1;
}

/* Client c pipelines GET k0 (server 0) and GET k1 (server 1), both received; returns the
 * connections they went on (conns[0], conns[1]). */
static void pipeline_apart(struct harness *h, int c, size_t conns[2])
{
    char k0[KEY_MAX], k1[KEY_MAX];
    ch_keys_apart(h, k0, k1, sizeof(k0));
    ch_send(h, c, ch_resp(h, "GET %s;GET %s", k0, k1));
    conns[0] = ch_srv_expect(h, 0, ch_resp(h, "GET %s", k0));
    conns[1] = ch_srv_expect(h, 1, ch_resp(h, "GET %s", k1));
}

/* The first reply in while the second's server works: held (counted), then both come in order
 * once the second is in. */
static void test_first_reply_waits_for_the_rest(void **state)
{
    struct harness *h = *state;
    ch_batch_wait(h, 1000); /* the longest hold: 1 ms */
    int c = ch_client(h);
    size_t conns[2];
    pipeline_apart(h, c, conns);
    ch_srv_send(h, 0, conns[0], REPLY_A);
    ch_wait(h, held_once, NULL, "the first reply held");
    assert_int_equal(holds(h), 1);
    ch_srv_send(h, 1, conns[1], REPLY_B);
    ch_expect(h, c, REPLY_A REPLY_B);
    ch_assert_quiet(h);
}

/* A new client's pipeline over both servers, the second answered only once the client has read
 * the first reply (which a hold cannot keep from it for long). */
static void first_reply_before_the_second(struct harness *h)
{
    int c = ch_client(h);
    size_t conns[2];
    pipeline_apart(h, c, conns);
    ch_srv_send(h, 0, conns[0], REPLY_A);
    ch_expect(h, c, REPLY_A);
    ch_srv_send(h, 1, conns[1], REPLY_B);
    ch_expect(h, c, REPLY_B);
    ch_assert_quiet(h);
}

/* A server that does not answer: the held reply still comes when the hold ends (the loop's
 * timer). */
static void test_hold_ends_without_the_rest(void **state)
{
    struct harness *h = *state;
    ch_batch_wait(h, 50);
    first_reply_before_the_second(h);
    assert_int_equal(holds(h), 1);
}

/* -W 0 holds nothing. */
static void test_no_hold_without_the_wait(void **state)
{
    struct harness *h = *state;
    first_reply_before_the_second(h);
    assert_int_equal(holds(h), 0);
}

/* A client that closes while held is held no more (it is answered, then closed, as any client
 * that closes with requests in flight): the timer and the late reply find nothing of it (a
 * sanitizer's build would see a freed client used), and the next client is held anew. */
static void test_client_gone_while_held(void **state)
{
    struct harness *h = *state;
    ch_batch_wait(h, 1000);
    int c = ch_client(h);
    size_t conns[2];
    pipeline_apart(h, c, conns);
    ch_srv_send(h, 0, conns[0], REPLY_A);
    ch_wait(h, held_once, NULL, "the first reply held");
    ch_close(h, c);
    ch_srv_send(h, 1, conns[1], REPLY_B);
    ch_settle(h);
    assert_int_equal(stats_ctr_get(&ch_worker_stats(h)->curr_connections), 0); /* answered, then freed */
    int d = ch_client(h);
    pipeline_apart(h, d, conns);
    ch_srv_send(h, 0, conns[0], REPLY_A);
    ch_srv_send(h, 1, conns[1], REPLY_B);
    ch_expect(h, d, REPLY_A REPLY_B);
    assert_true(holds(h) >= 1);
    ch_assert_quiet(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_first_reply_waits_for_the_rest, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_hold_ends_without_the_rest, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_no_hold_without_the_wait, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_client_gone_while_held, ch_setup, ch_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
