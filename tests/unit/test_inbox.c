/*
 * test_inbox.c - unit tests of the inbox (thread/inbox.h): items come out in FIFO order, at most
 * INBOX_DRAIN_MAX a drain, and while some are left the eventfd stays readable (the owner's loop
 * comes back for them after its other events: a storm of new clients cannot starve it).
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "thread/inbox.h"

#define NITEMS (2 * INBOX_DRAIN_MAX + 5)

struct seen {
    uint32_t n;
    uint32_t pools[NITEMS];
};

static void record(void *arg, const struct inbox_item *it)
{
    struct seen *s = arg;
    assert_true(s->n < NITEMS);
    s->pools[s->n++] = it->pool;
}

/* NITEMS items, pool i for the i-th. */
static void push_items(struct inbox *ib)
{
    for (uint32_t i = 0; i < NITEMS; i++) {
        struct inbox_item it = { .type = INBOX_DRAIN, .fd = -1, .pool = i };
        assert_int_equal(inbox_push(ib, &it), 0);
    }
}

static bool woken(const struct inbox *ib)
{
    struct pollfd p = { .fd = ib->efd, .events = POLLIN };
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void test_bounded_drain_in_order(void **state)
{
    (void)state;
    struct inbox ib;
    assert_int_equal(inbox_init(&ib), 0);
    push_items(&ib);
    struct seen s = { 0 };
    assert_true(woken(&ib));
    inbox_drain(&ib, record, &s);
    assert_int_equal(s.n, INBOX_DRAIN_MAX);
    assert_true(woken(&ib)); /* the rest is announced again */
    inbox_drain(&ib, record, &s);
    assert_int_equal(s.n, 2 * INBOX_DRAIN_MAX);
    assert_true(woken(&ib));
    inbox_drain(&ib, record, &s);
    assert_int_equal(s.n, NITEMS);
    assert_false(woken(&ib)); /* nothing left, nothing announced */
    for (uint32_t i = 0; i < NITEMS; i++) assert_int_equal(s.pools[i], i);
    struct inbox_item late = { .type = INBOX_DRAIN, .fd = -1, .pool = 7 };
    assert_int_equal(inbox_push(&ib, &late), 0); /* the queue works again once empty */
    assert_true(woken(&ib));
    s.n = 0;
    inbox_drain(&ib, record, &s);
    assert_int_equal(s.n, 1);
    inbox_deinit(&ib);
}

static void test_deinit_takes_everything(void **state)
{
    (void)state;
    struct inbox ib;
    assert_int_equal(inbox_init(&ib), 0);
    push_items(&ib);
    inbox_deinit(&ib); /* every item freed (the ASan stage checks for leaks) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounded_drain_in_order),
        cmocka_unit_test(test_deinit_takes_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
