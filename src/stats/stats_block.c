/*
 * stats_block.c - per-worker counter blocks and their name-keyed registry (see stats.h).
 *
 * Threads: create/destroy and the registry lookups by the master; counters are written by the owning worker
 * and read by the stats thread.
 */
#include "config.h"
#include "stats/stats.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

/* one worker's blocks never share a line (or an adjacent pair) with another's */
#define STATS_BLOCK_ALIGN NC_SHARING_SPAN

static void *stats_zalloc(size_t size)
{
    size = (size + STATS_BLOCK_ALIGN - 1) / STATS_BLOCK_ALIGN * STATS_BLOCK_ALIGN;
    void *p = aligned_alloc(STATS_BLOCK_ALIGN, size ? size : STATS_BLOCK_ALIGN);
    if (p != NULL) memset(p, 0, size ? size : STATS_BLOCK_ALIGN);
    return p;
}

struct stats_worker *stats_worker_create(void)
{
    struct stats_worker *s = stats_zalloc(sizeof(*s));
    if (s == NULL) return NULL;
    if (stats_slowlog_init(&s->slowlog) < 0) {
        free(s);
        return NULL;
    }
    return s;
}

void stats_worker_destroy(struct stats_worker *s)
{
    if (s == NULL) return;
    struct stats_pool_block *pb = s->pools;
    while (pb != NULL) {
        struct stats_pool_block *pnext = pb->next;
        struct stats_server_block *sb = pb->servers;
        while (sb != NULL) {
            struct stats_server_block *snext = sb->next;
            free(sb->name);
            free(sb);
            sb = snext;
        }
        stats_hotkeys_destroy(atomic_load_explicit(&pb->hot, memory_order_relaxed));
        free(pb->name);
        free(pb);
        pb = pnext;
    }
    stats_slowlog_deinit(&s->slowlog);
    free(s);
}

/* A zeroed block of size bytes whose name (at name_off) is a copy of name, or NULL. */
static void *stats_named_block(size_t size, size_t name_off, const char *name)
{
    char *copy = strdup(name);
    char *b = copy != NULL ? stats_zalloc(size) : NULL;
    if (b == NULL) {
        free(copy);
        return NULL;
    }
    memcpy(b + name_off, &copy, sizeof(copy));
    return b;
}

struct stats_pool_block *stats_pool_lookup(struct stats_worker *w, const char *name)
{
    struct stats_pool_block **at = &w->pools;
    while (*at != NULL && strcmp((*at)->name, name) != 0) at = &(*at)->next;
    if (*at == NULL) *at = stats_named_block(sizeof(**at), offsetof(struct stats_pool_block, name), name);
    return *at;
}

struct stats_hotkeys *stats_pool_hotkeys(struct stats_pool_block *pb, uint32_t every, uint32_t seed)
{
    struct stats_hotkeys *h = atomic_load_explicit(&pb->hot, memory_order_relaxed); /* its own store */
    if (h != NULL) return h;
    h = stats_hotkeys_create(every, seed);
    if (h != NULL) atomic_store_explicit(&pb->hot, h, memory_order_release);
    return h;
}

struct stats_server_block *stats_server_lookup(struct stats_pool_block *pb, const char *name)
{
    struct stats_server_block **at = &pb->servers;
    while (*at != NULL && strcmp((*at)->name, name) != 0) at = &(*at)->next;
    if (*at == NULL) *at = stats_named_block(sizeof(**at), offsetof(struct stats_server_block, name), name);
    return *at;
}
