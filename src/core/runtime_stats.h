/*
 * runtime_stats.h - binding a config generation's runtime to the workers' counter blocks: for
 * each worker, every pool and server of the runtime points at its block, found by name in that
 * worker's registry (stats/stats.h), so a pool or server that stays across a reload keeps its
 * counters. Core depends on stats/ here, never the reverse.
 *
 * Threads: the master (or a unit test), before the runtime is handed to the workers and the stats
 * thread (the hand-off through their inboxes orders these writes before any read).
 */
#ifndef NC_RUNTIME_STATS_H
#define NC_RUNTIME_STATS_H

#include <stddef.h>

struct runtime;
struct stats_worker;

/* Points rt's pools and servers (pool_shared wstats/wservers) at their blocks in each of the n
 * workers' registries, adding the names not seen yet. Returns 0, -EINVAL (n > rt->nworkers) or
 * -ENOMEM. */
int stats_bind(struct runtime *rt, struct stats_worker *const *workers, size_t n);

#endif
