/*
 * runtime_stats.c - a runtime's pools and servers bound to the workers' counter blocks (see
 * runtime_stats.h).
 *
 * Threads: the master, before the runtime is published.
 */
#include "config.h"
#include "core/runtime_stats.h"

#include <errno.h>

#include "core/runtime.h"
#include "stats/stats.h"

int stats_bind(struct runtime *rt, struct stats_worker *const *workers, size_t n)
{
    if (n > rt->nworkers) return -EINVAL;
    for (size_t p = 0; p < rt->npools; p++) {
        struct pool_shared *ps = &rt->pools[p];
        size_t ns = ps->cp->nservers;
        for (size_t w = 0; w < n; w++) {
            struct stats_pool_block *pb = stats_pool_lookup(workers[w], ps->cp->name);
            if (pb == NULL) return -ENOMEM;
            ps->wstats[w] = pb;
            for (size_t k = 0; k < ns; k++) {
                struct stats_server_block *sb = stats_server_lookup(pb, ps->cp->servers[k].stats_name);
                if (sb == NULL) return -ENOMEM;
                ps->wservers[w * ns + k] = sb;
            }
        }
    }
    return 0;
}
