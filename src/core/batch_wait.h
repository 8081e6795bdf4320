/*
 * batch_wait.h - the batch wait (-W/--batch-wait): at the end of a pass of its loop that has
 * requests to write to a server that is still working on earlier ones (or the first replies of a
 * client's pipeline to write while its other requests are still answered), a worker sleeps a few
 * microseconds and runs one more non-blocking pass before it writes, so that the requests and
 * replies that come meanwhile share the same system calls: -W while the servers are behind (their
 * queues at the recent waits), half of it while they keep up. A server with nothing outstanding is
 * written at once: at low load nothing waits. The replies of clients that wait for nothing more
 * are written before the wait, not after it. When the waits end late, on average by more than
 * BATCH_WAIT_LATE_FACTOR times what they ask (the thread waits for a CPU: the host is short of
 * them), they are turned off for a while, so a busy host does not make every pass wait for a
 * CPU. notes/batch-wait.md says why and what it costs.
 *
 * Threads: every function here on the loop's own thread (the loop's batch_wait_* fields are its).
 */
#ifndef NC_CORE_BATCH_WAIT_H
#define NC_CORE_BATCH_WAIT_H

#include <stdint.h>

struct loop;

#define BATCH_WAIT_DEFAULT_USEC 100u
#define BATCH_WAIT_MAX_USEC 1000u
/* A pass waits (-W, or half of it: batch_wait_length) up to this many times (at most
 * BATCH_WAIT_MAX_USEC together) while what it holds is still worth it (conn_ops.peer_busy: how
 * many waits a peer is worth): the first replies of a client's pipeline answered in part are
 * worth them all (the client waits for its last reply anyway, and the rest of a pipeline comes in
 * pieces from several servers); a busy server one (notes/batch-wait.md: more for a server with a
 * deep queue put latency on every client). */
#define BATCH_WAIT_MOST_WAITS 4u
/* The waits' lateness (how much later than asked they end) is averaged over about the last
 * 2^BATCH_WAIT_LATE_SHIFT waits; past BATCH_WAIT_LATE_FACTOR times the wait asked for (and at
 * least BATCH_WAIT_LATE_MIN_USEC) the waits are off for BATCH_WAIT_OFF_USEC. An average, not one
 * wait: a virtual CPU's timers are sometimes a few hundred µs late with nothing else running. */
#define BATCH_WAIT_LATE_SHIFT 4
#define BATCH_WAIT_LATE_FACTOR 4u
#define BATCH_WAIT_LATE_MIN_USEC 500u
#define BATCH_WAIT_OFF_USEC 200000u
/* How long each wait is: the whole -W while the servers are behind, half of it otherwise. The
 * measure: at each wait, the most of the connection's requests a busy server in the flush queue
 * has unanswered (conn_ops.peer_queue), up to BATCH_WAIT_QUEUE_CAP (one deep queue must not stand
 * for many waits), averaged over about the last 2^BATCH_WAIT_QUEUE_SHIFT waits, in
 * 1/BATCH_WAIT_QUEUE_ONE. Behind once that average reaches BATCH_WAIT_QUEUE_BEHIND (requests
 * wait in the servers' sockets: a longer wait gives each server read more of them), until it
 * falls under BATCH_WAIT_QUEUE_CAUGHT_UP (servers with one or two each gain little from a longer
 * wait, and their replies would wait): the gap keeps a load near one bound from switching. */
#define BATCH_WAIT_QUEUE_SHIFT 4
#define BATCH_WAIT_QUEUE_ONE 16u
#define BATCH_WAIT_QUEUE_BEHIND 4u
#define BATCH_WAIT_QUEUE_CAUGHT_UP 2u
#define BATCH_WAIT_QUEUE_CAP 16u

/* On the loop's thread, before its first pass: the thread's timer slack made small enough that a
 * wait of l->batch_wait_usec is not stretched by the kernel's default 50 µs of slack. */
void batch_wait_thread_init(const struct loop *l);

/* Between a blocking pass's callbacks and its flush (loop_pass): waits (batch_wait_length, after
 * noting the busy servers' queue: batch_wait_note_queue) and runs one more pass when
 * l->batch_wait_usec is set, the waits are not off (l->batch_wait_off_until) and a connection
 * queued for flushing has a busy peer (conn_ops.peer_busy); again, up to BATCH_WAIT_MOST_WAITS
 * times, while a peer is still worth more waits than were made. */
void batch_wait_run(struct loop *l);

/* The length of batch_wait_run's waits (usec): l->batch_wait_usec while the servers are behind
 * (l->batch_wait_behind), half of it (at least 1) otherwise. */
uint32_t batch_wait_length(const struct loop *l);

/* One wait's busiest server queue (requests) into l->batch_wait_queue_avg, and whether the servers
 * are behind (l->batch_wait_behind) from it. */
void batch_wait_note_queue(struct loop *l, uint32_t queue);

/* Before each wait of batch_wait_run: the conns queued for flushing whose writes gain nothing from
 * it (conn_ops.flush_before_wait, and their peer not busy: a client waiting for nothing more) are
 * written now, so that a request pays a wait on its way to a busy server, not a second one on its
 * reply's way back; the others stay queued, written after the wait. */
void batch_wait_flush_early(struct loop *l);

#endif
