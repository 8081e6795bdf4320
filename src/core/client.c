/*
 * client.c - client connections (see client.h).
 *
 * Threads: the loop owning the client (client_ids: any worker, atomically).
 */
#include "config.h"
#include "core/client.h"

#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/sock.h"
#include "common/util.h"
#include "core/batch_wait.h"
#include "core/client_mem.h"
#include "core/client_hold.h"
#include "core/fair.h"
#include "core/gen.h"
#include "core/loop.h"
#include "core/pool.h"
#include "core/request.h"

/*
 * Back-pressure: a client with this many requests queued, or this many bytes held (below), is no
 * longer read from while the oldest of its requests still waits for its server; what it already
 * sent is still parsed and served. Replies that only wait for the client to read them never pause
 * it: a client that writes its whole pipeline before reading any reply (as redis-py's pipeline
 * does) would be waiting for us while we wait for it. Those are bounded by the hard limit instead:
 * a client whose held bytes, its largest request aside, pass it is dropped: its memory, not the
 * proxy's, is the limit.
 *
 * Held bytes: what the client's queued requests keep alive until their replies are written: the
 * read buffers their bytes are in (a request read alone keeps a whole -m chunk; consecutive
 * requests in one buffer pay for it once), their replies' bytes, the msgs themselves and their
 * keys (up to MSG_KEYS_MAX a request). Not only reply bytes: a client that does not read 5-byte
 * "+OK"s to 1 MB SETs holds 1 MB a request. The largest request (with its reply) is left out of
 * the hard limit: one large value (redis takes 512 MB) in a pipeline is bounded by the protocol,
 * not a reason to drop its client. "Largest" is the largest charged since the queue was last
 * empty (c->held_max, O(1)): it may have been written already, which only makes the limit more
 * lenient, and never more than one request's worth.
 */
#define CLIENT_MAX_PENDING 4096
#define CLIENT_OUT_SOFT_LIMIT (16u << 20)
#define CLIENT_OUT_HARD_LIMIT (256u << 20)
#define CLIENT_MSG_COST 512u /* a msg and its span and key arrays, with the allocator's overhead */
#define CLIENT_KEY_COST (2 * sizeof(struct msg_key) + sizeof(uint32_t))
#define CLIENT_WRITE_BATCH 128
/* A client's request may not pass this many bytes (redis' client-query-buffer-limit): one request
 * is held whole, and a get line of endless keys or an array of endless arguments would otherwise
 * grow the proxy for as long as the client sends. One 512 MB value fits with room to spare. */
#define CLIENT_REQUEST_MAX ((uint64_t)1 << 30)

/* The ids clients are known by to their protocol (redis CLIENT ID, HELLO): unique in the process,
 * whatever worker serves them (a conn's own id is its loop's). The only object here that threads
 * share: one relaxed increment per accepted client. */
/* written per client by every worker: on lines of its own */
static struct {
    _Alignas(NC_SHARING_SPAN) _Atomic uint64_t next;
} client_ids;

static void client_on_handshake(struct conn *c, int err);

/*
 * The transport's handshake with client c ended (why NULL: done; else why it failed): counted for
 * its pool (client_tls_handshakes / _failures, and client_tls_resumptions for a done one that
 * resumed the client's earlier session: TLS is the only transport with a handshake, a plain
 * client never comes here). A failed one is logged at notice level, at most one line per
 * pool per log interval (pool_shared.handshake_log), which says how many were left out.
 */
static void client_handshake_ended(struct conn *c, const char *why)
{
    struct pool_rt *p = c->pool;
    if (why == NULL) {
        STATS_POOL_ADD(p->st, client_tls_handshakes, 1);
        if (transport_resumed(&c->tr)) STATS_POOL_ADD(p->st, client_tls_resumptions, 1);
        return;
    }
    STATS_POOL_ADD(p->st, client_tls_handshake_failures, 1);
    uint64_t sup;
    if (!log_enabled(LOG_NOTICE) || !nc_ratelimit_allow(&p->shared->handshake_log, nc_usec_now(), &sup))
        return;
    char addr[160];
    sock_addr_text(c->tr.fd, true, addr, sizeof(addr));
    log_notice("pool '%s': client %llu (%s): %s handshake failed: %s%s", p->cp->name,
               (unsigned long long)c->sess.id, addr, c->tr.ops->name, why, NC_RATELIMIT_NOTE(sup));
}

int client_accept(struct loop *l, struct pool_rt *pool, int fd)
{
    struct conn *c = conn_create(l, &client_conn_ops, pool);
    int rc = c != NULL ? conn_attach(c, pool->shared->client_tp, fd, NULL) : -ENOMEM; /* fd is c's */
    if (rc < 0) {
        if (c == NULL) close(fd);
        free(c);
        atomic_fetch_sub(pool_nclients(pool->shared), 1);
        return rc;
    }
    c->sess.id = atomic_fetch_add_explicit(&client_ids.next, 1, memory_order_relaxed) + 1;
    c->sess.fd = fd;
    c->t_active = c->sess.t_start = nc_usec_now();
    fair_init(c);
    c->rd.ps.table = pool->parse_table;
    pool->proto->session_init(&c->sess, pool->cp, NULL);
    TAILQ_INSERT_TAIL(&l->clients, c, link);
    l->nclients++;
    pool->gen->nclients++;
    stats_ctr_add(&l->stats->total_connections, 1);
    stats_ctr_add(&l->stats->curr_connections, 1);
    STATS_POOL_ADD(pool->st, client_connections, 1);
    conn_want_read(c, true); /* once the transport's handshake is done, where it has one */
    log_debug(LOG_VERB, "worker %u: client %lu on pool '%s'", l->id, (unsigned long)c->id, pool->cp->name);
    rc = conn_handshake_start(c);
    /* ended at once (done or failed), where the transport has a handshake; else 1: it runs */
    if (rc < 0 || (rc == 0 && transport_has_handshake(&c->tr))) client_on_handshake(c, rc);
    return 0;
}

void client_close(struct conn *c)
{
    struct loop *l = c->loop;
    struct msg *req;
    if (c->feat_on != 0) feature_close(c); /* before the queue: what a feature holds back was
                                             * never sent; what waits for it is freed with it */
    while ((req = TAILQ_FIRST(&c->reqs)) != NULL) {
        client_req_unlink(c, req);
        if (req->done || req->fair_wait) { /* (a held one was never sent) */
            request_free(l, req);
        } else {
            req->owner = NULL; /* in flight: freed when its reply or failure arrives */
        }
    }
    client_mem_gone(c);
    if (c->mem_paused) l->mem_npaused--;
    TAILQ_REMOVE(&l->clients, c, link);
    l->nclients--;
    if (l->draining && l->nclients == 0) atomic_store_explicit(&l->drained, true, memory_order_release);
    struct pool_rt *p = c->pool;
    stats_ctr_add(&l->stats->curr_connections, -1);
    STATS_POOL_ADD(p->st, client_connections, -1);
    /* twemproxy's split: a client that ended the connection itself, by closing its side or by
     * QUIT, is client_eof, even when the write of its last replies then fails (it reset the
     * connection after QUIT); any other error is client_err (a reset without QUIT among them:
     * Jedis closes so, see notes/client-close-stats.md) */
    if (c->eof || c->quit) STATS_POOL_ADD(p->st, client_eof, 1);
    else if (c->err != 0) STATS_POOL_ADD(p->st, client_err, 1);
    atomic_fetch_sub(pool_nclients(p->shared), 1);
    p->proto->session_free(&c->sess);
    conn_destroy(c);
    if (--p->gen->nclients == 0) loop_reap_later(l);
}

int client_follow_reload(struct conn *c)
{
    struct loop *l = c->loop;
    struct pool_rt *old = c->pool;
    struct pool_rt *np = gen_pool_find(l->gen, old->cp->name);
    if (np == NULL || np->proto != old->proto) return -1;
    /* a feature's state (a transaction, subscriptions) stays on the servers it started on; a
     * request being parsed, on the pool's command table its parse began with (it follows when
     * that request is dispatched) */
    if (c->feat_on != 0 || c->rd.msg != NULL) return 0;
    atomic_fetch_sub(pool_nclients(old->shared), 1);
    atomic_fetch_add(pool_nclients(np->shared), 1);
    /* the same name: the same counter block, unless the pool is new in the registry */
    STATS_POOL_ADD(old->st, client_connections, -1);
    STATS_POOL_ADD(np->st, client_connections, 1);
    np->proto->session_init(&c->sess, np->cp, old->cp);
    c->pool = np;
    c->rd.ps.table = np->parse_table;
    np->gen->nclients++;
    if (--old->gen->nclients == 0) loop_reap_later(l);
    return 0;
}

void client_on_reload(struct conn *c)
{
    if (c->pool->gen == c->loop->gen) return;
    if (c->nreqs == 0) {
        if (client_follow_reload(c) < 0) client_close(c);
        return;
    }
    struct pool_rt *np = gen_pool_find(c->loop->gen, c->pool->cp->name);
    if (np == NULL || np->proto != c->pool->proto) {
        /* its pool is gone: answer what it asked, then close (client_flush) */
        c->closing = true;
        conn_want_read(c, false);
    }
    /* else it follows once its queue is empty (client_write, request_dispatch) */
}

/* The answered requests on c's queue, counted by a walk: what nreqs_done must be (asserted). */
static inline uint32_t client_count_done(const struct conn *c)
{
    uint32_t n = 0;
    const struct msg *req;
    TAILQ_FOREACH(req, &c->reqs, client_link) n += req->done;
    return n;
}

/* Whether c waits for a server: a request of its own in flight (not the one it is still sending),
 * or a feature's wait (a subscriber's messages). */
static bool client_waits(const struct conn *c)
{
    NC_ASSERT(client_count_done(c) == c->nreqs_done);
    if (c->nreqs_done != c->nreqs) return true;
    return c->feat_on != 0 && feature_waits(c);
}

/* The handshake bound of client_idle_check: closes c when its handshake runs past it. */
static bool client_handshake_check(struct conn *c, uint64_t now)
{
    int64_t limit = c->pool->cp->client_idle_timeout;
    if (limit <= 0 || limit > CLIENT_HANDSHAKE_LIMIT_MS) limit = CLIENT_HANDSHAKE_LIMIT_MS;
    if (now - c->t_active < (uint64_t)limit * 1000u) return false;
    char why[64];
    snprintf(why, sizeof(why), "not done in %ld ms", (long)limit);
    client_handshake_ended(c, why);
    c->err = ETIMEDOUT;
    client_close(c);
    return true;
}

bool client_idle_check(struct conn *c, uint64_t now)
{
    if (c->tio & CONN_TIO_HANDSHAKE) return client_handshake_check(c, now);
    int64_t timeout = c->pool->cp->client_idle_timeout;
    if (timeout <= 0 || c->kill || now - c->t_active < (uint64_t)timeout * 1000u || client_waits(c))
        return false;
    log_debug(LOG_INFO, "client %lu: nothing sent, read or awaited for %ld ms (client_idle_timeout%s): "
              "closed", (unsigned long)c->id, (long)timeout,
              c->rd.msg != NULL ? ", a request unfinished" : "");
    STATS_POOL_ADD(c->pool->st, client_idle_timeouts, 1);
    c->err = ETIMEDOUT;
    client_close(c);
    return true;
}

void client_drain(struct conn *c)
{
    if (c->nreqs == 0) {
        client_close(c);
        return;
    }
    c->closing = true; /* closed by client_flush once its queue is empty */
    conn_want_read(c, false);
}

/* Whether reading from c must pause (see CLIENT_MAX_PENDING). */
static bool client_should_pause(const struct conn *c)
{
    const struct msg *head = TAILQ_FIRST(&c->reqs);
    bool over = c->nreqs >= CLIENT_MAX_PENDING || c->held_bytes >= CLIENT_OUT_SOFT_LIMIT;
    return (over && head != NULL && !head->done) || c->mem_paused; /* (the proxy over -M) */
}

/* client_over_limit's drop (its cold end). */
static __attribute__((noinline)) void client_drop_over_limit(struct conn *c, uint64_t held)
{
    log_warn("client %lu: %lu bytes held for requests, replies it does not read and subscriptions "
             "(besides its largest request): dropping the client", (unsigned long)c->id, (unsigned long)held);
    client_kill(c, ENOBUFS);
}

/* Drops c when what it holds, its largest request aside, passes the hard limit. Returns true then. */
static inline bool client_over_limit(struct conn *c)
{
    if (c->kill) return true;
    uint64_t held = c->held_bytes > c->held_max ? c->held_bytes - c->held_max : 0;
    if (held <= CLIENT_OUT_HARD_LIMIT) return false;
    client_drop_over_limit(c, held);
    return true;
}

void client_kill(struct conn *c, int err)
{
    c->kill = true;
    c->err = err;
    conn_want_read(c, false);
    conn_flush_later(c); /* closed from the flush, outside whatever callback we are in */
}

void client_resume_reading(struct conn *c)
{
    if (!c->closing && !c->kill && !c->reading && !client_should_pause(c)) conn_want_read(c, true);
}

bool client_req_queued(struct conn *c, struct msg *req)
{
    /* its keys: each entry, its fragment's copy and its place in the fragment map */
    uint64_t cost = CLIENT_MSG_COST + (uint64_t)req->nkeys * CLIENT_KEY_COST;
    for (uint32_t i = 0; i < req->nspans; i++) {
        const struct mbuf *mb = req->spans[i].mb;
        if (mb == c->held_mb) continue; /* paid for by an earlier request */
        c->held_mb = mb;
        cost += sizeof(*mb) + mb->cap;
    }
    req->held = cost;
    client_mem_add(c, (int64_t)cost);
    if (req->held > c->held_max) c->held_max = req->held;
    return client_over_limit(c);
}

bool client_hold(struct conn *c, int64_t delta)
{
    client_mem_add(c, delta);
    return delta > 0 && client_over_limit(c);
}

void client_hold_for(struct conn *c, struct msg *req, int64_t delta)
{
    req->held = (uint64_t)((int64_t)req->held + delta);
    if (req->held > c->held_max) c->held_max = req->held;
    client_hold(c, delta);
}

void client_reply_ready(struct conn *c, struct msg *req)
{
    uint64_t cost = req->peer != NULL ? req->peer->len + CLIENT_MSG_COST : 0;
    req->held += cost;
    client_mem_add(c, (int64_t)cost);
    if (req->held > c->held_max) c->held_max = req->held;
    if (client_over_limit(c)) return;
    struct msg *head = TAILQ_FIRST(&c->reqs);
    if (head == NULL || !head->done) {
        if (client_should_pause(c)) conn_want_read(c, false);
        return;
    }
    if (!c->wev_on) conn_flush_later(c); /* else EV_WRITE is on: the socket is full */
    /* the replies now wait for the client, not for a server: read on (see CLIENT_MAX_PENDING) */
    if (!c->closing && !c->kill && !c->reading && !c->mem_paused) conn_want_read(c, true);
}

/* sink.on_msg: a request parsed. */
static int client_on_msg(void *ctx, struct msg *req)
{
    struct conn *c = ctx;
    int stop = request_dispatch(c, req);
    if (stop) return stop;
    if (c->kill) return 1; /* over its limit: closed from the flush queue */
    /* back-pressure (what is already buffered is still parsed); client_reply_ready and
     * client_write resume it */
    if (client_should_pause(c)) conn_want_read(c, false);
    return 0;
}

/* Writes the replies that are ready, in order. Returns -errno on a write error. */
static int client_write(struct conn *c)
{
    struct loop *l = c->loop;
    for (;;) {
        /* the replies of the first n requests, all answered (they leave from the head) */
        struct msg *replies[CLIENT_WRITE_BATCH];
        uint32_t n = 0, nr = 0;
        struct msg *req;
        TAILQ_FOREACH(req, &c->reqs, client_link)
        {
            if (!req->done || n == CLIENT_WRITE_BATCH) break;
            n++;
            if (req->peer) replies[nr++] = req->peer;
        }
        if (n == 0) break;
        int64_t wrote = nr ? conn_writev(c, replies, nr, c->out_off) : 0;
        if (wrote < 0) return (int)wrote;
        uint64_t off = c->out_off + (uint64_t)wrote;
        uint32_t freed = 0;
        uint64_t now = nc_usec_now();
        if (wrote > 0) c->t_active = now;
        struct stats_pool_block *ps = c->pool->st;
        for (uint32_t i = 0; i < n; i++) {
            req = TAILQ_FIRST(&c->reqs);
            uint64_t len = req->peer ? req->peer->len : 0;
            if (off < len) break;
            off -= len;
            client_req_unlink(c, req);
            if (req->t_start != 0) request_record_latency(l, req, ps, now);
            client_mem_add(c, -(int64_t)req->held);
            request_free(l, req);
            freed++;
        }
        c->out_off = off;
        if (freed < n) break; /* the socket is full */
    }
    struct msg *head = TAILQ_FIRST(&c->reqs);
    if (head == NULL) { /* its buffer may come back from the pool for new bytes */
        c->held_mb = NULL;
        c->held_max = 0;
    }
    conn_want_write(c, head != NULL && head->done);
    if (head == NULL && c->pool->gen != l->gen && !c->closing && client_follow_reload(c) < 0) {
        c->closing = true; /* cannot happen: a client of a removed pool is closing already */
        conn_want_read(c, false);
    }
    if (!c->closing && !c->kill && !c->reading && !client_should_pause(c)) conn_want_read(c, true);
    return 0;
}

/* Writes the replies that are ready (the loop's flush queue, EV_WRITE). Returns true when it
 * closed c (c is freed). */
static bool client_flush(struct conn *c)
{
    if (c->kill) { /* over its held-bytes limit: see client_over_limit */
        client_close(c);
        return true;
    }
    if (c->fair_nheld > 0) fair_release(c); /* its share allows more now (fair_done) */
    int rc = client_write(c);
    if (rc < 0) c->err = -rc;
    if (rc < 0 || (c->closing && c->nreqs == 0)) {
        client_close(c);
        return true;
    }
    return false;
}

/* What the request c is still sending makes the proxy hold: its bytes parsed so far, and the
 * chunk it is being read into (which holds the bytes the parser cannot take yet: a key is
 * parsed whole), as a queued request's chunks count (client_req_queued). 0 between requests. */
static uint64_t client_partial_bytes(const struct conn *c)
{
    if (c->rd.msg == NULL) return 0;
    const struct mbuf *buf = c->rd.buf;
    return c->rd.msg->len + (buf != NULL ? sizeof(*buf) + buf->cap : 0);
}

/* conn_ops.on_readable */
static void client_on_readable(struct conn *c)
{
    bool eof = false;
    int rc = conn_recv(c, &eof);
    if (c->rd.msg != NULL || c->held_partial != 0) client_mem_partial(c, client_partial_bytes(c));
    client_mem_read(c);
    if (rc == -EPROTO || rc == -E2BIG || rc == -EMSGSIZE) {
        const char *why = rc == -E2BIG      ? "request token larger than the buffer size (-m)"
                          : rc == -EMSGSIZE ? "request larger than 1 GB"
                                            : (c->rd.ps.error ? c->rd.ps.error : "invalid request");
        log_debug(LOG_INFO, "client %lu: protocol error: %s", (unsigned long)c->id, why);
        c->err = EPROTO;
        request_protocol_error(c, why); /* the error reply goes after the earlier replies */
        conn_want_read(c, false);
        if (c->nreqs == 0) client_close(c);
        return;
    }
    if (rc < 0) {
        c->err = -rc;
        client_close(c);
        return;
    }
    c->eof = eof;
    if (eof && feature_blocked(c)) { /* gone while blocked: free the server at once */
        client_close(c);
        return;
    }
    if (eof || rc == 1) {
        /* end of requests: answer what was asked, then close */
        c->closing = true;
        conn_want_read(c, false);
        if (c->nreqs == 0) client_close(c);
    }
}

/* conn_ops.on_hangup: the client closed while its reading is paused (conn_watch_hangup, on while
 * it is blocked or not read for -M): gone while blocked, it is closed at once, as at an EOF read
 * (client_on_readable); not read for -M, it is read again (client_mem_hangup); otherwise its EOF
 * is read once its reading resumes. */
static void client_on_hangup(struct conn *c)
{
    if (feature_blocked(c)) {
        c->eof = true;
        client_close(c);
        return;
    }
    conn_watch_hangup(c, false);
    if (c->mem_paused) client_mem_hangup(c);
}

/* conn_ops.on_writable: the socket has room for the replies again. */
static bool client_on_writable(struct conn *c)
{
    return client_flush(c);
}

static void client_flush_queued(struct conn *c)
{
    /* the usual case without a call: no hold on, and no reply ready with a later one to come */
    const struct msg *head = TAILQ_FIRST(&c->reqs);
    bool single = head == NULL || !head->done || TAILQ_NEXT(head, client_link) == NULL;
    if ((single && c->t_hold_until == 0) || !client_holds(c)) client_flush(c);
}

static void client_msg_begin(void *ctx, struct parse_state *ps)
{
    parse_state_reset(ps);
    ps->want_elems = false;
    ps->opts = ((struct conn *)ctx)->pool->parse_opts; /* the pool's now: it may follow a reload */
}

static int client_parse(void *ctx, struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                        size_t *consumed)
{
    return ((struct conn *)ctx)->pool->proto->parse_req(ps, m, buf, len, consumed);
}

/* What a client does with the bytes it reads: its requests (both client ops tables). */
#define CLIENT_SINK \
    { .begin = client_msg_begin, .parse = client_parse, .on_msg = client_on_msg, \
      .msg_max = CLIENT_REQUEST_MAX }

/* conn_ops.on_handshake: the transport's handshake with the client ended (err 0: its requests are
 * read from now on, as conn_want_read asked at accept); a failed one closes the client alone. */
static void client_on_handshake(struct conn *c, int err)
{
    client_handshake_ended(c, err == 0 ? NULL : transport_strerror(&c->tr, -err));
    if (err == 0) return;
    c->err = -err;
    client_close(c);
}

/* conn_ops.peer_busy: replies to later requests of c are still to come (a pipeline in part
 * answered), so the client has to wait for them anyway and a few µs more on the first ones cost
 * it nothing. */
static unsigned client_peer_busy(const struct conn *c)
{
    return client_waits(c) ? BATCH_WAIT_MOST_WAITS : 0;
}

const struct conn_ops client_conn_ops = {
    .role = "client",
    .on_writable = client_on_writable,
    .on_readable = client_on_readable,
    .flush = client_flush_queued,
    .sink = CLIENT_SINK,
    .on_handshake = client_on_handshake,
    .on_hangup = client_on_hangup,
    .peer_busy = client_peer_busy,
    .flush_before_wait = true,
};

/* A client in a feature's state (core/feature.h): once its replies are written, its features
 * are told (feature_written: the requests held behind a step of a transaction may go on). Its own
 * ops, so that a client in none does not test for it. */
static bool client_feature_on_writable(struct conn *c)
{
    if (client_flush(c)) return true;
    feature_written(c);
    return false;
}

static void client_feature_flush(struct conn *c)
{
    if (!client_flush(c)) feature_written(c);
}

static const struct conn_ops client_feature_conn_ops = {
    .role = "client",
    .on_writable = client_feature_on_writable,
    .on_readable = client_on_readable,
    .flush = client_feature_flush,
    .sink = CLIENT_SINK,
    .on_handshake = client_on_handshake,
    .on_hangup = client_on_hangup,
    .flush_before_wait = true,
};

void client_features_on(struct conn *c, bool on)
{
    c->ops = on ? &client_feature_conn_ops : &client_conn_ops;
}
