/*
 * test_hash.c - unit tests of the 12 key hashes, hash_tag and hash_key: names, published test
 * values (RFC 1321 MD5 suite, CRC check values, FNV and lookup3 reference values), bitwise
 * recomputation of the CRC tables, twemproxy's signed-char widening, and values of the hashes
 * that have no published vectors (hsieh, murmur, jenkins with initval 13, twemproxy's crc16),
 * taken from the implementation that reproduces every line of tests/vectors and checked against
 * a separate Python model; Redis Cluster's key slot (hash_keyslot) against a redis-server's.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "hash/hash.h"
#include "hash/hash_impl.h"
#include "hash/md5.h"

#define S(lit) (const uint8_t *)(lit), (sizeof(lit) - 1)

static uint32_t hash_of(enum hash_type t, const char *s)
{
    return hash_table[t].fn((const uint8_t *)s, strlen(s));
}

/* ---- names ---- */

static void test_type_from_name(void **state)
{
    (void)state;
    static const char *const names[HASH_COUNT] = {
        [HASH_ONE_AT_A_TIME] = "one_at_a_time", [HASH_MD5] = "md5",
        [HASH_CRC16] = "crc16",                 [HASH_CRC32] = "crc32",
        [HASH_CRC32A] = "crc32a",               [HASH_FNV1_64] = "fnv1_64",
        [HASH_FNV1A_64] = "fnv1a_64",           [HASH_FNV1_32] = "fnv1_32",
        [HASH_FNV1A_32] = "fnv1a_32",           [HASH_HSIEH] = "hsieh",
        [HASH_MURMUR] = "murmur",               [HASH_JENKINS] = "jenkins",
    };
    for (int t = 0; t < HASH_COUNT; t++) {
        assert_string_equal(hash_table[t].name, names[t]);
        assert_non_null(hash_table[t].fn);
        assert_int_equal(hash_type_from_name(names[t], strlen(names[t])), t);
    }
    static const char *const unknown[] = {"", "md", "md55", "MD5", "crc", "crc32b", "fnv1a",
                                          "fnv1a_128", "murmur3", "jenkins ", "random"};
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        assert_int_equal(hash_type_from_name(unknown[i], strlen(unknown[i])), -1);
    /* the length decides, not a terminating NUL */
    assert_int_equal(hash_type_from_name("crc32a", 5), HASH_CRC32);
    assert_int_equal(hash_type_from_name("md5:x", 3), HASH_MD5);
    assert_int_equal(hash_type_from_name("crc16", 4), -1);
}

/* ---- MD5 ---- */

static void hex16(const uint8_t d[16], char out[33])
{
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_md5_rfc1321_suite(void **state)
{
    (void)state;
    static const struct { const char *in, *digest; } suite[] = {
        {"", "d41d8cd98f00b204e9800998ecf8427e"},
        {"a", "0cc175b9c0f1b6a831c399e269772661"},
        {"abc", "900150983cd24fb0d6963f7d28e17f72"},
        {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
        {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
        {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
         "d174ab98d277d9f5a5611c2c9f419d9f"},
        {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
         "57edf4a22be3c955ac49da2e2107b67a"},
    };
    for (size_t i = 0; i < sizeof(suite) / sizeof(suite[0]); i++) {
        uint8_t d[16];
        char hex[33];
        hash_md5_digest((const uint8_t *)suite[i].in, strlen(suite[i].in), d);
        hex16(d, hex);
        assert_string_equal(hex, suite[i].digest);
    }
    /* the key hash: digest bytes 0..3, little-endian (90 01 50 98 for "abc") */
    assert_int_equal(hash_of(HASH_MD5, "abc"), 0x98500190);
    assert_int_equal(hash_of(HASH_MD5, "a"), 0xb975c10c);
}

/* One million 'a' (FIPS 180 style long message), fed in uneven chunks. */
static void test_md5_million_a(void **state)
{
    (void)state;
    uint8_t chunk[997];
    memset(chunk, 'a', sizeof(chunk));
    struct md5_ctx ctx;
    md5_init(&ctx);
    size_t left = 1000000;
    while (left > 0) {
        size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
        md5_update(&ctx, chunk, n);
        left -= n;
    }
    uint8_t d[16];
    char hex[33];
    md5_final(&ctx, d);
    hex16(d, hex);
    assert_string_equal(hex, "7707d6ae4e027c70eea2a935c2296f21");
}

/* Split anywhere, the incremental digest equals the one-shot digest (block and padding edges). */
static void test_md5_incremental(void **state)
{
    (void)state;
    uint8_t msg[200];
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)(i * 37 + 11);
    for (size_t len = 0; len <= sizeof(msg); len++) {
        uint8_t whole[16];
        hash_md5_digest(msg, len, whole);
        for (size_t cut = 0; cut <= len; cut += (len > 130 ? 7 : 1)) {
            struct md5_ctx ctx;
            uint8_t part[16];
            md5_init(&ctx);
            md5_update(&ctx, msg, cut);
            md5_update(&ctx, msg + cut, 0);
            md5_update(&ctx, msg + cut, len - cut);
            md5_final(&ctx, part);
            assert_memory_equal(part, whole, 16);
        }
    }
}

/* ---- CRCs, checked against bit-at-a-time definitions ---- */

static uint16_t bitwise_crc16_step(uint16_t idx_byte)
{
    uint32_t r = (uint32_t)idx_byte << 8;
    for (int i = 0; i < 8; i++)
        r = (r & 0x8000) ? (r << 1) ^ 0x1021 : r << 1;
    return (uint16_t)r;
}

/* twemproxy's crc16: XMODEM steps in a 32-bit register that is never masked to 16 bits. */
static uint32_t bitwise_crc16(const uint8_t *k, size_t n)
{
    uint32_t crc = 0;
    for (size_t i = 0; i < n; i++)
        crc = (crc << 8) ^ bitwise_crc16_step((uint16_t)(((crc >> 8) ^ k[i]) & 0xff));
    return crc;
}

static uint32_t bitwise_crc32(const uint8_t *k, size_t n)
{
    uint32_t crc = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        crc ^= k[i];
        for (int b = 0; b < 8; b++)
            crc = (crc & 1) ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
    }
    return ~crc;
}

static void test_crc_check_values(void **state)
{
    (void)state;
    /* the catalogue check values: CRC-32 0xcbf43926, CRC-16/XMODEM 0x31c3 */
    assert_int_equal(hash_crc32a(S("123456789")), 0xcbf43926);
    assert_int_equal(hash_crc32(S("123456789")), (0xcbf43926 >> 16) & 0x7fff);
    assert_int_equal(hash_crc16(S("123456789")) & 0xffff, 0x31c3);
    /* the unmasked high half: the table entries of the 2nd-4th last steps, shifted */
    assert_int_equal(hash_crc16(S("123456789")), 0x869031c3);
    assert_int_equal(hash_crc16(S("abc")), 0x7c749dd6);
    assert_int_equal(hash_crc32a(S("")), 0);
    assert_int_equal(hash_crc32(S("")), 0);
    assert_int_equal(hash_crc16(S("")), 0);
}

static void test_crc_tables(void **state)
{
    (void)state;
    uint8_t k[300];
    /* every one-byte key reaches a different table entry */
    for (unsigned b = 0; b < 256; b++) {
        k[0] = (uint8_t)b;
        assert_int_equal(hash_crc16(k, 1), bitwise_crc16(k, 1));
        assert_int_equal(hash_crc32a(k, 1), bitwise_crc32(k, 1));
        assert_int_equal(hash_crc32(k, 1), (bitwise_crc32(k, 1) >> 16) & 0x7fff);
    }
    uint32_t x = 12345;
    for (size_t len = 0; len < sizeof(k); len++) {
        for (size_t i = 0; i < len; i++) {
            x = x * 1103515245u + 12345u;
            k[i] = (uint8_t)(x >> 16);
        }
        assert_int_equal(hash_crc16(k, len), bitwise_crc16(k, len));
        assert_int_equal(hash_crc32a(k, len), bitwise_crc32(k, len));
        assert_int_equal(hash_crc32(k, len), (bitwise_crc32(k, len) >> 16) & 0x7fff);
    }
}

/* ---- FNV, one_at_a_time, lookup3: published values ---- */

/* Published values; the 64-bit FNVs return the low half (FNV-1 64 of "a" is 0xaf63bd4c8601b7be),
 * and fnv1a_64's 32-bit arithmetic gives the low half of FNV-1a 64 for bytes < 0x80. */
static void test_published_values(void **state)
{
    (void)state;
    static const struct { enum hash_type type; const char *key; uint32_t value; } v[] = {
        {HASH_FNV1_32, "", 0x811c9dc5},       {HASH_FNV1_32, "a", 0x050c5d7e},
        {HASH_FNV1_32, "foobar", 0x31f0b262}, {HASH_FNV1A_32, "", 0x811c9dc5},
        {HASH_FNV1A_32, "a", 0xe40c292c},     {HASH_FNV1A_32, "foobar", 0xbf9cf968},
        {HASH_FNV1_64, "", 0x84222325},       {HASH_FNV1_64, "a", 0x8601b7be},
        {HASH_FNV1_64, "foobar", 0xa4dda9c2}, {HASH_FNV1A_64, "", 0x84222325},
        {HASH_FNV1A_64, "a", 0x8601ec8c},     {HASH_FNV1A_64, "foobar", 0xf73967e8},
        {HASH_ONE_AT_A_TIME, "", 0},          {HASH_ONE_AT_A_TIME, "a", 0xca2e9442},
        {HASH_ONE_AT_A_TIME, "The quick brown fox jumps over the lazy dog", 0x519e91f5},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
        assert_int_equal(hash_of(v[i].type, v[i].key), v[i].value);
}

static void test_lookup3_published(void **state)
{
    (void)state;
    /* the values printed by lookup3.c's own self-test */
    assert_int_equal(hash_jenkins_lookup3(S(""), 0), 0xdeadbeef);
    assert_int_equal(hash_jenkins_lookup3(S(""), 0xdeadbeef), 0xbd5b7dde);
    assert_int_equal(hash_jenkins_lookup3(S("Four score and seven years ago"), 0), 0x17770551);
    assert_int_equal(hash_jenkins_lookup3(S("Four score and seven years ago"), 1), 0xcd628161);
    /* twemproxy's jenkins is lookup3 with initval 13 */
    assert_int_equal(hash_of(HASH_JENKINS, "Four score and seven years ago"),
                     hash_jenkins_lookup3(S("Four score and seven years ago"), 13));
}

/* ---- twemproxy's signed char ---- */

static void test_signed_char_widening(void **state)
{
    (void)state;
    const uint8_t hi[1] = {0x80}, ff[1] = {0xff};
    /* fnv1a_32 of 0x80: the byte enters as 0xffffff80 */
    assert_int_equal(hash_fnv1a_32(hi, 1), (0x811c9dc5u ^ 0xffffff80u) * 16777619u);
    assert_int_equal(hash_fnv1_32(hi, 1), (0x811c9dc5u * 16777619u) ^ 0xffffff80u);
    assert_int_equal(hash_fnv1a_64(ff, 1), (0x84222325u ^ 0xffffffffu) * 0x1b3u);
    assert_int_equal(hash_fnv1_64(ff, 1),
                     (uint32_t)((UINT64_C(0xcbf29ce484222325) * UINT64_C(0x100000001b3)) ^
                                UINT64_C(0xffffffffffffffff)));
    /* one_at_a_time of 0xff starts from h = 0xffffffff, not 0xff */
    uint32_t h = 0xffffffffu;
    h += h << 10;
    h ^= h >> 6;
    h += h << 3;
    h ^= h >> 11;
    h += h << 15;
    assert_int_equal(hash_one_at_a_time(ff, 1), h);
    /* the unsigned hashes do not widen: for these a byte 0x80 in the key is just 0x80 */
    assert_int_equal(hash_crc32a(hi, 1), bitwise_crc32(hi, 1));
}

/* ---- hashes without published vectors: values cross-checked with the vectors-backed code ---- */

static void test_unpublished_values(void **state)
{
    (void)state;
    static const struct {
        const char *key;
        size_t len;
        uint32_t hsieh, murmur, jenkins;
    } v[] = {
        {"a", 1, 0x93642e87, 0x4b41757c, 0xe0a38690},
        {"ab", 2, 0x5b8c0ec3, 0xe3b54dfb, 0xc1b5695b},
        {"abc", 3, 0xe5186b3a, 0x7b0cc428, 0x8f415600},
        {"abcd", 4, 0x3ab452d8, 0xef6a86af, 0xd512151a},
        {"hello world", 11, 0x4f799873, 0x5e19153b, 0x153343fb},
        {"123456789", 9, 0xe4fc1670, 0xb7760690, 0x19777af6},
        {"\x80\xff\x01", 3, 0x22771e07, 0xc9fa99f1, 0x5a35ae4f}, /* signed 3rd tail byte */
        {"key:\xe9\xff", 6, 0x0fb23e67, 0x74826ee7, 0xb7224b2d},
        {"Four score and seven years ago", 30, 0x0c5fc188, 0x666caeaf, 0x1ab867b2},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        const uint8_t *k = (const uint8_t *)v[i].key;
        assert_int_equal(hash_hsieh(k, v[i].len), v[i].hsieh);
        assert_int_equal(hash_murmur(k, v[i].len), v[i].murmur);
        assert_int_equal(hash_jenkins(k, v[i].len), v[i].jenkins);
    }
    assert_int_equal(hash_hsieh(S("")), 0);
}

/* Every function reads exactly len bytes (ASan checks the heap copy) and ignores what follows. */
static void test_exact_length(void **state)
{
    (void)state;
    uint8_t buf[40];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(0x61 + i);
    for (size_t len = 1; len <= 33; len++) {
        uint8_t *copy = test_malloc(len);
        memcpy(copy, buf, len);
        for (int t = 0; t < HASH_COUNT; t++) {
            uint32_t a = hash_table[t].fn(copy, len);
            buf[len] ^= 0x5a;
            uint32_t b = hash_table[t].fn(buf, len);
            buf[len] ^= 0x5a;
            assert_int_equal(a, b);
        }
        test_free(copy);
    }
}

/* ---- hash_tag and hash_key ---- */

static void assert_tag_part(const char *key, const char *tag, const char *want)
{
    size_t len = strlen(key), part_len = 12345;
    const uint8_t *part = hash_tag_part((const uint8_t *)key, len, tag, &part_len);
    assert_true(part >= (const uint8_t *)key && part + part_len <= (const uint8_t *)key + len);
    assert_int_equal(part_len, strlen(want));
    assert_memory_equal(part, want, part_len);
}

static void test_hash_tag_part(void **state)
{
    (void)state;
    assert_tag_part("user:{42}:a", "{}", "42");
    assert_tag_part("{a}{b}", "{}", "a");
    assert_tag_part("{}x", "{}", "{}x");   /* empty tag: whole key */
    assert_tag_part("x{", "{}", "x{");     /* no closing char */
    assert_tag_part("}{", "{}", "}{");     /* closing char only before the opening one */
    assert_tag_part("{{a}}", "{}", "{a");  /* first '{', then the first '}' after it */
    assert_tag_part("a}b{c}", "{}", "c");
    assert_tag_part("{x}", "{}", "x");
    assert_tag_part("{", "{}", "{");
    assert_tag_part("", "{}", "");
    assert_tag_part("no tag here", "{}", "no tag here");
    assert_tag_part("a$b$c", "$$", "b");   /* same opening and closing char */
    assert_tag_part("a$$c", "$$", "a$$c");
    assert_tag_part("user:{42}:a", NULL, "user:{42}:a");
    assert_tag_part("user:{42}:a", "", "user:{42}:a");
    assert_tag_part("user:{42}:a", "{", "user:{42}:a");
    /* bytes, not C strings: a NUL inside the key is an ordinary byte */
    static const uint8_t bin[] = {'x', 0, '{', 0, 0xff, '}', 0};
    size_t part_len;
    const uint8_t *part = hash_tag_part(bin, sizeof(bin), "{}", &part_len);
    assert_ptr_equal(part, bin + 3);
    assert_int_equal(part_len, 2);
}

static void test_hash_key(void **state)
{
    (void)state;
    for (int t = 0; t < HASH_COUNT; t++) {
        hash_fn fn = hash_table[t].fn;
        /* the empty key is 0 without calling the function (jenkins("") would be 0xdeadbefc) */
        assert_int_equal(hash_key((enum hash_type)t, NULL, (const uint8_t *)"", 0), 0);
        assert_int_equal(hash_key((enum hash_type)t, "{}", (const uint8_t *)"", 0), 0);
        assert_int_equal(hash_key((enum hash_type)t, NULL, NULL, 0), 0);
        assert_int_equal(hash_key((enum hash_type)t, "{}", S("user:{42}:a")), fn(S("42")));
        assert_int_equal(hash_key((enum hash_type)t, "{}", S("{a}{b}")), fn(S("a")));
        assert_int_equal(hash_key((enum hash_type)t, "{}", S("{}x")), fn(S("{}x")));
        assert_int_equal(hash_key((enum hash_type)t, "{}", S("{}")), fn(S("{}")));
        assert_int_equal(hash_key((enum hash_type)t, NULL, S("user:{42}:a")),
                         fn(S("user:{42}:a")));
    }
    assert_int_equal(hash_jenkins(S("")), 0xdeadbeef + 13);
}

/* Redis Cluster's key slots: redis's documented examples, and the answers of a redis-server 7.0
 * (cluster-enabled) to CLUSTER KEYSLOT for the hash tag's corner cases and binary bytes. */
static void test_hash_keyslot(void **state)
{
    (void)state;
    static const struct {
        const char *key;
        uint32_t slot;
    } cases[] = {
        { "somekey", 11058 },
        { "foo{hash_tag}", 2515 },
        { "foo", 12182 },
        { "bar", 5061 },
        { "", 0 },
        { "{user1000}.following", 3443 },
        { "{user1000}.followers", 3443 },
        { "foo{}{bar}", 8363 },      /* an empty tag: the whole key */
        { "foo{{bar}}zap", 4015 },   /* the tag is "{bar" */
        { "foo{bar}{zap}", 5061 },   /* the first tag: "bar" */
        { "{}", 15257 },
        { "{", 4092 },
        { "}", 12090 },
        { "a{b", 13340 },
        { "123456789", 12739 },      /* CRC-16/XMODEM's check value 0x31c3, mod 16384 */
        { "{123456789}x", 12739 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        assert_int_equal(hash_keyslot((const uint8_t *)cases[i].key, strlen(cases[i].key)), cases[i].slot);
    static const uint8_t bin[] = { 0, 0xff, 0x80, '{', 0xfe, '}' };
    assert_int_equal(hash_keyslot(bin, sizeof(bin)), 3793);
    assert_int_equal(hash_keyslot(NULL, 0), 0);
    /* the slot is the true CRC-16 (crc16's low 16 bits; it keeps more) modulo HASH_SLOTS */
    for (unsigned c = 0; c < 256; c++) {
        uint8_t k[3] = { (uint8_t)c, (uint8_t)(c ^ 0x5a), (uint8_t)(0xff - c) };
        assert_true(hash_keyslot(k, sizeof(k)) < HASH_SLOTS);
        assert_int_equal(hash_keyslot(k, sizeof(k)), (hash_crc16(k, sizeof(k)) & 0xffff) % HASH_SLOTS);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_from_name),
        cmocka_unit_test(test_md5_rfc1321_suite),
        cmocka_unit_test(test_md5_million_a),
        cmocka_unit_test(test_md5_incremental),
        cmocka_unit_test(test_crc_check_values),
        cmocka_unit_test(test_crc_tables),
        cmocka_unit_test(test_published_values),
        cmocka_unit_test(test_lookup3_published),
        cmocka_unit_test(test_signed_char_widening),
        cmocka_unit_test(test_unpublished_values),
        cmocka_unit_test(test_exact_length),
        cmocka_unit_test(test_hash_tag_part),
        cmocka_unit_test(test_hash_key),
        cmocka_unit_test(test_hash_keyslot),
    };
    return cmocka_run_group_tests_name("hash", tests, NULL, NULL);
}
