/*
 * md5.h - private to src/hash: incremental MD5 (RFC 1321). Ketama digests "<name>-<n>" without
 * building the string; key hashing uses the one-shot hash_md5_digest() of hash.h.
 *
 * Threads: any; a context belongs to its caller.
 */
#ifndef NC_MD5_H
#define NC_MD5_H

#include <stddef.h>
#include <stdint.h>

#define MD5_DIGEST_LEN 16

struct md5_ctx {
    uint32_t state[4];
    uint64_t nbytes;     /* message length so far */
    uint8_t block[64];   /* pending bytes: nbytes % 64 of them */
};

void md5_init(struct md5_ctx *ctx);
void md5_update(struct md5_ctx *ctx, const void *data, size_t len);
/* Writes the digest; the context must be initialised again before reuse. */
void md5_final(struct md5_ctx *ctx, uint8_t out[MD5_DIGEST_LEN]);

#endif
