/*
 * worker.c - worker threads (see worker.h): a pthread, its event base and inbox; the inbox's
 * messages are handed to the core loop.
 *
 * Threads: worker_init/start/stop/deinit are called by the master; everything reached from the
 * event loop runs on the worker's own thread.
 */
#include "config.h"
#include "thread/worker.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "core/feature.h"
#include "core/runtime.h"
#include "feature/features.h"
#include "thread/evloop.h"

static void worker_inbox_item(void *arg, const struct inbox_item *it)
{
    struct worker *w = arg;
    switch (it->type) {
    case INBOX_NEW_CLIENT: loop_take_client(&w->loop, it->generation, it->pool, it->fd); break;
    case INBOX_RELOAD: loop_reload(&w->loop, it->rt); break;
    case INBOX_ROUTES: loop_routes_changed(&w->loop); break;
    case INBOX_DRAIN: loop_drain(&w->loop); break;
    case INBOX_STOP: loop_stop(&w->loop); break;
    case INBOX_RELOAD_REQ: break; /* for the master only */
    case INBOX_PASSWORD: break;   /* for the stats thread only */
    }
}

static void worker_inbox_msg(void *arg, struct loop_msg *m)
{
    struct worker *w = arg;
    feature_loop_msg(&w->loop, m);
}

static void worker_on_inbox(int fd, short what, void *arg)
{
    struct worker *w = arg;
    (void)fd;
    (void)what;
    inbox_drain(&w->inbox, worker_inbox_item, w);
    inbox_drain_msgs(&w->inbox, worker_inbox_msg, w);
}

/* loop_peers.post: m goes to worker `to`'s inbox (arg: the workers' array). */
static void worker_post(void *arg, uint32_t to, struct loop_msg *m)
{
    struct worker *ws = arg;
    inbox_post(&ws[to].inbox, m);
}

void worker_peers(struct worker *ws, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) ws[i].loop.peers = (struct loop_peers){ .n = n, .post = worker_post, .arg = ws };
}

int worker_init(struct worker *w, uint32_t id, struct runtime *rt, struct stats_worker *stats,
                size_t mbuf_size)
{
    memset(w, 0, sizeof(*w));
    w->base = evloop_base_new();
    if (w->base == NULL) {
        runtime_put(rt);
        return -ENOMEM;
    }
    int rc = loop_init(&w->loop, id, w->base, rt, stats, mbuf_size);
    if (rc < 0) return rc;
    feature_install(&w->loop, &features_all);
    rc = inbox_init(&w->inbox);
    if (rc < 0) return rc;
    w->inbox_ok = true;
    w->inbox_ev = event_new(w->base, w->inbox.efd, EV_READ | EV_PERSIST, worker_on_inbox, w);
    if (w->inbox_ev == NULL || event_add(w->inbox_ev, NULL) < 0) return -ENOMEM;
    return 0;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    loop_start(&w->loop);
    loop_run(&w->loop);
    return NULL;
}

int worker_start(struct worker *w)
{
    char name[EVLOOP_NAME_MAX + 1]; /* shown by top -H, ps -L, /proc/PID/task */
    snprintf(name, sizeof(name), "nc-worker-%u", w->loop.id);
    int rc = evloop_start(&w->tid, name, worker_main, w);
    w->running = rc == 0;
    return rc;
}

void worker_stop(struct worker *w)
{
    if (evloop_stop(w->tid, &w->inbox) < 0) {
        log_error("worker %u: cannot queue its stop: left running until the exit", w->loop.id);
        return;
    }
    w->running = false;
}

void worker_deinit(struct worker *w)
{
    if (w->running) return; /* its stop could not be queued: what it uses stays until the exit */
    loop_deinit(&w->loop);
    if (w->inbox_ev) event_free(w->inbox_ev);
    w->inbox_ev = NULL;
    if (w->base) event_base_free(w->base);
    w->base = NULL;
    if (w->inbox_ok) inbox_deinit(&w->inbox);
    w->inbox_ok = false;
}
