/*
 * batch_wait.c - the batch wait (see batch_wait.h).
 *
 * Threads: the loop's own.
 */
#include "config.h"
#include "core/batch_wait.h"

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <time.h>

#include "common/clock.h"
#include "core/conn.h"
#include "core/loop.h"
#include "stats/stats.h"

/* the slack asked for: well under the shortest wait worth asking for */
#define BATCH_WAIT_SLACK_NSEC 1000ul

void batch_wait_thread_init(const struct loop *l)
{
    if (l->batch_wait_usec == 0) return;
    (void)prctl(PR_SET_TIMERSLACK, BATCH_WAIT_SLACK_NSEC, 0, 0, 0); /* best effort */
}

/* Over the connections queued for flushing, the longest hold one of their peers is worth, in
 * waits (conn_ops.peer_busy): 0 when no peer is busy; and, when queue is not NULL, into it the
 * most requests one of their busy peers has still to answer (conn_ops.peer_queue). */
static unsigned batch_wait_units(const struct loop *l, uint32_t *queue)
{
    unsigned units = 0;
    const struct conn *c;
    TAILQ_FOREACH(c, &l->flushq, flush_link)
    {
        if (c->ops->peer_busy == NULL) continue;
        unsigned u = c->ops->peer_busy(c);
        if (u == 0) continue;
        if (u > units) units = u;
        if (queue == NULL) {
            if (units >= BATCH_WAIT_MOST_WAITS) break; /* the most there is */
            continue;
        }
        uint32_t q = c->ops->peer_queue ? c->ops->peer_queue(c) : 0;
        if (q > *queue) *queue = q;
    }
    return units;
}

void batch_wait_note_queue(struct loop *l, uint32_t queue)
{
    if (queue > BATCH_WAIT_QUEUE_CAP) queue = BATCH_WAIT_QUEUE_CAP;
    int64_t avg = l->batch_wait_queue_avg;
    int64_t diff = (int64_t)queue * BATCH_WAIT_QUEUE_ONE - avg;
    int64_t round = (1 << BATCH_WAIT_QUEUE_SHIFT) - 1; /* away from 0: the average reaches a steady queue */
    avg += (diff + (diff > 0 ? round : diff < 0 ? -round : 0)) / (1 << BATCH_WAIT_QUEUE_SHIFT);
    l->batch_wait_queue_avg = (uint32_t)avg;
    if (avg >= (int64_t)(BATCH_WAIT_QUEUE_BEHIND * BATCH_WAIT_QUEUE_ONE)) l->batch_wait_behind = true;
    else if (avg < (int64_t)(BATCH_WAIT_QUEUE_CAUGHT_UP * BATCH_WAIT_QUEUE_ONE)) l->batch_wait_behind = false;
}

uint32_t batch_wait_length(const struct loop *l)
{
    if (l->batch_wait_behind) return l->batch_wait_usec;
    return l->batch_wait_usec > 1 ? l->batch_wait_usec / 2 : l->batch_wait_usec;
}

/* The wait itself; waits that end late on average turn the waits off for a while. */
static void batch_wait_sleep(struct loop *l, uint64_t start, uint64_t want)
{
    struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)want * 1000L };
    (void)nanosleep(&ts, NULL); /* a signal that cuts it short only shortens the wait */
    uint64_t now = nc_usec_now();
    int64_t late = (int64_t)(now - start) - (int64_t)want;
    if (late < 0) late = 0;
    int64_t avg = l->batch_wait_late_avg;
    avg += (late - avg) / (1 << BATCH_WAIT_LATE_SHIFT);
    uint64_t limit = want * BATCH_WAIT_LATE_FACTOR;
    if (limit < BATCH_WAIT_LATE_MIN_USEC) limit = BATCH_WAIT_LATE_MIN_USEC;
    if (avg > (int64_t)limit) {
        l->batch_wait_off_until = now + BATCH_WAIT_OFF_USEC;
        avg = 0;
        stats_ctr_add(&l->stats->batch_wait_offs, 1);
    }
    l->batch_wait_late_avg = avg;
}

/* c's writes gain nothing from the wait: its role says so and its peer is not busy. */
static bool batch_wait_goes_first(const struct conn *c)
{
    return c->ops->flush_before_wait && (c->ops->peer_busy == NULL || c->ops->peer_busy(c) == 0);
}

/* Each conn queued when it starts is taken from the head once and flushed or queued again at the
 * tail: a flush may close or queue other conns, so no pointer into the queue is kept across one. */
void batch_wait_flush_early(struct loop *l)
{
    uint32_t queued = 0;
    const struct conn *q;
    TAILQ_FOREACH(q, &l->flushq, flush_link) queued++;
    for (uint32_t i = 0; i < queued; i++) {
        struct conn *c = TAILQ_FIRST(&l->flushq);
        if (c == NULL) return;
        TAILQ_REMOVE(&l->flushq, c, flush_link);
        if (!batch_wait_goes_first(c)) {
            TAILQ_INSERT_TAIL(&l->flushq, c, flush_link); /* written after the wait */
            continue;
        }
        c->flush_queued = false;
        c->ops->flush(c);
    }
}

void batch_wait_run(struct loop *l)
{
    if (l->batch_wait_usec == 0) return;
    uint32_t queue = 0;
    unsigned units = batch_wait_units(l, &queue);
    if (units == 0) return;
    uint64_t start = nc_usec_now();
    if (start < l->batch_wait_off_until) return;
    batch_wait_note_queue(l, queue);
    uint32_t want = batch_wait_length(l);
    /* each wait the same, at most BATCH_WAIT_MAX_USEC together */
    unsigned most = BATCH_WAIT_MAX_USEC / want;
    if (units > most) units = most > 0 ? most : 1;
    stats_ctr_add(&l->stats->batch_waits, 1);
    if (want == l->batch_wait_usec) stats_ctr_add(&l->stats->batch_waits_full, 1);
    for (unsigned done = 1;; done++) {
        batch_wait_flush_early(l);
        batch_wait_sleep(l, start, want);
        (void)event_base_loop(l->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        /* again only while what the pass holds is still worth more waits than were made */
        if (done >= units || l->batch_wait_off_until > start || batch_wait_units(l, NULL) <= done) return;
        if (done == 1) stats_ctr_add(&l->stats->batch_waits_longer, 1);
        start = nc_usec_now();
    }
}
