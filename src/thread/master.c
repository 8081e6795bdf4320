/*
 * master.c - the master thread (see master.h): builds the shared runtime, starts the workers and
 * the stats thread, opens the listeners and runs the master's event loop until a stop; then stops
 * it all in order. Its other tasks have files of their own (master_int.h): the listeners and the
 * accept, which hands each client to a worker (round-robin) through the worker's inbox and
 * enforces client_connections across workers (master_listen.c); the config reload, on SIGHUP or
 * the manage port's `reload` through the master's inbox (master_reload.c); the signals and the
 * graceful stop (master_signal.c).
 *
 * The service manager hears of it all (app/notify.h): READY=1 once every listener is bound,
 * RELOADING=1 ... READY=1 around each reload, STOPPING=1 when a stop begins (a graceful one's
 * drain included).
 *
 * Threads: everything here runs on the master thread. Workers are reached only through their
 * inboxes (thread/inbox.h); the runtimes they share are immutable (but for their atomics).
 */
#include "config.h"
#include "thread/master.h"

#include <errno.h>
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/daemon.h"
#include "app/notify.h"
#include "common/mem_trim.h"
#include "common/log.h"
#include "common/util.h"
#include "core/probe.h"
#include "core/runtime.h"
#include "core/runtime_stats.h"
#include "stats/stats.h"
#include "thread/evloop.h"
#include "thread/master_int.h"
#include "thread/stats_thread.h"
#include "thread/worker.h"
#include "topo/resp_link.h"

static int master_start_workers(struct master *m)
{
    uint32_t n = (uint32_t)m->opts->threads;
    mem_trim_init(); /* before the workers, which trim concurrently (mem_trim.h) */
    m->workers = aligned_alloc(NC_SHARING_SPAN, n * sizeof(*m->workers)); /* a multiple of it */
    if (m->workers == NULL) return -ENOMEM;
    memset(m->workers, 0, n * sizeof(*m->workers));
    m->mem = (struct client_mem){ .cap = (uint64_t)m->opts->max_memory, .nworkers = n, .blocks = m->blocks };
    for (uint32_t i = 0; i < n; i++) {
        m->nworkers++;
        int rc = worker_init(&m->workers[i], i, runtime_get(m->rt), m->blocks[i], m->opts->mbuf_size);
        if (rc == 0) rc = client_mem_loop_init(&m->workers[i].loop, &m->mem);
        if (rc < 0) return rc;
        m->workers[i].loop.batch_wait_usec = (uint32_t)m->opts->batch_wait_usec;
        m->workers[i].loop.hotkeys_every = (uint32_t)m->opts->hotkeys_every;
        stats_slowlog_configure(&m->blocks[i]->slowlog, i, (uint64_t)m->opts->slowlog_usec);
    }
    worker_peers(m->workers, n);
    for (uint32_t i = 0; i < n; i++) {
        int rc = worker_start(&m->workers[i]);
        if (rc < 0) return rc;
        m->nstarted++;
    }
    return 0;
}

static void master_stop_workers(struct master *m)
{
    for (uint32_t i = 0; i < m->nstarted; i++) worker_stop(&m->workers[i]);
    for (uint32_t i = 0; i < m->nworkers; i++) worker_deinit(&m->workers[i]);
    free(m->workers);
    m->workers = NULL;
    m->nworkers = m->nstarted = 0;
}

/* The first generation: its runtime, bound to one counter block per worker. */
static int master_first_runtime(struct master *m, struct conf *conf)
{
    size_t n = (size_t)m->opts->threads;
    m->blocks = calloc(n, sizeof(*m->blocks));
    if (m->blocks == NULL) return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if ((m->blocks[i] = stats_worker_create()) == NULL) return -ENOMEM;
    }
    conf->generation = 1;
    m->rt = runtime_create(conf, NULL, n);
    if (m->rt == NULL) return -ENOMEM;
    return stats_bind(m->rt, m->blocks, n);
}

/* runtime_waker.wake: a topology source moved servers; every worker picks up the new tables at
 * once (arg: the master). */
static void master_wake_workers(void *arg)
{
    struct master *m = arg;
    for (uint32_t i = 0; i < m->nstarted; i++) {
        struct inbox_item it = { .type = INBOX_ROUTES, .fd = -1 };
        if (inbox_push(&m->workers[i].inbox, &it) < 0)
            log_error("worker %u: out of memory: it picks the new servers up at its next request", i);
    }
}

void master_sources_start(struct master *m, struct runtime *rt)
{
    struct runtime_waker waker = { .wake = master_wake_workers, .arg = m };
    runtime_sources_start(rt, m->base, &waker);
}

/* What the master runs for the servers of the current runtime: the prober of ejected servers, and
 * the topology sources that follow the pools' servers at run time (none for a static list).
 * Returns 0 or -1 (logged). */
static int master_watch_servers(struct master *m)
{
    m->prober = prober_create(m->base, m->rt);
    if (m->prober == NULL) {
        log_error("cannot start the liveness prober: out of memory");
        return -1;
    }
    master_sources_start(m, m->rt);
    return 0;
}

int master_run(const struct nc_options *opts, struct conf *conf)
{
    struct master m;
    memset(&m, 0, sizeof(m));
    m.opts = opts;
    atomic_init(&m.stopping, false);
    int rc = 1;
    notify_start();
    m.base = evloop_base_new(); /* the master thread runs it, no other */
    if (m.base == NULL) {
        log_error("cannot create the master event base");
        return 1;
    }
    if (master_add_signals(&m) < 0 || master_inbox_start(&m) < 0) {
        log_error("cannot install signal handlers");
        goto out;
    }
    if (master_first_runtime(&m, conf) < 0) {
        log_error("cannot build the runtime state: out of memory");
        goto out;
    }
    int err = master_start_workers(&m);
    if (err < 0) {
        log_error("cannot start the worker threads: %s", strerror(-err));
        goto out;
    }
    if (master_watch_servers(&m) < 0) goto out;
    m.stats = stats_thread_start(opts, m.rt, m.blocks, m.nstarted, &m.inbox, &m.stopping);
    if (m.stats == NULL) goto out;
    if (master_listen(&m) < 0) goto out;
    log_notice("nutcrackers-%s started on pid %d with %d worker threads", PACKAGE_VERSION, (int)getpid(),
               opts->threads);
    daemon_started(); /* a -d launcher waits for this (app/daemon.h) */
    notify_ready((unsigned long)m.rt->generation, m.rt->npools); /* every listener is bound */
    event_base_dispatch(m.base);
    if (m.drain_ev == NULL) notify_stopping(); /* a graceful stop said it at its start */
    rc = 0;
    log_notice("nutcrackers-%s stopping", PACKAGE_VERSION);
out:
    atomic_store(&m.stopping, true);
    if (m.inbox_ok) master_on_inbox(-1, 0, &m); /* answers a reload request still waiting */
    master_unlisten(&m);
    prober_destroy(m.prober);
    if (m.rt != NULL) runtime_sources_stop(m.rt);
    (void)resp_link_reap_pending(m.base); /* links the sources gave up just before the stop */
    stats_thread_stop(m.stats);
    master_stop_workers(&m);
    runtime_put(m.rt);
    for (size_t i = 0; m.blocks != NULL && i < (size_t)opts->threads; i++) stats_worker_destroy(m.blocks[i]);
    free(m.blocks);
    if (m.drain_ev) event_free(m.drain_ev);
    if (m.inbox_ev) event_free(m.inbox_ev);
    if (m.inbox_ok) inbox_deinit(&m.inbox);
    for (size_t i = 0; i < m.nsig; i++) event_free(m.sig_ev[i]);
    event_base_free(m.base);
    return rc;
}
