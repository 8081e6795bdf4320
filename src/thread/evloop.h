/*
 * evloop.h - what every event-loop thread of the process (the master, the workers, the stats
 * thread) sets up the same way: an event base used by one thread only, a pthread started with the
 * asynchronous signals blocked (thread_signals.h) and named for top -H / ps -L, and the stop
 * through the thread's inbox.
 *
 * Threads: evloop_base_new on any thread (the base then belongs to the thread that runs it);
 * evloop_start and evloop_stop on the thread that owns the new thread (the master).
 */
#ifndef NC_EVLOOP_H
#define NC_EVLOOP_H

#include <pthread.h>

struct event_base;
struct inbox;

/* The longest thread name the kernel keeps (without the NUL); evloop_start cuts longer ones. */
#define EVLOOP_NAME_MAX 15

/* An event base with EVENT_BASE_FLAG_NOLOCK: only the thread that runs it touches it (others reach
 * that thread through its inbox). NULL when out of memory. */
struct event_base *evloop_base_new(void);

/*
 * Starts a thread running fn(arg), with the asynchronous signals blocked (they are the master's;
 * the fault signals stay unblocked, thread_signals.h) and named `name` ("nc-worker-3", "nc-stats";
 * cut to EVLOOP_NAME_MAX bytes; the caller's string may go once this returns). The new thread sets
 * its name itself before fn runs. *tid receives its id. Returns 0 or -errno.
 */
int evloop_start(pthread_t *tid, const char *name, void *(*fn)(void *), void *arg);

/*
 * Pushes INBOX_STOP into the thread's inbox (its handler leaves the loop: event_base_loopbreak)
 * and joins it. Returns 0, or -ENOMEM when the stop could not be queued: the thread still runs
 * and is not joined (leave what it uses to the exit).
 */
int evloop_stop(pthread_t tid, struct inbox *inbox);

#endif
