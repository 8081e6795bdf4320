/*
 * ncload_rate.c - `ncload rate`, the open loop: rate * seconds requests in batches of -P (1 by
 * default), batch b due at t0 + b * P / rate whatever the replies, written at once on connection
 * b mod conns (so a connection pipelines more when its replies are late). A request's latency
 * runs from the time it was *due* to the read of its reply, so a late proxy (or a late load
 * generator) is charged for the requests it held back too (no coordinated omission). Replies
 * come in order on a connection, so the k-th reply of connection c answers request
 * ((k / P) * conns + c) * P + k % P, and its due time follows. With -P the latency recorded is
 * a batch's, to its last reply: what a client that pipelines waits for.
 *
 * Threads: single-threaded (ncload runs one thread).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "ncload.h"

/* The state of one open-loop run. */
struct rate {
    const struct opts *o;
    struct client *cs;
    int ep;
    char *value;
    uint64_t t0, total, sent, answered, errors, last_reply;
    uint64_t pipe;         /* requests per batch (-P) */
    double ns_per_req;
    struct hist *lat;      /* due time to reply */
    struct hist *lag;      /* due time to the request's write: the load generator's own delay */
};

/* When request i is due: with its batch's first request. */
static uint64_t due_at(const struct rate *r, uint64_t i)
{
    return r->t0 + (uint64_t)((double)(i - i % r->pipe) * r->ns_per_req);
}

/* The connection (slot) of request i: its batch's, in turn. */
static uint32_t slot_of(const struct rate *r, uint64_t i)
{
    return (uint32_t)(i / r->pipe % (uint64_t)r->o->conns);
}

/* Waits for events until deadline (ns, CLOCK_MONOTONIC), to the microsecond when the kernel
 * has epoll_pwait2, else to the millisecond. */
static int wait_until(int ep, struct epoll_event *evs, int max, uint64_t deadline)
{
    uint64_t now = now_ns();
    uint64_t left = deadline > now ? deadline - now : 0;
    static bool no_pwait2;
    if (!no_pwait2) {
        struct timespec ts = { (time_t)(left / 1000000000ull), (long)(left % 1000000000ull) };
        int n = epoll_pwait2(ep, evs, max, &ts, NULL);
        if (n >= 0 || errno != ENOSYS) return n;
        no_pwait2 = true;
    }
    return epoll_wait(ep, evs, max, (int)((left + 999999) / 1000000));
}

static void poll_for(struct rate *r, struct client *c, uint32_t slot, bool out)
{
    if (c->polling_out == out) return;
    struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0), .data.u32 = slot };
    if (epoll_ctl(r->ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl");
    c->polling_out = out;
}

/* Writes what c's socket takes of its buffer; polls for EPOLLOUT while some is left. */
static void rate_flush(struct rate *r, uint32_t slot)
{
    struct client *c = &r->cs[slot];
    for (int i = 0; i < 64 && c->wlen > 0; i++) {
        ssize_t w = write(c->fd, c->wbuf, c->wlen);
        if (w > 0) {
            memmove(c->wbuf, c->wbuf + w, c->wlen - (size_t)w);
            c->wlen -= (size_t)w;
        } else if (w < 0 && errno == EAGAIN) {
            break;
        } else if (w < 0 && errno != EINTR) {
            die("write");
        }
    }
    poll_for(r, c, slot, c->wlen > 0);
}

/* Appends request number r->sent to its connection's buffer. */
static void rate_queue_one(struct rate *r, uint64_t now)
{
    struct client *c = &r->cs[slot_of(r, r->sent)];
    size_t need = r->o->value_len + 128;
    if (c->wcap - c->wlen < need) {
        c->wcap = 2 * c->wcap + need;
        c->wbuf = realloc(c->wbuf, c->wcap);
        if (c->wbuf == NULL) die("realloc");
    }
    c->wlen += build_request(r->o, c->wbuf + c->wlen, c->wcap - c->wlen, r->value);
    hist_record(r->lag, now - due_at(r, r->sent));
    c->sent++;
    r->sent++;
}

/* Writes every request due by now (each connection's share in one write). */
static void rate_send_due(struct rate *r, uint64_t now)
{
    uint64_t first = r->sent;
    while (r->sent < r->total && due_at(r, r->sent) <= now) rate_queue_one(r, now);
    if (r->sent == first) return;
    uint64_t batches = (r->sent - 1) / r->pipe - first / r->pipe + 1;
    uint64_t touched = batches < (uint64_t)r->o->conns ? batches : (uint64_t)r->o->conns;
    for (uint64_t k = 0; k < touched; k++) rate_flush(r, slot_of(r, first - first % r->pipe + k * r->pipe));
}

/* The request the k-th reply of connection slot answers. */
static uint64_t request_of(const struct rate *r, uint32_t slot, uint64_t k)
{
    return ((k / r->pipe) * (uint64_t)r->o->conns + slot) * r->pipe + k % r->pipe;
}

/* Reads the replies of one connection: 0, or 3 when it closed or answered more than it was sent. */
static int rate_read(struct rate *r, uint32_t slot)
{
    struct client *c = &r->cs[slot];
    int got = client_read(r->o, c, &r->errors);
    uint64_t now = now_ns();
    if (got < 0 || c->answered + (uint64_t)got > c->sent) {
        fprintf(stderr, "ncload: %s\n", got < 0 ? "connection closed by the server" : "more replies than requests");
        return 3;
    }
    for (int g = 0; g < got; g++, c->answered++) {
        uint64_t i = request_of(r, slot, c->answered);
        if (i % r->pipe == r->pipe - 1 || i == r->total - 1) hist_record(r->lat, now - due_at(r, i));
    }
    r->answered += (uint64_t)got;
    if (got > 0) r->last_reply = now;
    return 0;
}

/* Opens the connections and waits until every one is connected: 0, or 3. */
static int rate_open(struct rate *r, const struct opts *o)
{
    raise_nofile((rlim_t)o->conns + 64);
    prctl(PR_SET_TIMERSLACK, 1000UL); /* wake up within 1 us of a request's due time, not 50 */
    r->o = o;
    r->total = (uint64_t)(o->rate * o->seconds);
    r->ns_per_req = 1e9 / o->rate;
    r->pipe = (uint64_t)o->pipeline;
    r->ep = epoll_create1(EPOLL_CLOEXEC);
    if (r->ep < 0) die("epoll_create1");
    r->cs = clients_open(r->ep, o->conns, o->port, EPOLLIN | EPOLLOUT); /* EPOLLOUT: connected */
    for (int i = 0; i < o->conns; i++) r->cs[i].polling_out = true;
    r->value = value_bytes(o->value_len);
    r->lat = hist_new();
    r->lag = hist_new();
    uint64_t deadline = now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
    struct epoll_event evs[256];
    for (int pending = o->conns; pending > 0;) {
        if (now_ns() > deadline) {
            fprintf(stderr, "ncload: %d connections not open in time\n", pending);
            return 3;
        }
        int n = wait_until(r->ep, evs, 256, now_ns() + 1000000000ull);
        for (int e = 0; e < n; e++, pending--) poll_for(r, &r->cs[evs[e].data.u32], evs[e].data.u32, false);
    }
    return 0;
}

static void rate_close(struct rate *r)
{
    double el = (double)((r->last_reply > r->t0 ? r->last_reply : now_ns()) - r->t0) / 1e9;
    printf("requests=%llu errors=%llu elapsed_s=%.3f target_rps=%.1f rps=%.1f p50_ms=%.3f p99_ms=%.3f "
           "p999_ms=%.3f max_ms=%.3f send_lag_p99_ms=%.3f send_lag_max_ms=%.3f\n",
           (unsigned long long)r->answered, (unsigned long long)r->errors, el, r->o->rate, (double)r->answered / el,
           hist_pct_ms(r->lat, 0.50), hist_pct_ms(r->lat, 0.99), hist_pct_ms(r->lat, 0.999), hist_max_ms(r->lat),
           hist_pct_ms(r->lag, 0.99), hist_max_ms(r->lag));
    clients_close(r->cs, r->o->conns);
    free(r->value);
    hist_free(r->lat);
    hist_free(r->lag);
    close(r->ep);
}

int run_rate(const struct opts *o)
{
    struct rate r = { 0 };
    if (rate_open(&r, o) != 0) return 3;
    r.t0 = now_ns();
    uint64_t deadline = r.t0 + (uint64_t)(o->seconds + o->timeout_s) * 1000000000ull;
    struct epoll_event evs[256];
    while (r.answered < r.total) {
        uint64_t now = now_ns();
        if (now > deadline) {
            fprintf(stderr, "ncload: timed out after %llu of %llu replies\n", (unsigned long long)r.answered,
                    (unsigned long long)r.total);
            return 3;
        }
        rate_send_due(&r, now);
        uint64_t wake = r.sent < r.total ? due_at(&r, r.sent) : now + 1000000000ull;
        int n = wait_until(r.ep, evs, 256, wake);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        for (int e = 0; e < n; e++) {
            uint32_t slot = evs[e].data.u32;
            if ((evs[e].events & EPOLLOUT) && r.cs[slot].wlen > 0) rate_flush(&r, slot);
            if ((evs[e].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && rate_read(&r, slot) != 0) return 3;
        }
    }
    rate_close(&r);
    return r.errors ? 1 : 0;
}
