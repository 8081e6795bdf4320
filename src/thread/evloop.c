/*
 * evloop.c - the shared set-up of an event-loop thread (see evloop.h).
 *
 * Threads: evloop_start/stop on the starting thread; evloop_main (naming, then fn) on the new one.
 */
#include "config.h"
#include "thread/evloop.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "thread/inbox.h"
#include "thread/thread_signals.h"

struct evloop_boot {
    char name[EVLOOP_NAME_MAX + 1];
    void *(*fn)(void *);
    void *arg;
};

struct event_base *evloop_base_new(void)
{
    struct event_config *cfg = event_config_new();
    if (cfg == NULL) return NULL;
    struct event_base *base = NULL;
    if (event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK) == 0) base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}

static void *evloop_main(void *p)
{
    struct evloop_boot boot = *(struct evloop_boot *)p;
    free(p);
    pthread_setname_np(pthread_self(), boot.name); /* top -H, ps -L, /proc/PID/task/TID/comm */
    return boot.fn(boot.arg);
}

int evloop_start(pthread_t *tid, const char *name, void *(*fn)(void *), void *arg)
{
    struct evloop_boot *boot = malloc(sizeof(*boot));
    if (boot == NULL) return -ENOMEM;
    snprintf(boot->name, sizeof(boot->name), "%s", name);
    boot->fn = fn;
    boot->arg = arg;
    sigset_t old;
    thread_signals_block_async(&old); /* inherited by the new thread */
    int rc = pthread_create(tid, NULL, evloop_main, boot);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) free(boot);
    return -rc;
}

int evloop_stop(pthread_t tid, struct inbox *inbox)
{
    struct inbox_item stop = { .type = INBOX_STOP, .fd = -1 };
    int rc = inbox_push(inbox, &stop);
    if (rc < 0) return rc;
    pthread_join(tid, NULL);
    return 0;
}
