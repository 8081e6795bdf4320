/*
 * flush_hold.h - flushes put off until a deadline: a conn whose output is better written later
 * (a client whose pipeline is answered in part: its first replies wait for the rest, so that the
 * whole pipeline leaves in one write) sits in its loop's hold queue, and one timer per loop puts
 * it back on the flush queue (conn_flush_later) when its deadline passes. Anything that queues
 * it for flushing before then still does; the role decides again at each flush whether to hold.
 * The deadlines are one fixed span after the hold began, so the queue is in deadline order.
 *
 * Threads: the loop's own (flush_hold_init/deinit with loop_init/loop_deinit).
 */
#ifndef NC_CORE_FLUSH_HOLD_H
#define NC_CORE_FLUSH_HOLD_H

#include <stdint.h>

struct conn;
struct loop;

/* The queue and its timer. Returns 0 or -ENOMEM. */
int flush_hold_init(struct loop *l);
void flush_hold_deinit(struct loop *l);

/* Puts c in its loop's hold queue, to be flushed at the usec time `until` (or earlier: the queue
 * is in the order conns joined it, and a conn already in it keeps its place). */
void flush_hold_until(struct conn *c, uint64_t until);

/* Takes c out of the hold queue (conn_destroy). */
void flush_hold_forget(struct conn *c);

#endif
