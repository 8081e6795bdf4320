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

/* A connection queued for flushing whose peer still works on what it was sent. */
static bool batch_wait_wanted(const struct loop *l)
{
    const struct conn *c;
    TAILQ_FOREACH(c, &l->flushq, flush_link)
    {
        if (c->ops->peer_busy != NULL && c->ops->peer_busy(c)) return true;
    }
    return false;
}

/* The wait itself; waits that end late on average turn the waits off for a while. */
static void batch_wait_sleep(struct loop *l, uint64_t start)
{
    uint64_t want = l->batch_wait_usec;
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

void batch_wait_run(struct loop *l)
{
    if (l->batch_wait_usec == 0 || !batch_wait_wanted(l)) return;
    uint64_t start = nc_usec_now();
    if (start < l->batch_wait_off_until) return;
    stats_ctr_add(&l->stats->batch_waits, 1);
    batch_wait_sleep(l, start);
    (void)event_base_loop(l->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}
