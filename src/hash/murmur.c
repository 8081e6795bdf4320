/*
 * murmur.c - MurmurHash2 as twemproxy 0.5.0 (after libmemcached) uses it: seed 0xdeadbeef times
 * the key length, 4-byte words read little-endian (Debian's endian-neutral variant gives the same
 * values on every host), bytes unsigned. Written from the published description of MurmurHash2.
 *
 * Threads: any (no state).
 */
#include "config.h"

#include "hash/hash_impl.h"

#define MURMUR_M UINT32_C(0x5bd1e995)
#define MURMUR_R 24

uint32_t hash_murmur(const uint8_t *key, size_t len)
{
    uint32_t seed = UINT32_C(0xdeadbeef) * (uint32_t)len;
    uint32_t h = seed ^ (uint32_t)len;

    for (; len >= 4; key += 4, len -= 4) {
        uint32_t k = hash_load_le32(key);
        k *= MURMUR_M;
        k ^= k >> MURMUR_R;
        k *= MURMUR_M;
        h *= MURMUR_M;
        h ^= k;
    }

    switch (len) {
    case 3:
        h ^= (uint32_t)key[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)key[1] << 8;
        /* fall through */
    case 1:
        h ^= key[0];
        h *= MURMUR_M;
        break;
    default:
        break;
    }

    h ^= h >> 13;
    h *= MURMUR_M;
    h ^= h >> 15;
    return h;
}
