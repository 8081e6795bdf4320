/*
 * server.c - server connections (see server.h).
 *
 * Threads: the owning loop only (health and routes are shared through core/route.c).
 */
#include "config.h"
#include "core/server.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/sock.h"
#include "core/backend.h"
#include "core/loop.h"
#include "core/park.h"
#include "core/redirect.h"
#include "core/request.h"

#define SERVER_WRITE_BATCH 256
/* what a blocking command's server deadline adds to its own timeout (and the pool's timeout) */
#define SERVER_BLOCK_MARGIN_MS 1000u

/* how a connection ended, for the counters */
enum server_end { SERVER_END_ERR, SERVER_END_EOF, SERVER_END_TIMEOUT, SERVER_END_SHUTDOWN };

static void server_fail(struct conn *c, int err, enum server_end how);

void server_conn_destroy(struct conn *c)
{
    server_fail(c, ECONNABORTED, SERVER_END_SHUTDOWN);
    conn_destroy(c);
}

void server_conn_close(struct conn *c, int err)
{
    server_fail(c, err, SERVER_END_SHUTDOWN);
}

static struct stats_server_block *server_stats(const struct conn *c)
{
    return c->server->st;
}

#define SSTAT(c, field, d) stats_ctr_add(&server_stats(c)->f[STATS_SERVER_##field], (d))

/* in_queue[_bytes] follow to_send, out_queue[_bytes] sent (written, awaiting the reply): +1 or
 * -1 on every insert and removal. */
static void server_stats_queue(const struct conn *c, bool out_q, const struct msg *m, int dir)
{
    struct stats_server_block *sb = server_stats(c);
    stats_ctr_add(&sb->f[out_q ? STATS_SERVER_out_queue : STATS_SERVER_in_queue], dir);
    stats_ctr_add(&sb->f[out_q ? STATS_SERVER_out_queue_bytes : STATS_SERVER_in_queue_bytes],
                  dir * (int64_t)m->len);
}

/* One more failure of this server, seen by this loop; may eject it for every worker. */
static void server_count_failure(struct conn *c)
{
    struct pool_shared *ps = c->pool->shared;
    if (ps->source_ops->redirects) pool_topology_recheck(ps); /* a Redis Cluster node down: a failover? */
    if (pool_server_failed(ps, c->server->idx, nc_usec_now())) {
        STATS_POOL_ADD(c->pool->st, server_ejects, 1);
        stats_ctr_set(&server_stats(c)->f[STATS_SERVER_server_ejected_at],
                      atomic_load(&ps->health[c->server->idx].ejected_at));
    }
}

/*
 * A failure of the server, at notice level, rate-limited per server (its health's fail_log, shared
 * by every worker): a dead backend under load writes one line per log interval, which says how
 * many were left out. connecting: the connection was not up yet; lost: the clients' requests it
 * fails (0: not said; a connect that fails at once fails the request being queued, not counted).
 */
static void server_log_failure(const struct conn *c, bool connecting, int err, enum server_end how,
                               uint32_t lost)
{
    struct server_health *h = &c->pool->shared->health[c->server->idx];
    uint64_t sup;
    if (!server_log_allowed(&h->fail_log, &sup)) return;
    const struct conf_server *cs = c->server->cs;
    const char *what = connecting ? (how == SERVER_END_TIMEOUT ? "connect timed out" : "connect failed")
                       : how == SERVER_END_TIMEOUT ? "request timed out"
                       : how == SERVER_END_EOF    ? "connection closed by the server"
                                                  : "connection failed";
    bool say_err = how == SERVER_END_ERR;
    char nlost[40] = "";
    if (lost > 0) snprintf(nlost, sizeof(nlost), ", %u request%s failed", lost, lost == 1 ? "" : "s");
    const char *addr = c->pool->route->set->servers[c->server->idx].addr.text; /* as this loop knows it */
    log_notice("pool '%s': server %s (%s): %s%s%s%s%s", c->pool->cp->name, cs->stats_name, addr,
               what, say_err ? ": " : "", say_err ? strerror(err) : "", nlost, NC_RATELIMIT_NOTE(sup));
}

/* The transport's handshake with the server ended (ok or not): counted for the server
 * (server_tls_handshakes / _failures, and server_tls_resumptions for a done one that resumed the
 * session kept from an earlier connection: TLS is the only transport with a handshake, a plain
 * connection never comes here). */
static void server_handshake_ended(struct conn *c, bool ok)
{
    if (!ok) {
        SSTAT(c, server_tls_handshake_failures, 1);
        return;
    }
    SSTAT(c, server_tls_handshakes, 1);
    if (transport_resumed(&c->tr)) SSTAT(c, server_tls_resumptions, 1);
}

/* Fails every request the connection holds and closes its socket (it reconnects on demand). */
static void server_fail(struct conn *c, int err, enum server_end how)
{
    struct loop *l = c->loop;
    struct msg *m;
    /* a handshake still running fails with it (its connect timed out, say); not at a shutdown */
    if ((c->tio & CONN_TIO_HANDSHAKE) && how != SERVER_END_SHUTDOWN) server_handshake_ended(c, false);
    bool outstanding = c->nto_send + c->nsent > 0;
    bool was_open = conn_open(c);
    if (c->ops->on_close != NULL) c->ops->on_close(c, err);
    /* the requests of the clients (not the proxy's own set-up) that this failure fails */
    uint32_t lost = 0;
    if (how != SERVER_END_SHUTDOWN && (outstanding || c->connecting)) {
        TAILQ_FOREACH(m, &c->sent, server_link) lost += !m->swallow;
        TAILQ_FOREACH(m, &c->to_send, server_link) lost += !m->swallow;
        server_log_failure(c, c->connecting, err, how, lost);
    }
    if (was_open) {
        log_debug(LOG_INFO, "server %s: connection closed: %s", c->server->cs->stats_name, strerror(err));
        SSTAT(c, server_connections, -1);
        if (how == SERVER_END_TIMEOUT) SSTAT(c, server_timedout, 1);
        else if (how == SERVER_END_EOF) SSTAT(c, server_eof, 1);
        else if (how == SERVER_END_ERR) SSTAT(c, server_err, 1);
    }
    /* an idle connection the server closed is not a failure; a failed connect or a lost request is */
    if (how != SERVER_END_SHUTDOWN && (outstanding || c->connecting)) server_count_failure(c);
    conn_detach(c);
    c->connected = c->connecting = c->gated = false;
    c->out_off = 0;
    c->t_wblocked = 0;
    if (c->tev) evtimer_del(c->tev);
    while ((m = TAILQ_FIRST(&c->sent)) != NULL) {
        TAILQ_REMOVE(&c->sent, m, server_link);
        c->nsent--;
        server_stats_queue(c, true, m, -1);
        m->err = err;
        request_complete(l, m);
    }
    while ((m = TAILQ_FIRST(&c->to_send)) != NULL) {
        TAILQ_REMOVE(&c->to_send, m, server_link);
        c->nto_send--;
        server_stats_queue(c, false, m, -1);
        m->err = err;
        request_complete(l, m);
    }
}

void server_conn_timed_out(struct conn *c)
{
    if (c->nto_send + c->nsent == 0 && !c->connecting) { /* else server_fail logs and counts it */
        server_log_failure(c, false, ETIMEDOUT, SERVER_END_TIMEOUT, 1);
        server_count_failure(c);
    }
    server_fail(c, ETIMEDOUT, SERVER_END_TIMEOUT);
}

/* The protocol's set-up requests (redis: AUTH, SELECT) go first on every new connection; their
 * replies are swallowed. */
static int server_queue_setup(struct conn *c)
{
    struct msg *setup[PROTO_SETUP_MAX];
    const struct topo_set *set = c->pool->route->set;
    bool replica = c->server->idx < set->nservers && set->servers[c->server->idx].role == TOPO_ROLE_REPLICA;
    int n = c->pool->proto->server_setup(c->pool->cp, c->variant, replica, &c->loop->msgs, setup, PROTO_SETUP_MAX);
    if (n < 0) return n;
    for (int i = 0; i < n; i++) {
        TAILQ_INSERT_TAIL(&c->to_send, setup[i], server_link);
        c->nto_send++;
        server_stats_queue(c, false, setup[i], 1);
    }
    return 0;
}

static void server_on_timeout(int fd, short what, void *arg);

static void server_timer_at(struct conn *c, uint64_t deadline)
{
    if (c->tev == NULL) {
        c->tev = evtimer_new(c->loop->base, server_on_timeout, c);
        if (c->tev == NULL) return;
    }
    uint64_t now = nc_usec_now();
    uint64_t wait = deadline > now ? deadline - now : 0;
    struct timeval tv = { .tv_sec = (time_t)(wait / 1000000u), .tv_usec = (suseconds_t)(wait % 1000000u) };
    evtimer_add(c->tev, &tv);
}

/* The TCP connect of c completed: its transport's handshake starts (where it has one). Returns 0
 * (c->connecting false: connected now; true: the handshake runs, server_on_handshake ends it) or
 * -errno. */
static int server_connect_done(struct conn *c)
{
    int rc = conn_handshake_start(c);
    if (rc <= 0 && transport_has_handshake(&c->tr)) server_handshake_ended(c, rc == 0); /* at once */
    if (rc < 0) return rc;
    if (rc > 0) return 0;
    c->connecting = false;
    c->connected = true;
    if (c->tev) evtimer_del(c->tev);
    return 0;
}

static int server_write(struct conn *c);

/* conn_ops.on_handshake (server.h): the transport's handshake with the server ended. A failed one
 * is the server's failure (counted, logged, its requests failed); a done one writes what waits. */
void server_on_handshake(struct conn *c, int err)
{
    server_handshake_ended(c, err == 0);
    if (err == 0) {
        c->connecting = false;
        c->connected = true;
        if (c->tev) evtimer_del(c->tev);
        int rc = server_write(c);
        if (rc < 0) server_fail(c, -rc, SERVER_END_ERR);
        return;
    }
    uint64_t sup;
    if (server_log_allowed(&c->pool->shared->health[c->server->idx].fail_log, &sup))
        log_warn("server %s: %s handshake failed: %s%s", c->server->cs->stats_name, c->tr.ops->name,
                 transport_strerror(&c->tr, -err), NC_RATELIMIT_NOTE(sup));
    server_fail(c, -err, SERVER_END_ERR);
}

static int server_connect(struct conn *c)
{
    const struct conf_pool *cp = c->pool->cp;
    const struct conf_addr *addr = pool_rt_server_addr(c->pool, c->server->idx); /* where it is now */
    if (!addr->is_unix && addr->port == 0) return -EHOSTUNREACH; /* a replica slot with no replica */
    bool in_progress = false;
    int fd = addr->is_unix ? sock_connect_unix(addr->host, &in_progress)
                           : sock_connect_tcp(addr->host, addr->port, &in_progress);
    if (fd < 0) {
        server_log_failure(c, true, -fd, SERVER_END_ERR, 0);
        SSTAT(c, server_err, 1);
        server_count_failure(c);
        return fd;
    }
    if (cp->tcpkeepalive && !addr->is_unix)
        sock_set_keepalive(fd, cp->tcpkeepidle, cp->tcpkeepcnt, cp->tcpkeepintvl);
    /* the host is the name a TLS server proves; "host:port" (or the path) keeps its session */
    const struct transport_peer peer = { .name = addr->host, .id = addr->text };
    int rc = conn_attach(c, c->pool->shared->server_tp, fd, &peer); /* fd is c's */
    if (rc < 0) return rc;
    SSTAT(c, server_connections, 1);
    /* connected once the transport's handshake, where it has one, is done too */
    c->connecting = true;
    rc = server_queue_setup(c);
    if (rc == 0 && !in_progress) rc = server_connect_done(c);
    if (rc < 0) {
        server_fail(c, -rc, SERVER_END_ERR);
        return rc;
    }
    /* a connect that hangs (a host that drops packets) fails after `timeout` too */
    if (c->connecting && cp->timeout > 0) server_timer_at(c, nc_usec_now() + (uint64_t)cp->timeout * 1000u);
    conn_want_read(c, true);
    conn_want_write(c, true);
    return 0;
}

/* Connection slot of s's backend for protocol variant, created on first use (with the variant's
 * array). It takes its config, health and counters from the backend's owner: the newest
 * generation's server_rt for this backend. */
static struct conn *server_conn_new(struct server_rt *s, uint32_t slot, uint8_t variant)
{
    struct backend *be = s->be;
    if (be->conns[variant] == NULL &&
        (be->conns[variant] = calloc(be->nconns ? be->nconns : 1, sizeof(struct conn *))) == NULL)
        return NULL;
    struct conn *c = conn_create(s->pool->loop, &server_conn_ops, be->owner->pool);
    if (c == NULL) return NULL;
    c->server = be->owner;
    c->slot = slot;
    c->variant = variant;
    be->conns[variant][slot] = c;
    return c;
}

static inline struct conn *server_conn(struct server_rt *s, uint32_t slot, uint8_t variant)
{
    struct conn **set = s->be->conns[variant];
    if (set != NULL && set[slot] != NULL) return set[slot];
    return server_conn_new(s, slot, variant);
}

int server_conn_enqueue(struct conn *c, struct msg *req, uint32_t server_idx)
{
    if (!conn_open(c)) {
        int rc = server_connect(c);
        if (rc < 0) return rc;
    }
    req->server_idx = server_idx;
    TAILQ_INSERT_TAIL(&c->to_send, req, server_link);
    c->nto_send++;
    if (!req->swallow) { /* the proxy's own (a dedicated connection's clean-up): as server_on_msg */
        SSTAT(c, requests, 1);
        SSTAT(c, request_bytes, (int64_t)req->len);
    }
    server_stats_queue(c, false, req, 1);
    if (c->connected && !c->wev_on) conn_flush_later(c); /* else EV_WRITE is on */
    return 0;
}

int server_enqueue(struct server_rt *s, struct msg *req, uint64_t hint, uint8_t variant)
{
    struct conn *c = server_conn(s, (uint32_t)(hint % s->be->nconns), variant);
    if (c == NULL) return -ENOMEM;
    return server_conn_enqueue(c, req, s->idx);
}

void server_preconnect(struct server_rt *s)
{
    for (uint32_t i = 0; i < s->be->nconns; i++) {
        struct conn *c = server_conn(s, i, 0);
        if (c != NULL && !conn_open(c)) server_connect(c);
    }
}

/*
 * When the connection times out (0: nothing to wait for): `timeout` after the oldest request
 * written and not yet answered, or after the socket stopped taking bytes that wait to be written
 * (a stopped server that no longer reads: a request it never fully receives must fail too). A
 * blocking command (msg.block_ms) has its own timeout, plus SERVER_BLOCK_MARGIN_MS and
 * `timeout`, instead; none when it may block for ever.
 */
static uint64_t server_deadline(const struct conn *c)
{
    uint64_t timeout = (uint64_t)c->pool->cp->timeout * 1000u;
    const struct msg *head = TAILQ_FIRST(&c->sent);
    uint64_t deadline = head != NULL ? head->t_sent + timeout : 0;
    if (head != NULL && head->block_ms != 0)
        deadline = head->block_ms == MSG_BLOCK_FOREVER
                       ? 0
                       : deadline + ((uint64_t)head->block_ms + SERVER_BLOCK_MARGIN_MS) * 1000u;
    if (c->t_wblocked != 0 && (deadline == 0 || c->t_wblocked + timeout < deadline))
        deadline = c->t_wblocked + timeout;
    return deadline;
}

/* (Re)arms the timer for server_deadline. */
static void server_arm_timer(struct conn *c)
{
    if (c->pool->cp->timeout <= 0) return;
    if (c->tev != NULL && evtimer_pending(c->tev, NULL)) return;
    uint64_t deadline = server_deadline(c);
    if (deadline != 0) server_timer_at(c, deadline);
}

static void server_on_timeout(int fd, short what, void *arg)
{
    struct conn *c = arg;
    (void)fd;
    (void)what;
    /* the owner's config, not the one the timer was armed under: a reload may have removed the
     * timeout (server_arm_timer and this are the only callers of server_deadline) */
    if (c->pool->cp->timeout <= 0) return;
    if (c->connecting) {
        server_fail(c, ETIMEDOUT, SERVER_END_TIMEOUT);
        return;
    }
    uint64_t deadline = server_deadline(c);
    if (deadline == 0) return;
    if (nc_usec_now() >= deadline) {
        server_fail(c, ETIMEDOUT, SERVER_END_TIMEOUT); /* later replies could not be matched */
        return;
    }
    server_arm_timer(c);
}

static int server_write(struct conn *c)
{
    struct loop *l = c->loop;
    while (!TAILQ_EMPTY(&c->to_send) && !c->gated) {
        struct msg *batch[SERVER_WRITE_BATCH];
        uint32_t n = 0;
        struct msg *m;
        TAILQ_FOREACH(m, &c->to_send, server_link)
        {
            if (n == SERVER_WRITE_BATCH) break;
            batch[n++] = m;
            if (m->gate) break; /* nothing after it before its reply passed (server_gate_reply) */
        }
        int64_t wrote = conn_writev(c, batch, n, c->out_off);
        if (wrote < 0) return (int)wrote;
        uint64_t off = c->out_off + (uint64_t)wrote;
        uint64_t now = nc_usec_now();
        uint32_t sent = 0;
        for (uint32_t i = 0; i < n; i++) {
            m = batch[i];
            if (off < m->len) break;
            off -= m->len;
            TAILQ_REMOVE(&c->to_send, m, server_link);
            c->nto_send--;
            server_stats_queue(c, false, m, -1);
            sent++;
            m->t_sent = now;
            if (m->noreply) {
                request_complete(l, m);
                continue;
            }
            TAILQ_INSERT_TAIL(&c->sent, m, server_link);
            c->nsent++;
            server_stats_queue(c, true, m, 1);
            c->gated = m->gate;
        }
        c->out_off = off;
        if (wrote > 0) c->t_wblocked = 0;
        if (sent > 0) server_arm_timer(c);
        if (sent < n || wrote == 0) break;
    }
    bool blocked = !TAILQ_EMPTY(&c->to_send) && !c->gated; /* the socket took less than everything */
    if (!blocked) c->t_wblocked = 0;
    else if (c->t_wblocked == 0) c->t_wblocked = nc_usec_now();
    if (blocked) server_arm_timer(c);
    conn_want_write(c, blocked);
    return 0;
}

/* conn_ops.on_writable (server.h): a connect finished, or the socket has room again. */
bool server_on_writable(struct conn *c)
{
    if (c->connecting) {
        int rc = sock_connect_result(c->tr.fd);
        if (rc == 0) rc = server_connect_done(c);
        if (rc < 0) {
            server_fail(c, -rc, SERVER_END_ERR);
            return true; /* the socket is closed */
        }
        if (c->connecting) return true; /* its handshake has the socket (server_on_handshake) */
    }
    int rc = server_write(c);
    if (rc < 0) {
        server_fail(c, -rc, SERVER_END_ERR);
        return true;
    }
    return false;
}

void server_flush(struct conn *c)
{
    if (!conn_open(c) || !c->connected || c->wev_on) return;
    int rc = server_write(c);
    if (rc < 0) server_fail(c, -rc, SERVER_END_ERR);
}

/* The gate refused the server: the clients' requests queued behind it never ran; they wait for the
 * server's new place where they can (core/park.h), the others fail with the connection. */
static void server_park_queued(struct conn *c)
{
    struct msg *m = TAILQ_FIRST(&c->to_send), *next;
    for (; m != NULL; m = next) {
        next = TAILQ_NEXT(m, server_link);
        if (!park_possible(c, m)) continue; /* it fails with the connection */
        TAILQ_REMOVE(&c->to_send, m, server_link);
        c->nto_send--;
        server_stats_queue(c, false, m, -1);
        if (!park_request(c, m, NULL)) request_fail(c->loop, m, EREMCHG); /* out of memory */
    }
}

/* The reply to a gate (a set-up request the protocol checks, proto.setup_check): the requests
 * after it are written now, or the connection fails (the server is not what the topology says:
 * its source is asked to look again). Returns 0 or -errno. */
static int server_gate_reply(struct conn *c, struct msg *req, struct msg *rsp)
{
    const struct proto_ops *proto = c->pool->proto;
    const struct topo_set *set = c->pool->route->set; /* the table this loop routes by */
    bool replica = c->server->idx < set->nservers && set->servers[c->server->idx].role == TOPO_ROLE_REPLICA;
    int rc = proto->setup_check != NULL ? proto->setup_check(req, rsp, replica) : 0;
    msg_put(&c->loop->msgs, rsp);
    request_complete(c->loop, req);
    if (rc < 0) {
        uint64_t sup;
        if (server_log_allowed(&c->pool->shared->health[c->server->idx].state_log, &sup))
            log_notice("pool '%s': server %s (%s): refused by its set-up check (%s): its topology is asked again%s",
                       c->pool->cp->name, c->server->cs->stats_name, pool_rt_server_addr(c->pool, c->server->idx)->text,
                       rc == -EREMCHG ? (replica ? "not a replica" : "not a master") : strerror(-rc),
                       NC_RATELIMIT_NOTE(sup));
        server_park_queued(c);
        pool_topology_recheck(c->pool->shared);
        return rc;
    }
    c->gated = false;
    if (!TAILQ_EMPTY(&c->to_send)) conn_flush_later(c);
    return 0;
}

int server_on_reply(void *ctx, struct msg *rsp)
{
    struct conn *c = ctx;
    struct msg *req = TAILQ_FIRST(&c->sent);
    if (req == NULL) {
        msg_put(&c->loop->msgs, rsp);
        return -EPROTO; /* a reply nobody asked for */
    }
    TAILQ_REMOVE(&c->sent, req, server_link);
    c->nsent--;
    server_stats_queue(c, true, req, -1);
    if (req->gate) return server_gate_reply(c, req, rsp);
    if (!req->swallow) { /* the proxy's own AUTH/SELECT are not the clients' requests */
        struct stats_server_block *ss = server_stats(c);
        uint64_t now = c->loop->read_usec;
        stats_ctr_add(&ss->f[STATS_SERVER_responses], 1);
        stats_ctr_add(&ss->f[STATS_SERVER_response_bytes], (int64_t)rsp->len);
        stats_hist_record(&ss->server_latency, now > req->t_sent ? now - req->t_sent : 0);
    }
    if (rsp->rsp_readonly && park_request(c, req, rsp)) return 0; /* held until its master moves */
    if (rsp->rsp_redirect != MSG_REDIRECT_NONE && redirect_request(c, req, rsp)) return 0; /* sent on */
    if (rsp->rsp_fatal) server_count_failure(c); /* -LOADING, -BUSY, ...: passed on, and counted */
    else pool_server_ok(c->pool->shared, c->server->idx);
    rsp->owner = c;
    req->peer = rsp;
    rsp->peer = req;
    request_complete(c->loop, req);
    return 0;
}

/* conn_ops.msg_begin: the reply of a fragment of a multi-key read (or of a request sent to every
 * server whose merge reads elements) has its top-level elements recorded, for the coalescing; a
 * reply is parsed with the options its request asked for (msg.rsp_opts: a memcached quiet
 * request's terminator). */
void server_msg_begin(void *ctx, struct parse_state *ps)
{
    struct conn *c = ctx;
    const struct msg *req = TAILQ_FIRST(&c->sent);
    bool want = req != NULL && req->frag_owner != NULL &&
                (req->cmd_flags & (CMD_F_FRAG_MGET | CMD_F_FRAG_MCGET | CMD_F_FRAG_ELEMS)) != 0;
    parse_state_reset(ps);
    ps->want_elems = want;
    ps->opts = req != NULL ? req->rsp_opts : 0;
}

int server_parse(void *ctx, struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                 size_t *consumed)
{
    return ((struct conn *)ctx)->pool->proto->parse_rsp(ps, m, buf, len, consumed);
}

/* conn_ops.on_readable */
void server_on_readable(struct conn *c)
{
    bool eof = false;
    int rc = conn_recv(c, &eof);
    if (rc < 0) {
        int err = (rc == -EPROTO || rc == -E2BIG) ? EINVAL : -rc;
        uint64_t sup;
        /* one line per interval (the server's failure lines' limiter: a backend that answers
         * garbage under load cannot flood the log) */
        if (rc == -EPROTO && server_log_allowed(&c->pool->shared->health[c->server->idx].fail_log, &sup))
            log_warn("server %s: unparseable reply (%s): closing the connection%s", c->server->cs->stats_name,
                     c->rd.ps.error ? c->rd.ps.error : "unexpected data", NC_RATELIMIT_NOTE(sup));
        server_fail(c, err, SERVER_END_ERR);
        return;
    }
    if (eof) server_fail(c, ECONNRESET, SERVER_END_EOF);
    else if (c->nsent == 0 && c->tev && !c->connecting && c->t_wblocked == 0) evtimer_del(c->tev);
}

/* conn_ops.peer_busy: the server has requests of this connection to answer: one wait. */
static unsigned server_peer_busy(const struct conn *c)
{
    return c->nsent > 0 ? 1u : 0u;
}

/* conn_ops.peer_queue: the requests written to the server and not answered yet. */
static uint32_t server_peer_queue(const struct conn *c)
{
    return c->nsent;
}

const struct conn_ops server_conn_ops = {
    .role = "server",
    .on_writable = server_on_writable,
    .on_readable = server_on_readable,
    .flush = server_flush,
    .sink = SERVER_SINK,
    .on_handshake = server_on_handshake,
    .on_close = NULL,
    .peer_busy = server_peer_busy,
    .peer_queue = server_peer_queue,
};
