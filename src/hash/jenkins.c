/*
 * jenkins.c - Bob Jenkins' two hashes as twemproxy 0.5.0 uses them:
 *   one_at_a_time  his one-at-a-time hash, widening each byte as a signed char (x86 `char`);
 *   jenkins        lookup3's hashlittle() with initval 13, bytes read unsigned, little-endian.
 * Written from the published descriptions of the algorithms.
 *
 * Threads: any (no state).
 */
#include "config.h"

#include "hash/hash_impl.h"

#define JENKINS_INITVAL 13u

uint32_t hash_one_at_a_time(const uint8_t *key, size_t len)
{
    uint32_t h = 0;
    for (size_t i = 0; i < len; i++) {
        h += hash_sext32(key[i]);
        h += h << 10;
        h ^= h >> 6;
    }
    h += h << 3;
    h ^= h >> 11;
    h += h << 15;
    return h;
}

/* lookup3's reversible mix of three 32-bit words. */
static inline void lookup3_mix(uint32_t *a, uint32_t *b, uint32_t *c)
{
    *a -= *c; *a ^= hash_rotl32(*c, 4);  *c += *b;
    *b -= *a; *b ^= hash_rotl32(*a, 6);  *a += *c;
    *c -= *b; *c ^= hash_rotl32(*b, 8);  *b += *a;
    *a -= *c; *a ^= hash_rotl32(*c, 16); *c += *b;
    *b -= *a; *b ^= hash_rotl32(*a, 19); *a += *c;
    *c -= *b; *c ^= hash_rotl32(*b, 4);  *b += *a;
}

/* lookup3's final avalanche of three words into c. */
static inline void lookup3_final(uint32_t *a, uint32_t *b, uint32_t *c)
{
    *c ^= *b; *c -= hash_rotl32(*b, 14);
    *a ^= *c; *a -= hash_rotl32(*c, 11);
    *b ^= *a; *b -= hash_rotl32(*a, 25);
    *c ^= *b; *c -= hash_rotl32(*b, 16);
    *a ^= *c; *a -= hash_rotl32(*c, 4);
    *b ^= *a; *b -= hash_rotl32(*a, 14);
    *c ^= *b; *c -= hash_rotl32(*b, 24);
}

/* Up to 4 bytes as a little-endian word (the missing high bytes are zero). */
static uint32_t lookup3_word(const uint8_t *p, size_t n)
{
    uint32_t w = 0;
    for (size_t i = 0; i < n && i < 4; i++)
        w |= (uint32_t)p[i] << (8 * i);
    return w;
}

uint32_t hash_jenkins_lookup3(const uint8_t *key, size_t len, uint32_t initval)
{
    uint32_t a, b, c;
    a = b = c = UINT32_C(0xdeadbeef) + (uint32_t)len + initval;

    while (len > 12) {
        a += hash_load_le32(key);
        b += hash_load_le32(key + 4);
        c += hash_load_le32(key + 8);
        lookup3_mix(&a, &b, &c);
        key += 12;
        len -= 12;
    }
    if (len == 0) /* only for an empty key: the last block is never empty otherwise */
        return c;
    /* the last 1..12 bytes, zero-padded, then the final mix */
    a += lookup3_word(key, len);
    if (len > 4)
        b += lookup3_word(key + 4, len - 4);
    if (len > 8)
        c += lookup3_word(key + 8, len - 8);
    lookup3_final(&a, &b, &c);
    return c;
}

uint32_t hash_jenkins(const uint8_t *key, size_t len)
{
    return hash_jenkins_lookup3(key, len, JENKINS_INITVAL);
}
