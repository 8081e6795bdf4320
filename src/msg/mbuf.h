/*
 * mbuf.h - reference-counted byte chunks. Sockets read into mbufs; requests and responses are lists
 * of spans (mbuf, offset, length) into them, so bytes are forwarded without copying.
 *
 * Threads: an mbuf_pool and every mbuf it hands out belong to one worker thread; refcounts are
 * plain integers and never cross threads. "Literal" mbufs (small, heap-allocated, exact size, pool
 * NULL) carry bytes the proxy writes itself: error replies, fragment headers, coalesced headers.
 */
#ifndef NC_MBUF_H
#define NC_MBUF_H

#include <stddef.h>
#include <stdint.h>

#define MBUF_MIN_SIZE 512
#define MBUF_MAX_SIZE 16777216
#define MBUF_DEFAULT_SIZE 16384

struct mbuf_pool;

struct mbuf {
    struct mbuf *next_free;  /* pool free list */
    struct mbuf_pool *pool;  /* NULL: literal, freed with free() */
    uint32_t refs;
    uint32_t len;            /* bytes filled */
    uint32_t cap;            /* bytes available in data[] */
    uint8_t data[];
};

struct mbuf_pool {
    size_t chunk_size;       /* whole chunk, header included (the -m flag) */
    struct mbuf *free;
    uint32_t nfree;
    uint32_t max_free;       /* chunks kept beyond this go back to the allocator */
    uint32_t low_free;       /* the fewest free chunks since the last mbuf_pool_trim_idle: that
                              * many stayed unused all that time */
    uint64_t nlive;          /* chunks handed out and not yet returned */
};

void mbuf_pool_init(struct mbuf_pool *pool, size_t chunk_size, uint32_t max_free);
void mbuf_pool_deinit(struct mbuf_pool *pool);
/* Frees free chunks beyond keep. */
void mbuf_pool_trim(struct mbuf_pool *pool, uint32_t keep);
/* How many of a free list's entries to free at a trim: those that stayed free all along (the
 * fewest it had since the last trim, low_free), beyond keep (mbuf and msg pools alike). */
static inline uint32_t pool_idle_beyond(uint32_t low_free, uint32_t nfree, uint32_t keep)
{
    uint32_t idle = low_free < nfree ? low_free : nfree;
    return idle > keep ? idle - keep : 0;
}

/* Frees the free chunks that stayed unused since the last call (low_free), beyond keep, and
 * starts a new period; returns how many were freed. Under a steady load the pool keeps what the
 * load's peaks take, instead of freeing it at a low moment to allocate it again. */
uint32_t mbuf_pool_trim_idle(struct mbuf_pool *pool, uint32_t keep);

/* A chunk with refs = 1 and len = 0, or NULL when out of memory. */
struct mbuf *mbuf_get(struct mbuf_pool *pool);
/* A literal mbuf holding a copy of data (refs = 1), or NULL. */
struct mbuf *mbuf_literal(const void *data, size_t len);
/* An empty literal mbuf (pool NULL, refs = 1, len 0) with room for cap bytes, or NULL. */
struct mbuf *mbuf_small(size_t cap);

static inline void mbuf_ref(struct mbuf *mb) { mb->refs++; }
/* mbuf_unref's last reference: the chunk goes back to its pool (or is freed). */
void mbuf_release(struct mbuf *mb);
/* Drops a reference (inline: several per request, and seldom the last). */
static inline void mbuf_unref(struct mbuf *mb)
{
    if (--mb->refs > 0) return;
    mbuf_release(mb);
}

static inline uint32_t mbuf_room(const struct mbuf *mb) { return mb->cap - mb->len; }

#endif
