/*
 * hsieh.c - Paul Hsieh's SuperFastHash as twemproxy 0.5.0 computes it: the running hash starts
 * at 0 (not at the length), 16-bit halves are read little-endian and unsigned, a 1-byte tail is
 * unsigned, but the third byte of a 3-byte tail is widened as a signed char (x86 `char`).
 * Written from the published description of the algorithm.
 *
 * Threads: any (no state).
 */
#include "config.h"

#include "hash/hash_impl.h"

static inline uint32_t hsieh_load16(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

uint32_t hash_hsieh(const uint8_t *key, size_t len)
{
    uint32_t h = 0;
    if (len == 0)
        return 0;

    for (size_t blocks = len / 4; blocks > 0; blocks--, key += 4) {
        h += hsieh_load16(key);
        uint32_t t = (hsieh_load16(key + 2) << 11) ^ h;
        h = (h << 16) ^ t;
        h += h >> 11;
    }

    switch (len % 4) {
    case 3:
        h += hsieh_load16(key);
        h ^= h << 16;
        h ^= hash_sext32(key[2]) << 18;
        h += h >> 11;
        break;
    case 2:
        h += hsieh_load16(key);
        h ^= h << 11;
        h += h >> 17;
        break;
    case 1:
        h += key[0];
        h ^= h << 10;
        h += h >> 1;
        break;
    default:
        break;
    }

    /* final avalanche */
    h ^= h << 3;
    h += h >> 5;
    h ^= h << 4;
    h += h >> 17;
    h ^= h << 25;
    h += h >> 6;
    return h;
}
