/*
 * transport_fixture.c - the tests' transport (see transport_fixture.h): a handshake of round
 * trips, bytes held back, reads that want the socket writable and writes that want it readable,
 * on the proxy's own non-blocking sockets.
 *
 * Threads: the test's only (the proxy's loop runs on it).
 */
#include "config.h"
#include "transport_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define TT_HELLO "HSK1" /* the connecting side's */
#define TT_REPLY "HSK2" /* the accepting side's answer */
#define TT_RENEG "RNEG" /* the peer's message a renegotiating write waits for */
#define TT_HS_LEN 4u
#define TT_CHUNK 4096

enum tt_hs {
    TT_HS_START,   /* connecting: nothing done yet */
    TT_HS_HELLO,   /* connecting: writing HSK1 */
    TT_HS_WAIT,    /* waiting for the peer's 4 bytes */
    TT_HS_ANSWER,  /* accepting: writing HSK2 */
    TT_HS_DONE,
};

/* One connection's state (transport.state). */
struct tt_conn {
    struct tt_side *side;
    enum tt_hs hs;
    size_t hs_off;          /* bytes of the handshake text written */
    char *buf;              /* bytes taken from the socket ... */
    size_t off, len, cap;   /* ... buf[off..len) not handed out yet */
    bool eof;               /* the socket said end of stream (after what buf holds) */
    int err;                /* the socket failed (after what buf holds) */
    bool read_blocked;      /* the last read wanted WRITE: its retry hands out what is held */
    bool write_blocked;     /* the last writev wanted READ: its retry takes the socket's bytes */
    bool renegotiating;     /* writes wait for the peer's RNEG */
    unsigned nready;        /* reads with bytes to hand out (not the retries) */
    unsigned nwready;       /* writevs that found bytes to read */
    char why[TT_WHY_MAX];
};

static const struct transport_ops tt_ops;

void tt_side_init(struct tt_side *s, bool connects)
{
    memset(s, 0, sizeof(*s));
    s->ctx.ops = &tt_ops;
    s->ctx.impl = s;
    s->connects = connects;
}

unsigned tt_side_live(const struct tt_side *s)
{
    return s->opened - s->closed;
}

/* Makes room for TT_CHUNK more bytes at the end of c's buffer. Returns false when out of memory. */
static bool tt_room(struct tt_conn *c)
{
    if (c->off == c->len) c->off = c->len = 0;
    if (c->cap - c->len >= TT_CHUNK) return true;
    if (c->off > 0) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
        if (c->cap - c->len >= TT_CHUNK) return true;
    }
    size_t ncap = c->cap ? c->cap * 2 : 2 * TT_CHUNK;
    char *nb = realloc(c->buf, ncap);
    if (nb == NULL) return false;
    c->buf = nb;
    c->cap = ncap;
    return true;
}

/* Takes bytes from the socket into c's buffer: limit at most (0: all it has). */
static void tt_fill(struct transport *t, size_t limit)
{
    struct tt_conn *c = t->state;
    size_t took = 0;
    while (!c->eof && c->err == 0 && (limit == 0 || took < limit)) {
        if (!tt_room(c)) {
            c->err = ENOMEM;
            return;
        }
        size_t want = c->cap - c->len;
        if (limit != 0 && want > limit - took) want = limit - took;
        ssize_t n = read(t->fd, c->buf + c->len, want);
        if (n > 0) {
            c->len += (size_t)n;
            took += (size_t)n;
        } else if (n == 0) {
            c->eof = true;
        } else if (errno != EINTR) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) c->err = errno;
            return;
        }
    }
}

static size_t tt_held(const struct tt_conn *c)
{
    return c->len - c->off;
}

/* Bytes waiting on the socket, unread (FIONREAD). */
static int tt_unread(int fd)
{
    int n = 0;
    return ioctl(fd, FIONREAD, &n) == 0 ? n : 0;
}

/* Writes the rest of text (a handshake message): 0 when all of it is out, -EAGAIN (want WRITE) or
 * -errno. */
static int tt_hs_write(struct transport *t, const char *text)
{
    struct tt_conn *c = t->state;
    while (c->hs_off < TT_HS_LEN) {
        ssize_t n = send(t->fd, text + c->hs_off, TT_HS_LEN - c->hs_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->hs_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            t->want = TRANSPORT_WANT_WRITE;
            return -EAGAIN;
        } else {
            return n < 0 ? -errno : -EIO;
        }
    }
    c->hs_off = 0;
    return 0;
}

/* Waits for the peer's 4 bytes (a handshake's, a renegotiation's), which must be expect: 0 when
 * they came (consumed; what follows them stays held), -EAGAIN (want READ), or -errno with c->why
 * set. */
static int tt_hs_read(struct transport *t, const char *expect)
{
    struct tt_conn *c = t->state;
    tt_fill(t, 0); /* all it has, as a TLS handshake reads ahead */
    if (tt_held(c) >= TT_HS_LEN) {
        if (memcmp(c->buf + c->off, expect, TT_HS_LEN) != 0) {
            snprintf(c->why, sizeof(c->why), "expected '%s', got '%.4s'", expect, c->buf + c->off);
            return -EPROTO;
        }
        c->off += TT_HS_LEN;
        return 0;
    }
    if (c->err != 0 || c->eof) {
        snprintf(c->why, sizeof(c->why), "the peer %s after %zu bytes of 4",
                 c->err != 0 ? "failed" : "closed", tt_held(c));
        return c->err != 0 ? -c->err : -ECONNRESET;
    }
    t->want = TRANSPORT_WANT_READ;
    return -EAGAIN;
}

/* A step that could go on wants WRITE all the same (as OpenSSL may). */
static int tt_eager_want(struct transport *t, enum tt_hs next)
{
    struct tt_conn *c = t->state;
    c->hs = next;
    c->side->eager_wants++;
    t->want = TRANSPORT_WANT_WRITE;
    return -EAGAIN;
}

/* The steps, in order; each returns as soon as it waits. */
static int tt_hs_steps(struct transport *t)
{
    struct tt_conn *c = t->state;
    int rc;
    switch (c->hs) {
    case TT_HS_START: return tt_eager_want(t, TT_HS_HELLO);
    case TT_HS_HELLO:
        if ((rc = tt_hs_write(t, TT_HELLO)) < 0) return rc;
        c->hs = TT_HS_WAIT;
        /* fall through */
    case TT_HS_WAIT:
        if ((rc = tt_hs_read(t, c->side->connects ? TT_REPLY : TT_HELLO)) < 0) return rc;
        if (!c->side->connects) return tt_eager_want(t, TT_HS_ANSWER);
        break;
    case TT_HS_ANSWER:
        if ((rc = tt_hs_write(t, TT_REPLY)) < 0) return rc;
        break;
    case TT_HS_DONE: return 0;
    }
    c->hs = TT_HS_DONE;
    return 0;
}

static int tt_handshake(struct transport *t)
{
    struct tt_conn *c = t->state;
    int rc = tt_hs_steps(t);
    if (rc == 0 && c->hs == TT_HS_DONE) c->side->handshakes++;
    else if (rc != -EAGAIN) c->side->handshake_fails++;
    return rc;
}

static int tt_open(struct transport *t, const struct transport_ctx *ctx, const struct transport_peer *peer)
{
    (void)peer;
    struct tt_conn *c = calloc(1, sizeof(*c));
    if (c == NULL) return -ENOMEM;
    c->side = ctx->impl;
    c->hs = c->side->connects ? TT_HS_START : TT_HS_WAIT;
    t->state = c;
    c->side->opened++;
    return 0;
}

/* Hands out up to len held bytes (hold at most). */
static ssize_t tt_hand_out(struct tt_conn *c, void *buf, size_t len)
{
    size_t n = tt_held(c);
    if (n > len) n = len;
    if (c->side->hold != 0 && n > c->side->hold) n = c->side->hold;
    memcpy(buf, c->buf + c->off, n);
    c->off += n;
    if (tt_held(c) > 0) c->side->held_reads++;
    return (ssize_t)n;
}

static ssize_t tt_read(struct transport *t, void *buf, size_t len)
{
    struct tt_conn *c = t->state;
    struct tt_side *s = c->side;
    bool retry = c->read_blocked;
    c->read_blocked = false;
    tt_fill(t, retry ? 0 : s->take);
    if (tt_held(c) > 0 && !retry && s->read_stall_every > 0 && ++c->nready % s->read_stall_every == 0) {
        tt_fill(t, 0); /* the socket is left with nothing to signal */
        c->read_blocked = true;
        s->read_stalls++;
        t->want = TRANSPORT_WANT_WRITE;
        return -EAGAIN;
    }
    if (tt_held(c) > 0) return tt_hand_out(c, buf, len);
    if (c->err != 0) return -c->err;
    if (c->eof) return 0;
    t->want = TRANSPORT_WANT_READ;
    return -EAGAIN;
}

/* A write of a renegotiation: 0 once the peer's RNEG came (consumed), -EAGAIN (want READ) until
 * then, -EPROTO when other bytes came first. */
static int tt_renegotiated(struct transport *t)
{
    struct tt_conn *c = t->state;
    int rc = tt_hs_read(t, TT_RENEG);
    if (rc == 0) c->renegotiating = false;
    else if (rc == -EAGAIN) c->side->reneg_waits++;
    return rc;
}

static ssize_t tt_writev(struct transport *t, const struct iovec *iov, int n)
{
    struct tt_conn *c = t->state;
    struct tt_side *s = c->side;
    if (s->renegotiate) {
        s->renegotiate = false;
        c->renegotiating = true;
    }
    if (c->renegotiating) {
        int rc = tt_renegotiated(t);
        if (rc == -EAGAIN) return 0; /* want READ */
        if (rc < 0) return rc;
    }
    if (c->write_blocked) {
        c->write_blocked = false;
        tt_fill(t, 0); /* what it waited for: held, handed out by the next reads in order */
    } else if (s->write_stall_every > 0 && tt_unread(t->fd) > 0 && ++c->nwready % s->write_stall_every == 0) {
        c->write_blocked = true;
        s->write_stalls++;
        t->want = TRANSPORT_WANT_READ;
        return 0;
    }
    return transport_plain_ops.writev(t, iov, n); /* the bytes themselves go as they are */
}

static bool tt_pending(const struct transport *t)
{
    const struct tt_conn *c = t->state;
    return c->hs == TT_HS_DONE && !c->read_blocked && tt_held(c) > 0;
}

static int tt_accept(struct transport *t, struct sockaddr *sa, socklen_t *salen)
{
    (void)t;
    (void)sa;
    (void)salen;
    return -EOPNOTSUPP; /* no listener uses it */
}

static void tt_shutdown(struct transport *t)
{
    transport_plain_ops.shutdown(t);
}

static void tt_close(struct transport *t)
{
    struct tt_conn *c = t->state;
    c->side->closed++;
    free(c->buf);
    free(c);
    t->state = NULL;
    transport_plain_ops.close(t);
}

static const char *tt_why(const struct transport *t)
{
    struct tt_conn *c = t->state;
    if (c == NULL || c->why[0] == '\0') return NULL;
    c->side->why_asked++;
    snprintf(c->side->why, sizeof(c->side->why), "%s", c->why);
    return c->why;
}

static const struct transport_ops tt_ops = {
    .name = "test",
    .open = tt_open,
    .handshake = tt_handshake,
    .read = tt_read,
    .writev = tt_writev,
    .pending = tt_pending,
    .accept = tt_accept,
    .shutdown = tt_shutdown,
    .close = tt_close,
    .why = tt_why,
};
