/*
 * md5.c - MD5 as specified by RFC 1321, written from the RFC's description, and the "md5" key
 * hash: the first four digest bytes read as a little-endian uint32.
 *
 * Threads: any (no state; contexts belong to their callers).
 */
#include "config.h"

#include <string.h>

#include "hash/hash.h"
#include "hash/hash_impl.h"
#include "hash/md5.h"

/* RFC 1321 3.4: T[i] = floor(2^32 * |sin(i)|), i = 1..64 (scripts/gen_hash_tables.py md5). */
static const uint32_t md5_sine[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee,
    0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
    0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa,
    0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
    0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
    0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05,
    0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039,
    0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
    0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

/* Left-rotation amounts, per round and per step within a group of four. */
static const uint8_t md5_shift[4][4] = {
    {7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21},
};

/* One 64-byte block: four rounds of sixteen steps. */
static void md5_transform(uint32_t state[4], const uint8_t block[64])
{
    uint32_t x[16];
    for (unsigned i = 0; i < 16; i++)
        x[i] = hash_load_le32(block + 4 * i);

    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    for (unsigned i = 0; i < 64; i++) {
        unsigned round = i / 16;
        uint32_t f;
        unsigned k; /* which word of the block this step adds */
        switch (round) {
        case 0: f = (b & c) | (~b & d); k = i; break;
        case 1: f = (b & d) | (c & ~d); k = (5 * i + 1) % 16; break;
        case 2: f = b ^ c ^ d; k = (3 * i + 5) % 16; break;
        default: f = c ^ (b | ~d); k = (7 * i) % 16; break;
        }
        uint32_t t = a + f + x[k] + md5_sine[i];
        /* the RFC's (a, b, c, d) -> (d, a, b, c) register rotation between steps */
        a = d;
        d = c;
        c = b;
        b = b + hash_rotl32(t, md5_shift[round][i % 4]);
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
}

void md5_init(struct md5_ctx *ctx)
{
    ctx->state[0] = UINT32_C(0x67452301);
    ctx->state[1] = UINT32_C(0xefcdab89);
    ctx->state[2] = UINT32_C(0x98badcfe);
    ctx->state[3] = UINT32_C(0x10325476);
    ctx->nbytes = 0;
}

void md5_update(struct md5_ctx *ctx, const void *data, size_t len)
{
    const uint8_t *p = data;
    size_t used = (size_t)(ctx->nbytes % 64);
    if (len == 0)
        return;
    ctx->nbytes += len;

    if (used > 0) {
        size_t take = 64 - used < len ? 64 - used : len;
        memcpy(ctx->block + used, p, take);
        p += take;
        len -= take;
        if (used + take < 64)
            return;
        md5_transform(ctx->state, ctx->block);
    }
    for (; len >= 64; p += 64, len -= 64)
        md5_transform(ctx->state, p);
    if (len > 0)
        memcpy(ctx->block, p, len);
}

void md5_final(struct md5_ctx *ctx, uint8_t out[MD5_DIGEST_LEN])
{
    uint64_t nbits = ctx->nbytes * 8;
    uint8_t pad[64 + 8] = {0x80};
    size_t used = (size_t)(ctx->nbytes % 64);
    /* a 0x80 byte, zeros up to 56 mod 64, then the bit length, little-endian */
    size_t padlen = used < 56 ? 56 - used : 120 - used;
    for (unsigned i = 0; i < 8; i++)
        pad[padlen + i] = (uint8_t)(nbits >> (8 * i));
    md5_update(ctx, pad, padlen + 8);
    for (unsigned i = 0; i < 4; i++) {
        out[4 * i + 0] = (uint8_t)ctx->state[i];
        out[4 * i + 1] = (uint8_t)(ctx->state[i] >> 8);
        out[4 * i + 2] = (uint8_t)(ctx->state[i] >> 16);
        out[4 * i + 3] = (uint8_t)(ctx->state[i] >> 24);
    }
}

void hash_md5_digest(const uint8_t *data, size_t len, uint8_t out[16])
{
    struct md5_ctx ctx;
    md5_init(&ctx);
    md5_update(&ctx, data, len);
    md5_final(&ctx, out);
}

uint32_t hash_md5(const uint8_t *key, size_t len)
{
    uint8_t digest[MD5_DIGEST_LEN];
    hash_md5_digest(key, len, digest);
    return hash_load_le32(digest);
}
