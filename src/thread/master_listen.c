/*
 * master_listen.c - the master's listeners (see master_int.h): one listening socket per pool,
 * opened from the config, matched by their listen text on a reload (the same socket is kept, so
 * nothing in its backlog is lost; a unix path spelled otherwise that names the same socket file
 * is the same listener), and the accept: each client is checked against its pool's
 * client_connections (counted across the workers) and handed to the next worker, round-robin,
 * through the worker's inbox.
 *
 * Threads: the master thread. Accepted fds leave it only through a worker's inbox.
 */
#include "config.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/accept_pause.h"
#include "common/log.h"
#include "common/sock.h"
#include "core/runtime.h"
#include "net/transport.h"
#include "thread/master_int.h"
#include "thread/worker.h"

#define MASTER_ACCEPTS_PER_EVENT 64

struct listener {
    struct master *m;
    uint32_t pool;           /* index in the current runtime */
    struct transport tr;     /* the listening socket (its accepts: net/transport.h) */
    struct event *ev;
    struct accept_pause pause; /* out of fds: ev rests a while (common/accept_pause.h) */
    char *text;              /* the listen address as written: what a reload matches */
    char *unix_path;         /* a unix socket's path (unlinked when it closes), or NULL */
    dev_t dev;               /* unix: the socket file bound at unix_path (another spelling of */
    ino_t ino;               /* the path names the same file; only this file is unlinked) */
};

/* Whether path is the socket file l bound. */
static bool listener_owns_file(const struct listener *l, const char *path)
{
    struct stat st;
    return l->unix_path != NULL && stat(path, &st) == 0 && S_ISSOCK(st.st_mode) &&
           st.st_dev == l->dev && st.st_ino == l->ino;
}

/* Refuses a client over the pool's client_connections limit, with its protocol's one-line error
 * written through the pool's client transport as far as the socket takes it at once (a transport
 * whose handshake must come first writes nothing: the refusal is then the close). */
static void master_refuse(const struct pool_shared *p, int fd)
{
    const char *msg = p->proto->max_clients_reply;
    struct transport t;
    if (transport_open(&t, p->client_tp, fd, NULL) < 0) return;
    ssize_t n = transport_write(&t, msg, strlen(msg));
    (void)n;
    transport_close(&t);
}

/* How the log names a pool's listener. */
static const char *listener_who(const struct pool_shared *p, char *buf, size_t cap)
{
    snprintf(buf, cap, "pool '%s'", p->cp->name);
    return buf;
}

static void master_on_accept(evutil_socket_t lfd, short what, void *arg)
{
    struct listener *l = arg;
    struct master *m = l->m;
    struct pool_shared *p = &m->rt->pools[l->pool];
    (void)lfd;
    (void)what;
    for (int i = 0; i < MASTER_ACCEPTS_PER_EVENT; i++) {
        int fd = transport_accept(&l->tr, NULL, NULL);
        if (fd < 0) {
            int err = -fd;
            if (err == ECONNABORTED) continue;
            char who[200];
            if (accept_short_of(err))
                accept_pause(&l->pause, m->base, l->ev, listener_who(p, who, sizeof(who)), err);
            else if (err != EAGAIN)
                log_warn("pool '%s': accept failed: %s", p->cp->name, strerror(err));
            return;
        }
        if (l->pause.starved) {
            char who[200];
            accept_resumed(&l->pause, listener_who(p, who, sizeof(who)));
        }
        long before = atomic_fetch_add(pool_nclients(p), 1);
        if (p->cp->client_connections > 0 && before >= p->cp->client_connections) {
            atomic_fetch_sub(pool_nclients(p), 1);
            log_debug(LOG_INFO, "pool '%s': client refused: client_connections %ld reached", p->cp->name,
                      (long)p->cp->client_connections);
            master_refuse(p, fd);
            continue;
        }
        if (!p->cp->listen.is_unix) sock_set_nodelay(fd);
        struct worker *w = &m->workers[m->next_worker];
        m->next_worker = (m->next_worker + 1) % m->nstarted;
        struct inbox_item it = { .type = INBOX_NEW_CLIENT, .fd = fd, .pool = l->pool,
                                 .generation = m->rt->generation };
        if (inbox_push(&w->inbox, &it) < 0) {
            atomic_fetch_sub(pool_nclients(p), 1);
            close(fd);
        }
    }
}

static void listener_close(struct listener *l)
{
    if (l == NULL) return;
    if (l->ev) event_free(l->ev);
    accept_pause_deinit(&l->pause);
    transport_close(&l->tr);
    if (l->unix_path != NULL && listener_owns_file(l, l->unix_path)) unlink(l->unix_path);
    free(l->text);
    free(l->unix_path);
    free(l);
}

/* Opens a listening socket for pool cp (index i). NULL after logging why. */
static struct listener *listener_open(struct master *m, const struct conf_pool *cp, uint32_t i)
{
    struct listener *l = calloc(1, sizeof(*l));
    if (l == NULL) return NULL;
    l->m = m;
    l->pool = i;
    transport_init_closed(&l->tr);
    l->text = strdup(cp->listen.text);
    if (l->text == NULL) goto oom;
    int fd = cp->listen.is_unix ? sock_listen_unix(cp->listen.host, cp->listen.perm, cp->backlog)
                                : sock_listen_tcp(cp->listen.host, cp->listen.port, cp->backlog, cp->reuseport);
    if (fd < 0) {
        log_error("pool '%s': cannot listen on %s: %s", cp->name, cp->listen.text, strerror(-fd));
        free(l->text);
        free(l);
        return NULL;
    }
    transport_open(&l->tr, &transport_plain_ctx, fd, NULL); /* a listener accepts plain TCP; its
                                    * clients get the pool's client transport (core/client.c) */
    if (cp->listen.is_unix) {
        struct stat st;
        if (stat(cp->listen.host, &st) == 0) {
            l->dev = st.st_dev;
            l->ino = st.st_ino;
        }
        if ((l->unix_path = strdup(cp->listen.host)) == NULL) goto oom;
    }
    l->ev = event_new(m->base, fd, EV_READ | EV_PERSIST, master_on_accept, l);
    if (l->ev == NULL || event_add(l->ev, NULL) < 0) goto oom;
    size_t shards = cp->nshards != 0 ? cp->nshards : cp->nservers;
    if (cp->redis_cluster)
        log_notice("pool '%s' listening on %s (%s, a Redis Cluster from %zu seeds: up to %zu masters%s)", cp->name,
                   cp->listen.text, proto_for_pool(cp)->name, cp->nseeds, shards,
                   shards != cp->nservers ? " and their replicas" : "");
    else if (shards == cp->nservers)
        log_notice("pool '%s' listening on %s (%s, %zu servers)", cp->name, cp->listen.text, proto_for_pool(cp)->name,
                   cp->nservers);
    else
        log_notice("pool '%s' listening on %s (%s, %zu servers, %zu replica slots)", cp->name, cp->listen.text,
                   proto_for_pool(cp)->name, shards, cp->nservers - shards);
    return l;
oom:
    log_error("pool '%s': cannot listen on %s: out of memory", cp->name, cp->listen.text);
    listener_close(l);
    return NULL;
}

/* The listeners for conf: those of m whose listen text is in it are kept (the same socket), the
 * others opened. Returns the array (conf->npools) or NULL after closing what it opened; kept
 * listeners are left untouched until master_listeners_commit. */
struct listener **master_listeners_for(struct master *m, const struct conf *conf)
{
    struct listener **ls = calloc(conf->npools ? conf->npools : 1, sizeof(*ls));
    if (ls == NULL) return NULL;
    bool *kept = calloc(m->nlisteners ? m->nlisteners : 1, sizeof(*kept));
    if (kept == NULL) {
        free(ls);
        return NULL;
    }
    for (size_t i = 0; i < conf->npools; i++) {
        const struct conf_pool *cp = &conf->pools[i];
        for (size_t j = 0; j < m->nlisteners; j++) {
            /* the same text, or a unix path spelled differently naming the socket file it bound
             * (opening it again would unlink that file and take the path over) */
            const struct listener *l = m->listeners[j];
            if (!kept[j] && (strcmp(l->text, cp->listen.text) == 0 ||
                             (cp->listen.is_unix && listener_owns_file(l, cp->listen.host)))) {
                kept[j] = true;
                ls[i] = m->listeners[j];
                break;
            }
        }
        if (ls[i] == NULL && (ls[i] = listener_open(m, cp, (uint32_t)i)) == NULL) {
            for (size_t k = 0; k < i; k++) {
                bool old = false;
                for (size_t j = 0; j < m->nlisteners; j++) old = old || m->listeners[j] == ls[k];
                if (!old) listener_close(ls[k]);
            }
            free(kept);
            free(ls);
            return NULL;
        }
    }
    free(kept);
    return ls;
}

/* Makes ls (from master_listeners_for) the listeners of conf: kept ones point at their pool's new
 * index and take its backlog; the old ones not kept stop accepting and close. */
void master_listeners_commit(struct master *m, struct listener **ls, const struct conf *conf)
{
    for (size_t j = 0; j < m->nlisteners; j++) {
        struct listener *l = m->listeners[j];
        bool kept = false;
        for (size_t i = 0; i < conf->npools && !kept; i++) kept = ls[i] == l;
        if (!kept) {
            log_notice("no pool listens on %s any more: closed", l->text);
            listener_close(l);
        }
    }
    for (size_t i = 0; i < conf->npools; i++) {
        ls[i]->pool = (uint32_t)i;
        if (listen(ls[i]->tr.fd, conf->pools[i].backlog) < 0)
            log_warn("pool '%s': cannot apply backlog %d: %s", conf->pools[i].name, conf->pools[i].backlog,
                     strerror(errno));
    }
    free(m->listeners);
    m->listeners = ls;
    m->nlisteners = conf->npools;
}

int master_listen(struct master *m)
{
    struct listener **ls = master_listeners_for(m, m->rt->conf);
    if (ls == NULL) return -1;
    master_listeners_commit(m, ls, m->rt->conf);
    return 0;
}

void master_unlisten(struct master *m)
{
    for (size_t i = 0; i < m->nlisteners; i++) listener_close(m->listeners[i]);
    free(m->listeners);
    m->listeners = NULL;
    m->nlisteners = 0;
}
