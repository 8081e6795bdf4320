/*
 * worker.h - a worker thread: its own libevent base, inbox, mbuf and msg pools, and per pool its
 * server connections. A client is served entirely by one worker; no lock is taken per request.
 *
 * Threads: a struct worker is written only by its own thread after worker_start(), except its
 * inbox (any thread pushes) and the fields the master sets before starting it.
 */
#ifndef NC_WORKER_H
#define NC_WORKER_H

#include <pthread.h>
#include <stdint.h>

#include "core/runtime.h"
#include "core/server.h"
#include "msg/mbuf.h"
#include "msg/msg.h"
#include "stats/stats.h"
#include "thread/inbox.h"

struct event_base;
struct event;

struct worker {
    uint32_t id;
    pthread_t tid;
    struct event_base *base;
    struct event *inbox_ev;
    struct event *trim_ev;        /* periodic return of unused buffers */
    struct event *flush_ev;       /* activated while flushq is not empty */
    struct conn_tqh flushq;       /* conns with output to write (conn_flush_later) */
    struct inbox inbox;
    struct mbuf_pool mbufs;
    struct msg_pool msgs;
    struct runtime *rt;           /* shared, immutable (the master owns it) */
    struct pool_rt *pools;        /* this worker's side of each pool */
    size_t npools;
    uint64_t next_conn_id;
    uint32_t nclients;
    uint32_t rr;                  /* round-robin for key-less commands */
    uint64_t read_usec;           /* when the last read returned data (conn_recv): the time
                                   * stamp of the requests and replies parsed from it */
    struct conn_tqh clients;     /* every client conn of this worker */
    struct stats_worker *stats;   /* this worker's counters (it is their only writer) */
};

/* Prepares a worker (event base, inbox, pools) on the calling thread. Returns 0 or -errno. */
int worker_init(struct worker *w, uint32_t id, struct runtime *rt, size_t mbuf_size);
/* Starts its thread. Returns 0 or -errno. */
int worker_start(struct worker *w);
/* Asks it to stop (through the inbox) and joins it. */
void worker_stop(struct worker *w);
void worker_deinit(struct worker *w);

#endif
