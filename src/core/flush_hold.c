/*
 * flush_hold.c - flushes put off until a deadline (see flush_hold.h).
 *
 * Threads: the loop's own.
 */
#include "config.h"
#include "core/flush_hold.h"

#include <errno.h>
#include <event2/event.h>

#include "common/clock.h"
#include "core/conn.h"
#include "core/loop.h"

static void flush_hold_arm(struct loop *l, uint64_t now)
{
    const struct conn *c = TAILQ_FIRST(&l->holdq);
    if (c == NULL) return;
    uint64_t in = c->t_hold_until > now ? c->t_hold_until - now : 0;
    struct timeval tv = { .tv_sec = (time_t)(in / 1000000u), .tv_usec = (suseconds_t)(in % 1000000u) };
    (void)evtimer_add(l->hold_ev, &tv); /* cannot fail for a timer already created */
}

/* The timer: the conns whose deadline passed go to the flush queue. */
static void flush_hold_on_timer(int fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct loop *l = arg;
    uint64_t now = nc_usec_now();
    struct conn *c;
    while ((c = TAILQ_FIRST(&l->holdq)) != NULL && c->t_hold_until <= now) {
        TAILQ_REMOVE(&l->holdq, c, hold_link);
        c->hold_queued = false;
        conn_flush_later(c);
    }
    flush_hold_arm(l, now);
}

int flush_hold_init(struct loop *l)
{
    TAILQ_INIT(&l->holdq);
    l->hold_ev = evtimer_new(l->base, flush_hold_on_timer, l);
    return l->hold_ev == NULL ? -ENOMEM : 0;
}

void flush_hold_deinit(struct loop *l)
{
    struct conn *c;
    while ((c = TAILQ_FIRST(&l->holdq)) != NULL) flush_hold_forget(c);
    if (l->hold_ev) event_free(l->hold_ev);
    l->hold_ev = NULL;
}

void flush_hold_until(struct conn *c, uint64_t until)
{
    if (c->hold_queued) return;
    struct loop *l = c->loop;
    bool first = TAILQ_EMPTY(&l->holdq);
    c->t_hold_until = until;
    c->hold_queued = true;
    TAILQ_INSERT_TAIL(&l->holdq, c, hold_link);
    if (first) flush_hold_arm(l, nc_usec_now());
}

void flush_hold_forget(struct conn *c)
{
    if (!c->hold_queued) return;
    TAILQ_REMOVE(&c->loop->holdq, c, hold_link);
    c->hold_queued = false;
    /* the timer stays armed for a conn that left: it finds the queue's new head then */
}
