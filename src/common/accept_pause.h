/*
 * accept_pause.h - what a listening socket does when accept() fails for want of descriptors or
 * memory. The socket stays readable, so its level-triggered event would fire again at once: a busy
 * loop logging a line per try. Instead the listener's event rests ACCEPT_PAUSE_MS (the clients wait
 * in the backlog), the failure is logged once, and the first accept that succeeds says so.
 *
 * Threads: the thread whose event base holds the listener (the master for pool listeners, the
 * stats thread for the manage port).
 */
#ifndef NC_COMMON_ACCEPT_PAUSE_H
#define NC_COMMON_ACCEPT_PAUSE_H

#include <event2/event.h>
#include <stdbool.h>

#define ACCEPT_PAUSE_MS 100

struct accept_pause {
    struct event *lev;       /* the listener's event, re-added when the pause ends */
    struct event *resume_ev; /* the pause's timer (created on first use) */
    bool starved;            /* out of fds since the last accept (logged once) */
};

/* Whether accept()'s errno err is a shortage (descriptors, memory) worth a pause. */
bool accept_short_of(int err);
/* Pauses lev (the listener's event, on base) after accept() failed with err; `who` names the
 * listener in the log ("pool 'alpha'", "manage port"). */
void accept_pause(struct accept_pause *ap, struct event_base *base, struct event *lev,
                  const char *who, int err);
/* An accept succeeded: says once that accepting resumed. */
void accept_resumed(struct accept_pause *ap, const char *who);
/* Frees the timer (before the listener's event base goes). */
void accept_pause_deinit(struct accept_pause *ap);

#endif
