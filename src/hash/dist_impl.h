/*
 * dist_impl.h - private to src/hash: the layout of a struct dist and the per-distribution builders
 * and lookups that dist.c dispatches to.
 *
 * A dist is one allocation: a header and an array of points. Ketama points are (hash value,
 * server index) sorted by value; modula and random points carry only the server index, in table
 * order. No point is ever written after the builder returns.
 *
 * Threads: builders run on one thread; lookups on any number at once.
 */
#ifndef NC_DIST_IMPL_H
#define NC_DIST_IMPL_H

#include "hash/dist.h"

struct dist_point {
    uint32_t value; /* ketama: continuum position; unused by modula and random */
    uint32_t index; /* into the servers array given to dist_build */
};

struct dist {
    enum dist_type type;
    uint32_t npoints; /* 0 when no server is live */
    struct dist_point points[];
};

/* A dist with room for npoints points (npoints set, points unset), or NULL. */
struct dist *dist_alloc(enum dist_type type, size_t npoints);

struct dist *ketama_build(const struct dist_server *servers, size_t n, const bool *live);
uint32_t ketama_dispatch(const struct dist *d, uint32_t hash);

struct dist *modula_build(const struct dist_server *servers, size_t n, const bool *live);

struct dist *random_build(const struct dist_server *servers, size_t n, const bool *live);
uint32_t random_dispatch(const struct dist *d);

static inline bool dist_is_live(const bool *live, size_t i)
{
    return live == NULL || live[i];
}

/* The summed weight of the live servers; their count in *nlive. */
uint64_t dist_live_weight(const struct dist_server *servers, size_t n, const bool *live,
                          size_t *nlive);

/* Three-way comparison of server indexes: the tie-break that keeps sorted tables deterministic. */
static inline int dist_index_cmp(uint32_t a, uint32_t b)
{
    return a < b ? -1 : a > b;
}

#endif
