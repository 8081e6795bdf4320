/*
 * stats_hist.h - latency histograms: microsecond resolution, log-linear buckets (exact below 16 us,
 * then 8 buckets per power of two, so any value is known to within 12.5%), plus coarse buckets
 * counted exactly: a 1-2-5 ladder from 50 us to 10 s (and +inf) that holds every bound of meitu
 * twemproxy's millisecond buckets (1, 10, 20, 50, 100, 200, 500, 1000, 2000, 3000 ms, +inf).
 * Percentiles come from the fine buckets; the Prometheus buckets are the coarse ones, the JSON's
 * are meitu's, each the sum of the coarse buckets it covers.
 *
 * Threads: a struct stats_hist lives in a worker's counter block: that worker records into it
 * (single writer, relaxed atomics), the stats thread reads it into a struct stats_hist_sum (plain
 * memory, the stats thread's own).
 */
#ifndef NC_STATS_HIST_H
#define NC_STATS_HIST_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef _Atomic uint64_t stats_ctr;

#define STATS_HIST_NBUCKETS 320  /* fine buckets: 16 exact + 8 per power of two up to 2^42 us */
#define STATS_LAT_NBOUNDS 18     /* coarse upper bounds; the coarse array has one more: +inf */
#define STATS_LAT_NCOARSE (STATS_LAT_NBOUNDS + 1)
#define STATS_LAT_JSON_NBOUNDS 10 /* meitu's bounds; the JSON's buckets have one more: +inf */
#define STATS_LAT_JSON_NBUCKETS (STATS_LAT_JSON_NBOUNDS + 1)

/* Upper bounds (inclusive) of the coarse buckets, in microseconds: 50, 100, 200, 500, 1000, ...
 * 10000000. */
extern const uint32_t stats_lat_bound_usec[STATS_LAT_NBOUNDS];
/* meitu's bounds, in milliseconds: 1, 10, 20, ... 3000 (each one is a coarse bound too). */
extern const uint32_t stats_lat_json_bound_msec[STATS_LAT_JSON_NBOUNDS];

struct stats_hist {
    stats_ctr sum_usec;
    stats_ctr max_usec;
    stats_ctr coarse[STATS_LAT_NCOARSE];
    stats_ctr bucket[STATS_HIST_NBUCKETS];
};

/* A histogram read out of (or summed over) worker blocks. count is the sum of the coarse buckets. */
struct stats_hist_sum {
    uint64_t count;
    uint64_t sum_usec;
    uint64_t max_usec;
    uint64_t coarse[STATS_LAT_NCOARSE];
    uint64_t bucket[STATS_HIST_NBUCKETS];
};

/* single-writer counter updates: a relaxed load and store, no lock prefix */
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

/* Records one value (usec) in h. Called by the owning worker only. */
void stats_hist_record(struct stats_hist *h, uint64_t usec);

/* Fine bucket of a value, and the values [*lo, *hi] a fine bucket holds. */
unsigned stats_hist_bucket(uint64_t usec);
void stats_hist_bucket_range(unsigned idx, uint64_t *lo, uint64_t *hi);
/* Coarse bucket of a value: the first bound >= the value, STATS_LAT_NBOUNDS for +inf. */
unsigned stats_hist_coarse(uint64_t usec);

/* Adds h (read with relaxed loads) into sum. */
void stats_hist_sum_add(struct stats_hist_sum *sum, const struct stats_hist *h);
/* Adds a summed histogram into another. */
void stats_hist_sum_merge(struct stats_hist_sum *dst, const struct stats_hist_sum *src);

/*
 * The value at quantile num/den (e.g. 99/100): the upper end of the fine bucket holding the
 * ceil(n*num/den)-th smallest value, never above the maximum recorded. 0 when empty.
 */
uint64_t stats_hist_quantile(const struct stats_hist_sum *h, uint64_t num, uint64_t den);

/* meitu's buckets of h (per bucket, not cumulative): the coarse counts folded into
 * stats_lat_json_bound_msec's buckets, out[STATS_LAT_JSON_NBOUNDS] being +inf. */
void stats_hist_json_buckets(const struct stats_hist_sum *h, uint64_t out[STATS_LAT_JSON_NBUCKETS]);

#endif
