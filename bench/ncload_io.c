/*
 * ncload_io.c - the load generator's clock and sockets: connects to 127.0.0.1, writes a whole
 * buffer, reads and counts a connection's complete replies, raises the descriptor limit.
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
#include <time.h>
#include <unistd.h>

#include "ncload.h"

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void die(const char *what)
{
    fprintf(stderr, "ncload: %s: %s\n", what, strerror(errno));
    exit(2);
}

/* A non-blocking socket connecting to 127.0.0.1:port (TCP_NODELAY). */
int connect_one(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) die("connect");
    return fd;
}

/* Writes len bytes to non-blocking fd, waiting 0.1 ms whenever the socket is full. */
void write_all(int fd, const char *buf, size_t len, uint64_t deadline)
{
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, buf + off, len - off);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR) die("write");
        if (now_ns() > deadline) {
            fprintf(stderr, "ncload: timed out writing\n");
            exit(3);
        }
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
}

/* Takes the complete replies at the front of c's read buffer; returns how many. */
static int take_replies(const struct opts *o, struct client *c, uint64_t *errors)
{
    int done = 0;
    size_t pos = 0;
    for (;;) {
        bool err = false;
        long r = parse_reply(o, c->rbuf + pos, c->rbuf + c->rlen, &err);
        if (r < 0) {
            fprintf(stderr, "ncload: malformed reply\n");
            exit(3);
        }
        if (r == 0) break;
        pos += (size_t)r;
        if (err) (*errors)++;
        done++;
    }
    memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
    c->rlen -= pos;
    return done;
}

/* Reads what c has; counts complete replies. Returns replies completed, -1 on EOF/error. */
int client_read(const struct opts *o, struct client *c, uint64_t *errors)
{
    int done = 0;
    for (int loop = 0; loop < 64; loop++) {
        if (c->rlen == RBUF_SIZE) {
            fprintf(stderr, "ncload: a reply larger than the read buffer\n");
            exit(3);
        }
        ssize_t n = read(c->fd, c->rbuf + c->rlen, RBUF_SIZE - c->rlen);
        if (n == 0) return -1;
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) break;
            return -1;
        }
        c->rlen += (size_t)n;
        done += take_replies(o, c, errors);
        if ((size_t)n < RBUF_SIZE) break;
    }
    return done;
}

/* conns connections to 127.0.0.1:port, each with its read buffer, polled by ep for events
 * (data.u32: the connection's index). */
struct client *clients_open(int ep, int conns, int port, uint32_t events)
{
    struct client *cs = calloc((size_t)conns, sizeof(*cs));
    if (cs == NULL) die("calloc");
    for (int i = 0; i < conns; i++) {
        cs[i].fd = connect_one(port);
        cs[i].rbuf = malloc(RBUF_SIZE);
        if (cs[i].rbuf == NULL) die("malloc");
        struct epoll_event ev = { .events = events, .data.u32 = (uint32_t)i };
        if (epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev) < 0) die("epoll_ctl");
    }
    return cs;
}

void clients_close(struct client *cs, int conns)
{
    for (int i = 0; i < conns; i++) {
        close(cs[i].fd);
        free(cs[i].rbuf);
        free(cs[i].wbuf);
    }
    free(cs);
}

void raise_nofile(rlim_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) return;
    if (rl.rlim_cur >= want) return;
    rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
}
