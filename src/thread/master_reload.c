/*
 * master_reload.c - the master's config reload (see master_int.h), on SIGHUP or a request from
 * the manage port (its `reload`, through the master's inbox: thread/reload_req.h).
 *
 * A reload parses the file again; if it is invalid nothing changes. Otherwise a new runtime (the
 * next generation) is built and bound to the workers' stats registries, listeners are matched by
 * their listen text (the same socket is kept, so nothing in its backlog is lost), new ones open
 * and removed ones close, and the generation goes to every worker and the stats thread through
 * their inboxes before the next accept: a client handed over later always finds it there. The
 * service manager hears RELOADING=1 ... READY=1 around it (app/notify.h).
 *
 * Threads: the master thread. The runtimes it hands over are immutable (but for their atomics).
 */
#include "config.h"

#include <event2/event.h>
#include <stdio.h>
#include <string.h>

#include "app/notify.h"
#include "common/log.h"
#include "core/probe.h"
#include "core/runtime.h"
#include "core/runtime_stats.h"
#include "net/transport.h"
#include "thread/master_int.h"
#include "thread/reload_req.h"
#include "thread/stats_thread.h"
#include "thread/worker.h"

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
int master_reload(struct master *m, char *answer, size_t cap)
{
    const char *path = m->opts->conf_file;
    uint64_t serving = m->rt->generation;
    struct reload_errors errs = { .len = 0 };
    log_notice("reloading the configuration from '%s'", path);
    notify_reloading();
    stats_thread_reload_password(m->stats); /* the -K file too, whatever becomes of the config */
    struct conf *conf = conf_load(path, master_reload_error, &errs);
    struct runtime *rt = NULL;
    if (conf != NULL && (transport_conf_check(conf, master_reload_error, &errs) +
                         proto_conf_check(conf, master_reload_error, &errs)) > 0) { /* TLS files, commands */
        conf_unref(conf);
        conf = NULL;
    }
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
    runtime_sources_stop(old);
    master_sources_start(m, rt);
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

void master_on_inbox(evutil_socket_t fd, short what, void *arg)
{
    struct master *m = arg;
    (void)fd;
    (void)what;
    inbox_drain(&m->inbox, master_inbox_item, m);
}

int master_inbox_start(struct master *m)
{
    if (inbox_init(&m->inbox) < 0) return -1;
    m->inbox_ok = true;
    m->inbox_ev = event_new(m->base, m->inbox.efd, EV_READ | EV_PERSIST, master_on_inbox, m);
    if (m->inbox_ev == NULL || event_add(m->inbox_ev, NULL) < 0) return -1;
    return 0;
}
