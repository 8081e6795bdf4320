/*
 * ncload_load.c - `ncload load`, the closed loop: every connection sends a batch of P requests,
 * waits for the P replies, sends the next batch, until n requests have been answered (or
 * --seconds is up); the latency of a request runs from the write of its batch to the read of
 * its reply.
 *
 * Threads: single-threaded (ncload runs one thread).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ncload.h"

/* The state of one closed-loop run. */
struct load {
    const struct opts *o;
    struct client *cs;
    int ep;
    char *req, *value;
    size_t req_cap;
    uint64_t sent, answered, errors, limit, deadline;
    struct hist *lat;
};

/* Writes c's next batch (up to P requests, no more than the limit). */
static void send_batch(struct load *l, struct client *c)
{
    size_t len = 0;
    int k = 0;
    for (; k < l->o->pipeline && l->sent < l->limit; k++, l->sent++)
        len += build_request(l->o, l->req + len, l->req_cap - len, l->value);
    c->outstanding = k;
    c->batch_t0 = now_ns();
    write_all(c->fd, l->req, len, l->deadline);
}

static void load_open(struct load *l, const struct opts *o)
{
    raise_nofile((rlim_t)o->conns + 64);
    l->o = o;
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    if (l->ep < 0) die("epoll_create1");
    l->cs = clients_open(l->ep, o->conns, o->port, EPOLLIN);
    l->req_cap = (size_t)o->pipeline * (o->value_len + 128);
    l->req = malloc(l->req_cap);
    l->value = value_bytes(o->value_len);
    l->lat = hist_new();
    if (l->req == NULL) die("malloc");
}

static void load_close(struct load *l)
{
    clients_close(l->cs, l->o->conns);
    free(l->req);
    free(l->value);
    hist_free(l->lat);
    close(l->ep);
}

/* Reads the replies of one ready connection and sends its next batch once its batch is answered:
 * 0, or 3 when the server closed it. */
static int load_ready(struct load *l, struct client *c, uint64_t now)
{
    int got = client_read(l->o, c, &l->errors);
    if (got < 0) {
        fprintf(stderr, "ncload: connection closed by the server\n");
        return 3;
    }
    for (int g = 0; g < got; g++) hist_record(l->lat, now - c->batch_t0);
    l->answered += (uint64_t)got;
    c->outstanding -= got;
    if (c->outstanding <= 0 && l->sent < l->limit) send_batch(l, c);
    return 0;
}

static void load_report(const struct load *l, uint64_t t0)
{
    double el = (double)(now_ns() - t0) / 1e9;
    printf("requests=%llu errors=%llu elapsed_s=%.3f rps=%.1f avg_ms=%.3f p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f "
           "max_ms=%.3f\n",
           (unsigned long long)l->answered, (unsigned long long)l->errors, el, (double)l->answered / el,
           hist_avg_ms(l->lat), hist_pct_ms(l->lat, 0.50), hist_pct_ms(l->lat, 0.99), hist_pct_ms(l->lat, 0.999),
           hist_max_ms(l->lat));
}

int run_load(const struct opts *o)
{
    struct load l = { .limit = o->requests };
    load_open(&l, o);
    uint64_t t0 = now_ns();
    l.deadline = t0 + (uint64_t)o->timeout_s * 1000000000ull;
    /* first batches; a write to a connecting socket waits (briefly) in write_all */
    for (int i = 0; i < o->conns && l.sent < l.limit; i++) send_batch(&l, &l.cs[i]);
    struct epoll_event evs[256];
    int rc = 0;
    while (rc == 0 && l.answered < l.limit) {
        if (now_ns() > l.deadline) {
            fprintf(stderr, "ncload: timed out after %llu of %llu replies\n", (unsigned long long)l.answered,
                    (unsigned long long)l.limit);
            return 3;
        }
        int n = epoll_wait(l.ep, evs, 256, 1000);
        if (n < 0 && errno != EINTR) die("epoll_wait");
        uint64_t now = now_ns();
        if (o->seconds > 0 && now > t0 + (uint64_t)o->seconds * 1000000000ull)
            l.limit = l.sent; /* the time is up: the replies outstanding, then stop */
        for (int e = 0; e < n && rc == 0; e++) rc = load_ready(&l, &l.cs[evs[e].data.u32], now);
    }
    if (rc != 0) return rc;
    load_report(&l, t0);
    load_close(&l);
    return l.errors ? 1 : 0;
}
