/*
 * master.c - the master thread (see master.h): builds the shared runtime, starts the workers,
 * listens on every pool's address, accepts clients and hands each to a worker (round-robin)
 * through the worker's inbox, enforces client_connections across workers, handles signals.
 *
 * Threads: everything here runs on the master thread. Workers are reached only through their
 * inboxes (thread/inbox.h); the runtime they share is immutable.
 */
#include "config.h"
#include "thread/master.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/sock.h"
#include "core/probe.h"
#include "core/runtime.h"
#include "thread/stats_thread.h"
#include "thread/worker.h"

#define MASTER_ACCEPTS_PER_EVENT 64

struct listener {
    struct master *m;
    uint32_t pool;
    int fd;
    struct event *ev;
};

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
    struct listener *listeners;
    size_t nlisteners;
    struct stats_thread *stats;  /* the manage port; started after the workers, stopped before */
};

static void master_on_signal(evutil_socket_t signo, short what, void *arg)
{
    struct master *m = arg;
    (void)what;
    switch (signo) {
    case SIGTTIN:
        log_level_up();
        log_notice("signal %d (SIGTTIN): log level up to %d", (int)signo, log_level_get());
        break;
    case SIGTTOU:
        log_level_down();
        log_notice("signal %d (SIGTTOU): log level down to %d", (int)signo, log_level_get());
        break;
    case SIGHUP:
    case SIGUSR1:
        log_notice("signal %d: reopening the log file", (int)signo);
        if (log_reopen() < 0) log_error("reopening the log file failed");
        break;
    case SIGINT:
    case SIGTERM:
        log_notice("signal %d: exiting", (int)signo);
        event_base_loopbreak(m->base);
        break;
    default:
        break;
    }
}

static int master_add_signals(struct master *m)
{
    static const int sigs[] = { SIGTTIN, SIGTTOU, SIGHUP, SIGUSR1, SIGINT, SIGTERM };
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct event *ev = evsignal_new(m->base, sigs[i], master_on_signal, m);
        if (ev == NULL || evsignal_add(ev, NULL) < 0) {
            if (ev) event_free(ev);
            return -1;
        }
        m->sig_ev[m->nsig++] = ev;
    }
    return 0;
}

/* Refuses a client over the pool's client_connections limit, with a one-line error. */
static void master_refuse(const struct pool_shared *p, int fd)
{
    static const char redis_msg[] = "-ERR max number of clients reached\r\n";
    static const char mc_msg[] = "SERVER_ERROR max number of clients reached\r\n";
    const char *msg = p->cp->redis ? redis_msg : mc_msg;
    size_t len = p->cp->redis ? sizeof(redis_msg) - 1 : sizeof(mc_msg) - 1;
    ssize_t n = send(fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
    close(fd);
}

static void master_on_accept(evutil_socket_t lfd, short what, void *arg)
{
    struct listener *l = arg;
    struct master *m = l->m;
    struct pool_shared *p = &m->rt->pools[l->pool];
    (void)what;
    for (int i = 0; i < MASTER_ACCEPTS_PER_EVENT; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                log_warn("pool '%s': accept failed: %s", p->cp->name, strerror(errno));
            return;
        }
        long before = atomic_fetch_add(&p->nclients, 1);
        if (p->cp->client_connections > 0 && before >= p->cp->client_connections) {
            atomic_fetch_sub(&p->nclients, 1);
            log_debug(LOG_INFO, "pool '%s': client refused: client_connections %ld reached", p->cp->name,
                      (long)p->cp->client_connections);
            master_refuse(p, fd);
            continue;
        }
        if (!p->cp->listen.is_unix) sock_set_nodelay(fd);
        struct worker *w = &m->workers[m->next_worker];
        m->next_worker = (m->next_worker + 1) % m->nstarted;
        struct inbox_item it = { .type = INBOX_NEW_CLIENT, .fd = fd, .pool = l->pool };
        if (inbox_push(&w->inbox, &it) < 0) {
            atomic_fetch_sub(&p->nclients, 1);
            close(fd);
        }
    }
}

static int master_listen(struct master *m)
{
    const struct conf *conf = m->rt->conf;
    m->listeners = calloc(conf->npools ? conf->npools : 1, sizeof(*m->listeners));
    if (m->listeners == NULL) return -ENOMEM;
    for (size_t i = 0; i < conf->npools; i++) {
        const struct conf_pool *cp = &conf->pools[i];
        int fd = cp->listen.is_unix ? sock_listen_unix(cp->listen.host, cp->listen.perm, cp->backlog)
                                    : sock_listen_tcp(cp->listen.host, cp->listen.port, cp->backlog,
                                                      cp->reuseport);
        if (fd < 0) {
            log_error("pool '%s': cannot listen on %s: %s", cp->name, cp->listen.text, strerror(-fd));
            return fd;
        }
        struct listener *l = &m->listeners[m->nlisteners++];
        l->m = m;
        l->pool = (uint32_t)i;
        l->fd = fd;
        l->ev = event_new(m->base, fd, EV_READ | EV_PERSIST, master_on_accept, l);
        if (l->ev == NULL || event_add(l->ev, NULL) < 0) return -ENOMEM;
        log_notice("pool '%s' listening on %s (%s, %zu servers)", cp->name, cp->listen.text,
                   cp->redis ? "redis" : "memcache", cp->nservers);
    }
    return 0;
}

static void master_unlisten(struct master *m)
{
    for (size_t i = 0; i < m->nlisteners; i++) {
        struct listener *l = &m->listeners[i];
        if (l->ev) event_free(l->ev);
        close(l->fd);
        const struct conf_pool *cp = &m->rt->conf->pools[l->pool];
        if (cp->listen.is_unix) unlink(cp->listen.host);
    }
    free(m->listeners);
    m->listeners = NULL;
    m->nlisteners = 0;
}

static int master_start_workers(struct master *m)
{
    uint32_t n = (uint32_t)m->opts->threads;
    m->workers = calloc(n, sizeof(*m->workers));
    if (m->workers == NULL) return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        m->nworkers++;
        int rc = worker_init(&m->workers[i], i, m->rt, m->opts->mbuf_size);
        if (rc < 0) return rc;
        stats_slowlog_configure(&m->workers[i].stats->slowlog, i, (uint64_t)m->opts->slowlog_usec);
    }
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

int master_run(const struct nc_options *opts, struct conf *conf)
{
    struct master m;
    memset(&m, 0, sizeof(m));
    m.opts = opts;
    int rc = 1;
    m.base = event_base_new();
    if (m.base == NULL) {
        log_error("cannot create the master event base");
        return 1;
    }
    if (master_add_signals(&m) < 0) {
        log_error("cannot install signal handlers");
        goto out;
    }
    m.rt = runtime_create(conf);
    if (m.rt == NULL) {
        log_error("cannot build the runtime state: out of memory");
        goto out;
    }
    int err = master_start_workers(&m);
    if (err < 0) {
        log_error("cannot start the worker threads: %s", strerror(-err));
        goto out;
    }
    m.prober = prober_create(m.base, m.rt);
    if (m.prober == NULL) {
        log_error("cannot start the liveness prober: out of memory");
        goto out;
    }
    m.stats = stats_thread_start(opts, m.rt, m.workers, m.nstarted);
    if (m.stats == NULL) goto out;
    if (master_listen(&m) < 0) goto out;
    log_notice("nutcrackers-%s started on pid %d with %d worker threads", PACKAGE_VERSION, (int)getpid(),
               opts->threads);
    event_base_dispatch(m.base);
    rc = 0;
    log_notice("nutcrackers-%s stopping", PACKAGE_VERSION);
out:
    master_unlisten(&m);
    prober_destroy(m.prober);
    stats_thread_stop(m.stats);
    master_stop_workers(&m);
    if (m.rt) runtime_destroy(m.rt);
    for (size_t i = 0; i < m.nsig; i++) event_free(m.sig_ev[i]);
    event_base_free(m.base);
    return rc;
}
