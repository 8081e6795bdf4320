/*
 * stats.h - per-worker counter blocks and the increments the core makes on the request path.
 *
 * Every worker has its own block (struct stats_worker), allocated separately and cache-line
 * aligned, and is its only writer: an increment is a relaxed atomic load + store (no lock prefix,
 * no shared cache line). The stats thread reads every worker's block with relaxed loads and sums
 * counters and gauges; timestamps take the latest.
 *
 * Latency histograms (microsecond resolution, log-linear buckets) are recorded the same way:
 * single writer, relaxed atomics.
 *
 * Threads: a block is written by its worker only, read by the stats thread.
 */
#ifndef NC_STATS_H
#define NC_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "stats/stats_desc.h"

struct runtime;

typedef _Atomic uint64_t stats_ctr;

/* Log-linear buckets: values < 16 us have their own bucket; above, 8 buckets per power of two. */
#define STATS_HIST_NBUCKETS 320

struct stats_hist {
    stats_ctr count;
    stats_ctr sum_usec;
    stats_ctr max_usec;
    stats_ctr bucket[STATS_HIST_NBUCKETS];
};

struct stats_server_block {
    stats_ctr f[STATS_SERVER_NFIELD];
    struct stats_hist server_latency;  /* written to server -> reply parsed */
};

struct stats_pool_block {
    stats_ctr f[STATS_POOL_NFIELD];
    struct stats_hist request_latency; /* request read -> reply written to the client */
    struct stats_server_block *servers; /* cp->nservers of them */
};

struct stats_worker {
    stats_ctr total_connections;       /* accepted by this worker since start */
    stats_ctr curr_connections;        /* open now (clients of this worker) */
    struct stats_pool_block *pools;    /* rt->npools of them */
    size_t npools;
};

/* Allocates a zeroed block shaped after rt's pools and servers (cache-line aligned). */
struct stats_worker *stats_worker_create(const struct runtime *rt);
void stats_worker_destroy(struct stats_worker *s);

/* single-writer increments */
static inline void stats_ctr_add(stats_ctr *c, int64_t d)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + (uint64_t)d,
                          memory_order_relaxed);
}

static inline void stats_ctr_set(stats_ctr *c, uint64_t v)
{
    atomic_store_explicit(c, v, memory_order_relaxed);
}

static inline uint64_t stats_ctr_get(const stats_ctr *c)
{
    return atomic_load_explicit((stats_ctr *)c, memory_order_relaxed);
}

/* Records one value (usec) in h. Called by the block's worker only. */
void stats_hist_record(struct stats_hist *h, uint64_t usec);

#define STATS_POOL_ADD(sw, pool, field, d) \
    stats_ctr_add(&(sw)->pools[(pool)].f[STATS_POOL_##field], (d))
#define STATS_SERVER_ADD(sw, pool, server, field, d) \
    stats_ctr_add(&(sw)->pools[(pool)].servers[(server)].f[STATS_SERVER_##field], (d))

#endif
