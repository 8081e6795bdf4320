/*
 * hash_impl.h - private to src/hash: the 12 key hash functions behind hash_table[], and the byte
 * helpers they share. Other modules use hash.h.
 *
 * Threads: any (no state).
 */
#ifndef NC_HASH_IMPL_H
#define NC_HASH_IMPL_H

#include <stddef.h>
#include <stdint.h>

/*
 * twemproxy reads key bytes as `char`, which is signed on x86, and some hashes widen them with a
 * plain cast: 0x80..0xff become 0xffffff80..0xffffffff. These reproduce that without relying on
 * the signedness of char: through int8_t, one sign-extending load (a test and a select
 * otherwise: 5 instructions a key byte). uint8_t to int8_t keeps the bits on every compiler the
 * build supports (GCC and Clang define the conversion modulo 2^8).
 */
static inline uint32_t hash_sext32(uint8_t b)
{
    return (uint32_t)(int32_t)(int8_t)b;
}

static inline uint64_t hash_sext64(uint8_t b)
{
    return (uint64_t)(int64_t)(int8_t)b;
}

static inline uint32_t hash_load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint32_t hash_rotl32(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32u - n));
}

uint32_t hash_one_at_a_time(const uint8_t *key, size_t len);
uint32_t hash_md5(const uint8_t *key, size_t len);
uint32_t hash_crc16(const uint8_t *key, size_t len);
uint32_t hash_crc32(const uint8_t *key, size_t len);
uint32_t hash_crc32a(const uint8_t *key, size_t len);
uint32_t hash_fnv1_64(const uint8_t *key, size_t len);
uint32_t hash_fnv1a_64(const uint8_t *key, size_t len);
uint32_t hash_fnv1_32(const uint8_t *key, size_t len);
uint32_t hash_fnv1a_32(const uint8_t *key, size_t len);
uint32_t hash_hsieh(const uint8_t *key, size_t len);
uint32_t hash_murmur(const uint8_t *key, size_t len);
uint32_t hash_jenkins(const uint8_t *key, size_t len);

/* Bob Jenkins' lookup3 hashlittle() with any initval; hash_jenkins() uses initval 13. */
uint32_t hash_jenkins_lookup3(const uint8_t *key, size_t len, uint32_t initval);

#endif
