/*
 * stats_hist.c - latency histogram math (see stats_hist.h): bucket mapping, recording, summing,
 * quantiles.
 *
 * Threads: stats_hist_record on the owning worker; the rest on the stats thread (or any thread
 * over its own stats_hist_sum).
 */
#include "config.h"
#include "stats/stats_hist.h"

const uint32_t stats_lat_bound_usec[STATS_LAT_NBOUNDS] = {
    50, 100, 200, 500,                         /* a request on loopback or in one rack */
    1000, 2000, 5000, 10000, 20000, 50000,     /* a loaded backend, a slow command */
    100000, 200000, 500000,
    1000000, 2000000, 3000000, 5000000, 10000000, /* timeouts */
};

const uint32_t stats_lat_json_bound_msec[STATS_LAT_JSON_NBOUNDS] = {
    1, 10, 20, 50, 100, 200, 500, 1000, 2000, 3000,
};

unsigned stats_hist_bucket(uint64_t v)
{
    if (v < 16) return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v); /* floor(log2 v), >= 4 */
    unsigned sub = (unsigned)(v >> (e - 3)) & 7u;    /* the 3 bits after the leading one */
    unsigned idx = 16u + (e - 4u) * 8u + sub;
    return idx < STATS_HIST_NBUCKETS ? idx : STATS_HIST_NBUCKETS - 1;
}

void stats_hist_bucket_range(unsigned idx, uint64_t *lo, uint64_t *hi)
{
    if (idx < 16) {
        *lo = *hi = idx;
        return;
    }
    unsigned e = 4u + (idx - 16u) / 8u;
    unsigned sub = (idx - 16u) % 8u;
    *lo = (uint64_t)(8u + sub) << (e - 3u);
    *hi = idx == STATS_HIST_NBUCKETS - 1 ? UINT64_MAX : *lo + ((uint64_t)1 << (e - 3u)) - 1u;
}

unsigned stats_hist_coarse(uint64_t usec)
{
    for (unsigned i = 0; i < STATS_LAT_NBOUNDS; i++) {
        if (usec <= stats_lat_bound_usec[i]) return i;
    }
    return STATS_LAT_NBOUNDS;
}

void stats_hist_record(struct stats_hist *h, uint64_t usec)
{
    stats_ctr_add(&h->sum_usec, (int64_t)usec);
    if (usec > stats_ctr_get(&h->max_usec)) stats_ctr_set(&h->max_usec, usec);
    stats_ctr_add(&h->coarse[stats_hist_coarse(usec)], 1);
    stats_ctr_add(&h->bucket[stats_hist_bucket(usec)], 1);
}

void stats_hist_sum_add(struct stats_hist_sum *sum, const struct stats_hist *h)
{
    sum->sum_usec += stats_ctr_get(&h->sum_usec);
    uint64_t max = stats_ctr_get(&h->max_usec);
    if (max > sum->max_usec) sum->max_usec = max;
    for (unsigned i = 0; i < STATS_LAT_NCOARSE; i++) {
        uint64_t n = stats_ctr_get(&h->coarse[i]);
        sum->coarse[i] += n;
        sum->count += n;
    }
    for (unsigned i = 0; i < STATS_HIST_NBUCKETS; i++) sum->bucket[i] += stats_ctr_get(&h->bucket[i]);
}

void stats_hist_sum_merge(struct stats_hist_sum *dst, const struct stats_hist_sum *src)
{
    dst->count += src->count;
    dst->sum_usec += src->sum_usec;
    if (src->max_usec > dst->max_usec) dst->max_usec = src->max_usec;
    for (unsigned i = 0; i < STATS_LAT_NCOARSE; i++) dst->coarse[i] += src->coarse[i];
    for (unsigned i = 0; i < STATS_HIST_NBUCKETS; i++) dst->bucket[i] += src->bucket[i];
}

uint64_t stats_hist_quantile(const struct stats_hist_sum *h, uint64_t num, uint64_t den)
{
    uint64_t n = 0;
    for (unsigned i = 0; i < STATS_HIST_NBUCKETS; i++) n += h->bucket[i];
    if (n == 0 || den == 0) return 0;
    /* rank = ceil(n * num / den), at least 1; n * num cannot overflow for any real count */
    uint64_t rank = (n * num + den - 1) / den;
    if (rank == 0) rank = 1;
    if (rank > n) rank = n;
    uint64_t seen = 0;
    for (unsigned i = 0; i < STATS_HIST_NBUCKETS; i++) {
        seen += h->bucket[i];
        if (seen >= rank) {
            uint64_t lo, hi;
            stats_hist_bucket_range(i, &lo, &hi);
            if (h->max_usec != 0 && hi > h->max_usec) hi = h->max_usec < lo ? lo : h->max_usec;
            return hi;
        }
    }
    return h->max_usec;
}

void stats_hist_json_buckets(const struct stats_hist_sum *h, uint64_t out[STATS_LAT_JSON_NBUCKETS])
{
    unsigned j = 0;
    for (unsigned i = 0; i < STATS_LAT_JSON_NBUCKETS; i++) out[i] = 0;
    for (unsigned k = 0; k < STATS_LAT_NCOARSE; k++) {
        /* the first meitu bound >= this coarse bound (+inf for the +inf bucket) */
        while (j < STATS_LAT_JSON_NBOUNDS &&
               (k == STATS_LAT_NBOUNDS || (uint64_t)stats_lat_json_bound_msec[j] * 1000u < stats_lat_bound_usec[k]))
            j++;
        out[j] += h->coarse[k];
    }
}
