/*
 * stats_snapshot.h - aggregation: the worker counter blocks read (relaxed loads) and summed into a
 * plain snapshot the renderers (JSON, Prometheus) and the manage port use. Counters and gauges are
 * summed over the workers, timestamps take the latest, histograms are merged. A snapshot can also
 * hold a single worker's values (`status workers`).
 *
 * Threads: the stats thread owns its snapshots and the stats_source; the worker blocks it reads are
 * written by their workers at the same time (every read is a relaxed atomic load, so a snapshot is
 * a consistent view of each counter, not of all counters at one instant).
 */
#ifndef NC_STATS_SNAPSHOT_H
#define NC_STATS_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include <stdbool.h>

#include "conf/conf.h"
#include "stats/stats.h"
#include "topo/topology.h"

struct runtime;
struct topo_set;

/* Where the numbers come from: the runtime (names, shape) and every worker's block. */
struct stats_source {
    struct runtime *rt;                  /* the generation rendered (its owner holds a reference) */
    struct stats_worker *const *blocks;  /* one per worker, index = worker id */
    size_t nblocks;
    uint64_t start_wall_usec;            /* when the proxy started (for uptime) */
    uint32_t hotkeys_every;              /* -H: the hot keys' sampling (0: off) */
    char host[256];                      /* "source": this machine's host name */
};

struct stats_server_snap {
    uint64_t f[STATS_SERVER_NFIELD];     /* gauges may be read back as int64_t */
    struct stats_hist_sum latency[STATS_SERVER_NHIST];
};

struct stats_pool_snap {
    struct topo_set *set;                /* a pool whose servers move (Sentinel): where they are
                                          * now (a reference); NULL: the config's list */
    unsigned topo_up;                    /* then: how many of its source's services answer */
    uint64_t f[STATS_POOL_NFIELD];
    uint64_t refused[STATS_REFUSED_MAX]; /* per bucket of the pool's protocol (refused_names, other) */
    struct stats_hist_sum latency[STATS_POOL_NHIST];
    struct stats_server_snap *servers;   /* the pool's nservers */
    size_t nservers;
};

/* Whether server k of pool cp (its snapshot ps) is shown: not a Redis Cluster node place with no
 * node in it (a cluster pool has CONF_CLUSTER_MASTERS places, most of them empty). */
static inline bool stats_snap_server_shown(const struct conf_pool *cp, const struct stats_pool_snap *ps, size_t k)
{
    if (!cp->servers[k].node_place && !cp->servers[k].replica_slot) return true;
    if (!cp->redis_cluster) return true;
    return ps->set != NULL && k < ps->set->nservers && !topo_slot_empty(ps->set, k);
}

struct stats_snapshot {
    const struct stats_source *src;
    long worker;                         /* -1: all workers summed; else that worker only */
    uint64_t uptime_sec;
    uint64_t timestamp_sec;              /* wall clock of the snapshot */
    uint64_t total_connections;
    int64_t curr_connections;
    int64_t client_memory;
    uint64_t batch_waits, batch_wait_offs, batch_waits_longer, batch_waits_full, reply_holds;
    struct stats_pool_snap *pools;       /* rt->npools */
    size_t npools;
};

/* A zeroed snapshot shaped after src->rt. NULL when out of memory. */
struct stats_snapshot *stats_snapshot_create(const struct stats_source *src);
void stats_snapshot_destroy(struct stats_snapshot *s);

/* Fills s from the blocks now: all of them summed (worker < 0) or one worker's. */
void stats_snapshot_take(struct stats_snapshot *s, long worker);

/* The name of refused-command bucket b of pool p (its protocol's name, or "other"), or NULL past
 * the last bucket. */
const char *stats_snapshot_refused_name(const struct stats_snapshot *s, size_t p, size_t b);

/* The value of a field as rendered: gauges are signed (a sum of per-worker deltas). */
int64_t stats_snapshot_signed(uint64_t v);

#endif
