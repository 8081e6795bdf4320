/*
 * client_mem.h - the memory the client connections make the proxy hold, and the proxy-wide cap on
 * it (-M, --max-memory). The design and its reasons: notes/client-memory.md.
 *
 * What a client holds: its queued requests and their replies, the read buffers they keep alive,
 * the msgs and keys, a subscriber's names (client.c's held bytes), the request it is still
 * sending, and the replies of a multi-key or fan-out request's fragments until they are merged.
 * Each loop keeps the sum of its clients' (one add per change) and publishes it in its counter
 * block once it moved by CLIENT_MEM_STEP; the sum over the workers is those gauges added up (a
 * relaxed load each), read only when a worker publishes or ticks: no lock, no shared write on the
 * request path.
 *
 * Past the cap, each worker stops reading from its clients that hold the most (CLIENT_MEM_BIG or
 * more) at once, and from any other as soon as it holds that much; if at its next tick the proxy
 * is still over, it closes its biggest clients first (as redis's maxmemory-clients) until it has
 * given back the excess, at once if it grew past the cap by an eighth meanwhile (replies to
 * requests read before the pause); under nine tenths of the cap the paused clients are read
 * again. A paused client that closes its side is read again (it can send no more than its socket
 * holds; reading shows that it left). Clients that hold little are not touched.
 *
 * Threads: struct client_mem is the master's, immutable once the workers start (the gauges it
 * points at are each written by one worker, read by all); the loop's fields belong to its thread.
 */
#ifndef NC_CLIENT_MEM_H
#define NC_CLIENT_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/conn.h"
#include "core/loop.h"

struct stats_worker;

/* A loop republishes its sum when it moved this much (the error of the proxy-wide sum is at most
 * this per worker). */
#define CLIENT_MEM_STEP (64 * 1024)
/* A client holding at least this much is one of "the clients that hold the most": paused, then
 * closed past the cap. */
#define CLIENT_MEM_BIG (64 * 1024)
/* Past the cap by cap / CLIENT_MEM_FAR although its biggest clients are paused, a worker closes
 * them at once rather than at its tick, and looks again each time the sum grew by
 * CLIENT_MEM_FAR_STEP more. */
#define CLIENT_MEM_FAR 8
#define CLIENT_MEM_FAR_STEP (1024 * 1024)

/* The cap and where every worker's sum is (set by the thread layer before the workers start). */
struct client_mem {
    uint64_t cap;                        /* bytes; 0: no cap (the sums are still published) */
    uint32_t nworkers;
    struct stats_worker *const *blocks;  /* each worker's counter block (client_memory) */
};

/* Publishes l's sum; past the cap, starts the loop's enforcement (far past it, closes at once). */
void client_mem_publish(struct loop *l);

/* l's sum changed: published once it moved by CLIENT_MEM_STEP. */
static inline void client_mem_moved(struct loop *l)
{
    int64_t moved = l->mem_held - l->mem_published;
    if (moved >= CLIENT_MEM_STEP || moved <= -CLIENT_MEM_STEP) client_mem_publish(l);
}

/* c's held bytes (its queued requests and replies, client.c) change by delta. */
static inline void client_mem_add(struct conn *c, int64_t delta)
{
    c->held_bytes = (uint64_t)((int64_t)c->held_bytes + delta);
    c->loop->mem_held += delta;
    client_mem_moved(c->loop);
}

/* c's request still being read holds now bytes (0: none). */
void client_mem_partial(struct conn *c, uint64_t now);

/* c closes: all it held, its unfinished request included, is given back at once. */
void client_mem_gone(struct conn *c);

/* Stops reading from c, one of the clients that hold the most, while the proxy is over the cap. */
void client_mem_pause_big(struct conn *c);

/* c was read: while the proxy is over the cap, it is no longer read once it holds CLIENT_MEM_BIG
 * (those that held that much when the cap was passed were paused then). */
static inline void client_mem_read(struct conn *c)
{
    if (c->loop->mem_over && !c->mem_paused && c->held_bytes + c->held_partial >= CLIENT_MEM_BIG)
        client_mem_pause_big(c);
}

/* c, not read for the cap, closed its side (or reset): it can send no more than its socket holds,
 * and only reading it shows whether it is gone or what it still asks; it is read again. */
void client_mem_hangup(struct conn *c);

/* Sets up l's side (m: the process's, NULL: none). Returns 0 or -ENOMEM. */
int client_mem_loop_init(struct loop *l, const struct client_mem *m);
void client_mem_loop_deinit(struct loop *l);
/* Once a second (the loop's trim): a worker that publishes nothing still sees the proxy over. */
void client_mem_check(struct loop *l);

/* The sum over the workers (relaxed loads). */
uint64_t client_mem_total(const struct client_mem *m);

#endif
