/*
 * core_harness_int.h - the inside of core_harness (core_harness.h), shared by its two files:
 * core_harness.c (the loop, the fake servers, the clients) and core_harness_wait.c (the waits, the
 * settling, the failure messages).
 *
 * Threads: the test's only.
 */
#ifndef NC_TEST_CORE_HARNESS_INT_H
#define NC_TEST_CORE_HARNESS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core_harness.h"
#include "core/loop.h"

#define CH_RESP_SLOTS 16
#define CH_RESP_MAX 2048
#define CH_TICK_MS 10      /* the longest a wait sleeps before it looks at its condition again */

/* One connection as the test sees it: a client's end, or a fake server's accepted connection. */
struct ch_peer {
    struct harness *h;
    int fd;                /* the test's end; -1 once the test closed it */
    int proxy_fd;          /* servers: the proxy's end, as last found (-1: unknown) */
    uint16_t srv_port;     /* servers: the listening port, network order */
    struct event *ev;
    char *buf;             /* every byte received */
    size_t len, cap, off;  /* off: the bytes the test has read */
    bool eof;              /* the proxy closed it (or reset it) */
    char name[32];
};

struct ch_server {
    struct harness *h;
    int lfd;
    uint16_t port;         /* host order */
    struct event *lev;
    struct ch_peer conns[CH_CONNS_MAX];
    size_t nconns;
    bool overflow;         /* more connections than CH_CONNS_MAX */
};

struct harness {
    struct event_base *base;
    struct event *tick;
    struct runtime *rt;    /* the test's reference: routing */
    const struct transport_ctx *cfg_tp[2]; /* the pool's own contexts (clients, servers), given
                                            * back to the runtime before it is freed */
    struct stats_worker *stats;
    struct loop loop;
    bool loop_ok;
    struct ch_server srv[CH_SERVERS_MAX];
    size_t nservers;
    struct ch_peer cli[CH_CLIENTS_MAX];
    size_t nclients;
    char resp[CH_RESP_SLOTS][CH_RESP_MAX];
    unsigned resp_next;
};

/* Monotonic milliseconds. */
uint64_t ch_ms(void);
/* A test's end p writes bytes, all of them (the loop runs while the socket is full). */
void ch_peer_write(struct harness *h, struct ch_peer *p, const char *bytes);
/* What every connection holds (for a failure's message). */
void ch_dump(const struct harness *h);

/* Waits for n bytes of p, checks them against bytes (when not NULL), consumes them. */
void ch_peer_expect(struct harness *h, struct ch_peer *p, const char *bytes, size_t n);
/* Waits until the proxy has closed p. */
void ch_peer_wait_eof(struct harness *h, struct ch_peer *p);
/* Connection k of server s (fails the test when there is none). */
struct ch_peer *ch_srv_conn(struct harness *h, size_t s, size_t k);

#endif
