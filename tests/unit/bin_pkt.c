/*
 * bin_pkt.c - memcached binary-protocol packets for the unit tests (bin_pkt.h).
 *
 * Threads: the test's only.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bin_pkt.h"

static void bpk_room(struct bpk *b, size_t n)
{
    if (b->n + n <= b->cap) return;
    b->cap = (b->n + n) * 2;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
}

void bpk_put(struct bpk *b, const void *d, size_t n)
{
    bpk_room(b, n);
    if (n > 0) memcpy(b->p + b->n, d, n);
    b->n += n;
}

void bpk_fill(struct bpk *b, uint8_t c, size_t n)
{
    bpk_room(b, n);
    memset(b->p + b->n, c, n);
    b->n += n;
}

static void put_be(struct bpk *b, uint32_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--) {
        uint8_t c = (uint8_t)(v >> (8 * i));
        bpk_put(b, &c, 1);
    }
}

void bpk_hdr(struct bpk *b, uint8_t magic, uint8_t op, uint16_t keylen, uint8_t extlen,
             uint16_t status, uint32_t body, uint32_t opaque)
{
    put_be(b, magic, 1);
    put_be(b, op, 1);
    put_be(b, keylen, 2);
    put_be(b, extlen, 1);
    put_be(b, 0, 1);
    put_be(b, status, 2);
    put_be(b, body, 4);
    put_be(b, opaque, 4);
    bpk_fill(b, 0, 8);
}

void bpk_req(struct bpk *b, uint8_t op, const char *key, uint8_t extlen, uint32_t vlen, uint32_t opaque)
{
    size_t klen = strlen(key);
    bpk_hdr(b, 0x80, op, (uint16_t)klen, extlen, 0, (uint32_t)(extlen + klen + vlen), opaque);
    bpk_fill(b, 'e', extlen);
    bpk_put(b, key, klen);
    bpk_fill(b, 'v', vlen);
}

void bpk_rsp(struct bpk *b, uint8_t op, uint16_t status, const char *ext, const char *key,
             const char *value, uint32_t opaque)
{
    size_t e = ext ? strlen(ext) : 0, k = key ? strlen(key) : 0, v = value ? strlen(value) : 0;
    bpk_hdr(b, 0x81, op, (uint16_t)k, (uint8_t)e, status, (uint32_t)(e + k + v), opaque);
    bpk_put(b, ext, e);
    bpk_put(b, key, k);
    bpk_put(b, value, v);
}

void bpk_reset(struct bpk *b)
{
    b->n = 0;
}

void bpk_free(struct bpk *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

uint32_t bpk_u16(const uint8_t *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

uint32_t bpk_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
