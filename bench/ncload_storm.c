/*
 * ncload_storm.c - `ncload storm`, a connection storm: up to conns connections at a time, each
 * connects, sends one PING (memcached: version), reads the reply and closes; the next starts as
 * soon as one ends, or paced by --rate R [--burst K]; runs until "quit" or EOF on standard input
 * (or --timeout), lets the connections in flight end, then prints one line.
 *
 * Threads: single-threaded (ncload runs one thread).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ncload.h"

/* One connection of a storm. */
struct churn {
    int fd;
    bool sent;           /* its PING written: now waiting for the reply */
    uint64_t t0;         /* ns, its connect */
    size_t rlen;
    char rbuf[256];
};

/* The state of one storm. */
struct storm {
    const struct opts *o;
    int ep;
    struct churn *cs;
    uint32_t *free_slots;
    uint32_t nfree;
    uint64_t started, connects, errors;
    uint64_t t0, stop_at;
    struct hist *lat;
};

/* Whether standard input (readable) says stop: "quit", EOF or an error. */
static bool storm_told_to_stop(void)
{
    char buf[256];
    ssize_t n = read(0, buf, sizeof(buf));
    if (n < 0) return errno != EAGAIN && errno != EINTR;
    return n == 0 || memmem(buf, (size_t)n, "quit", 4) != NULL;
}

/* Starts one storm connection in c: 0, or -errno when it failed at once. */
static int storm_connect(int ep, struct churn *c, uint32_t slot, int port)
{
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) return -errno;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->t0 = now_ns();
    c->sent = false;
    c->rlen = 0;
    struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = slot };
    if ((connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) ||
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
        int err = errno;
        close(c->fd);
        c->fd = -1;
        return -err;
    }
    return 0;
}

/* Progress of storm connection c on an event: 1 when it got its reply (closed), -1 when it
 * failed (closed), 0 when it goes on. */
static int storm_step(const struct opts *o, int ep, struct churn *c, uint32_t slot)
{
    if (!c->sent) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err != 0) return -1;
        char ping[32];
        size_t plen = build_ping(o, ping);
        if (write(c->fd, ping, plen) != (ssize_t)plen) return -1;
        c->sent = true;
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = slot };
        return epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev) < 0 ? -1 : 0;
    }
    ssize_t n = read(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (n <= 0) return -1;
    c->rlen += (size_t)n;
    bool err = false;
    long r = parse_reply(o, c->rbuf, c->rbuf + c->rlen, &err);
    if (r < 0 || err || (r == 0 && c->rlen == sizeof(c->rbuf))) return -1;
    return r > 0 ? 1 : 0;
}

static void storm_open(struct storm *s, const struct opts *o)
{
    raise_nofile((rlim_t)o->conns + 64);
    s->o = o;
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    if (s->ep < 0) die("epoll_create1");
    s->cs = calloc((size_t)o->conns, sizeof(*s->cs));
    s->free_slots = calloc((size_t)o->conns, sizeof(*s->free_slots));
    if (s->cs == NULL || s->free_slots == NULL) die("calloc");
    for (int i = o->conns - 1; i >= 0; i--) {
        s->cs[i].fd = -1;
        s->free_slots[s->nfree++] = (uint32_t)i;
    }
    s->lat = hist_new();
    struct epoll_event in = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
    if (epoll_ctl(s->ep, EPOLL_CTL_ADD, 0, &in) < 0 && errno != EPERM) die("epoll_ctl"); /* EPERM: stdin
                                   * is a file (/dev/null), so only --timeout ends the storm */
}

/* Starts the connects due (all free slots without --rate); returns the ms to wait at most. */
static int storm_start_due(struct storm *s, uint64_t now, int wait_ms)
{
    while (s->stop_at == 0 && s->nfree > 0) {
        if (s->o->rate > 0) {
            uint64_t group = s->started / s->o->burst * s->o->burst;
            uint64_t due = s->t0 + (uint64_t)((double)group * 1e9 / s->o->rate);
            if (due > now) {
                uint64_t ms = (due - now + 999999) / 1000000;
                return ms < (uint64_t)wait_ms ? (int)ms : wait_ms;
            }
        }
        uint32_t slot = s->free_slots[--s->nfree];
        s->started++;
        if (storm_connect(s->ep, &s->cs[slot], slot, s->o->port) < 0) {
            s->errors++;
            s->free_slots[s->nfree++] = slot;
        }
    }
    return wait_ms;
}

/* Handles one event: standard input, or a storm connection's progress. */
static void storm_event(struct storm *s, uint32_t slot)
{
    if (slot == UINT32_MAX) {
        if (storm_told_to_stop()) {
            if (s->stop_at == 0) s->stop_at = now_ns();
            epoll_ctl(s->ep, EPOLL_CTL_DEL, 0, NULL);
        }
        return;
    }
    struct churn *c = &s->cs[slot];
    int r = storm_step(s->o, s->ep, c, slot);
    if (r == 0) return;
    if (r > 0) {
        s->connects++;
        hist_record(s->lat, now_ns() - c->t0);
    } else {
        s->errors++;
    }
    close(c->fd);
    c->fd = -1;
    s->free_slots[s->nfree++] = slot;
}

static void storm_finish(struct storm *s)
{
    for (int i = 0; i < s->o->conns; i++) {
        if (s->cs[i].fd < 0) continue;
        s->errors++; /* still in flight after the grace */
        close(s->cs[i].fd);
    }
    if (s->stop_at == 0) s->stop_at = now_ns();
    double el = (double)(s->stop_at - s->t0) / 1e9;
    printf("connects=%llu errors=%llu elapsed_s=%.3f rate=%.1f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
           (unsigned long long)s->connects, (unsigned long long)s->errors, el, (double)s->connects / el,
           hist_pct_ms(s->lat, 0.50), hist_pct_ms(s->lat, 0.99), hist_max_ms(s->lat));
    free(s->cs);
    free(s->free_slots);
    hist_free(s->lat);
    close(s->ep);
}

int run_storm(const struct opts *o)
{
    struct storm s = { 0 };
    storm_open(&s, o);
    s.t0 = now_ns();
    uint64_t grace_end = 0, deadline = s.t0 + (uint64_t)o->timeout_s * 1000000000ull;
    struct epoll_event evs[256];
    while (s.stop_at == 0 || s.nfree < (uint32_t)o->conns) {
        uint64_t now = now_ns();
        if (s.stop_at == 0 && now > deadline) s.stop_at = now;
        if (s.stop_at != 0 && grace_end == 0) grace_end = s.stop_at + 5000000000ull;
        if (s.stop_at != 0 && now > grace_end) break; /* the ones still in flight count as errors */
        int wait_ms = storm_start_due(&s, now, s.stop_at != 0 ? 100 : 1000);
        int n = epoll_wait(s.ep, evs, 256, wait_ms);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int e = 0; e < n; e++) storm_event(&s, evs[e].data.u32);
    }
    storm_finish(&s);
    return s.errors ? 1 : 0;
}
