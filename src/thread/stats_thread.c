/*
 * stats_thread.c - the stats thread (see stats_thread.h): owns the manage port (manage/manage_conn)
 * and the snapshots (manage/manage_cmd); stopped through an inbox like a worker.
 *
 * Threads: start/stop/reload/reload_password on the master (which reads the -K file there); the
 * event loop and everything it reaches on the stats thread.
 */
#include "config.h"
#include "thread/stats_thread.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/sock.h"
#include "core/runtime.h"
#include "manage/manage_auth.h"
#include "manage/manage_cmd.h"
#include "manage/manage_conn.h"
#include "thread/evloop.h"
#include "thread/inbox.h"
#include "thread/reload_req.h"

#define STATS_LISTEN_BACKLOG 128
#define STATS_UNIX_PERM 0600 /* a unix manage socket: its clients are trusted, so only the owner */

struct stats_thread {
    pthread_t tid;
    bool started;
    struct event_base *base;
    struct inbox inbox;
    bool inbox_ok;
    struct event *inbox_ev;
    struct event *tick_ev;
    struct stats_worker **blocks;
    struct stats_source src;
    struct manage_ctx ctx;
    bool ctx_ok;
    struct manage_auth auth;
    const char *auth_file;   /* -K (the options outlive the thread), or NULL; read-only */
    const char *unix_path;   /* -a was a unix socket path: unlinked at the end if still ours */
    dev_t unix_dev;
    ino_t unix_ino;
    struct manage_server *ms;
    struct inbox *master_inbox;
    const atomic_bool *stopping;
};

#define STATS_RELOAD_WAIT_MS 30000 /* how long `reload` waits for the master */

/* Renders rt from now on (takes over the reference); out of memory: keeps the old one. */
static void stats_thread_switch(struct stats_thread *st, struct runtime *rt)
{
    struct runtime *old = st->src.rt;
    st->src.rt = rt;
    if (manage_ctx_reshape(&st->ctx) < 0) {
        st->src.rt = old;
        log_error("the manage port cannot switch to config generation %lu: out of memory",
                  (unsigned long)rt->generation);
        runtime_put(rt);
        return;
    }
    runtime_put(old);
}

/* A reload's password (read by the master): new `auth` commands check against it; sessions
 * already authenticated stay so. */
static void stats_thread_take_password(struct stats_thread *st, struct manage_password *pw)
{
    bool same = pw->len == st->auth.pw.len && memcmp(pw->text, st->auth.pw.text, pw->len) == 0;
    st->auth.pw = *pw;
    manage_password_wipe(pw);
    free(pw);
    log_notice("manage port: the password of '%s' is in force for new 'auth' commands (%s)",
               st->auth_file, same ? "unchanged" : "changed");
}

static void stats_thread_inbox_item(void *arg, const struct inbox_item *it)
{
    struct stats_thread *st = arg;
    if (it->type == INBOX_STOP) event_base_loopbreak(st->base);
    else if (it->type == INBOX_RELOAD) stats_thread_switch(st, it->rt);
    else if (it->type == INBOX_PASSWORD) stats_thread_take_password(st, it->password);
    else if (it->fd >= 0) close(it->fd);
}

static void stats_thread_on_inbox(evutil_socket_t fd, short what, void *arg)
{
    struct stats_thread *st = arg;
    (void)fd;
    (void)what;
    inbox_drain(&st->inbox, stats_thread_inbox_item, st);
}

static void stats_thread_on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct stats_thread *st = arg;
    (void)fd;
    (void)what;
    manage_ctx_refresh(&st->ctx);
}

/* The manage port's `reload`: the master does it and answers; by the time the answer is written,
 * the stats thread renders the new generation (its inbox is read first). */
static void stats_thread_do_reload(void *arg, struct textbuf *out)
{
    struct stats_thread *st = arg;
    struct reload_req *r = reload_req_create();
    if (r == NULL) {
        textbuf_adds(out, "ERR: out of memory\r\n");
        return;
    }
    struct inbox_item it = { .type = INBOX_RELOAD_REQ, .fd = -1, .req = r };
    if (inbox_push(st->master_inbox, &it) < 0) {
        reload_req_put(r);
        reload_req_put(r);
        textbuf_adds(out, "ERR: out of memory\r\n");
        return;
    }
    char answer[RELOAD_ANSWER_MAX];
    if (reload_req_wait(r, STATS_RELOAD_WAIT_MS, st->stopping, answer, sizeof(answer)))
        textbuf_addf(out, "%s\r\n", answer);
    else
        textbuf_adds(out, "ERR: no answer from the master (shutting down?)\r\n");
    reload_req_put(r);
    stats_thread_on_inbox(-1, 0, st);
}

static void *stats_thread_main(void *arg)
{
    struct stats_thread *st = arg;
    event_base_dispatch(st->base);
    return NULL;
}

static void stats_thread_free(struct stats_thread *st)
{
    manage_server_destroy(st->ms);
    struct stat sb;
    if (st->unix_path != NULL && stat(st->unix_path, &sb) == 0 && sb.st_dev == st->unix_dev &&
        sb.st_ino == st->unix_ino)
        unlink(st->unix_path);
    if (st->ctx_ok) manage_ctx_deinit(&st->ctx);
    if (st->inbox_ev) event_free(st->inbox_ev);
    if (st->tick_ev) event_free(st->tick_ev);
    if (st->base) event_base_free(st->base);
    if (st->inbox_ok) inbox_deinit(&st->inbox);
    runtime_put(st->src.rt);
    free(st->blocks);
    free(st);
}

static void stats_thread_warn_loose(const struct stats_thread *st, bool loose)
{
    if (loose) log_warn("the manage password file '%s' can be read by other users (chmod 600 it)", st->auth_file);
}

/* The trusted networks and the password of the manage port. Returns 0 or -errno (logged). */
static int stats_thread_auth(struct stats_thread *st, const struct nc_options *opts)
{
    char err[256];
    const char *trust = opts->manage_trust != NULL ? opts->manage_trust : MANAGE_TRUST_DEFAULT;
    int rc = manage_auth_set_trust(&st->auth, trust, err, sizeof(err));
    if (rc < 0) {
        log_error("option -N/--manage-trust: %s", err);
        return rc;
    }
    st->auth_file = opts->manage_auth_file;
    if (st->auth_file == NULL) return 0;
    bool loose = false;
    rc = manage_password_read(&st->auth.pw, st->auth_file, &loose, err, sizeof(err));
    if (rc < 0) {
        log_error("option -K/--manage-auth-file: %s", err);
        return rc;
    }
    stats_thread_warn_loose(st, loose);
    return 0;
}

/* Event base, inbox, timer and snapshots. Returns 0 or -errno. */
static int stats_thread_setup(struct stats_thread *st, const struct nc_options *opts)
{
    st->base = evloop_base_new();
    if (st->base == NULL) return -ENOMEM;
    int rc = inbox_init(&st->inbox);
    if (rc < 0) return rc;
    st->inbox_ok = true;
    st->inbox_ev = event_new(st->base, st->inbox.efd, EV_READ | EV_PERSIST, stats_thread_on_inbox, st);
    if (st->inbox_ev == NULL || event_add(st->inbox_ev, NULL) < 0) return -ENOMEM;
    rc = manage_ctx_init(&st->ctx, &st->src);
    if (rc < 0) return rc;
    st->ctx_ok = true;
    st->ctx.reload = stats_thread_do_reload;
    st->ctx.reload_arg = st;
    st->ctx.auth = &st->auth;
    int64_t ms = opts->stats_interval > 0 ? opts->stats_interval : 1;
    struct timeval every = { .tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
    st->tick_ev = event_new(st->base, -1, EV_PERSIST, stats_thread_on_tick, st);
    if (st->tick_ev == NULL || event_add(st->tick_ev, &every) < 0) return -ENOMEM;
    return 0;
}

struct stats_thread *stats_thread_start(const struct nc_options *opts, struct runtime *rt,
                                        struct stats_worker *const *blocks, uint32_t nworkers,
                                        struct inbox *master_inbox, const atomic_bool *stopping)
{
    struct stats_thread *st = calloc(1, sizeof(*st));
    if (st == NULL) goto oom;
    st->master_inbox = master_inbox;
    st->stopping = stopping;
    st->blocks = calloc(nworkers ? nworkers : 1, sizeof(*st->blocks));
    if (st->blocks == NULL) goto oom;
    for (uint32_t i = 0; i < nworkers; i++) st->blocks[i] = blocks[i];
    st->src.rt = runtime_get(rt);
    st->src.blocks = st->blocks;
    st->src.nblocks = nworkers;
    st->src.start_wall_usec = nc_usec_wall();
    st->src.hotkeys_every = (uint32_t)opts->hotkeys_every;
    if (gethostname(st->src.host, sizeof(st->src.host) - 1) < 0) strcpy(st->src.host, "unknown");
    int rc = stats_thread_auth(st, opts);
    if (rc < 0) goto fail;
    rc = stats_thread_setup(st, opts);
    if (rc < 0) {
        log_error("cannot set up the stats thread: %s", strerror(-rc));
        goto fail;
    }
    bool unix_sock = opts->stats_addr[0] == '/';
    int lfd = unix_sock ? sock_listen_unix(opts->stats_addr, STATS_UNIX_PERM, STATS_LISTEN_BACKLOG)
                        : sock_listen_tcp(opts->stats_addr, opts->stats_port, STATS_LISTEN_BACKLOG, false);
    if (lfd < 0) {
        if (unix_sock)
            log_error("cannot listen on the manage port %s: %s", opts->stats_addr, strerror(-lfd));
        else
            log_error("cannot listen on the manage port %s:%u: %s", opts->stats_addr,
                      (unsigned)opts->stats_port, strerror(-lfd));
        goto fail;
    }
    struct stat sb;
    if (unix_sock && stat(opts->stats_addr, &sb) == 0) {
        st->unix_path = opts->stats_addr;
        st->unix_dev = sb.st_dev;
        st->unix_ino = sb.st_ino;
    }
    st->ms = manage_server_create(st->base, lfd, &st->ctx);
    if (st->ms == NULL) goto oom;
    rc = evloop_start(&st->tid, "nc-stats", stats_thread_main, st);
    if (rc < 0) {
        log_error("cannot start the stats thread: %s", strerror(-rc));
        goto fail;
    }
    st->started = true;
    if (unix_sock) log_notice("manage port listening on unix socket %s", opts->stats_addr);
    else log_notice("manage port listening on %s:%u", opts->stats_addr, (unsigned)opts->stats_port);
    return st;
oom:
    log_error("cannot start the stats thread: out of memory");
fail:
    if (st != NULL) stats_thread_free(st);
    return NULL;
}

void stats_thread_reload(struct stats_thread *st, struct runtime *rt)
{
    if (st == NULL) return;
    struct inbox_item it = { .type = INBOX_RELOAD, .fd = -1, .rt = runtime_get(rt) };
    if (inbox_push(&st->inbox, &it) < 0) {
        runtime_put(rt);
        log_error("the manage port cannot switch to config generation %lu: out of memory",
                  (unsigned long)rt->generation);
    }
}

void stats_thread_reload_password(struct stats_thread *st)
{
    if (st == NULL || st->auth_file == NULL) return;
    char err[512];
    snprintf(err, sizeof(err), "'%s': out of memory", st->auth_file);
    bool loose = false;
    struct manage_password *pw = calloc(1, sizeof(*pw));
    if (pw != NULL && manage_password_read(pw, st->auth_file, &loose, err, sizeof(err)) == 0) {
        stats_thread_warn_loose(st, loose);
        struct inbox_item it = { .type = INBOX_PASSWORD, .fd = -1, .password = pw };
        if (inbox_push(&st->inbox, &it) == 0) return; /* the stats thread wipes and frees it */
        snprintf(err, sizeof(err), "'%s': out of memory", st->auth_file);
    }
    if (pw != NULL) manage_password_wipe(pw);
    free(pw);
    log_warn("reload: the manage password was not re-read: %s; the password in force is kept", err);
}

void stats_thread_stop(struct stats_thread *st)
{
    if (st == NULL) return;
    if (st->started && evloop_stop(st->tid, &st->inbox) < 0) {
        log_error("cannot stop the stats thread: leaving it to the exit");
        return;
    }
    stats_thread_free(st);
}
