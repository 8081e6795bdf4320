/*
 * mbuf.c - pooled, reference-counted byte chunks (see mbuf.h).
 *
 * Threads: a pool and its chunks belong to one worker; nothing here is shared.
 */
#include "config.h"
#include "msg/mbuf.h"

#include <stdlib.h>
#include <string.h>

void mbuf_pool_init(struct mbuf_pool *pool, size_t chunk_size, uint32_t max_free)
{
    memset(pool, 0, sizeof(*pool));
    if (chunk_size < MBUF_MIN_SIZE) chunk_size = MBUF_MIN_SIZE;
    if (chunk_size > MBUF_MAX_SIZE) chunk_size = MBUF_MAX_SIZE;
    pool->chunk_size = chunk_size;
    pool->max_free = max_free;
}

void mbuf_pool_trim(struct mbuf_pool *pool, uint32_t keep)
{
    while (pool->nfree > keep) {
        struct mbuf *mb = pool->free;
        pool->free = mb->next_free;
        pool->nfree--;
        free(mb);
    }
}

uint32_t mbuf_pool_trim_idle(struct mbuf_pool *pool, uint32_t keep)
{
    uint32_t freed = pool_idle_beyond(pool->low_free, pool->nfree, keep);
    mbuf_pool_trim(pool, pool->nfree - freed);
    pool->low_free = pool->nfree;
    return freed;
}

void mbuf_pool_deinit(struct mbuf_pool *pool)
{
    mbuf_pool_trim(pool, 0);
}

struct mbuf *mbuf_get(struct mbuf_pool *pool)
{
    struct mbuf *mb = pool->free;
    if (mb != NULL) {
        pool->free = mb->next_free;
        if (--pool->nfree < pool->low_free) pool->low_free = pool->nfree;
    } else {
        mb = malloc(pool->chunk_size);
        if (mb == NULL) return NULL;
        mb->pool = pool;
        mb->cap = (uint32_t)(pool->chunk_size - sizeof(struct mbuf));
    }
    mb->next_free = NULL;
    mb->refs = 1;
    mb->len = 0;
    pool->nlive++;
    return mb;
}

struct mbuf *mbuf_small(size_t cap)
{
    struct mbuf *mb = malloc(sizeof(struct mbuf) + cap);
    if (mb == NULL) return NULL;
    mb->next_free = NULL;
    mb->pool = NULL;
    mb->refs = 1;
    mb->len = 0;
    mb->cap = (uint32_t)cap;
    return mb;
}

struct mbuf *mbuf_literal(const void *data, size_t len)
{
    struct mbuf *mb = mbuf_small(len);
    if (mb == NULL) return NULL;
    mb->len = (uint32_t)len;
    if (len > 0) memcpy(mb->data, data, len);
    return mb;
}

void mbuf_release(struct mbuf *mb)
{
    struct mbuf_pool *pool = mb->pool;
    if (pool == NULL) {
        free(mb);
        return;
    }
    pool->nlive--;
    if (pool->nfree >= pool->max_free) {
        free(mb);
        return;
    }
    mb->next_free = pool->free;
    pool->free = mb;
    pool->nfree++;
}
