/*
 * msg.c - requests and responses as span lists over mbufs (see msg.h).
 *
 * Threads: a msg_pool and its msgs belong to one worker; nothing here is shared.
 */
#include "config.h"
#include "msg/msg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void msg_pool_init(struct msg_pool *pool, uint32_t max_free)
{
    memset(pool, 0, sizeof(*pool));
    pool->max_free = max_free;
    pool->next_id = 1;
}

/* Frees a msg with what it keeps across reuses (its arrays, its own chunk). */
static void msg_free(struct msg *m)
{
    free(m->spans);
    free(m->keys);
    free(m->elems);
    free(m->frags_kept);
    free(m->key_frag_kept);
    if (m->own != NULL) mbuf_unref(m->own);
    free(m);
}

void msg_pool_trim(struct msg_pool *pool, uint32_t keep)
{
    while (pool->nfree > keep && pool->free != NULL) {
        struct msg *m = pool->free;
        pool->free = m->peer;
        pool->nfree--;
        msg_free(m);
    }
}

uint32_t msg_pool_trim_idle(struct msg_pool *pool, uint32_t keep)
{
    uint32_t freed = pool_idle_beyond(pool->low_free, pool->nfree, keep);
    msg_pool_trim(pool, pool->nfree - freed);
    pool->low_free = pool->nfree;
    return freed;
}

void msg_pool_deinit(struct msg_pool *pool)
{
    msg_pool_trim(pool, 0);
    pool->nfree = 0;
}

/* The next msg_get clears the first offsetof(struct msg, spans) bytes of the next free msg (and
 * reads its link): asked for now, they are in cache by then (a pool's free msgs are cold at
 * pipeline 16 over 50 clients: thousands of them, freed a pass earlier). */
static inline void msg_prefetch_next(const struct msg *next)
{
    if (next == NULL) return;
    const char *p = (const char *)next;
    for (size_t off = 0; off < offsetof(struct msg, spans); off += 64) __builtin_prefetch(p + off, 1);
}

struct msg *msg_get(struct msg_pool *pool)
{
    struct msg *m = pool->free;
    if (m != NULL) {
        pool->free = m->peer;
        msg_prefetch_next(pool->free);
        if (--pool->nfree < pool->low_free) pool->low_free = pool->nfree;
        /* keep the arrays (capacity) of a recycled msg, reset everything before them */
        memset(m, 0, offsetof(struct msg, spans));
    } else {
        m = calloc(1, sizeof(*m));
        if (m == NULL) return NULL;
    }
    m->id = pool->next_id++;
    pool->nlive++;
    return m;
}

void msg_put(struct msg_pool *pool, struct msg *m)
{
    for (uint32_t i = 0; i < m->nspans; i++) mbuf_unref(m->spans[i].mb);
    m->nspans = 0;
    if (m->frags != NULL) { /* (a multi-key request's: the plain path makes no call here) */
        if (m->frags != m->frags_kept) free(m->frags);
        m->frags = NULL;
    }
    if (m->key_frag != NULL) {
        if (m->key_frag != m->key_frag_kept) free(m->key_frag);
        m->key_frag = NULL;
    }
    pool->nlive--;
    if (m->own != NULL) { /* reused by the next msg, unless a span elsewhere still holds bytes of it */
        if (m->own->refs > 1) {
            mbuf_unref(m->own);
            m->own = NULL;
        } else {
            m->own->len = 0;
        }
    }
    /* big arrays are not kept: memory returns to its baseline after a burst */
    if (pool->nfree >= pool->max_free || m->spans_cap > 64 || m->keys_cap > 64 || m->elems_cap > 64 ||
        m->frags_kept_cap > 64 || m->key_frag_kept_cap > 64) {
        msg_free(m);
        return;
    }
    m->peer = pool->free;
    pool->free = m;
    pool->nfree++;
}

static int grow(void **arr, uint32_t *cap, uint32_t need, size_t elem_size)
{
    if (need <= *cap) return 0;
    uint32_t ncap = *cap ? *cap : 4;
    while (ncap < need) {
        if (ncap > UINT32_MAX / 2) return -ENOMEM;
        ncap *= 2;
    }
    void *p = realloc(*arr, (size_t)ncap * elem_size);
    if (p == NULL) return -ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

struct msg **msg_frags_array(struct msg *m, uint32_t n)
{
    if (grow((void **)&m->frags_kept, &m->frags_kept_cap, n ? n : 1, sizeof(struct msg *)) < 0) return NULL;
    memset(m->frags_kept, 0, (size_t)n * sizeof(struct msg *));
    return m->frags_kept;
}

uint32_t *msg_key_frag_array(struct msg *m, uint32_t n)
{
    if (grow((void **)&m->key_frag_kept, &m->key_frag_kept_cap, n ? n : 1, sizeof(uint32_t)) < 0) return NULL;
    return m->key_frag_kept;
}

int msg_append_grow(struct msg *m, struct mbuf *mb, uint32_t off, uint32_t len)
{
    if (grow((void **)&m->spans, &m->spans_cap, m->nspans + 1, sizeof(struct span)) < 0)
        return -ENOMEM;
    mbuf_ref(mb);
    m->spans[m->nspans++] = (struct span){ .mb = mb, .off = off, .len = len };
    m->len += len;
    return 0;
}

int msg_append_literal(struct msg *m, const void *data, size_t len)
{
    if (len == 0) return 0;
    if (len > UINT32_MAX) return -ENOMEM;
    struct mbuf *mb = mbuf_literal(data, len);
    if (mb == NULL) return -ENOMEM;
    int rc = msg_append(m, mb, 0, (uint32_t)len);
    mbuf_unref(mb); /* the span holds the only reference now (or none on failure) */
    return rc;
}

uint8_t *msg_own(struct msg *m, size_t n)
{
    struct mbuf *o = m->own;
    if (o == NULL) {
        o = mbuf_small(MSG_OWN_CAP);
        if (o == NULL) return NULL;
        m->own = o;
    }
    if (n > mbuf_room(o)) return NULL;
    uint8_t *p = o->data + o->len;
    o->len += (uint32_t)n;
    return p;
}

int msg_append_own(struct msg *m, const void *data, size_t n)
{
    if (n == 0) return 0;
    uint8_t *p = msg_own(m, n);
    if (p == NULL) return -ENOMEM;
    memcpy(p, data, n);
    return msg_append(m, m->own, (uint32_t)(p - m->own->data), (uint32_t)n);
}

int msg_append_copy(struct msg *m, const void *data, size_t n)
{
    int rc = msg_append_own(m, data, n);
    return rc == -ENOMEM ? msg_append_literal(m, data, n) : rc; /* no room left (or no chunk) */
}

void msg_trim_tail(struct msg *m, uint64_t n)
{
    if (n > m->len) n = m->len;
    m->len -= n;
    while (n > 0) {
        struct span *s = &m->spans[m->nspans - 1];
        if (s->len > n) {
            s->len -= (uint32_t)n;
            return;
        }
        n -= s->len;
        mbuf_unref(s->mb);
        m->nspans--;
    }
}

int msg_finish(struct msg *m)
{
    if (m->trim != 0) msg_trim_tail(m, m->trim);
    return msg_append_own(m, m->tail, m->tail_len);
}

int msg_append_slice(struct msg *dst, const struct msg *src, uint64_t start, uint64_t end)
{
    if (start > end || end > src->len) return -EINVAL;
    uint64_t pos = 0;
    for (uint32_t i = 0; i < src->nspans && pos < end; i++) {
        const struct span *s = &src->spans[i];
        uint64_t s_end = pos + s->len;
        if (s_end > start) {
            uint64_t from = start > pos ? start - pos : 0;
            uint64_t to = end < s_end ? end - pos : s->len;
            int rc = msg_append(dst, s->mb, s->off + (uint32_t)from, (uint32_t)(to - from));
            if (rc < 0) return rc;
        }
        pos = s_end;
    }
    return 0;
}

size_t msg_copy_out(const struct msg *m, uint64_t off, void *out, size_t n)
{
    size_t copied = 0;
    uint64_t pos = 0;
    for (uint32_t i = 0; i < m->nspans && copied < n; i++) {
        const struct span *s = &m->spans[i];
        uint64_t s_end = pos + s->len;
        if (s_end > off + copied) {
            uint64_t from = off + copied - pos;
            size_t take = (size_t)(s->len - from);
            if (take > n - copied) take = n - copied;
            memcpy((uint8_t *)out + copied, s->mb->data + s->off + from, take);
            copied += take;
        }
        pos = s_end;
    }
    return copied;
}

const char *msg_add_key_error(int rc)
{
    return rc == -E2BIG ? "too many keys" : "out of memory";
}

int msg_add_key(struct msg *m, const uint8_t *ptr, uint32_t len, uint64_t start, uint64_t end)
{
    if (m->nkeys >= MSG_KEYS_MAX) return -E2BIG;
    if (grow((void **)&m->keys, &m->keys_cap, m->nkeys + 1, sizeof(struct msg_key)) < 0)
        return -ENOMEM;
    m->keys[m->nkeys++] = (struct msg_key){ .ptr = ptr, .len = len, .start = start, .end = end };
    return 0;
}

int msg_add_elem(struct msg *m, uint64_t start, uint64_t end, const uint8_t *key, uint32_t key_len)
{
    if (grow((void **)&m->elems, &m->elems_cap, m->nelems + 1, sizeof(struct msg_elem)) < 0)
        return -ENOMEM;
    m->elems[m->nelems++] =
        (struct msg_elem){ .start = start, .end = end, .key = key, .key_len = key_len };
    return 0;
}
