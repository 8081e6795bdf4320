/*
 * ketama.c - twemproxy 0.5.0's ketama continuum (libmemcached-compatible).
 *
 * Each live server gets floorf(pct * 160 / 4 * nlive + 1e-10) * 4 points, pct being its share of
 * the live weight, all in float arithmetic (the 1e-10 is added in double, then rounded back to
 * float). Point group p (p = 0, 1, ...) of a server is the MD5 digest of "<ketama_name>-<p>",
 * which gives four points: digest bytes [0..3], [4..7], [8..11], [12..15] read little-endian.
 * The points are sorted by value; a key goes to the first point >= its hash, wrapping to the
 * first point past the end.
 *
 * Threads: ketama_build on one thread; ketama_dispatch on any number at once.
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash/dist_impl.h"
#include "hash/hash_impl.h"
#include "hash/md5.h"

#define KETAMA_POINTS_PER_SERVER 160 /* per server when all weights are equal */
#define KETAMA_POINTS_PER_HASH 4     /* one MD5 digest gives four points */

/*
 * The number of points of a server with this weight, or -1 if it does not fit a uint32_t. Every
 * step is a separate float operation, in the order twemproxy evaluates them: the vectors depend
 * on the rounding of each.
 */
static int64_t ketama_points(uint32_t weight, uint64_t total_weight, size_t nlive)
{
    float pct = (float)weight / (float)total_weight;
    float groups = pct * (float)KETAMA_POINTS_PER_SERVER;
    groups = groups / (float)KETAMA_POINTS_PER_HASH;
    groups = groups * (float)nlive;
    float padded = (float)((double)groups + 0.0000000001);
    float whole = floorf(padded);
    if (!(whole >= 0.0f) || whole > (float)(UINT32_MAX / KETAMA_POINTS_PER_HASH))
        return -1;
    return (int64_t)whole * KETAMA_POINTS_PER_HASH;
}

/* Appends the KETAMA_POINTS_PER_HASH points of group `group` of server `index`. */
static void ketama_add_group(struct dist_point *out, const char *name, uint32_t group,
                             uint32_t index)
{
    char suffix[16];
    int n = snprintf(suffix, sizeof(suffix), "-%" PRIu32, group);
    struct md5_ctx ctx;
    uint8_t digest[MD5_DIGEST_LEN];

    md5_init(&ctx);
    md5_update(&ctx, name, strlen(name));
    md5_update(&ctx, suffix, (size_t)n);
    md5_final(&ctx, digest);
    for (unsigned i = 0; i < KETAMA_POINTS_PER_HASH; i++) {
        out[i].value = hash_load_le32(digest + 4 * i);
        out[i].index = index;
    }
}

static int ketama_point_cmp(const void *pa, const void *pb)
{
    const struct dist_point *a = pa, *b = pb;
    if (a->value != b->value)
        return a->value < b->value ? -1 : 1;
    /* equal values (a 32-bit collision): order by server so the result does not depend on qsort */
    return dist_index_cmp(a->index, b->index);
}

struct dist *ketama_build(const struct dist_server *servers, size_t n, const bool *live)
{
    size_t nlive;
    uint64_t total_weight = dist_live_weight(servers, n, live, &nlive);
    /* (a weight-0 server counts in nlive but gets no points, as in twemproxy) */
    if (total_weight == 0)
        return dist_alloc(DIST_KETAMA, 0);

    uint64_t npoints = 0;
    for (size_t i = 0; i < n; i++) {
        if (!dist_is_live(live, i))
            continue;
        int64_t pts = ketama_points(servers[i].weight, total_weight, nlive);
        if (pts < 0)
            return NULL;
        npoints += (uint64_t)pts;
        if (npoints > UINT32_MAX)
            return NULL;
    }

    struct dist *d = dist_alloc(DIST_KETAMA, (size_t)npoints);
    if (d == NULL)
        return NULL;
    struct dist_point *next = d->points;
    for (size_t i = 0; i < n; i++) {
        if (!dist_is_live(live, i))
            continue;
        uint32_t groups = (uint32_t)(ketama_points(servers[i].weight, total_weight, nlive) /
                                     KETAMA_POINTS_PER_HASH);
        for (uint32_t g = 0; g < groups; g++, next += KETAMA_POINTS_PER_HASH)
            ketama_add_group(next, servers[i].ketama_name, g, (uint32_t)i);
    }
    qsort(d->points, d->npoints, sizeof(d->points[0]), ketama_point_cmp);
    return d;
}

uint32_t ketama_dispatch(const struct dist *d, uint32_t hash)
{
    /* the first point whose value is >= hash */
    uint32_t lo = 0, hi = d->npoints;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (d->points[mid].value < hash)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == d->npoints)
        lo = 0;
    return d->points[lo].index;
}
