/*
 * client_hold.h - the hold of a pipeline's first replies: when a client's first replies are
 * ready while a later request of its pipeline is still with a server, its flush is put off
 * (core/flush_hold.h) so that the pipeline leaves in one write, and the client reads it once.
 * For CLIENT_HOLD_WAITS times -W at most (1 ms at the default -W 100, never more than
 * CLIENT_HOLD_MAX_USEC, and at the loop's timer granularity), never with -W 0. notes/batch-wait.md
 * ("The hold of a pipeline's first replies") says why and what it costs.
 *
 * Threads: the client's loop's own.
 */
#ifndef NC_CORE_CLIENT_HOLD_H
#define NC_CORE_CLIENT_HOLD_H

#include <stdbool.h>

#include "core/batch_wait.h"

struct conn;

#define CLIENT_HOLD_BYTES_MAX (64u << 10) /* past what its queue holds, replies go at once */
#define CLIENT_HOLD_WAITS 20u /* a pipeline's first replies wait up to this many times -W... */
#define CLIENT_HOLD_MAX_USEC BATCH_WAIT_MAX_USEC /* ...and never longer than this */

/* Whether the replies c has ready wait for the rest of its pipeline now (then c is in its loop's
 * hold queue, and flushed again when its hold ends); counts each hold begun (reply_holds). Called
 * for each flush of c from the loop's flush queue. */
bool client_holds(struct conn *c);

#endif
