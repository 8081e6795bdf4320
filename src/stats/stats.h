/*
 * stats.h - per-worker counter blocks and the increments the core makes on the request path.
 *
 * Every worker has its own block (struct stats_worker), allocated separately and cache-line
 * aligned, and is its only writer: an increment is a relaxed atomic load + store (no lock prefix,
 * no shared cache line). The stats thread reads every worker's block with relaxed loads and sums
 * counters and gauges; timestamps take the latest.
 *
 * Latency histograms (stats_hist.h) are recorded the same way: single writer, relaxed atomics.
 * Each block also holds its worker's slowlog ring (stats_slowlog.h).
 *
 * Threads: a block is written by its worker only, read by the stats thread.
 */
#ifndef NC_STATS_H
#define NC_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "stats/stats_desc.h"
#include "stats/stats_hist.h"
#include "stats/stats_slowlog.h"

struct runtime;

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
    _Alignas(64) struct stats_slowlog slowlog; /* this worker's slow requests (own cache lines) */
};

/* Allocates a zeroed block shaped after rt's pools and servers (cache-line aligned). */
struct stats_worker *stats_worker_create(const struct runtime *rt);
void stats_worker_destroy(struct stats_worker *s);

#define STATS_POOL_ADD(sw, pool, field, d) \
    stats_ctr_add(&(sw)->pools[(pool)].f[STATS_POOL_##field], (d))
#define STATS_SERVER_ADD(sw, pool, server, field, d) \
    stats_ctr_add(&(sw)->pools[(pool)].servers[(server)].f[STATS_SERVER_##field], (d))

#endif
