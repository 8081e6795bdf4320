/*
 * stats_snapshot.c - summing the worker blocks into a snapshot (see stats_snapshot.h).
 *
 * Threads: the stats thread (or a unit test); reads worker blocks with relaxed atomic loads.
 */
#include "config.h"
#include "manage/stats_snapshot.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "core/runtime.h"
#include "topo/topology.h"

struct stats_snapshot *stats_snapshot_create(const struct stats_source *src)
{
    const struct runtime *rt = src->rt;
    struct stats_snapshot *s = calloc(1, sizeof(*s));
    if (s == NULL) return NULL;
    s->src = src;
    s->worker = -1;
    s->npools = rt->npools;
    s->pools = calloc(rt->npools ? rt->npools : 1, sizeof(*s->pools));
    if (s->pools == NULL) goto fail;
    for (size_t i = 0; i < rt->npools; i++) {
        size_t n = rt->pools[i].cp->nservers;
        s->pools[i].nservers = n;
        s->pools[i].servers = calloc(n ? n : 1, sizeof(*s->pools[i].servers));
        if (s->pools[i].servers == NULL) goto fail;
    }
    return s;
fail:
    stats_snapshot_destroy(s);
    return NULL;
}

void stats_snapshot_destroy(struct stats_snapshot *s)
{
    if (s == NULL) return;
    for (size_t i = 0; s->pools != NULL && i < s->npools; i++) {
        free(s->pools[i].servers);
        topo_set_put(s->pools[i].set);
    }
    free(s->pools);
    free(s);
}

const char *stats_snapshot_refused_name(const struct stats_snapshot *s, size_t p, size_t b)
{
    const struct proto_ops *proto = s->src->rt->pools[p].proto;
    size_t other = stats_refused_other(proto->nrefused);
    if (b < other) return proto->refused_names[b];
    return b == other ? STATS_REFUSED_OTHER : NULL;
}

int64_t stats_snapshot_signed(uint64_t v)
{
    return v <= (uint64_t)INT64_MAX ? (int64_t)v : -(int64_t)(UINT64_MAX - v) - 1;
}

/* Adds one block's field into the snapshot's: counters and gauges add up, timestamps keep the
 * latest. server_ejected_at comes from here too for now; once server liveness is shared per
 * pool, this is the one place to read it from the runtime instead. */
static void stats_fold(uint64_t *dst, const stats_ctr *src, const struct stats_field_desc *desc, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t v = stats_ctr_get(&src[i]);
        if (desc[i].type == STATS_TIMESTAMP) {
            if (v > dst[i]) dst[i] = v;
        } else {
            dst[i] += v;
        }
    }
}

/* Adds worker i's blocks (reached through the runtime, by name) into the snapshot. */
static void stats_snapshot_add_block(struct stats_snapshot *s, size_t i)
{
    const struct stats_source *src = s->src;
    const struct stats_worker *b = src->blocks[i];
    const struct runtime *rt = src->rt;
    s->total_connections += stats_ctr_get(&b->total_connections);
    s->curr_connections += stats_snapshot_signed(stats_ctr_get(&b->curr_connections));
    s->client_memory += stats_snapshot_signed(stats_ctr_get(&b->client_memory));
    s->batch_waits += stats_ctr_get(&b->batch_waits);
    s->batch_wait_offs += stats_ctr_get(&b->batch_wait_offs);
    s->batch_waits_longer += stats_ctr_get(&b->batch_waits_longer);
    s->batch_waits_full += stats_ctr_get(&b->batch_waits_full);
    s->reply_holds += stats_ctr_get(&b->reply_holds);
    if (i >= rt->nworkers) return;
    for (size_t p = 0; p < s->npools && p < rt->npools; p++) {
        struct stats_pool_snap *ps = &s->pools[p];
        const struct pool_shared *sh = &rt->pools[p];
        const struct stats_pool_block *pb = sh->wstats[i];
        if (pb == NULL) continue;
        stats_fold(ps->f, pb->f, stats_pool_desc, STATS_POOL_NFIELD);
        for (size_t r = 0; r < STATS_REFUSED_MAX; r++) ps->refused[r] += stats_ctr_get(&pb->refused[r]);
        stats_hist_sum_add(&ps->latency[STATS_POOL_HIST_request_latency], &pb->request_latency);
        for (size_t k = 0; k < ps->nservers; k++) {
            struct stats_server_snap *ss = &ps->servers[k];
            const struct stats_server_block *sb = sh->wservers[i * sh->cp->nservers + k];
            stats_fold(ss->f, sb->f, stats_server_desc, STATS_SERVER_NFIELD);
            stats_hist_sum_add(&ss->latency[STATS_SERVER_HIST_server_latency], &sb->server_latency);
        }
    }
}

/* Where the servers of a pool whose source moves them are now, and how many of the source's
 * services answer. */
static void stats_snapshot_topology(struct stats_pool_snap *ps, struct pool_shared *p)
{
    topo_set_put(ps->set);
    ps->set = NULL;
    if (p->source_ops->start == NULL) return;
    pthread_mutex_lock(&p->lock);
    ps->set = topo_set_ref(p->set);
    pthread_mutex_unlock(&p->lock);
    ps->topo_up = atomic_load(&p->topo_up);
}

void stats_snapshot_take(struct stats_snapshot *s, long worker)
{
    const struct stats_source *src = s->src;
    s->worker = worker;
    s->total_connections = 0;
    s->curr_connections = 0;
    s->client_memory = 0;
    s->batch_waits = s->batch_wait_offs = s->batch_waits_longer = s->batch_waits_full = s->reply_holds = 0;
    for (size_t p = 0; p < s->npools; p++) {
        struct stats_pool_snap *ps = &s->pools[p];
        memset(ps->f, 0, sizeof(ps->f));
        memset(ps->refused, 0, sizeof(ps->refused));
        memset(ps->latency, 0, sizeof(ps->latency));
        memset(ps->servers, 0, ps->nservers * sizeof(*ps->servers));
        stats_snapshot_topology(ps, &src->rt->pools[p]);
    }
    for (size_t i = 0; i < src->nblocks; i++) {
        if (worker >= 0 && (size_t)worker != i) continue;
        if (src->blocks[i] != NULL) stats_snapshot_add_block(s, i);
    }
    uint64_t now = nc_usec_wall();
    s->timestamp_sec = now / 1000000u;
    s->uptime_sec = now > src->start_wall_usec ? (now - src->start_wall_usec) / 1000000u : 0;
}
