/*
 * loop.h - a worker's core context: everything the connections of one event loop share. Its event
 * base, its mbuf and msg pools, the flush queue (output is written once per loop iteration), its
 * config generations (core/gen.h) and backend connections (core/backend.h), its clients, its
 * counter block and its read clock. thread/worker.c creates one per worker thread and feeds it
 * through loop_take_client() and loop_reload(); nothing in core/ knows about threads or inboxes
 * (a feature's message reaches the other loops through the post() the thread layer gives it,
 * peers). The features its clients may be in are a table the thread layer installs
 * (feature_install; none until then).
 *
 * A client is served entirely by one loop; no lock is taken per request. A reload gives the loop
 * a new current generation: idle clients move to it, busy ones when their queue empties, and old
 * generations are freed once nothing uses them.
 *
 * Threads: a loop and everything reachable from it belongs to the thread that runs its event base
 * (set up by the master before that thread starts, torn down after it stopped). Its stats block
 * is read by the stats thread (relaxed atomics).
 */
#ifndef NC_LOOP_H
#define NC_LOOP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "core/backend.h"
#include "core/conn.h"
#include "core/feature.h"
#include "core/gen.h"
#include "msg/mbuf.h"
#include "common/ratelimit.h"
#include "msg/msg.h"
#include "stats/stats.h"

struct event_base;
struct event;
struct runtime;
struct client_mem;

/* How a loop reaches the others (set by the thread layer before the loops run; n == 1 or post
 * NULL: a loop alone). post hands m to loop `to`'s thread, which gives it to feature_loop_msg; it
 * cannot fail. */
struct loop_peers {
    uint32_t n;
    void (*post)(void *arg, uint32_t to, struct loop_msg *m);
    void *arg;
};

struct loop {
    uint32_t id;                  /* the worker's index: its column in the runtime's stats blocks */
    struct event_base *base;      /* the thread's event base (not owned) */
    struct event *trim_ev;        /* periodic return of unused buffers */
    struct event *idle_ev;        /* periodic look for idle clients (client_idle_timeout), NULL:
                                   * no pool of the current generation has one */
    uint64_t idle_every_usec;     /* its period */
    struct event *reap_ev;        /* activated when an old generation may have become idle */
    struct conn_tqh flushq;       /* conns with output to write (conn_flush_later) */
    struct conn_tqh holdq;        /* conns whose flush is put off (core/flush_hold.h) */
    struct event *hold_ev;        /* fires when the hold queue's first hold ends */
    struct mbuf_pool mbufs;
    struct msg_pool msgs;
    struct gen *gen;              /* the current generation: new clients join it */
    struct gen_tqh gens;          /* every generation still in use, oldest first (gen is last) */
    struct backend_tqh backends;  /* server connections, shared by the generations */
    struct conn_tqh clients;      /* every client conn of this loop */
    uint64_t next_conn_id;
    uint32_t nclients;
    uint32_t rr;                  /* round-robin for key-less commands */
    uint64_t read_usec;           /* when the last read returned data (conn_recv): the time
                                   * stamp of the requests and replies parsed from it */
    struct stats_worker *stats;   /* this loop's counters (it is their only writer) */
    const struct feature_table *features; /* what its clients may be in (core/feature.h) */
    uint32_t feature_flags;       /* the commands (CMD_F_*) some feature orders or serves */
    void *feat[FEATURE_LOOP_SLOTS]; /* each feature's state of the loop (NULL: none yet) */
    struct loop_peers peers;      /* the other loops, for the features' messages (the thread
                                   * layer sets it) */
    const struct client_mem *mem; /* -M and every worker's sum (core/client_mem.h), NULL: none */
    int64_t mem_held;             /* what its clients make it hold */
    int64_t mem_published;        /* mem_held when it was last published */
    int64_t mem_trim_mark;        /* mem_held's highest published level since the trim for its last
                                   * fall (loop_on_trim) */
    struct event *mem_ev;         /* the cap's tick, while over it or with clients paused */
    uint32_t mem_npaused;         /* clients not read for the cap */
    bool mem_over;                /* the proxy was seen over the cap, and not yet back under 9/10 */
    uint64_t mem_far;             /* while over: the sum past which the loop closes at once */
    struct nc_ratelimit mem_log;  /* its lines about clients closed for the cap */
    uint32_t batch_wait_usec;     /* -W: the batch wait (core/batch_wait.h), 0: none */
    uint32_t hotkeys_every;       /* -H: one keyed request in this many is sampled per pool for the
                                   * hot keys (stats/stats_hotkeys.h), 0: none */
    uint64_t batch_wait_off_until; /* usec: no batch wait before (the waits ended late) */
    int64_t batch_wait_late_avg;  /* usec: how late the recent waits ended, averaged */
    uint32_t batch_wait_queue_avg; /* the busiest server's queue at the recent waits, averaged,
                                    * in 1/BATCH_WAIT_QUEUE_ONE (core/batch_wait.h) */
    bool batch_wait_behind;       /* from it: the servers are behind, each wait is the whole -W */
    struct msg_tqh parked;        /* writes refused by a demoted master (core/park.h) */
    struct event *park_ev;        /* relays the parked ones whose master did not move */
    struct msg_tqh redirecting;   /* requests a Redis Cluster redirected, waiting (core/redirect.h) */
    struct event *redirect_ev;    /* sends them on */
    bool moved_pending;           /* a pool's new table moves a server: picked up at the pass's
                                   * end (pool_rt_refresh) */
    bool draining;                /* loop_drain was called: no client stays once answered */
    bool stopping;                /* loop_stop was called: loop_run returns */
    atomic_bool drained;          /* draining and no client left: the one field another thread
                                   * (the master, waiting to stop) reads */
};

/* Prepares l on base: pools, events, and the first generation over rt (takes over the caller's
 * reference). stats: its counter block. Returns 0 or -errno (then loop_deinit cleans up). */
int loop_init(struct loop *l, uint32_t id, struct event_base *base, struct runtime *rt,
              struct stats_worker *stats, size_t mbuf_size);
/* On the loop's own thread, before it dispatches: opens the preconnect pools' connections (and
 * sets the thread up for the batch wait). */
void loop_start(struct loop *l);
/* Closes every client and connection and frees what loop_init made (not the base). */
void loop_deinit(struct loop *l);

/*
 * One pass of l's event base: waits for events (not when output is queued: then it only runs
 * what is ready; nonblock: never), runs their callbacks, then writes the output they queued
 * (conn_flush_later): one writev per connection per pass, without an event of its own to
 * activate; unless nonblock, the batch wait (core/batch_wait.h) may come before the writes.
 * Returns event_base_loop's value (0; 1: no event left; -1: an error).
 */
int loop_pass(struct loop *l, bool nonblock);
/* Runs passes until loop_stop or until the base has no event left: the thread's loop. */
void loop_run(struct loop *l);
/* Ends loop_run after the current callback (on the loop's thread). */
void loop_stop(struct loop *l);

/* Takes over fd, a client the master accepted for pool index `pool` of config generation
 * `generation`. Returns 0, or -errno when it was closed instead. */
int loop_take_client(struct loop *l, uint64_t generation, uint32_t pool, int fd);
/* The process stops gracefully: from now on no client stays once the replies to what it already
 * sent are written (idle ones are closed now, busy ones stop reading). l->drained turns true
 * when the last one is gone. */
void loop_drain(struct loop *l);
/* Whether loop_drain was called and every client is gone (any thread). */
bool loop_drained(struct loop *l);
/* A new config generation (takes over the caller's reference on rt). */
void loop_reload(struct loop *l, struct runtime *rt);
/* A topology source published new server sets (the master wakes every loop): every pool of every
 * generation picks up its newest table now, closing the connections of servers that moved. Not
 * while a request is being routed. */
void loop_routes_changed(struct loop *l);
/* An old generation may have no user left: check (outside the current callback). */
void loop_reap_later(struct loop *l);
/* Arms ev (a timer of the loop) for the earliest deadline of the requests on list (linked by their
 * server_link, each deadline in its t_sent while it waits there: parked, redirected); nothing
 * when the list is empty. */
void loop_arm_earliest(struct event *ev, const struct msg_tqh *list);

#endif
