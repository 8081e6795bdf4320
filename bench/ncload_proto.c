/*
 * ncload_proto.c - the load generator's protocols: builds memcached ASCII (text, or meta: mg/ms),
 * memcached binary (GET, SET) and redis requests (GET or SET of a key from the keyspace) and finds
 * where a complete reply ends.
 *
 * Threads: single-threaded (ncload runs one thread).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncload.h"

#define MAX_DEPTH 8

/* memcached's binary protocol: a 24-byte header (big-endian fields), then extras, key, value */
#define MCBIN_HEADER 24
#define MCBIN_REQ_MAGIC 0x80
#define MCBIN_RES_MAGIC 0x81
#define MCBIN_OP_GET 0x00
#define MCBIN_OP_SET 0x01
#define MCBIN_OP_VERSION 0x0b
#define MCBIN_ST_OK 0x0000
#define MCBIN_ST_NOT_FOUND 0x0001

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_seq;

static uint64_t rng_next(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x;
}

static size_t append_value(char *out, size_t n, const char *value, uint32_t len)
{
    memcpy(out + n, value, len);
    n += len;
    memcpy(out + n, "\r\n", 2);
    return n + 2;
}

static void put_be16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    put_be16(p, (uint16_t)(v >> 16));
    put_be16(p + 2, (uint16_t)v);
}

static uint32_t get_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A binary-protocol request header at out: magic, opcode, key length, extras length, data type
 * 0, vbucket 0, total body length, opaque 0, cas 0. Returns its length. */
static size_t bin_header(char *out, uint8_t opcode, size_t keylen, uint8_t extlen, uint32_t body)
{
    unsigned char *h = (unsigned char *)out;
    memset(h, 0, MCBIN_HEADER);
    h[0] = MCBIN_REQ_MAGIC;
    h[1] = opcode;
    put_be16(h + 2, (uint16_t)keylen);
    h[4] = extlen;
    put_be32(h + 8, body);
    return MCBIN_HEADER;
}

/* A binary GET (header, key) or SET (header, extras: flags 0 and expiry 0, key, value). */
static size_t build_mcbin(const struct opts *o, char *out, const char *key, size_t kl, bool set,
                          const char *value)
{
    if (!set) {
        size_t n = bin_header(out, MCBIN_OP_GET, kl, 0, (uint32_t)kl);
        memcpy(out + n, key, kl);
        return n + kl;
    }
    size_t n = bin_header(out, MCBIN_OP_SET, kl, 8, (uint32_t)(8 + kl + o->value_len));
    memset(out + n, 0, 8);
    n += 8;
    memcpy(out + n, key, kl);
    n += kl;
    memcpy(out + n, value, o->value_len);
    return n + o->value_len;
}

/* The request storm sends to check a connection: redis PING, memcached version (text, meta) or
 * binary VERSION. Writes it to out (room for 32 bytes); returns its length. */
size_t build_ping(const struct opts *o, char *out)
{
    if (o->proto == P_MCBIN) return bin_header(out, MCBIN_OP_VERSION, 0, 0, 0);
    const char *ping = o->proto == P_REDIS ? "*1\r\n$4\r\nPING\r\n" : "version\r\n";
    size_t n = strlen(ping);
    memcpy(out, ping, n);
    return n;
}

/* Writes one request to out (room for the value + 128 bytes); returns its length. */
size_t build_request(const struct opts *o, char *out, size_t cap, const char *value)
{
    uint64_t k = o->seq ? next_seq++ : rng_next() % o->keyspace;
    char key[32];
    int kl = snprintf(key, sizeof(key), "key:%012llu", (unsigned long long)k);
    bool set = o->op == OP_SET || (o->op == OP_MIX && rng_next() % 10 == 0);
    int n;
    if (o->proto == P_MCBIN) return build_mcbin(o, out, key, (size_t)kl, set, value);
    if (o->proto == P_MC) {
        if (set) {
            n = snprintf(out, cap, "set %s 0 0 %u\r\n", key, o->value_len);
            return append_value(out, (size_t)n, value, o->value_len);
        }
        n = snprintf(out, cap, "get %s\r\n", key);
    } else if (o->proto == P_MCMETA) {
        if (set) {
            n = snprintf(out, cap, "ms %s %u\r\n", key, o->value_len);
            return append_value(out, (size_t)n, value, o->value_len);
        }
        n = snprintf(out, cap, "mg %s v\r\n", key);
    } else {
        if (set) {
            n = snprintf(out, cap, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%u\r\n", kl, key, o->value_len);
            return append_value(out, (size_t)n, value, o->value_len);
        }
        n = snprintf(out, cap, "*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n", kl, key);
    }
    return (size_t)n;
}

char *value_bytes(uint32_t len)
{
    char *v = malloc(len + 1);
    if (v == NULL) die("malloc");
    for (uint32_t i = 0; i < len; i++) v[i] = (char)('a' + i % 26);
    return v;
}

static const char *find_crlf(const char *p, const char *end)
{
    for (; p + 1 < end; p++)
        if (p[0] == '\r' && p[1] == '\n') return p;
    return NULL;
}

/* One complete reply at p: its length, 0 if incomplete, -1 if malformed. *err: an error reply. */
static long parse_redis(const char *p, const char *end, int depth, bool *err)
{
    if (p >= end) return 0;
    if (depth > MAX_DEPTH) return -1;
    const char *eol = find_crlf(p, end);
    if (eol == NULL) return 0;
    long line = eol + 2 - p;
    switch (p[0]) {
    case '+':
    case ':':
        return line;
    case '-':
        *err = true;
        return line;
    case '$': {
        long len = strtol(p + 1, NULL, 10);
        if (len < 0) return line;
        if (end - p < line + len + 2) return 0;
        return line + len + 2;
    }
    case '*': {
        long cnt = strtol(p + 1, NULL, 10);
        long total = line;
        for (long i = 0; i < cnt; i++) {
            long r = parse_redis(p + total, end, depth + 1, err);
            if (r <= 0) return r;
            total += r;
        }
        return total;
    }
    default:
        return -1;
    }
}

static bool starts_with(const char *p, const char *end, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* The <bytes> field of "VALUE <key> <flags> <bytes> [<cas>]" (the line from q to eol), or -1. */
static long mc_value_bytes(const char *q, const char *eol)
{
    const char *s = q + 6;
    int field = 0;
    long bytes = -1;
    while (s < eol && field < 3) {
        while (s < eol && *s == ' ') s++;
        if (field == 2) bytes = strtol(s, NULL, 10);
        while (s < eol && *s != ' ') s++;
        field++;
    }
    return bytes;
}

static long parse_mc(const char *p, const char *end, bool *err)
{
    const char *q = p;
    for (int guard = 0; guard < 1024; guard++) {
        const char *eol = find_crlf(q, end);
        if (eol == NULL) return 0;
        if (eol - q >= 6 && memcmp(q, "VALUE ", 6) == 0) {
            long bytes = mc_value_bytes(q, eol);
            if (bytes < 0) return -1;
            const char *next = eol + 2 + bytes + 2;
            if (next > end) return 0;
            q = next;
            continue;
        }
        if (starts_with(q, eol, "ERROR") || starts_with(q, eol, "CLIENT_ERROR") ||
            starts_with(q, eol, "SERVER_ERROR"))
            *err = true;
        return eol + 2 - p;
    }
    return -1;
}

/* A meta reply: "VA <bytes> <flags>*" and its data, or one line (HD, EN, NF, ..., errors). */
static long parse_mcmeta(const char *p, const char *end, bool *err)
{
    const char *eol = find_crlf(p, end);
    if (eol == NULL) return 0;
    if (eol - p >= 3 && memcmp(p, "VA ", 3) == 0) {
        const char *next = eol + 2 + strtol(p + 3, NULL, 10) + 2;
        return next > end ? 0 : next - p;
    }
    if (starts_with(p, eol, "ERROR") || starts_with(p, eol, "CLIENT_ERROR") ||
        starts_with(p, eol, "SERVER_ERROR"))
        *err = true;
    return eol + 2 - p;
}

/* A binary reply: its 24-byte header and the body the header announces; -1 without the response
 * magic or with key and extras longer than the body. A status other than 0 (no error) and 1 (key
 * not found: a miss, as text's END and meta's EN) is an error reply. */
static long parse_mcbin(const char *p, const char *end, bool *err)
{
    const unsigned char *h = (const unsigned char *)p;
    if (end - p < MCBIN_HEADER) return 0;
    if (h[0] != MCBIN_RES_MAGIC) return -1;
    uint32_t body = get_be32(h + 8);
    if ((uint32_t)(h[2] << 8 | h[3]) + h[4] > body) return -1;
    if ((size_t)(end - p) < MCBIN_HEADER + (size_t)body) return 0;
    uint16_t status = (uint16_t)(h[6] << 8 | h[7]);
    if (status != MCBIN_ST_OK && status != MCBIN_ST_NOT_FOUND) *err = true;
    return MCBIN_HEADER + (long)body;
}

long parse_reply(const struct opts *o, const char *p, const char *end, bool *err)
{
    switch (o->proto) {
    case P_MC:
        return parse_mc(p, end, err);
    case P_MCMETA:
        return parse_mcmeta(p, end, err);
    case P_MCBIN:
        return parse_mcbin(p, end, err);
    default:
        return parse_redis(p, end, 0, err);
    }
}
