/*
 * master.c - the master thread (see master.h): builds the shared runtime, starts the workers,
 * listens on every pool's address, accepts clients and hands each to a worker (round-robin)
 * through the worker's inbox, enforces client_connections across workers, handles signals, and
 * reloads the config (SIGHUP, or the manage port's `reload` through the master's inbox).
 *
 * A reload parses the file again; if it is invalid nothing changes. Otherwise a new runtime (the
 * next generation) is built and bound to the workers' stats registries, listeners are matched by
 * their listen text (the same socket is kept, so nothing in its backlog is lost), new ones open
 * and removed ones close, and the generation goes to every worker and the stats thread through
 * their inboxes before the next accept: a client handed over later always finds it there.
 *
 * The service manager hears of it all (app/notify.h): READY=1 once every listener is bound,
 * RELOADING=1 ... READY=1 around each reload, STOPPING=1 when a stop begins (a graceful one's
 * drain included).
 * SIGTERM stops gracefully: the listeners close (a new client is refused), every worker closes
 * its idle clients and, once answered, the busy ones; the master polls until no worker has a
 * client left, or the grace (-G) is over, and exits 0. SIGINT stops at once.
 *
 * Threads: everything here runs on the master thread. Workers are reached only through their
 * inboxes (thread/inbox.h); the runtimes they share are immutable (but for their atomics).
 */
#include "config.h"
#include "thread/master.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/daemon.h"
#include "app/notify.h"
#include "common/accept_pause.h"
#include "common/clock.h"
#include "common/mem_trim.h"
#include "common/log.h"
#include "common/sock.h"
#include "core/probe.h"
#include "core/runtime.h"
#include "core/runtime_stats.h"
#include "stats/stats.h"
#include "thread/evloop.h"
#include "thread/reload_req.h"
#include "thread/stats_thread.h"
#include "thread/worker.h"

#define MASTER_ACCEPTS_PER_EVENT 64
#define MASTER_DRAIN_POLL_USEC 10000 /* how often a graceful stop looks at the workers */

struct listener {
    struct master *m;
    uint32_t pool;           /* index in the current runtime */
    int fd;
    struct event *ev;
    struct accept_pause pause; /* out of fds: ev rests a while (common/accept_pause.h) */
    char *text;              /* the listen address as written: what a reload matches */
    char *unix_path;         /* a unix socket's path (unlinked when it closes), or NULL */
    dev_t dev;               /* unix: the socket file bound at unix_path (another spelling of */
    ino_t ino;               /* the path names the same file; only this file is unlinked) */
};

/* Whether path is the socket file l bound. */
static bool listener_owns_file(const struct listener *l, const char *path)
{
    struct stat st;
    return l->unix_path != NULL && stat(path, &st) == 0 && S_ISSOCK(st.st_mode) &&
           st.st_dev == l->dev && st.st_ino == l->ino;
}

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
    struct stats_thread *stats;  /* the manage port; started after the workers, stopped before */
    struct inbox inbox;      /* reload requests from the manage port */
    bool inbox_ok;
    struct event *inbox_ev;
    atomic_bool stopping;    /* the manage port stops waiting for a reload answer */
    struct event *drain_ev;  /* a graceful stop is under way: polls the workers */
    uint64_t drain_deadline; /* usec (nc_usec_now) when the grace is over */
};

static int master_reload(struct master *m, char *answer, size_t cap);
static void master_unlisten(struct master *m);

/* While stopping gracefully: leaves the loop once every worker has served its last client, or
 * when the grace is over (the workers' stop then closes who is left). */
static void master_on_drain_tick(evutil_socket_t fd, short what, void *arg)
{
    struct master *m = arg;
    (void)fd;
    (void)what;
    uint32_t busy = 0;
    for (uint32_t i = 0; i < m->nstarted; i++) busy += !loop_drained(&m->workers[i].loop);
    if (busy == 0) {
        log_notice("graceful stop: every client served and closed");
    } else if (nc_usec_now() >= m->drain_deadline) {
        log_warn("graceful stop: the grace of %ld ms is over: closing the clients still waiting "
                 "for replies (on %u of %u workers)", (long)m->opts->stop_grace_msec, busy, m->nstarted);
    } else {
        return;
    }
    event_base_loopbreak(m->base);
}

/* SIGTERM: no new client, the workers finish what their clients sent (see the top). Returns -1
 * when that cannot be set up (the caller stops at once). */
static int master_drain(struct master *m)
{
    atomic_store(&m->stopping, true); /* a reload asked for now is refused */
    notify_stopping(); /* the service manager hears of the stop when it begins */
    master_unlisten(m);
    m->drain_deadline = nc_usec_now() + (uint64_t)m->opts->stop_grace_msec * 1000;
    for (uint32_t i = 0; i < m->nstarted; i++) {
        struct inbox_item it = { .type = INBOX_DRAIN, .fd = -1 };
        if (inbox_push(&m->workers[i].inbox, &it) < 0) return -1;
    }
    struct timeval every = { .tv_sec = 0, .tv_usec = MASTER_DRAIN_POLL_USEC };
    m->drain_ev = event_new(m->base, -1, EV_PERSIST, master_on_drain_tick, m);
    if (m->drain_ev == NULL || event_add(m->drain_ev, &every) < 0) return -1;
    return 0;
}

/* The name of a signal the master handles, for its log lines. */
static const char *master_signal_name(int signo)
{
    switch (signo) {
    case SIGTTIN: return "SIGTTIN";
    case SIGTTOU: return "SIGTTOU";
    case SIGHUP: return "SIGHUP";
    case SIGUSR1: return "SIGUSR1";
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "?";
    }
}

/* Every line names the signal, "signal 1 (SIGHUP): ...", and says what it did. */
static void master_on_signal(evutil_socket_t fd, short what, void *arg)
{
    struct master *m = arg;
    int signo = (int)fd;
    const char *name = master_signal_name(signo);
    (void)what;
    switch (signo) {
    case SIGTTIN:
        log_level_up();
        log_notice("signal %d (%s): log level up to %d", signo, name, log_level_get());
        break;
    case SIGTTOU:
        log_level_down();
        log_notice("signal %d (%s): log level down to %d", signo, name, log_level_get());
        break;
    case SIGHUP:
    case SIGUSR1:
        /* this line goes to the old file: whoever rotated it sees the signal arrive */
        log_notice("signal %d (%s): reopening the log file%s", signo, name,
                   signo == SIGHUP ? ", then reloading the configuration" : "");
        if (log_reopen() < 0) log_error("signal %d (%s): reopening the log file failed", signo, name);
        if (signo == SIGHUP && atomic_load(&m->stopping)) {
            log_notice("signal %d (%s): stopping: the configuration is not reloaded", signo, name);
        } else if (signo == SIGHUP) {
            char answer[RELOAD_ANSWER_MAX];
            if (master_reload(m, answer, sizeof(answer)) == 0) {
                log_notice("signal %d (%s): configuration reloaded: generation %lu", signo, name,
                           (unsigned long)m->rt->generation);
            } else {
                log_error("signal %d (%s): configuration not reloaded: still serving generation %lu "
                          "(errors above)", signo, name, (unsigned long)m->rt->generation);
            }
        }
        break;
    case SIGTERM:
        if (m->drain_ev != NULL) {
            log_notice("signal %d (%s): already stopping (SIGINT stops at once)", signo, name);
            break;
        }
        if (m->opts->stop_grace_msec > 0) {
            log_notice("signal %d (%s): stopping: no new clients; requests in flight have %ld ms to "
                       "finish", signo, name, (long)m->opts->stop_grace_msec);
            if (master_drain(m) == 0) break;
            log_error("signal %d (%s): cannot stop gracefully: out of memory: exiting now", signo, name);
        } else {
            log_notice("signal %d (%s): exiting", signo, name);
        }
        event_base_loopbreak(m->base);
        break;
    case SIGINT:
        log_notice("signal %d (%s): exiting", signo, name);
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

/* Refuses a client over the pool's client_connections limit, with its protocol's one-line error. */
static void master_refuse(const struct pool_shared *p, int fd)
{
    const char *msg = p->proto->max_clients_reply;
    ssize_t n = send(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
    close(fd);
}

/* How the log names a pool's listener. */
static const char *listener_who(const struct pool_shared *p, char *buf, size_t cap)
{
    snprintf(buf, cap, "pool '%s'", p->cp->name);
    return buf;
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
            int err = errno;
            if (err == EINTR || err == ECONNABORTED) continue;
            char who[200];
            if (accept_short_of(err))
                accept_pause(&l->pause, m->base, l->ev, listener_who(p, who, sizeof(who)), err);
            else if (err != EAGAIN && err != EWOULDBLOCK)
                log_warn("pool '%s': accept failed: %s", p->cp->name, strerror(err));
            return;
        }
        if (l->pause.starved) {
            char who[200];
            accept_resumed(&l->pause, listener_who(p, who, sizeof(who)));
        }
        long before = atomic_fetch_add(pool_nclients(p), 1);
        if (p->cp->client_connections > 0 && before >= p->cp->client_connections) {
            atomic_fetch_sub(pool_nclients(p), 1);
            log_debug(LOG_INFO, "pool '%s': client refused: client_connections %ld reached", p->cp->name,
                      (long)p->cp->client_connections);
            master_refuse(p, fd);
            continue;
        }
        if (!p->cp->listen.is_unix) sock_set_nodelay(fd);
        struct worker *w = &m->workers[m->next_worker];
        m->next_worker = (m->next_worker + 1) % m->nstarted;
        struct inbox_item it = { .type = INBOX_NEW_CLIENT, .fd = fd, .pool = l->pool,
                                 .generation = m->rt->generation };
        if (inbox_push(&w->inbox, &it) < 0) {
            atomic_fetch_sub(pool_nclients(p), 1);
            close(fd);
        }
    }
}

static void listener_close(struct listener *l)
{
    if (l == NULL) return;
    if (l->ev) event_free(l->ev);
    accept_pause_deinit(&l->pause);
    if (l->fd >= 0) close(l->fd);
    if (l->unix_path != NULL && listener_owns_file(l, l->unix_path)) unlink(l->unix_path);
    free(l->text);
    free(l->unix_path);
    free(l);
}

/* Opens a listening socket for pool cp (index i). NULL after logging why. */
static struct listener *listener_open(struct master *m, const struct conf_pool *cp, uint32_t i)
{
    struct listener *l = calloc(1, sizeof(*l));
    if (l == NULL) return NULL;
    l->m = m;
    l->pool = i;
    l->fd = -1;
    l->text = strdup(cp->listen.text);
    if (l->text == NULL) goto oom;
    int fd = cp->listen.is_unix ? sock_listen_unix(cp->listen.host, cp->listen.perm, cp->backlog)
                                : sock_listen_tcp(cp->listen.host, cp->listen.port, cp->backlog, cp->reuseport);
    if (fd < 0) {
        log_error("pool '%s': cannot listen on %s: %s", cp->name, cp->listen.text, strerror(-fd));
        free(l->text);
        free(l);
        return NULL;
    }
    l->fd = fd;
    if (cp->listen.is_unix) {
        struct stat st;
        if (stat(cp->listen.host, &st) == 0) {
            l->dev = st.st_dev;
            l->ino = st.st_ino;
        }
        if ((l->unix_path = strdup(cp->listen.host)) == NULL) goto oom;
    }
    l->ev = event_new(m->base, fd, EV_READ | EV_PERSIST, master_on_accept, l);
    if (l->ev == NULL || event_add(l->ev, NULL) < 0) goto oom;
    log_notice("pool '%s' listening on %s (%s, %zu servers)", cp->name, cp->listen.text,
               proto_for_pool(cp)->name, cp->nservers);
    return l;
oom:
    log_error("pool '%s': cannot listen on %s: out of memory", cp->name, cp->listen.text);
    listener_close(l);
    return NULL;
}

/* The listeners for conf: those of m whose listen text is in it are kept (the same socket), the
 * others opened. Returns the array (conf->npools) or NULL after closing what it opened; kept
 * listeners are left untouched until master_listeners_commit. */
static struct listener **master_listeners_for(struct master *m, const struct conf *conf)
{
    struct listener **ls = calloc(conf->npools ? conf->npools : 1, sizeof(*ls));
    if (ls == NULL) return NULL;
    bool *kept = calloc(m->nlisteners ? m->nlisteners : 1, sizeof(*kept));
    if (kept == NULL) {
        free(ls);
        return NULL;
    }
    for (size_t i = 0; i < conf->npools; i++) {
        const struct conf_pool *cp = &conf->pools[i];
        for (size_t j = 0; j < m->nlisteners; j++) {
            /* the same text, or a unix path spelled differently naming the socket file it bound
             * (opening it again would unlink that file and take the path over) */
            const struct listener *l = m->listeners[j];
            if (!kept[j] && (strcmp(l->text, cp->listen.text) == 0 ||
                             (cp->listen.is_unix && listener_owns_file(l, cp->listen.host)))) {
                kept[j] = true;
                ls[i] = m->listeners[j];
                break;
            }
        }
        if (ls[i] == NULL && (ls[i] = listener_open(m, cp, (uint32_t)i)) == NULL) {
            for (size_t k = 0; k < i; k++) {
                bool old = false;
                for (size_t j = 0; j < m->nlisteners; j++) old = old || m->listeners[j] == ls[k];
                if (!old) listener_close(ls[k]);
            }
            free(kept);
            free(ls);
            return NULL;
        }
    }
    free(kept);
    return ls;
}

/* Makes ls (from master_listeners_for) the listeners of conf: kept ones point at their pool's new
 * index and take its backlog; the old ones not kept stop accepting and close. */
static void master_listeners_commit(struct master *m, struct listener **ls, const struct conf *conf)
{
    for (size_t j = 0; j < m->nlisteners; j++) {
        struct listener *l = m->listeners[j];
        bool kept = false;
        for (size_t i = 0; i < conf->npools && !kept; i++) kept = ls[i] == l;
        if (!kept) {
            log_notice("no pool listens on %s any more: closed", l->text);
            listener_close(l);
        }
    }
    for (size_t i = 0; i < conf->npools; i++) {
        ls[i]->pool = (uint32_t)i;
        if (listen(ls[i]->fd, conf->pools[i].backlog) < 0)
            log_warn("pool '%s': cannot apply backlog %d: %s", conf->pools[i].name, conf->pools[i].backlog,
                     strerror(errno));
    }
    free(m->listeners);
    m->listeners = ls;
    m->nlisteners = conf->npools;
}

static int master_listen(struct master *m)
{
    struct listener **ls = master_listeners_for(m, m->rt->conf);
    if (ls == NULL) return -1;
    master_listeners_commit(m, ls, m->rt->conf);
    return 0;
}

static void master_unlisten(struct master *m)
{
    for (size_t i = 0; i < m->nlisteners; i++) listener_close(m->listeners[i]);
    free(m->listeners);
    m->listeners = NULL;
    m->nlisteners = 0;
}

/* Reload errors: logged, and joined with "; " for the manage port's answer. */
struct reload_errors {
    char text[RELOAD_ANSWER_MAX];
    size_t len;
};

static void master_reload_error(void *ctx, const char *line)
{
    struct reload_errors *e = ctx;
    log_error("reload: %s", line);
    if (e->len + 3 >= sizeof(e->text)) return;
    int n = snprintf(e->text + e->len, sizeof(e->text) - e->len, "%s%s", e->len ? "; " : "", line);
    if (n > 0) e->len += (size_t)n < sizeof(e->text) - e->len ? (size_t)n : sizeof(e->text) - e->len - 1;
}

/* Hands rt (one reference each) to every worker and the stats thread. */
static void master_publish(struct master *m, struct runtime *rt)
{
    for (uint32_t i = 0; i < m->nstarted; i++) {
        struct inbox_item it = { .type = INBOX_RELOAD, .fd = -1, .rt = runtime_get(rt) };
        if (inbox_push(&m->workers[i].inbox, &it) < 0) {
            runtime_put(rt);
            log_error("worker %u: cannot hand it config generation %lu: out of memory", i,
                      (unsigned long)rt->generation);
        }
    }
    stats_thread_reload(m->stats, rt);
}

/* Re-reads the config file and applies it. Returns 0, or -1 when nothing changed; answer gets the
 * manage port's line either way. */
static int master_reload(struct master *m, char *answer, size_t cap)
{
    const char *path = m->opts->conf_file;
    uint64_t serving = m->rt->generation;
    struct reload_errors errs = { .len = 0 };
    log_notice("reloading the configuration from '%s'", path);
    notify_reloading();
    stats_thread_reload_password(m->stats); /* the -K file too, whatever becomes of the config */
    struct conf *conf = conf_load(path, master_reload_error, &errs);
    struct runtime *rt = NULL;
    if (conf == NULL) goto fail;
    conf->generation = serving + 1;
    rt = runtime_create(conf, m->rt, m->nstarted);
    conf_unref(conf);
    if (rt == NULL || stats_bind(rt, m->blocks, m->nstarted) < 0) {
        master_reload_error(&errs, "out of memory");
        goto fail;
    }
    struct listener **ls = master_listeners_for(m, rt->conf);
    if (ls == NULL) {
        master_reload_error(&errs, "cannot listen on a new address (see the log)");
        goto fail;
    }
    master_listeners_commit(m, ls, rt->conf);
    struct runtime *old = m->rt;
    m->rt = rt;
    master_publish(m, rt);
    prober_destroy(m->prober);
    m->prober = prober_create(m->base, rt);
    if (m->prober == NULL) log_error("reload: cannot restart the liveness prober: out of memory");
    runtime_put(old);
    log_notice("configuration reloaded from '%s': generation %lu, %zu pools", path,
               (unsigned long)rt->generation, rt->npools);
    snprintf(answer, cap, "OK generation %lu", (unsigned long)rt->generation);
    notify_ready((unsigned long)rt->generation, rt->npools);
    return 0;
fail:
    runtime_put(rt);
    log_error("reload of '%s' failed: still serving generation %lu", path, (unsigned long)serving);
    int n = snprintf(answer, cap, "ERR: reload failed (still serving generation %lu): ", (unsigned long)serving);
    size_t at = n > 0 && (size_t)n < cap ? (size_t)n : 0;
    const char *why = errs.len ? errs.text : "unknown error";
    notify_reload_failed((unsigned long)serving, why);
    size_t wl = strlen(why);
    if (wl > cap - at - 1) wl = cap - at - 1;
    memcpy(answer + at, why, wl);
    answer[at + wl] = '\0';
    return -1;
}

/* The manage port's reload requests (thread/reload_req.h). */
static void master_inbox_item(void *arg, const struct inbox_item *it)
{
    struct master *m = arg;
    if (it->type != INBOX_RELOAD_REQ) return;
    char answer[RELOAD_ANSWER_MAX];
    if (atomic_load(&m->stopping)) snprintf(answer, sizeof(answer), "ERR: shutting down");
    else master_reload(m, answer, sizeof(answer));
    reload_req_answer(it->req, answer);
    reload_req_put(it->req);
}

static void master_on_inbox(evutil_socket_t fd, short what, void *arg)
{
    struct master *m = arg;
    (void)fd;
    (void)what;
    inbox_drain(&m->inbox, master_inbox_item, m);
}

static int master_start_workers(struct master *m)
{
    uint32_t n = (uint32_t)m->opts->threads;
    mem_trim_init(); /* before the workers, which trim concurrently (mem_trim.h) */
    m->workers = calloc(n, sizeof(*m->workers));
    if (m->workers == NULL) return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        m->nworkers++;
        int rc = worker_init(&m->workers[i], i, runtime_get(m->rt), m->blocks[i], m->opts->mbuf_size);
        if (rc < 0) return rc;
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

static int master_inbox_start(struct master *m)
{
    if (inbox_init(&m->inbox) < 0) return -1;
    m->inbox_ok = true;
    m->inbox_ev = event_new(m->base, m->inbox.efd, EV_READ | EV_PERSIST, master_on_inbox, m);
    if (m->inbox_ev == NULL || event_add(m->inbox_ev, NULL) < 0) return -1;
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
    m.prober = prober_create(m.base, m.rt);
    if (m.prober == NULL) {
        log_error("cannot start the liveness prober: out of memory");
        goto out;
    }
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
