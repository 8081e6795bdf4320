/*
 * stats_block.c - allocation of per-worker counter blocks (see stats.h).
 *
 * Threads: create/destroy by the master; writes by the owning worker; reads by the stats thread.
 */
#include "config.h"
#include "stats/stats.h"

#include <stdlib.h>
#include <string.h>

#include "core/runtime.h"

#define STATS_CACHE_LINE 64

static void *stats_zalloc(size_t size)
{
    size = (size + STATS_CACHE_LINE - 1) / STATS_CACHE_LINE * STATS_CACHE_LINE;
    void *p = aligned_alloc(STATS_CACHE_LINE, size ? size : STATS_CACHE_LINE);
    if (p != NULL) memset(p, 0, size ? size : STATS_CACHE_LINE);
    return p;
}

struct stats_worker *stats_worker_create(const struct runtime *rt)
{
    struct stats_worker *s = stats_zalloc(sizeof(*s));
    if (s == NULL) return NULL;
    if (stats_slowlog_init(&s->slowlog) < 0) {
        free(s);
        return NULL;
    }
    s->npools = rt->npools;
    s->pools = stats_zalloc(sizeof(*s->pools) * rt->npools);
    if (s->pools == NULL) goto fail;
    for (size_t i = 0; i < rt->npools; i++) {
        size_t n = rt->pools[i].cp->nservers;
        s->pools[i].servers = stats_zalloc(sizeof(struct stats_server_block) * n);
        if (s->pools[i].servers == NULL) goto fail;
    }
    return s;
fail:
    stats_worker_destroy(s);
    return NULL;
}

void stats_worker_destroy(struct stats_worker *s)
{
    if (s == NULL) return;
    for (size_t i = 0; s->pools != NULL && i < s->npools; i++) free(s->pools[i].servers);
    free(s->pools);
    stats_slowlog_deinit(&s->slowlog);
    free(s);
}
