/*
 * test_batch_wait.c - unit tests of what the batch wait writes before it waits
 * (batch_wait_flush_early, core/batch_wait.c): over a loop's flush queue of connections of the
 * tests' own roles (ops tables whose flush records the order and may close or queue others), the
 * ones that gain nothing from the wait (conn_ops.flush_before_wait, their peer not busy) are
 * written, in queue order; the others stay queued, in theirs; a flush that frees or queues another
 * connection is safe. And how long each wait is (batch_wait_length): half of -W until the busy
 * servers' queues say they are behind, the whole of it while they are.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "core/batch_wait.h"
#include "core/conn.h"
#include "core/loop.h"

#define MAX_FLUSHED 16

static struct conn *flushed[MAX_FLUSHED];
static size_t nflushed;
static struct conn *to_free;  /* what the closer's flush frees (as conn_destroy: out of the queue) */
static struct conn *to_queue; /* what the closer's flush queues */

static void record(struct conn *c)
{
    assert_true(nflushed < MAX_FLUSHED);
    assert_false(c->flush_queued);
    flushed[nflushed++] = c;
}

static unsigned not_busy(const struct conn *c)
{
    (void)c;
    return 0;
}

static unsigned busy(const struct conn *c)
{
    (void)c;
    return BATCH_WAIT_MOST_WAITS;
}

static void closer_flush(struct conn *c)
{
    record(c);
    if (to_free != NULL) {
        if (to_free->flush_queued) TAILQ_REMOVE(&to_free->loop->flushq, to_free, flush_link);
        free(to_free);
        to_free = NULL;
    }
    if (to_queue != NULL) conn_flush_later(to_queue);
}

/* a client waiting for nothing more; one in a feature's state (no peer_busy); one whose pipeline
 * is answered in part; a server with requests outstanding; a client whose flush closes or queues
 * others */
static const struct conn_ops idle_client = { .flush = record, .peer_busy = not_busy, .flush_before_wait = true };
static const struct conn_ops feature_client = { .flush = record, .flush_before_wait = true };
static const struct conn_ops waiting_client = { .flush = record, .peer_busy = busy, .flush_before_wait = true };
static const struct conn_ops busy_server = { .flush = record, .peer_busy = busy };
static const struct conn_ops closer_client = { .flush = closer_flush, .peer_busy = not_busy,
                                               .flush_before_wait = true };

static struct conn *fake(struct loop *l, const struct conn_ops *ops)
{
    struct conn *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    c->loop = l;
    c->ops = ops;
    return c;
}

static struct conn *queued(struct loop *l, const struct conn_ops *ops)
{
    struct conn *c = fake(l, ops);
    conn_flush_later(c);
    return c;
}

/* What was written, in order: want[0..n). */
static void expect_flushed(struct conn *const *want, size_t n)
{
    assert_int_equal(nflushed, n);
    for (size_t i = 0; i < n; i++) assert_ptr_equal(flushed[i], want[i]);
}

/* What is left in l's flush queue, in order, each still marked queued: want[0..n). */
static void expect_left(struct loop *l, struct conn *const *want, size_t n)
{
    size_t i = 0;
    struct conn *c;
    TAILQ_FOREACH(c, &l->flushq, flush_link)
    {
        assert_true(i < n);
        assert_true(c->flush_queued);
        assert_ptr_equal(c, want[i++]);
    }
    assert_int_equal(i, n);
}

static int setup(void **state)
{
    struct loop *l = calloc(1, sizeof(*l));
    assert_non_null(l);
    TAILQ_INIT(&l->flushq);
    nflushed = 0;
    to_free = to_queue = NULL;
    *state = l;
    return 0;
}

static int teardown(void **state)
{
    struct loop *l = *state;
    struct conn *c;
    while ((c = TAILQ_FIRST(&l->flushq)) != NULL) {
        TAILQ_REMOVE(&l->flushq, c, flush_link);
        free(c);
    }
    for (size_t i = 0; i < nflushed; i++) free(flushed[i]);
    free(l);
    return 0;
}

/* Clients waiting for nothing more are written, in order; a busy server and a client whose
 * pipeline is answered in part stay queued, in theirs. */
static void test_only_what_gains_nothing_is_written(void **state)
{
    struct loop *l = *state;
    struct conn *server = queued(l, &busy_server);
    struct conn *a = queued(l, &idle_client);
    struct conn *waiting = queued(l, &waiting_client);
    struct conn *f = queued(l, &feature_client);
    struct conn *b = queued(l, &idle_client);
    batch_wait_flush_early(l);
    expect_flushed((struct conn *[]){ a, f, b }, 3);
    expect_left(l, (struct conn *[]){ server, waiting }, 2);
}

/* A flush that frees a connection queued after it, and queues another: the freed one is never
 * touched again (a sanitizer's build would see it), the new one is written too (it gains nothing
 * from the wait either), the server stays. */
static void test_a_flush_that_frees_or_queues_others(void **state)
{
    struct loop *l = *state;
    struct conn *x = queued(l, &closer_client);
    to_free = queued(l, &idle_client);
    struct conn *server = queued(l, &busy_server);
    struct conn *z = queued(l, &idle_client);
    to_queue = fake(l, &idle_client);
    struct conn *n = to_queue;
    batch_wait_flush_early(l);
    assert_null(to_free);
    expect_flushed((struct conn *[]){ x, z, n }, 3);
    expect_left(l, (struct conn *[]){ server }, 1);
}

/* Nothing queued, or only what waits: nothing written, the queue as it was. */
static void test_nothing_to_write_early(void **state)
{
    struct loop *l = *state;
    batch_wait_flush_early(l);
    assert_int_equal(nflushed, 0);
    struct conn *server = queued(l, &busy_server);
    struct conn *waiting = queued(l, &waiting_client);
    batch_wait_flush_early(l);
    assert_int_equal(nflushed, 0);
    expect_left(l, (struct conn *[]){ server, waiting }, 2);
}

/* n waits whose busiest server had queue requests unanswered */
static void note_queues(struct loop *l, uint32_t queue, unsigned n)
{
    for (unsigned i = 0; i < n; i++) batch_wait_note_queue(l, queue);
}

/* Servers with one or two requests each: half of -W; queues of BATCH_WAIT_QUEUE_BEHIND at the
 * recent waits: all of it, until they are under BATCH_WAIT_QUEUE_CAUGHT_UP again. */
static void test_a_wait_is_half_until_the_servers_are_behind(void **state)
{
    struct loop *l = *state;
    l->batch_wait_usec = 100;
    assert_int_equal(batch_wait_length(l), 50);
    note_queues(l, BATCH_WAIT_QUEUE_BEHIND - 1, 200);
    assert_int_equal(batch_wait_length(l), 50);
    note_queues(l, BATCH_WAIT_QUEUE_BEHIND, 200);
    assert_int_equal(batch_wait_length(l), 100);
    note_queues(l, 1, 1);
    assert_int_equal(batch_wait_length(l), 100); /* an average: one short queue changes nothing */
    note_queues(l, BATCH_WAIT_QUEUE_CAUGHT_UP, 200); /* between the bounds: stays behind */
    assert_int_equal(batch_wait_length(l), 100);
    note_queues(l, BATCH_WAIT_QUEUE_CAUGHT_UP - 1, 200);
    assert_int_equal(batch_wait_length(l), 50);
    note_queues(l, BATCH_WAIT_QUEUE_BEHIND - 1, 200); /* between them again: stays caught up */
    assert_int_equal(batch_wait_length(l), 50);
    l->batch_wait_usec = 1; /* never 0: that would be no wait */
    assert_int_equal(batch_wait_length(l), 1);
}

/* One deep queue (a server that stalled once) does not make the waits whole by itself: a queue
 * counts up to BATCH_WAIT_QUEUE_CAP; a few waits of one that stays deep do. */
static void test_one_deep_queue_is_not_the_servers_behind(void **state)
{
    struct loop *l = *state;
    l->batch_wait_usec = 100;
    note_queues(l, 1, 200);
    note_queues(l, 100000, 1);
    assert_int_equal(batch_wait_length(l), 50);
    note_queues(l, 100000, 5);
    assert_int_equal(batch_wait_length(l), 100);
    note_queues(l, 0, 200); /* waits for clients' pipelines alone: no server queue */
    assert_int_equal(batch_wait_length(l), 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_only_what_gains_nothing_is_written, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_flush_that_frees_or_queues_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nothing_to_write_early, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_wait_is_half_until_the_servers_are_behind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_deep_queue_is_not_the_servers_behind, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
