/*
 * ncload_hist.c - the load generator's latency histogram: log-linear buckets over nanoseconds,
 * exact below 2,048 ns, then 1,024 buckets per power of two (a quantile is off by < 0.1%), up
 * to 2^50 ns; a quantile is read as its bucket's lower bound.
 *
 * Threads: single-threaded (ncload runs one thread).
 */
#include <stdio.h>
#include <stdlib.h>

#include "ncload.h"

#define SUB_BITS 10
#define SUB (1ull << SUB_BITS)
#define TOP_BIT 50 /* values at or above 2^50 ns (13 days) land in the last bucket */
#define NBUCKETS ((TOP_BIT - SUB_BITS + 1) * SUB)

struct hist {
    uint64_t n, sum_ns, max_ns;
    uint64_t counts[NBUCKETS];
};

struct hist *hist_new(void)
{
    struct hist *h = calloc(1, sizeof(*h));
    if (h == NULL) die("calloc");
    return h;
}

void hist_free(struct hist *h)
{
    free(h);
}

static size_t bucket_of(uint64_t v)
{
    if (v >= (1ull << TOP_BIT)) return NBUCKETS - 1;
    if (v < 2 * SUB) return (size_t)v;
    unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - SUB_BITS;
    return (size_t)(shift * SUB + (v >> shift));
}

static uint64_t bucket_low(size_t i)
{
    if (i < 2 * SUB) return i;
    uint64_t shift = i / SUB - 1;
    return (i - shift * SUB) << shift;
}

void hist_record(struct hist *h, uint64_t ns)
{
    h->counts[bucket_of(ns)]++;
    h->n++;
    h->sum_ns += ns;
    if (ns > h->max_ns) h->max_ns = ns;
}

uint64_t hist_count(const struct hist *h)
{
    return h->n;
}

double hist_pct_ms(const struct hist *h, double p)
{
    uint64_t want = (uint64_t)((double)h->n * p);
    if (want >= h->n) want = h->n ? h->n - 1 : 0;
    uint64_t seen = 0;
    for (size_t i = 0; i < NBUCKETS; i++) {
        seen += h->counts[i];
        if (seen > want) return (double)bucket_low(i) / 1e6;
    }
    return 0.0;
}

double hist_avg_ms(const struct hist *h)
{
    return h->n ? (double)h->sum_ns / (double)h->n / 1e6 : 0.0;
}

double hist_max_ms(const struct hist *h)
{
    return (double)h->max_ns / 1e6;
}
