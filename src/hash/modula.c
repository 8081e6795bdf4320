/*
 * modula.c - twemproxy 0.5.0's modula distribution.
 *
 * twemproxy keeps a pool's servers sorted by name (shorter names first, equal lengths bytewise;
 * an unnamed server's name is "host:port:weight") and builds a table in which each live server
 * appears `weight` times, in that order. A key goes to table[hash % table length]. The table
 * stores indexes into the caller's (config-ordered) array.
 *
 * Threads: modula_build on one thread; lookups (in dist.c) on any number at once.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "hash/dist_impl.h"

struct modula_entry {
    const char *name;
    size_t name_len;
    uint32_t index;
};

static int modula_entry_cmp(const void *pa, const void *pb)
{
    const struct modula_entry *a = pa, *b = pb;
    if (a->name_len != b->name_len)
        return a->name_len < b->name_len ? -1 : 1;
    int c = memcmp(a->name, b->name, a->name_len);
    if (c != 0)
        return c;
    /* equal names (config validation should prevent them): keep config order */
    return dist_index_cmp(a->index, b->index);
}

struct dist *modula_build(const struct dist_server *servers, size_t n, const bool *live)
{
    size_t nlive;
    uint64_t slots = dist_live_weight(servers, n, live, &nlive);
    if (slots > UINT32_MAX)
        return NULL;
    if (slots == 0)
        return dist_alloc(DIST_MODULA, 0);

    struct modula_entry *order = calloc(nlive, sizeof(*order));
    if (order == NULL)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (dist_is_live(live, i)) {
            order[k].name = servers[i].sort_name;
            order[k].name_len = strlen(servers[i].sort_name);
            order[k].index = (uint32_t)i;
            k++;
        }
    }
    qsort(order, nlive, sizeof(*order), modula_entry_cmp);

    struct dist *d = dist_alloc(DIST_MODULA, (size_t)slots);
    if (d != NULL) {
        struct dist_point *next = d->points;
        for (k = 0; k < nlive; k++) {
            for (uint32_t w = 0; w < servers[order[k].index].weight; w++, next++) {
                next->value = 0;
                next->index = order[k].index;
            }
        }
    }
    free(order);
    return d;
}
