/*
 * dist.c - the distribution name table and the type-independent half of struct dist: allocation,
 * destruction and dispatch to ketama.c, modula.c and random.c; the slot table (a point per slot).
 *
 * Threads: dist_build/dist_destroy on one thread; dist_dispatch from any thread at once (a dist
 * is never written after dist_build returns).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "hash/dist.h"
#include "hash/dist_impl.h"

static const char *const dist_names[DIST_COUNT] = {
    [DIST_KETAMA] = "ketama",
    [DIST_MODULA] = "modula",
    [DIST_RANDOM] = "random",
};

int dist_type_from_name(const char *name, size_t len)
{
    for (int t = 0; t < DIST_COUNT; t++) {
        if (strlen(dist_names[t]) == len && memcmp(dist_names[t], name, len) == 0)
            return t;
    }
    return -1;
}

const char *dist_type_name(enum dist_type type)
{
    NC_ASSERT((unsigned)type < DIST_COUNT);
    return dist_names[type];
}

struct dist *dist_alloc(enum dist_type type, size_t npoints)
{
    if (npoints > UINT32_MAX || npoints > (SIZE_MAX - sizeof(struct dist)) / sizeof(struct dist_point))
        return NULL;
    struct dist *d = malloc(sizeof(*d) + npoints * sizeof(d->points[0]));
    if (d == NULL)
        return NULL;
    d->type = type;
    d->npoints = (uint32_t)npoints;
    return d;
}

uint64_t dist_live_weight(const struct dist_server *servers, size_t n, const bool *live,
                          size_t *nlive)
{
    uint64_t weight = 0;
    *nlive = 0;
    for (size_t i = 0; i < n; i++) {
        if (dist_is_live(live, i)) {
            weight += servers[i].weight;
            (*nlive)++;
        }
    }
    return weight;
}

struct dist *dist_build(enum dist_type type, const struct dist_server *servers, size_t n,
                        const bool *live)
{
    /* indexes are uint32_t and DIST_NONE is reserved */
    if (n >= DIST_NONE)
        return NULL;
    switch (type) {
    case DIST_KETAMA: return ketama_build(servers, n, live);
    case DIST_MODULA: return modula_build(servers, n, live);
    case DIST_RANDOM: return random_build(servers, n, live);
    default: break;
    }
    NC_NOT_REACHED();
    return NULL;
}

struct dist *dist_build_slots(const uint32_t *owner)
{
    struct dist *d = dist_alloc(DIST_SLOTS, DIST_NSLOTS);
    if (d == NULL) return NULL;
    for (uint32_t s = 0; s < DIST_NSLOTS; s++) d->points[s] = (struct dist_point){ .value = s, .index = owner[s] };
    return d;
}

void dist_destroy(struct dist *d)
{
    free(d);
}

enum dist_type dist_type_of(const struct dist *d)
{
    return d->type;
}

uint32_t dist_dispatch(const struct dist *d, uint32_t hash)
{
    if (d->npoints == 0)
        return DIST_NONE;
    switch (d->type) {
    case DIST_KETAMA: return ketama_dispatch(d, hash);
    case DIST_MODULA: return d->points[hash % d->npoints].index;
    case DIST_RANDOM: return random_dispatch(d);
    case DIST_SLOTS: return d->points[hash & (DIST_NSLOTS - 1)].index;
    default: break;
    }
    NC_NOT_REACHED();
    return DIST_NONE;
}
