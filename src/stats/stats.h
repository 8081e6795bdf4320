/*
 * stats.h - per-worker counter blocks and the increments the core makes on the request path.
 *
 * Every worker has its own block (struct stats_worker), allocated separately and cache-line
 * aligned, and is its only writer: an increment is a relaxed atomic load + store (no lock prefix,
 * no shared cache line). The stats thread reads every worker's block with relaxed loads and sums
 * counters and gauges; timestamps take the latest.
 *
 * Latency histograms (stats_hist.h) are recorded the same way: single writer, relaxed atomics.
 * Each block also holds its worker's slowlog ring (stats_slowlog.h), and each pool block its
 * worker's hot key sampler for the pool (stats_hotkeys.h).
 *
 * Blocks are found by name: each worker has a registry (a list of pool blocks, each with a list of
 * server blocks) that only grows. stats_bind() (core/runtime_stats.h) looks up or adds the blocks
 * of a new config generation's pools and servers and stores the pointers in the runtime, so a pool
 * or server that stays across a reload keeps its counters and gauges; the blocks of removed names
 * stay allocated (hidden: no runtime points to them) until the process exits.
 *
 * This module knows nothing above it: core writes the counters, manage/ reads and renders them.
 *
 * Threads: a block is written by its worker only, read by the stats thread. The registry lists and
 * names are written by the master only, before the runtime that points to them is handed to the
 * workers and the stats thread through their inboxes (which orders the writes before any read).
 */
#ifndef NC_STATS_H
#define NC_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "stats/stats_desc.h"
#include "stats/stats_hist.h"
#include "stats/stats_hotkeys.h"
#include "stats/stats_slowlog.h"

struct stats_server_block {
    stats_ctr f[STATS_SERVER_NFIELD];
    struct stats_hist server_latency;  /* written to server -> reply parsed */
    struct stats_server_block *next;   /* registry: the pool's next server block */
    char *name;                        /* registry: the server's stats name */
};

/* Buckets of refused commands a pool block holds: more than any protocol's names + "other". */
#define STATS_REFUSED_MAX 128

/* The "other" bucket of a protocol with nrefused names (names past the blocks' room count there). */
static inline size_t stats_refused_other(size_t nrefused)
{
    return nrefused < STATS_REFUSED_MAX - 1 ? nrefused : STATS_REFUSED_MAX - 1;
}

struct stats_pool_block {
    stats_ctr f[STATS_POOL_NFIELD];
    stats_ctr refused[STATS_REFUSED_MAX]; /* per name of proto_ops.refused_names, then "other" */
    struct stats_hist request_latency; /* request read -> reply written to the client */
    struct stats_pool_block *next;     /* registry: the worker's next pool block */
    char *name;                        /* registry: the pool's name */
    struct stats_server_block *servers; /* registry: every server name seen in this pool */
    /* its worker's hot key sampler (stats_hotkeys.h), made by the worker at its first sample and
     * stored with release; NULL: none yet */
    _Atomic(struct stats_hotkeys *) hot;
};

struct stats_worker {
    stats_ctr total_connections;       /* accepted by this worker since start */
    stats_ctr curr_connections;        /* open now (clients of this worker) */
    stats_ctr client_memory;           /* bytes its clients make it hold (core/client_mem.h): the
                                        * other workers read it too, for -M */
    struct stats_pool_block *pools;    /* registry: every pool name seen */
    /* the batch wait (core/batch_wait.h), written per pass: off line 0, which -M reads */
    _Alignas(64) stats_ctr batch_waits;
    stats_ctr batch_wait_offs;
    stats_ctr batch_waits_longer;
    stats_ctr batch_waits_full;
    stats_ctr reply_holds;             /* core/client_hold.c: per hold begun */
    _Alignas(64) struct stats_slowlog slowlog; /* this worker's slow requests (own cache lines) */
};

/* Allocates an empty, zeroed per-worker block (cache-line aligned). */
struct stats_worker *stats_worker_create(void);
void stats_worker_destroy(struct stats_worker *s);

/* Master (registry): the block of pool `name` in w's registry, added (zeroed) if that name was not
 * seen yet; NULL when out of memory. */
struct stats_pool_block *stats_pool_lookup(struct stats_worker *w, const char *name);
/* Worker: pb's hot key sampler, made at the first call (sampling one request in every); NULL
 * when out of memory. */
struct stats_hotkeys *stats_pool_hotkeys(struct stats_pool_block *pb, uint32_t every, uint32_t seed);
/* Stats thread: pb's sampler, NULL when its worker has not sampled it yet. */
static inline struct stats_hotkeys *stats_pool_hotkeys_get(struct stats_pool_block *pb)
{
    return atomic_load_explicit(&pb->hot, memory_order_acquire);
}

/* Master (registry): the block of server `name` in pool block pb, added likewise; NULL: no memory. */
struct stats_server_block *stats_server_lookup(struct stats_pool_block *pb, const char *name);

#define STATS_POOL_ADD(pb, field, d) stats_ctr_add(&(pb)->f[STATS_POOL_##field], (d))
#define STATS_SERVER_ADD(sb, field, d) stats_ctr_add(&(sb)->f[STATS_SERVER_##field], (d))

#endif
