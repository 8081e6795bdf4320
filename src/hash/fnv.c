/*
 * fnv.c - the four FNV key hashes of twemproxy 0.5.0. All of them widen each key byte as a signed
 * char (bytes >= 0x80 become 0xffffff80.. / 0xffffffffffffff80..), and all return 32 bits:
 *   fnv1_32   FNV-1 (multiply, then xor), 32-bit;
 *   fnv1a_32  FNV-1a (xor, then multiply), 32-bit;
 *   fnv1_64   FNV-1 in 64-bit arithmetic, the low 32 bits returned;
 *   fnv1a_64  FNV-1a in 32-bit arithmetic with the 64-bit offset basis and prime truncated to
 *             32 bits (0x84222325, 0x1b3): not the real 64-bit FNV-1a.
 *
 * Threads: any (no state).
 */
#include "config.h"

#include "hash/hash_impl.h"

#define FNV32_OFFSET UINT32_C(2166136261)
#define FNV32_PRIME UINT32_C(16777619)
#define FNV64_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV64_PRIME UINT64_C(0x100000001b3)

uint32_t hash_fnv1_32(const uint8_t *key, size_t len)
{
    uint32_t h = FNV32_OFFSET;
    for (size_t i = 0; i < len; i++) {
        h *= FNV32_PRIME;
        h ^= hash_sext32(key[i]);
    }
    return h;
}

/* FNV-1a in 32-bit arithmetic from basis h with prime p, four bytes a round (the loop's own
 * instructions then cost a quarter as much: fnv1a_64 is the hash of most pools). */
static inline uint32_t fnv1a_32bit(uint32_t h, uint32_t p, const uint8_t *key, size_t len)
{
    size_t i = 0;
    for (; i + 4 <= len; i += 4) {
        h = (h ^ hash_sext32(key[i])) * p;
        h = (h ^ hash_sext32(key[i + 1])) * p;
        h = (h ^ hash_sext32(key[i + 2])) * p;
        h = (h ^ hash_sext32(key[i + 3])) * p;
    }
    for (; i < len; i++) h = (h ^ hash_sext32(key[i])) * p;
    return h;
}

uint32_t hash_fnv1a_32(const uint8_t *key, size_t len)
{
    return fnv1a_32bit(FNV32_OFFSET, FNV32_PRIME, key, len);
}

uint32_t hash_fnv1_64(const uint8_t *key, size_t len)
{
    uint64_t h = FNV64_OFFSET;
    for (size_t i = 0; i < len; i++) {
        h *= FNV64_PRIME;
        h ^= hash_sext64(key[i]);
    }
    return (uint32_t)h;
}

uint32_t hash_fnv1a_64(const uint8_t *key, size_t len)
{
    return fnv1a_32bit((uint32_t)FNV64_OFFSET, (uint32_t)FNV64_PRIME, key, len);
}
