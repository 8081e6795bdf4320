/*
 * worker.h - a worker thread: a pthread running one event loop (core/loop.h) and its inbox, the
 * only way into the worker from other threads. The master hands it accepted clients, new config
 * generations and the order to stop as typed inbox messages; the loop does the rest.
 *
 * Threads: a struct worker is set up and torn down by the master; after worker_start() its loop
 * belongs to the worker's thread, and other threads only push to its inbox.
 */
#ifndef NC_WORKER_H
#define NC_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/util.h"
#include "core/loop.h"
#include "thread/inbox.h"

struct event_base;
struct event;
struct runtime;
struct stats_worker;

/* Each on its own NC_SHARING_SPAN (the array's elements are padded to it): the master's writes to
 * one worker's inbox never share a line with the next worker's loop. */
struct worker {
    _Alignas(NC_SHARING_SPAN) struct loop loop; /* what its connections need (core) */
    pthread_t tid;
    struct event_base *base;
    struct event *inbox_ev;
    struct inbox inbox;
    bool inbox_ok;
    bool running;                 /* its thread was started and not yet joined */
};

/* Prepares a worker (event base, inbox, its loop over rt: it takes over the caller's reference;
 * stats: its counter block) on the calling thread. Returns 0 or -errno. */
int worker_init(struct worker *w, uint32_t id, struct runtime *rt, struct stats_worker *stats,
                size_t mbuf_size);
/* Lets the loops of ws[0..n) reach each other (the features' messages: CLIENT LIST,
 * core/feature.h): before their threads start, after every worker_init. */
void worker_peers(struct worker *ws, uint32_t n);
/* Starts its thread. Returns 0 or -errno. */
int worker_start(struct worker *w);
/* Asks it to stop (through the inbox) and joins it (thread/evloop.h). */
void worker_stop(struct worker *w);
void worker_deinit(struct worker *w);

#endif
