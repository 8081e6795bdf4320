/*
 * conn.c - connection plumbing shared by every role: events (dispatched to the role's conn_ops,
 * and to the transport while it waits for something: its handshake, a read that needs the socket
 * writable), the flush queue, reading through the transport into the reader (proto/reader.h),
 * and writing the spans of queued messages through the transport.
 *
 * Threads: the owning loop's thread only.
 */
#include "config.h"
#include "core/conn.h"

#include <errno.h>
#include <event2/event.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "common/clock.h"
#include "common/log.h"
#include "core/flush_hold.h"
#include "core/loop.h"

#define CONN_READS_PER_EVENT 16 /* fairness between connections of one worker */
#define CONN_IOV_MAX 512
#define CONN_FLUSH_MAX 65536    /* conns flushed per run of the queue; the rest in the next one */

struct conn *conn_create(struct loop *l, const struct conn_ops *ops, struct pool_rt *pool)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) return NULL;
    c->ops = ops;
    transport_init_closed(&c->tr);
    c->loop = l;
    c->pool = pool;
    c->id = ++l->next_conn_id;
    TAILQ_INIT(&c->reqs); /* the server's to_send too: one head, two names */
    TAILQ_INIT(&c->sent);
    return c;
}

static short conn_on_transport_event(struct conn *c, short what);

/* The socket's one event: writes first (they may close the connection), then reads. A transport
 * that waits for something (c->tio: a handshake, a read that needs the socket writable, ...)
 * sees the event first; on the plain path that is one test. */
static void conn_on_event(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    (void)fd;
    if (c->tio != 0 && (what = conn_on_transport_event(c, what)) == 0) return;
    if ((what & EV_WRITE) && c->ops->on_writable(c)) return; /* c is gone, or its socket */
    if ((what & EV_READ) && c->reading) c->ops->on_readable(c);
    else if ((c->armed & EV_CLOSED) && ((what & EV_CLOSED) || transport_peer_gone(&c->tr))) c->ops->on_hangup(c);
}

int conn_attach(struct conn *c, const struct transport_ctx *ctx, int fd, const struct transport_peer *peer)
{
    c->reading = c->wev_on = false;
    c->armed = c->tio = 0;
    int rc = transport_open(&c->tr, ctx, fd, peer); /* closes fd on failure */
    if (rc < 0) return rc;
    c->ev = event_new(c->loop->base, fd, EV_PERSIST, conn_on_event, c);
    if (c->ev == NULL) {
        transport_close(&c->tr);
        return -ENOMEM;
    }
    return 0;
}

void conn_detach(struct conn *c)
{
    if (c->ev) event_free(c->ev);
    c->ev = NULL;
    c->wev_on = c->reading = false;
    c->armed = c->tio = 0;
    transport_close(&c->tr);
    reader_reset(&c->rd, &c->loop->msgs);
}

void conn_destroy(struct conn *c)
{
    if (c->flush_queued) TAILQ_REMOVE(&c->loop->flushq, c, flush_link);
    c->flush_queued = false;
    flush_hold_forget(c);
    conn_detach(c);
    if (c->tev) event_free(c->tev);
    parse_state_free(&c->rd.ps);
    free(c);
}

/* The EV_* flags c's event needs: what the role wants (reading, writing, the peer's close while
 * it does not read) and what its transport waits for. */
static short conn_events_needed(const struct conn *c, bool rd, bool wr)
{
    uint8_t tio = c->tio;
    if (tio & CONN_TIO_HANDSHAKE) { /* the handshake's wishes only, until it ends */
        rd = (c->tr.want & TRANSPORT_WANT_READ) != 0;
        wr = (c->tr.want & TRANSPORT_WANT_WRITE) != 0;
    } else {
        /* a read (write) that waits for the other direction is tried again when that one fires,
         * not when its own does: its socket may be ready for it all along (a write waiting for
         * the peer's bytes has room), and the call would wait again in every round of the loop */
        bool rwaits = (tio & CONN_TIO_READ_WAITS) != 0, wwaits = (tio & CONN_TIO_WRITE_WAITS) != 0;
        rd = (rd && !rwaits) || wwaits;
        wr = (wr && !wwaits) || rwaits;
    }
    bool hup = (c->hup & CONN_HUP_WANTED) && !rd;
    /* epoll reports a reset (ERR|HUP) to libevent as readable and writable, never as EV_CLOSED
     * (only a FIN's RDHUP is): an event waiting for EV_CLOSED alone would never be called, and
     * epoll would return the socket in every round. A write wanted sees a reset as its write's
     * error; without one, EV_READ too, edge-triggered (one call per arrival, not one per round
     * while the bytes the proxy does not read wait), and conn_on_event asks the socket. */
    short hup_ev = hup ? (short)(wr ? EV_CLOSED : EV_CLOSED | EV_READ | EV_ET) : 0;
    return (short)((rd ? EV_READ : 0) | (wr ? EV_WRITE : 0) | hup_ev);
}

/* Arms the event for what c and its transport want now, when that is not what it is armed with.
 * Called whenever c->tio or c->hup changes: the shortcut of conn_set_events (and of
 * conn_want_read/write) trusts that the event matches the role's wishes once both are 0 again. */
static void conn_arm(struct conn *c)
{
    if (c->ev == NULL) return;
    short what = conn_events_needed(c, c->reading, c->wev_on);
    if (what == c->armed) return;
    if (c->armed != 0) event_del(c->ev);
    c->armed = (uint8_t)what;
    if (what != 0) {
        event_assign(c->ev, c->loop->base, c->tr.fd, (short)(what | EV_PERSIST), conn_on_event, c);
        event_add(c->ev, NULL);
    }
}

void conn_set_events(struct conn *c, bool rd, bool wr)
{
    /* the usual call changes nothing (client_write asks for what it has): one test for it */
    if (c->reading == rd && c->wev_on == wr && (c->hup | c->tio) == 0) return;
    bool start_reading = rd && !c->reading;
    c->reading = rd;
    c->wev_on = wr;
    if (c->ev == NULL) return;
    conn_arm(c);
    /* bytes the transport holds are not signalled by the socket: read them now */
    if (start_reading && !(c->tio & CONN_TIO_HANDSHAKE) && transport_pending(&c->tr))
        event_active(c->ev, EV_READ, 1);
}

/* One step of the handshake (its socket was ready for it). */
static void conn_handshake_step(struct conn *c)
{
    int rc = c->tr.ops->handshake(&c->tr);
    if (rc == -EAGAIN) {
        conn_arm(c); /* what it waits for now */
        return;
    }
    c->tio &= (uint8_t)~CONN_TIO_HANDSHAKE;
    conn_arm(c); /* what the role wanted meanwhile */
    if (rc == 0 && c->reading && transport_pending(&c->tr)) event_active(c->ev, EV_READ, 1);
    c->ops->on_handshake(c, rc);
}

/* An event while the transport waits for something: the handshake takes it, or a read (write)
 * that waited for the other direction is tried again. Returns what the role still gets. */
static short conn_on_transport_event(struct conn *c, short what)
{
    if (c->tio & CONN_TIO_HANDSHAKE) {
        conn_handshake_step(c);
        return 0;
    }
    uint8_t was = c->tio;
    if ((was & CONN_TIO_READ_WAITS) && (what & EV_WRITE)) {
        c->tio &= (uint8_t)~CONN_TIO_READ_WAITS;
        what |= EV_READ;
    }
    if ((was & CONN_TIO_WRITE_WAITS) && (what & EV_READ)) {
        c->tio &= (uint8_t)~CONN_TIO_WRITE_WAITS;
        what |= EV_WRITE;
    }
    if (c->tio != was) conn_arm(c);
    /* a write the role did not ask for only serves a read that waited for it */
    if (!c->wev_on && !(was & CONN_TIO_WRITE_WAITS)) what &= (short)~EV_WRITE;
    return what;
}

int conn_handshake_start(struct conn *c)
{
    if (!transport_has_handshake(&c->tr) || (c->tio & CONN_TIO_HANDSHAKE)) return 0;
    int rc = c->tr.ops->handshake(&c->tr);
    if (rc != -EAGAIN) return rc;
    c->tio |= CONN_TIO_HANDSHAKE;
    conn_arm(c);
    return 1;
}

/* A read or write of c could not go on for want of the other direction (a transport with a
 * handshake inside its stream): the event waits for that too. */
static void conn_transport_waits(struct conn *c, uint8_t flag)
{
    c->tio |= flag;
    conn_arm(c);
}

void conn_watch_hangup(struct conn *c, bool on)
{
    if (on && !(event_base_get_features(c->loop->base) & EV_FEATURE_EARLY_CLOSE)) return;
    c->hup = on ? CONN_HUP_WANTED : 0;
    conn_arm(c);
}

void conn_flush_later(struct conn *c)
{
    if (c->flush_queued) return;
    TAILQ_INSERT_TAIL(&c->loop->flushq, c, flush_link); /* run at the end of the pass (loop_pass) */
    c->flush_queued = true;
}

void conn_flush_queue(struct loop *l)
{
    /* a flush may queue other conns (a memcached noreply request written completes its client's
     * turn); each conn is in the queue at most once, and the loop is bounded all the same (the
     * rest waits for the next pass, which does not block then) */
    for (uint32_t i = 0; i < CONN_FLUSH_MAX; i++) {
        struct conn *c = TAILQ_FIRST(&l->flushq);
        if (c == NULL) return;
        TAILQ_REMOVE(&l->flushq, c, flush_link);
        c->flush_queued = false;
        c->ops->flush(c);
    }
}

int conn_recv(struct conn *c, bool *eof)
{
    *eof = false;
    int rc = 0;
    for (int i = 0; i < CONN_READS_PER_EVENT && conn_open(c); i++) {
        uint8_t *at;
        uint32_t room;
        rc = reader_room(&c->rd, &c->loop->mbufs, &at, &room);
        if (rc < 0) break;
        ssize_t n = transport_read(&c->tr, at, room);
        if (n < 0) {
            rc = n == -EAGAIN ? 0 : (int)n;
            if (n == -EAGAIN && (c->tr.want & TRANSPORT_WANT_WRITE)) conn_transport_waits(c, CONN_TIO_READ_WAITS);
            break;
        }
        if (n == 0) {
            *eof = true;
            break;
        }
        c->t_active = c->loop->read_usec = nc_usec_now(); /* one clock read per read, not per message */
        rc = reader_parse(&c->rd, (uint32_t)n, &c->loop->msgs, &c->ops->sink, c);
        if (rc != 0 || !c->reading) break;
        /* a short read drained the socket, unless the transport holds more than it gave */
        if ((uint32_t)n < room && !transport_pending(&c->tr)) break;
    }
    reader_trim(&c->rd);
    /* bytes the transport still holds are not signalled by the socket: come back for them */
    if (rc == 0 && c->reading && conn_open(c) && transport_pending(&c->tr)) event_active(c->ev, EV_READ, 1);
    return rc;
}

int64_t conn_writev(struct conn *c, struct msg *const *msgs, uint32_t n, uint64_t first_off)
{
    struct iovec iov[CONN_IOV_MAX];
    int niov = 0;
    for (uint32_t i = 0; i < n && niov < CONN_IOV_MAX; i++) {
        const struct msg *m = msgs[i];
        uint64_t skip = i == 0 ? first_off : 0;
        for (uint32_t s = 0; s < m->nspans && niov < CONN_IOV_MAX; s++) {
            const struct span *sp = &m->spans[s];
            if (skip >= sp->len) {
                skip -= sp->len;
                continue;
            }
            uint8_t *base = sp->mb->data + sp->off + skip;
            size_t len = sp->len - skip;
            skip = 0;
            /* spans that follow each other in one buffer (a pipelined client's requests, a
             * server's replies) go out as one iovec: the kernel pays per iovec */
            if (niov > 0 && (uint8_t *)iov[niov - 1].iov_base + iov[niov - 1].iov_len == base) {
                iov[niov - 1].iov_len += len;
                continue;
            }
            iov[niov].iov_base = base;
            iov[niov].iov_len = len;
            niov++;
        }
    }
    if (niov == 0) return 0;
    ssize_t w = transport_writev(&c->tr, iov, niov);
    if (w == 0 && (c->tr.want & TRANSPORT_WANT_READ)) conn_transport_waits(c, CONN_TIO_WRITE_WAITS);
    /* a write may have taken the peer's bytes from the socket (TLS reads records while it
     * writes): the socket will not signal them */
    else if (c->reading && transport_pending(&c->tr)) event_active(c->ev, EV_READ, 1);
    return w;
}
