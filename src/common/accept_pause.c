/*
 * accept_pause.c - a listener's rest after accept() ran out of descriptors (see accept_pause.h).
 * Threads: the owner of the listener's event base.
 */
#include "config.h"
#include "common/accept_pause.h"

#include <errno.h>
#include <string.h>

#include "common/log.h"

bool accept_short_of(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM;
}

static void accept_on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct accept_pause *ap = arg;
    (void)fd;
    (void)what;
    if (event_add(ap->lev, NULL) < 0) log_error("cannot resume accepting (event_add failed)");
}

void accept_pause(struct accept_pause *ap, struct event_base *base, struct event *lev,
                  const char *who, int err)
{
    if (!ap->starved)
        log_warn("%s: accept failed: %s: retrying every %d ms, quietly until it succeeds", who,
                 strerror(err), ACCEPT_PAUSE_MS);
    ap->starved = true;
    ap->lev = lev;
    if (ap->resume_ev == NULL) ap->resume_ev = evtimer_new(base, accept_on_resume, ap);
    if (ap->resume_ev == NULL) return; /* out of memory too: keep the event, try again at once */
    struct timeval tv = { 0, ACCEPT_PAUSE_MS * 1000 };
    event_del(lev);
    evtimer_add(ap->resume_ev, &tv);
}

void accept_resumed(struct accept_pause *ap, const char *who)
{
    if (!ap->starved) return;
    ap->starved = false;
    log_notice("%s: accepting again", who);
}

void accept_pause_deinit(struct accept_pause *ap)
{
    if (ap->resume_ev != NULL) event_free(ap->resume_ev);
    ap->resume_ev = NULL;
}
