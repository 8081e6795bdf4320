/*
 * master_signal.c - the master's signals (see master.h for what each does) and the graceful stop.
 *
 * SIGTERM stops gracefully: the listeners close (a new client is refused), every worker closes
 * its idle clients and, once answered, the busy ones; the master polls until no worker has a
 * client left, or the grace (-G) is over, and leaves its loop. SIGINT stops at once. The service
 * manager hears STOPPING=1 when a stop begins (a graceful one's drain included).
 *
 * Threads: the master thread (libevent's signal events run its handlers in its loop).
 */
#include "config.h"

#include <event2/event.h>
#include <signal.h>
#include <string.h>

#include "app/notify.h"
#include "common/clock.h"
#include "common/log.h"
#include "thread/master_int.h"
#include "thread/reload_req.h"
#include "thread/worker.h"

#define MASTER_DRAIN_POLL_USEC 10000 /* how often a graceful stop looks at the workers */

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

/* SIGHUP and SIGUSR1: reopen the log file, then name the signal, in the new file (one that
 * logrotate removed or renamed is not read again); SIGHUP then reloads the configuration. */
static void master_on_reopen(struct master *m, int signo, const char *name)
{
    int err = log_reopen();
    if (err < 0) {
        log_error("signal %d (%s): reopening the log file failed: %s: still writing to the old one",
                  signo, name, strerror(-err));
    } else {
        log_notice("signal %d (%s): log file reopened%s", signo, name,
                   signo == SIGHUP ? ", reloading the configuration" : "");
    }
    if (signo != SIGHUP) return;
    if (atomic_load(&m->stopping)) {
        log_notice("signal %d (%s): stopping: the configuration is not reloaded", signo, name);
        return;
    }
    char answer[RELOAD_ANSWER_MAX];
    if (master_reload(m, answer, sizeof(answer)) == 0) {
        log_notice("signal %d (%s): configuration reloaded: generation %lu", signo, name,
                   (unsigned long)m->rt->generation);
    } else {
        log_error("signal %d (%s): configuration not reloaded: still serving generation %lu "
                  "(errors above)", signo, name, (unsigned long)m->rt->generation);
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
        master_on_reopen(m, signo, name);
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

int master_add_signals(struct master *m)
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
