/*
 * stats_block.c - allocation of per-worker counter blocks and the latency histogram recorder
 * (see stats.h).
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
    free(s);
}

/* bucket of a value: exact below 16, then 8 log-linear buckets per power of two */
static unsigned stats_hist_bucket(uint64_t v)
{
    if (v < 16) return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* floor(log2 v) >= 4 */
    unsigned sub = (unsigned)(v >> (e - 3)) & 7u;
    unsigned idx = 16u + (e - 4u) * 8u + sub;
    return idx < STATS_HIST_NBUCKETS ? idx : STATS_HIST_NBUCKETS - 1;
}

void stats_hist_record(struct stats_hist *h, uint64_t usec)
{
    stats_ctr_add(&h->count, 1);
    stats_ctr_add(&h->sum_usec, (int64_t)usec);
    if (usec > stats_ctr_get(&h->max_usec)) stats_ctr_set(&h->max_usec, usec);
    stats_ctr_add(&h->bucket[stats_hist_bucket(usec)], 1);
}
