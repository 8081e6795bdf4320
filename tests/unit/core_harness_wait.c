/*
 * core_harness_wait.c - the waits of core_harness (see core_harness.h): stepping the loop until a
 * condition holds, within a time bound; settling (nothing moving any more, every byte read by its
 * peer: the proxy's ends of the fake servers' connections are found among the process's sockets);
 * and what the failures show.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <event2/event.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <cmocka.h>

#include "core_harness_int.h"

#define CH_CALM_ROUNDS 3   /* rounds in a row with nothing moving: settled */
#define CH_FD_SCAN 4096    /* the proxy's sockets are looked for below this number */

uint64_t ch_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* bytes with CR, LF and other control bytes made visible, cut to fit out */
static const char *ch_escape(const char *p, size_t n, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < size; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\r') o += (size_t)snprintf(out + o, size - o, "\\r");
        else if (ch == '\n') o += (size_t)snprintf(out + o, size - o, "\\n");
        else if (ch < 0x20 || ch >= 0x7f) o += (size_t)snprintf(out + o, size - o, "\\x%02x", ch);
        else out[o++] = (char)ch;
    }
    out[o] = '\0';
    return out;
}

/* --- waits ------------------------------------------------------------------------------------ */

static void ch_dump_peer(const struct ch_peer *p)
{
    char esc[600];
    ch_escape(p->buf + p->off, p->len - p->off, esc, sizeof(esc));
    print_message("  %s%s%s: unread '%s'\n", p->name, p->eof ? " (closed by the proxy)" : "",
                  p->fd < 0 ? " (closed by the test)" : "", esc);
}

void ch_dump(const struct harness *h)
{
    for (size_t i = 0; i < h->nclients; i++) ch_dump_peer(&h->cli[i]);
    for (size_t s = 0; s < h->nservers; s++) {
        for (size_t k = 0; k < h->srv[s].nconns; k++) ch_dump_peer(&h->srv[s].conns[k]);
    }
}

void ch_wait(struct harness *h, ch_pred pred, void *arg, const char *what)
{
    uint64_t deadline = ch_ms() + CH_WAIT_MS;
    while (!pred(h, arg)) {
        if (ch_ms() > deadline) {
            ch_dump(h);
            fail_msg("timed out after %d ms waiting for %s", CH_WAIT_MS, what);
        }
        loop_pass(&h->loop, false); /* the tick bounds it */
    }
}

struct ch_want {
    struct ch_peer *p;
    size_t n;
};

static bool ch_has_bytes(struct harness *h, void *arg)
{
    (void)h;
    const struct ch_want *w = arg;
    return w->p->len - w->p->off >= w->n || w->p->eof;
}

void ch_peer_expect(struct harness *h, struct ch_peer *p, const char *bytes, size_t n)
{
    struct ch_want w = { .p = p, .n = n };
    char what[64], e1[600], e2[600];
    snprintf(what, sizeof(what), "%zu bytes on %s", n, p->name);
    ch_wait(h, ch_has_bytes, &w, what);
    const char *got = p->buf + p->off;
    size_t have = p->len - p->off;
    if (have < n || (bytes != NULL && memcmp(got, bytes, n) != 0)) {
        ch_dump(h);
        fail_msg("%s: expected '%s', got '%s'%s", p->name, ch_escape(bytes ? bytes : "", bytes ? n : 0, e1, sizeof(e1)),
                 ch_escape(got, have < n ? have : n, e2, sizeof(e2)), have < n ? " then the end" : "");
    }
    p->off += n;
}

static bool ch_peer_eof(struct harness *h, void *arg)
{
    (void)h;
    return ((struct ch_peer *)arg)->eof;
}

void ch_peer_wait_eof(struct harness *h, struct ch_peer *p)
{
    char what[64];
    snprintf(what, sizeof(what), "the proxy to close %s", p->name);
    ch_wait(h, ch_peer_eof, p, what);
}

/* --- fake servers' side ------------------------------------------------------------------------- */

struct ch_find {
    size_t s;
    const char *bytes;
    size_t n;
    size_t k;              /* the connection found */
};

static bool ch_srv_found(struct harness *h, void *arg)
{
    struct ch_find *f = arg;
    for (size_t k = 0; k < h->srv[f->s].nconns; k++) {
        const struct ch_peer *p = &h->srv[f->s].conns[k];
        if (p->len - p->off >= f->n && memcmp(p->buf + p->off, f->bytes, f->n) == 0) {
            f->k = k;
            return true;
        }
    }
    return false;
}

size_t ch_srv_expect(struct harness *h, size_t s, const char *bytes)
{
    assert_true(s < h->nservers);
    struct ch_find f = { .s = s, .bytes = bytes, .n = strlen(bytes) };
    char what[700], esc[600];
    snprintf(what, sizeof(what), "'%s' on a connection of s%zu", ch_escape(bytes, f.n, esc, sizeof(esc)), s + 1);
    ch_wait(h, ch_srv_found, &f, what);
    h->srv[s].conns[f.k].off += f.n;
    return f.k;
}

/* --- settling --------------------------------------------------------------------------------- */

/* Whether fd is the socket bound to port local (network order) connected to port remote. */
static bool ch_is_end(int fd, uint16_t local, uint16_t remote)
{
    struct sockaddr_in a;
    socklen_t n = sizeof(a);
    if (getsockname(fd, (struct sockaddr *)&a, &n) < 0 || a.sin_family != AF_INET || a.sin_port != local) return false;
    n = sizeof(a);
    return getpeername(fd, (struct sockaddr *)&a, &n) == 0 && a.sin_port == remote;
}

/* The proxy's end of fake server connection p (it is in this process), or -1. */
static int ch_proxy_fd(struct ch_peer *p)
{
    struct sockaddr_in a;
    socklen_t n = sizeof(a);
    if (getpeername(p->fd, (struct sockaddr *)&a, &n) < 0) return -1;
    if (p->proxy_fd >= 0 && ch_is_end(p->proxy_fd, a.sin_port, p->srv_port)) return p->proxy_fd;
    p->proxy_fd = -1;
    for (int fd = 0; fd < CH_FD_SCAN; fd++) {
        if (fd != p->fd && ch_is_end(fd, a.sin_port, p->srv_port)) return p->proxy_fd = fd;
    }
    return -1;
}

/* Whether nothing is on its way through p: no unread byte (nor EOF) on the test's end, nothing the
 * test wrote still unread by the proxy, nothing the proxy wrote still in flight. */
static bool ch_peer_still(struct ch_peer *p)
{
    if (p->fd < 0 || p->eof) return true;
    struct pollfd pf = { .fd = p->fd, .events = POLLIN };
    if (poll(&pf, 1, 0) != 0) return false;
    int n = 0;
    if (ioctl(p->fd, SIOCOUTQ, &n) == 0 && n > 0) return false; /* unix: unread by the proxy; tcp: unacked */
    int pfd = p->srv_port != 0 ? ch_proxy_fd(p) : -1;
    if (pfd < 0) return true;
    /* the proxy's end: nothing unread, nothing it wrote still on its way */
    if (ioctl(pfd, FIONREAD, &n) == 0 && n > 0) return false;
    return ioctl(pfd, SIOCOUTQ, &n) < 0 || n == 0;
}

static bool ch_still(struct harness *h)
{
    if (event_base_get_num_events(h->base, EVENT_BASE_COUNT_ACTIVE) > 0) return false;
    for (size_t i = 0; i < h->nclients; i++) {
        if (!ch_peer_still(&h->cli[i])) return false;
    }
    for (size_t s = 0; s < h->nservers; s++) {
        struct pollfd pf = { .fd = h->srv[s].lfd, .events = POLLIN };
        if (poll(&pf, 1, 0) != 0) return false; /* a connection to accept */
        for (size_t k = 0; k < h->srv[s].nconns; k++) {
            if (!ch_peer_still(&h->srv[s].conns[k])) return false;
        }
    }
    return true;
}

void ch_settle(struct harness *h)
{
    uint64_t deadline = ch_ms() + CH_WAIT_MS;
    for (int calm = 0; calm < CH_CALM_ROUNDS;) {
        if (ch_ms() > deadline) {
            ch_dump(h);
            fail_msg("the loop did not settle within %d ms", CH_WAIT_MS);
        }
        bool before = ch_still(h);
        /* one pass that does not block: one round even when an event fires in every one (a
         * socket armed for writing: EVLOOP_NONBLOCK alone would loop for as long as it does) */
        loop_pass(&h->loop, before);
        calm = before && ch_still(h) ? calm + 1 : 0;
    }
}

/* event_base_foreach_event: the first socket event armed for writing (arg: its fd). */
static int ch_find_writer(const struct event_base *base, const struct event *ev, void *arg)
{
    (void)base;
    if (event_get_fd(ev) < 0 || !(event_get_events(ev) & EV_WRITE)) return 0;
    *(int *)arg = event_get_fd(ev);
    return 1;
}

void ch_assert_quiet(struct harness *h)
{
    ch_settle(h);
    /* nothing is on its way: a socket of the proxy armed for writing would fire in every round
     * of the loop (its socket has room), a busy loop */
    int writer = -1;
    event_base_foreach_event(h->base, ch_find_writer, &writer);
    if (writer >= 0) {
        ch_dump(h);
        fail_msg("the proxy's socket %d is armed for writing with nothing to write (a busy loop)", writer);
    }
    bool extra = false;
    for (size_t i = 0; i < h->nclients; i++) extra |= h->cli[i].len > h->cli[i].off;
    for (size_t s = 0; s < h->nservers; s++) {
        if (h->srv[s].overflow) fail_msg("server s%zu: more than %d connections", s + 1, CH_CONNS_MAX);
        for (size_t k = 0; k < h->srv[s].nconns; k++) extra |= h->srv[s].conns[k].len > h->srv[s].conns[k].off;
    }
    if (extra) {
        ch_dump(h);
        fail_msg("bytes nobody expected reached a client or a server");
    }
}
