/*
 * conn.c - connection plumbing shared by every role: events (dispatched to the role's conn_ops),
 * the flush queue, the read-and-parse loop, and writev of queued message spans.
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
#include <unistd.h>

#include "common/clock.h"
#include "common/log.h"
#include "core/loop.h"

#define CONN_READS_PER_EVENT 16 /* fairness between connections of one worker */
#define CONN_IOV_MAX 512
#define CONN_FLUSH_MAX 65536    /* conns flushed per run of the queue; the rest in the next one */

struct conn *conn_create(struct loop *l, const struct conn_ops *ops, int fd, struct pool_rt *pool)
{
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    c->ops = ops;
    c->fd = fd;
    c->loop = l;
    c->pool = pool;
    c->id = ++l->next_conn_id;
    TAILQ_INIT(&c->reqs); /* the server's to_send too: one head, two names */
    TAILQ_INIT(&c->sent);
    if (fd >= 0 && conn_attach_fd(c, fd) < 0) {
        close(fd);
        free(c);
        return NULL;
    }
    return c;
}

/* The socket's one event: writes first (they may close the connection), then reads. */
static void conn_on_event(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;
    (void)fd;
    if ((what & EV_WRITE) && c->ops->on_writable(c)) return; /* c is gone, or its socket */
    if ((what & EV_READ) && c->reading) c->ops->on_readable(c);
    else if ((what & EV_CLOSED) && (c->hup & CONN_HUP_ADDED)) c->ops->on_hangup(c);
}

int conn_attach_fd(struct conn *c, int fd)
{
    c->fd = fd;
    c->reading = c->wev_on = false;
    c->hup &= (uint8_t)~CONN_HUP_ADDED;
    c->ev = event_new(c->loop->base, fd, EV_PERSIST, conn_on_event, c);
    if (c->ev == NULL) {
        c->fd = -1; /* not closed here: the caller closes fd (closing it twice could close a
                     * descriptor another thread has just been given the same number) */
        return -ENOMEM;
    }
    return 0;
}

void conn_detach_fd(struct conn *c)
{
    if (c->ev) event_free(c->ev);
    c->ev = NULL;
    c->wev_on = c->reading = false;
    c->hup &= (uint8_t)~CONN_HUP_ADDED;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    if (c->rbuf) mbuf_unref(c->rbuf);
    c->rbuf = NULL;
    c->rpos = 0;
    if (c->rmsg) msg_put(&c->loop->msgs, c->rmsg);
    c->rmsg = NULL;
}

void conn_destroy(struct conn *c)
{
    if (c->flush_queued) TAILQ_REMOVE(&c->loop->flushq, c, flush_link);
    c->flush_queued = false;
    conn_detach_fd(c);
    if (c->tev) event_free(c->tev);
    parse_state_free(&c->ps);
    free(c);
}

/* Re-arms the event for what is wanted now (rare: back-pressure, a full socket, connect). */
static void conn_set_events(struct conn *c, bool rd, bool wr)
{
    /* the usual call changes nothing (client_write asks for what it has): one test for it */
    if (c->reading == rd && c->wev_on == wr && c->hup == 0) return;
    bool hup = (c->hup & CONN_HUP_WANTED) && !rd, had = (c->hup & CONN_HUP_ADDED) != 0;
    if (c->ev == NULL || (c->reading == rd && c->wev_on == wr && had == hup)) return;
    if (c->reading || c->wev_on || had) event_del(c->ev);
    c->reading = rd;
    c->wev_on = wr;
    c->hup = (uint8_t)((c->hup & CONN_HUP_WANTED) | (hup ? CONN_HUP_ADDED : 0));
    if (!rd && !wr && !hup) return;
    short what = (short)((rd ? EV_READ : 0) | (wr ? EV_WRITE : 0) | (hup ? EV_CLOSED : 0) | EV_PERSIST);
    event_assign(c->ev, c->loop->base, c->fd, what, conn_on_event, c);
    event_add(c->ev, NULL);
}

void conn_want_write(struct conn *c, bool on)
{
    conn_set_events(c, c->reading, on);
}

void conn_want_read(struct conn *c, bool on)
{
    conn_set_events(c, on, c->wev_on);
}

void conn_watch_hangup(struct conn *c, bool on)
{
    if (on && !(event_base_get_features(c->loop->base) & EV_FEATURE_EARLY_CLOSE)) return;
    c->hup = (uint8_t)((c->hup & ~CONN_HUP_WANTED) | (on ? CONN_HUP_WANTED : 0));
    conn_set_events(c, c->reading, c->wev_on);
}

void conn_flush_later(struct conn *c)
{
    struct loop *l = c->loop;
    if (c->flush_queued) return;
    if (TAILQ_EMPTY(&l->flushq)) event_active(l->flush_ev, EV_TIMEOUT, 1);
    TAILQ_INSERT_TAIL(&l->flushq, c, flush_link);
    c->flush_queued = true;
}

void conn_flush_queue(struct loop *l)
{
    /* a flush may queue other conns (a memcached noreply request written completes its client's
     * turn); each conn is in the queue at most once, and the loop is bounded all the same */
    for (uint32_t i = 0; i < CONN_FLUSH_MAX; i++) {
        struct conn *c = TAILQ_FIRST(&l->flushq);
        if (c == NULL) return;
        TAILQ_REMOVE(&l->flushq, c, flush_link);
        c->flush_queued = false;
        c->ops->flush(c);
    }
    if (!TAILQ_EMPTY(&l->flushq)) event_active(l->flush_ev, EV_TIMEOUT, 1);
}

/* Makes sure rbuf has room; moves an unconsumed partial token to a fresh mbuf. */
static int conn_rbuf_ready(struct conn *c)
{
    struct mbuf *rb = c->rbuf;
    if (rb != NULL && mbuf_room(rb) > 0) return 0;
    struct mbuf *nb = mbuf_get(&c->loop->mbufs);
    if (nb == NULL) return -ENOMEM;
    if (rb != NULL) {
        uint32_t tail = rb->len - c->rpos;
        if (tail > 0 && c->rpos == 0) { /* a token as large as a whole mbuf */
            mbuf_unref(nb);
            return -E2BIG;
        }
        memcpy(nb->data, rb->data + c->rpos, tail);
        nb->len = tail;
        mbuf_unref(rb);
    }
    c->rbuf = nb;
    c->rpos = 0;
    return 0;
}

static int conn_parse(struct conn *c, conn_msg_fn on_msg)
{
    const struct conn_ops *ops = c->ops;
    struct mbuf *rb = c->rbuf;
    while (c->rpos < rb->len) {
        if (c->rmsg == NULL) {
            c->rmsg = msg_get(&c->loop->msgs);
            if (c->rmsg == NULL) return -ENOMEM;
            ops->msg_begin(c);
        }
        size_t consumed = 0;
        int st = ops->parse(c, rb->data + c->rpos, rb->len - c->rpos, &consumed);
        if (consumed > 0) {
            if (msg_append(c->rmsg, rb, c->rpos, (uint32_t)consumed) < 0) return -ENOMEM;
            c->rpos += (uint32_t)consumed;
            if (c->rmsg->len > ops->msg_max) return -EMSGSIZE;
        }
        if (st == PARSE_ERROR) return -EPROTO;
        if (st == PARSE_AGAIN) break;
        struct msg *m = c->rmsg;
        c->rmsg = NULL;
        int rc = on_msg(c, m);
        if (rc != 0) return rc;
        if (c->rbuf != rb) return 0; /* the conn was reset under us */
    }
    return 0;
}

int conn_recv(struct conn *c, bool *eof, conn_msg_fn on_msg)
{
    *eof = false;
    int rc = 0;
    for (int i = 0; i < CONN_READS_PER_EVENT && c->fd >= 0; i++) {
        rc = conn_rbuf_ready(c);
        if (rc < 0) break;
        struct mbuf *rb = c->rbuf;
        uint32_t room = mbuf_room(rb);
        ssize_t n = read(c->fd, rb->data + rb->len, room);
        if (n < 0) {
            if (errno == EINTR) continue;
            rc = (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
            break;
        }
        if (n == 0) {
            *eof = true;
            break;
        }
        rb->len += (uint32_t)n;
        c->loop->read_usec = nc_usec_now(); /* one clock read per read(), not per message */
        rc = conn_parse(c, on_msg);
        if (rc != 0 || (uint32_t)n < room || !c->reading) break;
    }
    /* an idle connection holds no buffer. One in the middle of a message keeps it while it has
     * bytes of that message and room (the message pins it anyway) and the next bytes go on
     * filling it: a fresh buffer per read would let a client that sends a request one byte at a
     * time pin a whole -m chunk per byte. */
    struct mbuf *rb = c->rbuf;
    if (rb != NULL && c->rpos == rb->len && (c->rmsg == NULL || rb->len == 0 || mbuf_room(rb) == 0)) {
        mbuf_unref(c->rbuf);
        c->rbuf = NULL;
        c->rpos = 0;
    }
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
    for (;;) {
        ssize_t w = writev(c->fd, iov, niov);
        if (w >= 0) return w;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        return -errno;
    }
}
