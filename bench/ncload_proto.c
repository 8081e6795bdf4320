/*
 * ncload_proto.c - the load generator's protocols: builds memcached ASCII (text, or meta: mg/ms)
 * and redis requests (GET or SET of a key from the keyspace) and finds where a complete reply
 * ends.
 *
 * Threads: single-threaded (ncload runs one thread).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncload.h"

#define MAX_DEPTH 8

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

/* Writes one request to out (room for the value + 128 bytes); returns its length. */
size_t build_request(const struct opts *o, char *out, size_t cap, const char *value)
{
    uint64_t k = o->seq ? next_seq++ : rng_next() % o->keyspace;
    char key[32];
    int kl = snprintf(key, sizeof(key), "key:%012llu", (unsigned long long)k);
    bool set = o->op == OP_SET || (o->op == OP_MIX && rng_next() % 10 == 0);
    int n;
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

long parse_reply(const struct opts *o, const char *p, const char *end, bool *err)
{
    switch (o->proto) {
    case P_MC:
        return parse_mc(p, end, err);
    case P_MCMETA:
        return parse_mcmeta(p, end, err);
    default:
        return parse_redis(p, end, 0, err);
    }
}
