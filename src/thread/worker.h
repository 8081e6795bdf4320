/*
 * worker.h - a worker thread: its own libevent base, inbox, mbuf and msg pools, its config
 * generations (core/gen.h: per pool its side of the pool and servers) and its backend
 * connections (core/backend.h). A client is served entirely by one worker; no lock is taken per
 * request. A reload reaches it as INBOX_RELOAD: it builds the new generation, moves idle clients
 * to it, and frees old generations once nothing uses them.
 *
 * Threads: a struct worker is written only by its own thread after worker_start(), except its
 * inbox (any thread pushes) and the fields the master sets before starting it.
 */
#ifndef NC_WORKER_H
#define NC_WORKER_H

#include <pthread.h>
#include <stdint.h>

#include "core/backend.h"
#include "core/gen.h"
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
    bool inbox_ok;
    struct mbuf_pool mbufs;
    struct msg_pool msgs;
    struct event *reap_ev;        /* activated when an old generation may have become idle */
    struct worker_gen *gen;       /* the current generation: new clients join it */
    struct worker_gen_tqh gens;   /* every generation still in use, oldest first (gen is last) */
    struct backend_tqh backends;  /* server connections, shared by the generations */
    uint64_t next_conn_id;
    uint32_t nclients;
    uint32_t rr;                  /* round-robin for key-less commands */
    uint64_t read_usec;           /* when the last read returned data (conn_recv): the time
                                   * stamp of the requests and replies parsed from it */
    struct conn_tqh clients;     /* every client conn of this worker */
    struct stats_worker *stats;   /* this worker's counters (it is their only writer) */
};

/* Prepares a worker (event base, inbox, pools, the first generation over rt: it takes over the
 * caller's reference; stats: its counter block) on the calling thread. Returns 0 or -errno. */
int worker_init(struct worker *w, uint32_t id, struct runtime *rt, struct stats_worker *stats,
                size_t mbuf_size);
/* An old generation may have no user left: check (outside the current callback). */
void worker_reap_later(struct worker *w);
/* Starts its thread. Returns 0 or -errno. */
int worker_start(struct worker *w);
/* Asks it to stop (through the inbox) and joins it. */
void worker_stop(struct worker *w);
void worker_deinit(struct worker *w);

#endif
