/*
 * client_hold.c - the hold of a pipeline's first replies (see client_hold.h).
 *
 * Threads: the client's loop's own.
 */
#include "config.h"
#include "core/client_hold.h"

#include <stdint.h>

#include "common/clock.h"
#include "core/conn.h"
#include "core/flush_hold.h"
#include "core/loop.h"
#include "msg/msg.h"
#include "stats/stats.h"

/* Whether c's replies are answered in part: the first are ready, a later one is not. */
static bool client_in_part(const struct conn *c)
{
    const struct msg *req = TAILQ_FIRST(&c->reqs);
    return req != NULL && req->done && c->nreqs_done != c->nreqs;
}

static void client_hold_end(struct conn *c)
{
    flush_hold_forget(c);
    c->t_hold_until = 0;
}

/* Whether the replies c has ready wait for the rest of its pipeline (core/flush_hold.h): while it
 * is answered in part, from the first flush that held them for CLIENT_HOLD_WAITS times -W (at
 * most CLIENT_HOLD_MAX_USEC). Never with -W 0, in a feature's state, closing, held back by its
 * share (fair.h), paused for -M, or with more than CLIENT_HOLD_BYTES_MAX in its queue. */
bool client_holds(struct conn *c)
{
    const struct loop *l = c->loop;
    if (l->batch_wait_usec == 0 || c->feat_on != 0 || c->closing || c->kill || c->fair_nheld > 0 ||
        c->mem_paused || c->held_bytes > CLIENT_HOLD_BYTES_MAX || !client_in_part(c)) {
        if (c->t_hold_until != 0) client_hold_end(c);
        return false;
    }
    uint64_t now = nc_usec_now();
    if (c->t_hold_until == 0) {
        stats_ctr_add(&l->stats->reply_holds, 1);
        uint64_t span = (uint64_t)l->batch_wait_usec * CLIENT_HOLD_WAITS;
        flush_hold_until(c, now + (span < CLIENT_HOLD_MAX_USEC ? span : CLIENT_HOLD_MAX_USEC));
        return true;
    }
    if (now < c->t_hold_until) {
        flush_hold_until(c, c->t_hold_until); /* queued still, unless the clocks disagreed */
        return true;
    }
    client_hold_end(c);
    return false;
}

