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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/mem_trim.h"
#include "core/client.h"
#include "thread/thread_signals.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WORKER_UNDER_ASAN 1 /* clang */
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(WORKER_UNDER_ASAN)
/* Under ASan nothing is pooled: a msg or chunk used after going back to its pool is invisible to
 * ASan while it sits there; with every put a real free(), such a use is reported. */
#define WORKER_MBUF_FREE_MAX 0
#define WORKER_MSG_FREE_MAX 0
#else
#define WORKER_MBUF_FREE_MAX 256  /* free chunks kept per worker; more go back to the allocator */
#define WORKER_MSG_FREE_MAX 4096
#endif
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
    worker_reap_later(w); /* an old generation waiting for its server connections to drain */
    if (w->mbufs.nfree > keep || w->msgs.nfree > keep_msgs) {
        mbuf_pool_trim(&w->mbufs, keep);
        msg_pool_trim(&w->msgs, keep_msgs);
        mem_trim(); /* mem_trim_init ran before the workers started */
    }
}

static void worker_on_flush(int fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    conn_flush_queue(arg);
}

/* Frees the old generations nothing uses any more (outside any connection's callback: freeing a
 * generation may close server connections). */
static void worker_on_reap(int fd, short what, void *arg)
{
    struct worker *w = arg;
    (void)fd;
    (void)what;
    struct worker_gen *g = TAILQ_FIRST(&w->gens);
    while (g != NULL) {
        struct worker_gen *next = TAILQ_NEXT(g, link);
        if (gen_idle(g)) {
            log_debug(LOG_INFO, "worker %u: config generation %lu no longer used: freed", w->id,
                      (unsigned long)g->rt->generation);
            gen_destroy(g);
        }
        g = next;
    }
}

void worker_reap_later(struct worker *w)
{
    if (w->reap_ev != NULL && TAILQ_FIRST(&w->gens) != w->gen) event_active(w->reap_ev, EV_TIMEOUT, 1);
}

/* A new config generation: new clients join it at once; each existing client follows when it has
 * nothing queued (now if it is idle), or is closed once answered if its pool is gone. */
static void worker_reload(struct worker *w, struct runtime *rt)
{
    uint64_t generation = rt->generation;
    struct worker_gen *g = gen_create(w, rt);
    if (g == NULL) {
        log_error("worker %u: out of memory for config generation %lu: still serving generation %lu",
                  w->id, (unsigned long)generation, (unsigned long)w->gen->rt->generation);
        return;
    }
    w->gen = g;
    struct conn *c = TAILQ_FIRST(&w->clients);
    while (c != NULL) {
        struct conn *next = TAILQ_NEXT(c, link);
        client_on_reload(c);
        c = next;
    }
    gen_preconnect(g);
    worker_reap_later(w);
}

/* A client the master accepted for pool `pool` of generation `generation`. */
static void worker_take_client(struct worker *w, const struct inbox_item *it)
{
    struct worker_gen *g = w->gen;
    if (g->rt->generation != it->generation) {
        /* only when this worker could not build that generation (out of memory) */
        TAILQ_FOREACH(g, &w->gens, link)
        {
            if (g->rt->generation == it->generation) break;
        }
    }
    if (g == NULL || it->pool >= g->npools) {
        log_warn("worker %u: a client of config generation %lu it does not have: closed", w->id,
                 (unsigned long)it->generation);
        close(it->fd);
        return;
    }
    if (client_accept(w, &g->pools[it->pool], it->fd) < 0)
        log_warn("worker %u: cannot take a client: out of memory", w->id);
}

static void worker_inbox_item(void *arg, const struct inbox_item *it)
{
    struct worker *w = arg;
    switch (it->type) {
    case INBOX_NEW_CLIENT: worker_take_client(w, it); break;
    case INBOX_RELOAD: worker_reload(w, it->rt); break;
    case INBOX_STOP: event_base_loopbreak(w->base); break;
    case INBOX_RELOAD_REQ: break; /* for the master only */
    }
}

static void worker_on_inbox(int fd, short what, void *arg)
{
    struct worker *w = arg;
    (void)fd;
    (void)what;
    inbox_drain(&w->inbox, worker_inbox_item, w);
}

int worker_init(struct worker *w, uint32_t id, struct runtime *rt, struct stats_worker *stats,
                size_t mbuf_size)
{
    memset(w, 0, sizeof(*w));
    w->id = id;
    w->stats = stats;
    TAILQ_INIT(&w->clients);
    TAILQ_INIT(&w->flushq);
    TAILQ_INIT(&w->gens);
    TAILQ_INIT(&w->backends);
    mbuf_pool_init(&w->mbufs, mbuf_size, WORKER_MBUF_FREE_MAX);
    msg_pool_init(&w->msgs, WORKER_MSG_FREE_MAX);
    w->gen = gen_create(w, rt);
    if (w->gen == NULL) return -ENOMEM;
    int rc = inbox_init(&w->inbox);
    if (rc < 0) return rc;
    w->inbox_ok = true;
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
    w->reap_ev = event_new(w->base, -1, 0, worker_on_reap, w);
    if (w->reap_ev == NULL) return -ENOMEM;
    struct timeval every = { .tv_sec = WORKER_TRIM_SEC };
    w->trim_ev = event_new(w->base, -1, EV_PERSIST, worker_on_trim, w);
    if (w->trim_ev == NULL || event_add(w->trim_ev, &every) < 0) return -ENOMEM;
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    char name[16]; /* the kernel's limit, with the NUL; shown by top -H, ps -L, /proc/PID/task */
    snprintf(name, sizeof(name), "nc-worker-%u", w->id);
    pthread_setname_np(pthread_self(), name);
    gen_preconnect(w->gen);
    event_base_dispatch(w->base);
    return NULL;
}

int worker_start(struct worker *w)
{
    /* asynchronous signals are the master's (thread_signals.h) */
    sigset_t old;
    thread_signals_block_async(&old);
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
    struct worker_gen *g;
    w->gen = NULL;
    while ((g = TAILQ_FIRST(&w->gens)) != NULL) gen_destroy(g);
    if (w->inbox_ev) event_free(w->inbox_ev);
    w->inbox_ev = NULL;
    if (w->trim_ev) event_free(w->trim_ev);
    w->trim_ev = NULL;
    if (w->flush_ev) event_free(w->flush_ev);
    w->flush_ev = NULL;
    if (w->reap_ev) event_free(w->reap_ev);
    w->reap_ev = NULL;
    if (w->base) event_base_free(w->base);
    w->base = NULL;
    if (w->inbox_ok) inbox_deinit(&w->inbox);
    w->inbox_ok = false;
    w->stats = NULL; /* the master's */
    msg_pool_deinit(&w->msgs);
    mbuf_pool_deinit(&w->mbufs);
}
