/*
 * hash.h - the 12 key hash functions of twemproxy 0.5.0, bit-for-bit, as a name -> function table,
 * the hash_tag rule, and Redis Cluster's key slot. Pure functions: no state, no server types.
 *
 * Threads: any (no state).
 */
#ifndef NC_HASH_H
#define NC_HASH_H

#include <stddef.h>
#include <stdint.h>

enum hash_type {
    HASH_ONE_AT_A_TIME,
    HASH_MD5,
    HASH_CRC16,
    HASH_CRC32,
    HASH_CRC32A,
    HASH_FNV1_64,
    HASH_FNV1A_64,
    HASH_FNV1_32,
    HASH_FNV1A_32,
    HASH_HSIEH,
    HASH_MURMUR,
    HASH_JENKINS,
    HASH_COUNT
};

typedef uint32_t (*hash_fn)(const uint8_t *key, size_t len);

struct hash_info {
    const char *name; /* config name, e.g. "fnv1a_64" */
    hash_fn fn;
};

/* Indexed by enum hash_type. */
extern const struct hash_info hash_table[HASH_COUNT];

/* Returns the hash_type for a config name of len bytes, or -1 if unknown. */
int hash_type_from_name(const char *name, size_t len);

/* The full 16-byte MD5 digest (ketama needs all of it). */
void hash_md5_digest(const uint8_t *data, size_t len, uint8_t out[16]);

/*
 * The part of a key that is hashed: with a two-character hash_tag (tag != NULL), the bytes between
 * the first tag[0] and the first tag[1] after it, if that part is non-empty; otherwise the whole key.
 */
const uint8_t *hash_tag_part(const uint8_t *key, size_t len, const char *tag, size_t *part_len);

/* The hash twemproxy routes a key with: hash_tag applied, and the empty key hashes to 0. */
uint32_t hash_key(enum hash_type type, const char *tag, const uint8_t *key, size_t len);

/* Redis Cluster's hash slots, and the slot of a key as Redis Cluster computes it (CLUSTER
 * KEYSLOT): the CRC-16/XMODEM of its hash tag part ("{...}": the bytes between the first '{' and
 * the first '}' after it, when not empty; else the whole key), modulo HASH_SLOTS. */
#define HASH_SLOTS 16384u
uint32_t hash_keyslot(const uint8_t *key, size_t len);

#endif
