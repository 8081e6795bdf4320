/*
 * ncload_idle.c - `ncload idle`: opens many connections that stay idle (in batches of 256; with
 * --pid, waiting until the proxy holds each batch), then obeys "burst K" (every connection
 * writes K pipelined GETs, then every reply is read) and "quit" lines on standard input.
 *
 * Threads: single-threaded (ncload runs one thread).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "ncload.h"

static long count_fds(int pid)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/fd", pid);
    DIR *d = opendir(path);
    if (d == NULL) return -1;
    long n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) n++;
    closedir(d);
    return n;
}

/* Opens o->conns connections into fds: 0, or 3 when the proxy did not take them in time. */
static int idle_open(const struct opts *o, int *fds)
{
    long base = o->pid > 0 ? count_fds(o->pid) : 0;
    uint64_t deadline = now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
    for (int i = 0; i < o->conns;) {
        int batch = o->conns - i < 256 ? o->conns - i : 256;
        for (int b = 0; b < batch; b++, i++) fds[i] = connect_one(o->port);
        if (o->pid <= 0) continue;
        while (count_fds(o->pid) < base + i) {
            if (now_ns() > deadline) {
                fprintf(stderr, "ncload: the proxy did not accept %d connections in time\n", i);
                return 3;
            }
            struct timespec ts = { 0, 2000000 };
            nanosleep(&ts, NULL);
        }
    }
    return 0;
}

/* Writes k pipelined GETs on every connection. */
static void burst_write(const struct opts *o, const int *fds, int k, const char *value, uint64_t deadline)
{
    struct opts go = *o;
    go.op = OP_GET;
    go.seq = false;
    size_t cap = (size_t)k * 128;
    char *req = malloc(cap);
    if (req == NULL) die("malloc");
    for (int i = 0; i < o->conns; i++) {
        size_t len = 0;
        for (int j = 0; j < k; j++) len += build_request(&go, req + len, cap - len, value);
        write_all(fds[i], req, len, deadline);
    }
    free(req);
}

/* Reads one ready connection of a burst: -1 when it closed, else 1 when it has all its replies. */
static int burst_ready(const struct opts *o, int ep, struct client *c, uint64_t *total, uint64_t *errors)
{
    if (c->rbuf == NULL) {
        c->rbuf = malloc(RBUF_SIZE);
        if (c->rbuf == NULL) die("malloc");
    }
    int got = client_read(o, c, errors);
    if (got < 0) return -1;
    *total += (uint64_t)got;
    c->outstanding -= got;
    if (c->outstanding > 0) return 0;
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    free(c->rbuf);
    c->rbuf = NULL;
    return 1;
}

/* Reads the k replies of every connection; prints "burst done N errors N". 0, or 3. */
static int burst_read(const struct opts *o, const int *fds, int k, uint64_t deadline)
{
    uint64_t errors = 0, total = 0;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct client *cs = calloc((size_t)o->conns, sizeof(*cs));
    if (ep < 0 || cs == NULL) die("epoll/calloc");
    for (int i = 0; i < o->conns; i++) {
        cs[i].fd = fds[i];
        cs[i].outstanding = k;
        struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev) < 0) die("epoll_ctl");
    }
    struct epoll_event evs[256];
    for (int pending = o->conns; pending > 0;) {
        if (now_ns() > deadline) {
            fprintf(stderr, "ncload: burst timed out with %d connections unanswered\n", pending);
            return 3;
        }
        int n = epoll_wait(ep, evs, 256, 1000);
        for (int e = 0; e < n; e++) {
            int r = burst_ready(o, ep, &cs[evs[e].data.u32], &total, &errors);
            if (r < 0) {
                fprintf(stderr, "ncload: connection closed during the burst\n");
                return 3;
            }
            pending -= r;
        }
    }
    close(ep);
    free(cs);
    printf("burst done %llu errors %llu\n", (unsigned long long)total, (unsigned long long)errors);
    fflush(stdout);
    return 0;
}

int run_idle(const struct opts *o)
{
    raise_nofile((rlim_t)o->conns + 64);
    int *fds = calloc((size_t)o->conns, sizeof(int));
    if (fds == NULL) die("calloc");
    if (idle_open(o, fds) != 0) return 3;
    printf("open %d\n", o->conns);
    fflush(stdout);
    char line[128];
    char *value = value_bytes(o->value_len);
    while (fgets(line, sizeof(line), stdin) != NULL) {
        if (strncmp(line, "quit", 4) == 0) break;
        int k = 0;
        if (sscanf(line, "burst %d", &k) != 1 || k <= 0 || k > 1024) {
            fprintf(stderr, "ncload: unknown command: %s", line);
            continue;
        }
        uint64_t deadline = now_ns() + (uint64_t)o->timeout_s * 1000000000ull;
        burst_write(o, fds, k, value, deadline);
        if (burst_read(o, fds, k, deadline) != 0) return 3;
    }
    free(value);
    for (int i = 0; i < o->conns; i++) close(fds[i]);
    free(fds);
    return 0;
}
