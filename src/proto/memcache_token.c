/*
 * memcache_token.c - the memcached tokenizer's cold end (skipping a too-long token), strict number
 * parsing, memcached's own reading of an ms <datalen>, and the data block, shared by the request
 * and the response parsers (see memcache.h; the tokenizer itself is inline: memcache_token.h).
 *
 * Threads: pure functions; any thread.
 */
#include "config.h"
#include "proto/memcache_token.h"

bool mc_tok_skip(const uint8_t *buf, size_t pos, size_t len, size_t *end)
{
    size_t d = mc_find_delim(buf, pos, len);
    if (d < len) {
        *end = (buf[d] == '\n' && d > pos && buf[d - 1] == '\r') ? d - 1 : d;
        return true;
    }
    *end = (len > pos && buf[len - 1] == '\r') ? len - 1 : len;
    return false;
}

bool mc_parse_u64(const uint8_t *p, size_t len, uint64_t *out)
{
    if (len == 0 || len > 20) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        uint64_t digit = (uint64_t)(p[i] - '0');
        if (v > (UINT64_MAX - digit) / 10) return false;
        v = v * 10 + digit;
    }
    *out = v;
    return true;
}

bool mc_parse_u32(const uint8_t *p, size_t len, uint32_t *out)
{
    uint64_t v;
    if (!mc_parse_u64(p, len, &v) || v > UINT32_MAX) return false;
    *out = (uint32_t)v;
    return true;
}

bool mc_parse_i32(const uint8_t *p, size_t len, int32_t *out)
{
    bool neg = len > 0 && p[0] == '-';
    uint64_t v;
    if (!mc_parse_u64(p + neg, len - neg, &v)) return false;
    if (v > (neg ? (uint64_t)INT32_MAX + 1 : (uint64_t)INT32_MAX)) return false;
    *out = neg ? (int32_t)(-(int64_t)v) : (int32_t)v;
    return true;
}

/* C's isspace in the "C" locale (strtol's leading white space, and what may end its number). */
static bool c_space(uint8_t c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

bool mc_parse_strtol32(const uint8_t *p, size_t len, uint32_t *out)
{
    size_t i = 0;
    while (i < len && c_space(p[i])) i++;
    bool neg = i < len && p[i] == '-';
    if (i < len && (p[i] == '-' || p[i] == '+')) i++;
    /* a long's range: up to 2^63 - 1, or 2^63 below zero */
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    size_t digits = i;
    bool range = false;
    for (; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
        uint64_t d = (uint64_t)(p[i] - '0');
        if (v > (limit - d) / 10) range = true; /* strtol reads on, then says ERANGE */
        else v = v * 10 + d;
    }
    if (i == digits || range || (i < len && !c_space(p[i]))) return false;
    uint32_t low = (uint32_t)(neg ? (uint64_t)0 - v : v); /* the long, cut to an int32 */
    if (low > (uint32_t)INT32_MAX - 2) return false;      /* below zero too */
    *out = low;
    return true;
}

int mc_fail(struct parse_state *ps, const char *why)
{
    ps->error = why;
    return PARSE_ERROR;
}

int mc_data(struct parse_state *ps, const uint8_t *buf, size_t len, size_t *pos)
{
    if (ps->off == 0) {
        size_t n = (size_t)(ps->b < len - *pos ? ps->b : len - *pos);
        *pos += n;
        ps->b -= n;
        if (ps->b > 0) return PARSE_AGAIN;
        ps->off = 1;
    }
    static const uint8_t crlf[2] = { '\r', '\n' };
    while (ps->off <= 2) {
        if (*pos == len) return PARSE_AGAIN;
        if (buf[*pos] != crlf[ps->off - 1]) return mc_fail(ps, "bad data chunk");
        (*pos)++;
        ps->off++;
    }
    ps->off = 0;
    return PARSE_DONE;
}

