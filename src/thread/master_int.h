/*
 * master_int.h - internals shared by the files of the master thread (not for other modules; the
 * interface is thread/master.h): the master's state, and what each file does for the others.
 * master.c runs it all (the first runtime, the workers, the stats thread, the event loop);
 * master_listen.c owns the listeners and accepts; master_reload.c reloads the config (SIGHUP, or a
 * request in the master's inbox from the manage port); master_signal.c handles the signals and
 * the graceful stop.
 *
 * Threads: the master thread only.
 */
#ifndef NC_MASTER_INT_H
#define NC_MASTER_INT_H

#include <event2/util.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "app/options.h"
#include "conf/conf.h"
#include "core/client_mem.h"
#include "thread/inbox.h"

struct event;
struct event_base;
struct listener;
struct prober;
struct runtime;
struct stats_thread;
struct stats_worker;
struct worker;

/* The master's state (master_run's, for its whole run). */
struct master {
    struct event_base *base;
    struct event *sig_ev[8];
    size_t nsig;
    const struct nc_options *opts;
    struct runtime *rt;
    struct worker *workers;
    uint32_t nworkers;       /* initialised */
    uint32_t nstarted;
    uint32_t next_worker;
    struct prober *prober;   /* re-admits ejected servers that answer again */
    struct listener **listeners; /* one per pool of rt, in its order */
    size_t nlisteners;
    struct stats_worker **blocks; /* every worker's counters (the master owns them) */
    struct client_mem mem;   /* -M and where each worker's sum is (core/client_mem.h) */
    struct stats_thread *stats;  /* the manage port; started after the workers, stopped before */
    struct inbox inbox;      /* reload requests from the manage port */
    bool inbox_ok;
    struct event *inbox_ev;
    atomic_bool stopping;    /* the manage port stops waiting for a reload answer */
    struct event *drain_ev;  /* a graceful stop is under way: polls the workers */
    uint64_t drain_deadline; /* usec (nc_usec_now) when the grace is over */
};

/* Starts the topology sources of rt's pools (master.c): each new set they publish wakes every
 * worker (INBOX_ROUTES). */
void master_sources_start(struct master *m, struct runtime *rt);

/* ---- listeners (master_listen.c) ---- */

/* Opens the listeners of m->rt's pools (at the start). Returns 0, or -1 after logging why. */
int master_listen(struct master *m);
/* Closes every listener (a stop: no new client). */
void master_unlisten(struct master *m);
/* The listeners for conf: those of m whose listen text is in it are kept (the same socket), the
 * others opened. Returns the array (conf->npools) or NULL after closing what it opened; kept
 * listeners are left untouched until master_listeners_commit. */
struct listener **master_listeners_for(struct master *m, const struct conf *conf);
/* Makes ls (from master_listeners_for) the listeners of conf; the old ones not kept close. */
void master_listeners_commit(struct master *m, struct listener **ls, const struct conf *conf);

/* ---- reload and the master's inbox (master_reload.c) ---- */

/* Re-reads the config file and applies it. Returns 0, or -1 when nothing changed; answer gets the
 * manage port's line either way. */
int master_reload(struct master *m, char *answer, size_t cap);
/* The inbox the manage port's reload requests come by, watched by m's loop. Returns 0 or -1. */
int master_inbox_start(struct master *m);
/* The inbox's event: answers every reload request waiting in it. */
void master_on_inbox(evutil_socket_t fd, short what, void *arg);

/* ---- signals and the graceful stop (master_signal.c) ---- */

/* Installs the master's signal events on m->base. Returns 0 or -1. */
int master_add_signals(struct master *m);

#endif
