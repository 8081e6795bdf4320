/*
 * hash.c - the hash name -> function table, the hash_tag rule and hash_key(), the one entry point
 * routing uses, and hash_keyslot() (Redis Cluster's slot of a key: CLUSTER KEYSLOT). The
 * functions themselves live one family per file (md5.c, crc.c, fnv.c, jenkins.c, hsieh.c,
 * murmur.c).
 *
 * Threads: any (no state).
 */
#include "config.h"

#include <string.h>

#include "common/util.h"
#include "hash/hash.h"
#include "hash/hash_impl.h"

const struct hash_info hash_table[HASH_COUNT] = {
    [HASH_ONE_AT_A_TIME] = {"one_at_a_time", hash_one_at_a_time},
    [HASH_MD5] = {"md5", hash_md5},
    [HASH_CRC16] = {"crc16", hash_crc16},
    [HASH_CRC32] = {"crc32", hash_crc32},
    [HASH_CRC32A] = {"crc32a", hash_crc32a},
    [HASH_FNV1_64] = {"fnv1_64", hash_fnv1_64},
    [HASH_FNV1A_64] = {"fnv1a_64", hash_fnv1a_64},
    [HASH_FNV1_32] = {"fnv1_32", hash_fnv1_32},
    [HASH_FNV1A_32] = {"fnv1a_32", hash_fnv1a_32},
    [HASH_HSIEH] = {"hsieh", hash_hsieh},
    [HASH_MURMUR] = {"murmur", hash_murmur},
    [HASH_JENKINS] = {"jenkins", hash_jenkins},
};

int hash_type_from_name(const char *name, size_t len)
{
    for (int t = 0; t < HASH_COUNT; t++) {
        const char *known = hash_table[t].name;
        if (strlen(known) == len && memcmp(known, name, len) == 0)
            return t;
    }
    return -1;
}

const uint8_t *hash_tag_part(const uint8_t *key, size_t len, const char *tag, size_t *part_len)
{
    *part_len = len;
    /* a tag is two characters; config validation rejects anything else */
    if (tag == NULL || tag[0] == '\0' || tag[1] == '\0' || len == 0)
        return key;

    const uint8_t *open = memchr(key, (uint8_t)tag[0], len);
    if (open == NULL)
        return key;
    const uint8_t *start = open + 1;
    size_t rest = len - (size_t)(start - key);
    const uint8_t *close = rest > 0 ? memchr(start, (uint8_t)tag[1], rest) : NULL;
    if (close == NULL || close == start) /* no closing char, or an empty tag: the whole key */
        return key;
    *part_len = (size_t)(close - start);
    return start;
}

uint32_t hash_key(enum hash_type type, const char *tag, const uint8_t *key, size_t len)
{
    NC_ASSERT((unsigned)type < HASH_COUNT);
    size_t part_len;
    const uint8_t *part = hash_tag_part(key, len, tag, &part_len);
    if (part_len == 0)
        return 0;
    return hash_table[type].fn(part, part_len);
}

uint32_t hash_keyslot(const uint8_t *key, size_t len)
{
    size_t part_len;
    const uint8_t *part = hash_tag_part(key, len, "{}", &part_len);
    /* hash_crc16 keeps the bits shifted out of the low 16 (twemproxy's), which the mask drops */
    return hash_crc16(part, part_len) & (HASH_SLOTS - 1);
}
