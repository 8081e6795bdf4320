/*
 * test_pubsub.c - unit tests of Pub/Sub subscriptions (core/pubsub.c, notes/pubsub.md),
 * black-box at the loop level through core_harness: the (un)subscribe requests the fake redis
 * servers receive on the subscriber's own connections, the confirmations the proxy writes from the
 * client's set, the messages relayed as pushes, RESP2's subscribed mode, and the links' ends.
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

/* redis's RESP2 array of a (un)subscribe confirmation: [what, name, count]. */
static const char *confirm(struct harness *h, const char *what, const char *name, int count)
{
    return ch_text(h, "*3\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n:%d\r\n", strlen(what), what, strlen(name), name, count);
}

/* A RESP2 message (redis's "message" array) of channel. */
static const char *message(struct harness *h, const char *channel, const char *data)
{
    return ch_text(h, "*3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(channel), channel,
                   strlen(data), data);
}

/* Client c subscribes to channel ch of server s (its only one there); the server confirms; returns
 * the server's connection it went on. count: the client's count after it. */
static size_t subscribe_one(struct harness *h, int c, size_t s, const char *ch, int count)
{
    ch_send(h, c, ch_resp(h, "SUBSCRIBE %s", ch));
    size_t k = ch_srv_expect(h, s, ch_resp(h, "SUBSCRIBE %s", ch));
    ch_srv_send(h, s, k, confirm(h, "subscribe", ch, 1));
    ch_expect(h, c, confirm(h, "subscribe", ch, count));
    return k;
}

/* A client subscribed to a (on s1) and b (on s2), one after the other, and its links. */
struct two_subs {
    char a[KEY_MAX], b[KEY_MAX];
    int c;
    size_t la, lb;
};

static void subscribe_two(struct harness *h, struct two_subs *t)
{
    ch_keys_apart(h, t->a, t->b, KEY_MAX);
    t->c = ch_client(h);
    t->la = subscribe_one(h, t->c, 0, t->a, 1);
    t->lb = subscribe_one(h, t->c, 1, t->b, 2);
}

/* SUBSCRIBE a b, a and b on two servers: each server gets its part on a connection of its own
 * (not the client's shared one); the confirmations, with the client's counts 1 and 2, come only
 * once both servers confirmed. */
static void test_subscribe_two_servers(void **state)
{
    struct harness *h = *state;
    char a[KEY_MAX], b[KEY_MAX];
    ch_keys_apart(h, a, b, KEY_MAX);
    int c = ch_client(h);
    size_t shared = ch_relay(h, c, 0, ch_resp(h, "GET %s", a), "$-1\r\n");

    ch_send(h, c, ch_resp(h, "SUBSCRIBE %s %s", a, b));
    size_t la = ch_srv_expect(h, 0, ch_resp(h, "SUBSCRIBE %s", a));
    size_t lb = ch_srv_expect(h, 1, ch_resp(h, "SUBSCRIBE %s", b));
    assert_int_not_equal(la, shared);
    ch_srv_send(h, 0, la, confirm(h, "subscribe", a, 1));
    ch_assert_quiet(h); /* s2 has not confirmed: the client has nothing yet */
    ch_srv_send(h, 1, lb, confirm(h, "subscribe", b, 1));
    ch_expect(h, c, ch_text(h, "%s%s", confirm(h, "subscribe", a, 1), confirm(h, "subscribe", b, 2)));
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 2);
    assert_int_equal(ch_srv_nconns(h, 1), 1);
}

/* A message a server writes on the link reaches the client as it is; one for a channel the
 * client does not have is dropped. */
static void test_message_pushed(void **state)
{
    struct harness *h = *state;
    char a[KEY_MAX];
    ch_key_on(h, 1, "m", a, sizeof(a));
    int c = ch_client(h);
    size_t la = subscribe_one(h, c, 1, a, 1);
    ch_srv_send(h, 1, la, ch_text(h, "%s%s", message(h, "other", "not for it"), message(h, a, "hello")));
    ch_expect(h, c, message(h, a, "hello"));
    ch_srv_send(h, 1, la, message(h, a, "again"));
    ch_expect(h, c, message(h, a, "again"));
    ch_assert_quiet(h);
}

/* The client's set: two names of one server in one request (two confirmations awaited), a name
 * subscribed twice counted once, UNSUBSCRIBE of a name answered at once and sent to its server,
 * and a message for that name still in flight dropped. */
static void test_the_set(void **state)
{
    struct harness *h = *state;
    char a1[KEY_MAX], a2[KEY_MAX];
    ch_key_on(h, 0, "p", a1, sizeof(a1));
    ch_key_on(h, 0, "q", a2, sizeof(a2));
    int c = ch_client(h);
    ch_send(h, c, ch_resp(h, "SUBSCRIBE %s %s", a1, a2));
    size_t l = ch_srv_expect(h, 0, ch_resp(h, "SUBSCRIBE %s %s", a1, a2));
    ch_srv_send(h, 0, l, confirm(h, "subscribe", a1, 1));
    ch_assert_quiet(h); /* one confirmation of two */
    ch_srv_send(h, 0, l, confirm(h, "subscribe", a2, 2));
    ch_expect(h, c, ch_text(h, "%s%s", confirm(h, "subscribe", a1, 1), confirm(h, "subscribe", a2, 2)));

    ch_send(h, c, ch_resp(h, "SUBSCRIBE %s", a2));
    ch_srv_expect_on(h, 0, l, ch_resp(h, "SUBSCRIBE %s", a2));
    ch_srv_send(h, 0, l, confirm(h, "subscribe", a2, 2));
    ch_expect(h, c, confirm(h, "subscribe", a2, 2)); /* still two */

    ch_send(h, c, ch_resp(h, "UNSUBSCRIBE %s", a1));
    ch_expect(h, c, confirm(h, "unsubscribe", a1, 1));
    ch_srv_expect_on(h, 0, l, ch_resp(h, "UNSUBSCRIBE %s", a1));
    /* a message sent before the server unsubscribed, the confirmation, a message kept */
    ch_srv_send(h, 0, l, message(h, a1, "late"));
    ch_srv_send(h, 0, l, confirm(h, "unsubscribe", a1, 1));
    ch_srv_send(h, 0, l, message(h, a2, "kept"));
    ch_expect(h, c, message(h, a2, "kept"));
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 1);
}

/* RESP2 subscribed mode: GET gets redis's refusal (sent nowhere), PING the subscribed PING reply,
 * in the order of the requests. */
static void test_resp2_subscribed_mode(void **state)
{
    struct harness *h = *state;
    char a[KEY_MAX];
    ch_key_on(h, 0, "s", a, sizeof(a));
    int c = ch_client(h);
    subscribe_one(h, c, 0, a, 1);
    ch_send(h, c, ch_resp(h, "GET %s;PING;PING hi", a));
    ch_expect(h, c,
              "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are "
              "allowed in this context\r\n");
    ch_expect(h, c, "*2\r\n$4\r\npong\r\n$0\r\n\r\n*2\r\n$4\r\npong\r\n$2\r\nhi\r\n");
    ch_assert_quiet(h);
    assert_int_equal(ch_srv_nconns(h, 0), 1);
    assert_int_equal(ch_srv_nconns(h, 1), 0);
}

/* UNSUBSCRIBE without names: one confirmation per name (in the set's order, counts going down to
 * 0), the dedicated connections closed rather than cleaned, and the client back to normal. */
static void test_unsubscribe_all(void **state)
{
    struct harness *h = *state;
    struct two_subs t;
    char got[256];
    subscribe_two(h, &t);
    ch_send(h, t.c, ch_resp(h, "UNSUBSCRIBE"));
    const char *ab = ch_text(h, "%s%s", confirm(h, "unsubscribe", t.a, 1), confirm(h, "unsubscribe", t.b, 0));
    const char *ba = ch_text(h, "%s%s", confirm(h, "unsubscribe", t.b, 1), confirm(h, "unsubscribe", t.a, 0));
    assert_true(strlen(ab) < sizeof(got));
    ch_take(h, t.c, strlen(ab), got);
    if (strcmp(got, ab) != 0) assert_string_equal(got, ba);
    ch_srv_wait_closed(h, 0, t.la);
    ch_srv_wait_closed(h, 1, t.lb);
    ch_assert_quiet(h); /* no UNSUBSCRIBE reached them */

    ch_send(h, t.c, ch_resp(h, "UNSUBSCRIBE"));
    ch_expect(h, t.c, "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n");
    assert_int_not_equal(ch_relay(h, t.c, 0, ch_resp(h, "GET %s", t.a), "$1\r\nv\r\n"), t.la);
    ch_assert_quiet(h);
}

/* A server closing a subscribed connection: the client gets what was queued before (a message)
 * and is closed; its link to the other server is closed too. */
static void test_lost_link_closes_client(void **state)
{
    struct harness *h = *state;
    struct two_subs t;
    subscribe_two(h, &t);
    ch_srv_send(h, 0, t.la, message(h, t.a, "last"));
    ch_srv_close(h, 0, t.la);
    ch_expect(h, t.c, message(h, t.a, "last"));
    ch_wait_closed(h, t.c);
    ch_srv_wait_closed(h, 1, t.lb);
    ch_assert_quiet(h);
}

/* PSUBSCRIBE goes to every server; its one confirmation waits for all of them; a pmessage from
 * either reaches the client. */
static void test_pattern_on_every_server(void **state)
{
    struct harness *h = *state;
    const char pm[] = "*4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$2\r\nn1\r\n$1\r\nx\r\n";
    int c = ch_client(h);
    ch_send(h, c, ch_resp(h, "PSUBSCRIBE n*"));
    size_t l0 = ch_srv_expect(h, 0, ch_resp(h, "PSUBSCRIBE n*"));
    size_t l1 = ch_srv_expect(h, 1, ch_resp(h, "PSUBSCRIBE n*"));
    ch_srv_send(h, 1, l1, confirm(h, "psubscribe", "n*", 1));
    ch_assert_quiet(h);
    ch_srv_send(h, 0, l0, confirm(h, "psubscribe", "n*", 1));
    ch_expect(h, c, confirm(h, "psubscribe", "n*", 1)); /* once, not once per server */
    ch_srv_send(h, 1, l1, pm);
    ch_expect(h, c, pm);
    ch_srv_send(h, 0, l0, pm);
    ch_expect(h, c, pm);
    ch_assert_quiet(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_subscribe_two_servers, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_message_pushed, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_the_set, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_resp2_subscribed_mode, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_unsubscribe_all, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_lost_link_closes_client, ch_setup, ch_teardown),
        cmocka_unit_test_setup_teardown(test_pattern_on_every_server, ch_setup, ch_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
