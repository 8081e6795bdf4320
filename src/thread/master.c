/*
 * master.c - the master thread (see master.h): signals, listeners, accept, hand-off to workers.
 *
 * Threads: everything here runs on the master thread. Workers are reached only through their
 * inboxes (thread/inbox.h).
 */
#include "config.h"
#include "thread/master.h"

#include <event2/event.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

struct master {
    struct event_base *base;
    struct event *sig_ev[8];
    size_t nsig;
    const struct nc_options *opts;
    struct conf *conf;
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

int master_run(const struct nc_options *opts, struct conf *conf)
{
    struct master m;
    memset(&m, 0, sizeof(m));
    m.opts = opts;
    m.conf = conf_ref(conf);
    int rc = 1;
    m.base = event_base_new();
    if (m.base == NULL) {
        log_error("cannot create the master event base");
        goto out_conf;
    }
    if (master_add_signals(&m) < 0) {
        log_error("cannot install signal handlers");
        goto out_base;
    }
    log_notice("nutcrackers-%s started on pid %d with %d worker threads", PACKAGE_VERSION,
               (int)getpid(), opts->threads);
    event_base_dispatch(m.base);
    rc = 0;
    log_notice("nutcrackers-%s stopped", PACKAGE_VERSION);
out_base:
    for (size_t i = 0; i < m.nsig; i++) event_free(m.sig_ev[i]);
    event_base_free(m.base);
out_conf:
    conf_unref(m.conf);
    return rc;
}
