/*
 * stats_slowlog.c - the per-worker slowlog rings and their merge (see stats_slowlog.h).
 *
 * Threads: stats_slowlog_record on the ring's worker; collect/len/reset on the stats thread;
 * init/configure/deinit on the master before the worker starts or after it stopped.
 */
#include "config.h"
#include "stats/stats_slowlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int stats_slowlog_init(struct stats_slowlog *sl)
{
    memset(sl, 0, sizeof(*sl));
    sl->threshold_usec = UINT64_MAX;
    sl->next_id = 1;
    return -pthread_mutex_init(&sl->lock, NULL);
}

void stats_slowlog_deinit(struct stats_slowlog *sl)
{
    pthread_mutex_destroy(&sl->lock);
}

void stats_slowlog_configure(struct stats_slowlog *sl, uint32_t worker, uint64_t threshold_usec)
{
    sl->worker = worker;
    sl->threshold_usec = threshold_usec;
}

void stats_slowlog_record(struct stats_slowlog *sl, const struct stats_slow_req *r, uint64_t now_wall_usec)
{
    if (pthread_mutex_trylock(&sl->lock) != 0) {
        stats_ctr_add(&sl->dropped, 1);
        return;
    }
    struct stats_slow_entry *e = &sl->ring[sl->head];
    e->id = sl->next_id++;
    e->duration_usec = r->duration_usec;
    e->start_usec = now_wall_usec > r->duration_usec ? now_wall_usec - r->duration_usec : 0;
    e->worker = sl->worker;
    e->pool = r->pool;
    e->server = r->server;
    size_t cl = r->cmd_len < STATS_SLOWLOG_CMD_MAX ? r->cmd_len : STATS_SLOWLOG_CMD_MAX;
    if (r->cmd == NULL) cl = 0;
    if (cl > 0) memcpy(e->cmd, r->cmd, cl);
    e->cmd_len = (uint8_t)cl;
    e->has_key = r->key != NULL;
    e->key_len = r->key != NULL ? (uint32_t)r->key_len : 0;
    size_t kl = e->key_len < STATS_SLOWLOG_KEY_MAX ? e->key_len : STATS_SLOWLOG_KEY_MAX;
    if (kl > 0) memcpy(e->key, r->key, kl);
    sl->head = (sl->head + 1) % STATS_SLOWLOG_CAP;
    if (sl->len < STATS_SLOWLOG_CAP) sl->len++;
    pthread_mutex_unlock(&sl->lock);
}

size_t stats_slowlog_len(struct stats_slowlog *const *logs, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&logs[i]->lock);
        total += logs[i]->len;
        pthread_mutex_unlock(&logs[i]->lock);
    }
    return total;
}

void stats_slowlog_reset(struct stats_slowlog *const *logs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&logs[i]->lock);
        logs[i]->len = 0;
        logs[i]->head = 0;
        pthread_mutex_unlock(&logs[i]->lock);
    }
}

uint64_t stats_slowlog_dropped(struct stats_slowlog *const *logs, size_t n)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += stats_ctr_get(&logs[i]->dropped);
    return total;
}

/* newest first: later start, then higher worker, then higher id */
static int stats_slow_newer_first(const void *a, const void *b)
{
    const struct stats_slow_entry *x = a, *y = b;
    if (x->start_usec != y->start_usec) return x->start_usec > y->start_usec ? -1 : 1;
    if (x->worker != y->worker) return x->worker > y->worker ? -1 : 1;
    if (x->id != y->id) return x->id > y->id ? -1 : 1;
    return 0;
}

size_t stats_slowlog_collect(struct stats_slowlog *const *logs, size_t n, struct stats_slow_entry *out,
                             size_t max)
{
    if (max == 0) return 0;
    /* gather everything (at most CAP per ring), sort, keep the newest max */
    size_t cap = n * STATS_SLOWLOG_CAP;
    struct stats_slow_entry *all = malloc((cap ? cap : 1) * sizeof(*all));
    if (all == NULL) return 0;
    size_t got = 0;
    for (size_t i = 0; i < n; i++) {
        struct stats_slowlog *sl = logs[i];
        pthread_mutex_lock(&sl->lock);
        for (uint32_t k = 0; k < sl->len; k++) {
            uint32_t slot = (sl->head + STATS_SLOWLOG_CAP - 1 - k) % STATS_SLOWLOG_CAP;
            all[got++] = sl->ring[slot];
        }
        pthread_mutex_unlock(&sl->lock);
    }
    qsort(all, got, sizeof(*all), stats_slow_newer_first);
    size_t keep = got < max ? got : max;
    memcpy(out, all, keep * sizeof(*all));
    free(all);
    return keep;
}
