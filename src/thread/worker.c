/*
 * worker.c - worker threads (see worker.h): one event loop each, fed through the inbox.
 *
 * Threads: worker_init/start/stop/deinit are called by the master; everything reached from the
 * event loop runs on the worker's own thread.
 */
#include "config.h"
#include "thread/worker.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "core/client.h"

#define WORKER_MBUF_FREE_MAX 256  /* free chunks kept per worker; more go back to the allocator */
#define WORKER_MSG_FREE_MAX 4096
#define WORKER_TRIM_SEC 1  /* how often free chunks beyond the recent need are released */
#define WORKER_KEEP_MIN 16
#define WORKER_KEEP_MIN_MSGS 256

/* After a burst, memory goes back to its baseline: every second, free chunks beyond what the
 * worker has in use (plus a few) are returned, and malloc gives the pages back. */
static void worker_on_trim(int fd, short what, void *arg)
{
    struct worker *w = arg;
    (void)fd;
    (void)what;
    uint32_t keep = w->mbufs.nlive < WORKER_KEEP_MIN ? WORKER_KEEP_MIN : (uint32_t)w->mbufs.nlive;
    uint32_t keep_msgs = w->msgs.nlive < WORKER_KEEP_MIN_MSGS ? WORKER_KEEP_MIN_MSGS : (uint32_t)w->msgs.nlive;
    if (w->mbufs.nfree > keep || w->msgs.nfree > keep_msgs) {
        mbuf_pool_trim(&w->mbufs, keep);
        msg_pool_trim(&w->msgs, keep_msgs);
        malloc_trim(0);
    }
}

static void worker_on_flush(int fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_flush_queue(arg);
}

static void worker_on_inbox(int fd, short what, void *arg)
{
    struct worker *w = arg;
    (void)fd;
    (void)what;
    struct inbox_item *it = inbox_take_all(&w->inbox);
    while (it != NULL) {
        struct inbox_item *next = it->next;
        switch (it->type) {
        case INBOX_NEW_CLIENT:
            if (it->pool < w->npools) {
                if (client_accept(w, &w->pools[it->pool], it->fd) < 0)
                    log_warn("worker %u: cannot take a client: out of memory", w->id);
            } else {
                close(it->fd);
            }
            break;
        case INBOX_STOP:
            event_base_loopbreak(w->base);
            break;
        }
        free(it);
        it = next;
    }
}

int worker_init(struct worker *w, uint32_t id, struct runtime *rt, size_t mbuf_size)
{
    memset(w, 0, sizeof(*w));
    w->id = id;
    w->rt = rt;
    TAILQ_INIT(&w->clients);
    TAILQ_INIT(&w->flushq);
    mbuf_pool_init(&w->mbufs, mbuf_size, WORKER_MBUF_FREE_MAX);
    msg_pool_init(&w->msgs, WORKER_MSG_FREE_MAX);
    int rc = inbox_init(&w->inbox);
    if (rc < 0) return rc;
    struct event_config *cfg = event_config_new();
    if (cfg == NULL) return -ENOMEM;
    event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
    w->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (w->base == NULL) return -ENOMEM;
    w->inbox_ev = event_new(w->base, w->inbox.efd, EV_READ | EV_PERSIST, worker_on_inbox, w);
    if (w->inbox_ev == NULL || event_add(w->inbox_ev, NULL) < 0) return -ENOMEM;
    w->flush_ev = event_new(w->base, -1, 0, worker_on_flush, w);
    if (w->flush_ev == NULL) return -ENOMEM;
    struct timeval every = { .tv_sec = WORKER_TRIM_SEC };
    w->trim_ev = event_new(w->base, -1, EV_PERSIST, worker_on_trim, w);
    if (w->trim_ev == NULL || event_add(w->trim_ev, &every) < 0) return -ENOMEM;
    w->stats = stats_worker_create(rt);
    if (w->stats == NULL) return -ENOMEM;
    w->npools = rt->npools;
    w->pools = calloc(rt->npools ? rt->npools : 1, sizeof(*w->pools));
    if (w->pools == NULL) return -ENOMEM;
    for (size_t i = 0; i < rt->npools; i++) {
        rc = pool_rt_init(&w->pools[i], w, &rt->pools[i]);
        if (rc < 0) return rc;
    }
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    for (size_t i = 0; i < w->npools; i++) {
        if (!w->pools[i].cp->preconnect) continue;
        for (uint32_t s = 0; s < w->pools[i].nservers; s++) server_preconnect(&w->pools[i].servers[s]);
    }
    event_base_dispatch(w->base);
    return NULL;
}

int worker_start(struct worker *w)
{
    /* signals are the master's: workers block them all */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&w->tid, NULL, worker_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -rc;
}

void worker_stop(struct worker *w)
{
    struct inbox_item stop = { .type = INBOX_STOP, .fd = -1 };
    inbox_push(&w->inbox, &stop);
    pthread_join(w->tid, NULL);
}

void worker_deinit(struct worker *w)
{
    struct conn *c;
    while ((c = TAILQ_FIRST(&w->clients)) != NULL) client_close(c);
    for (size_t i = 0; w->pools != NULL && i < w->npools; i++) pool_rt_deinit(&w->pools[i]);
    free(w->pools);
    w->pools = NULL;
    if (w->inbox_ev) event_free(w->inbox_ev);
    if (w->trim_ev) event_free(w->trim_ev);
    w->trim_ev = NULL;
    if (w->flush_ev) event_free(w->flush_ev);
    w->flush_ev = NULL;
    if (w->base) event_base_free(w->base);
    w->inbox_ev = NULL;
    w->base = NULL;
    inbox_deinit(&w->inbox);
    stats_worker_destroy(w->stats);
    w->stats = NULL;
    msg_pool_deinit(&w->msgs);
    mbuf_pool_deinit(&w->mbufs);
}
