/*
 * memcache_token.c - the memcached line tokenizer and strict number parsing, shared by the request
 * and the response parsers (see memcache.h).
 *
 * Threads: pure functions; any thread.
 */
#include "config.h"
#include "proto/memcache.h"

#include <string.h>

/* Index of the first ' ' or '\n' in buf[pos, len), or len. */
static size_t find_delim(const uint8_t *buf, size_t pos, size_t len)
{
    while (pos < len && buf[pos] != ' ' && buf[pos] != '\n') pos++;
    return pos;
}

enum mc_tok_kind mc_tok_next(const uint8_t *buf, size_t pos, size_t len, size_t max,
                             struct mc_tok *t)
{
    while (pos < len && buf[pos] == ' ') pos++;
    t->start = pos;
    t->end = pos;
    if (pos == len) return MC_TOK_AGAIN;
    if (buf[pos] == '\n') {
        t->end = pos + 1;
        return MC_TOK_EOL;
    }
    if (buf[pos] == '\r') {
        if (pos + 1 == len) return MC_TOK_AGAIN; /* "\r\n" or a token starting with '\r' */
        if (buf[pos + 1] == '\n') {
            t->end = pos + 2;
            return MC_TOK_EOL;
        }
    }
    size_t d = find_delim(buf, pos + 1, len);
    if (d < len) {
        /* a '\r' just before the '\n' belongs to the line end, not to the token */
        t->end = (buf[d] == '\n' && buf[d - 1] == '\r') ? d - 1 : d;
        return MC_TOK_WORD;
    }
    /* no delimiter yet; a last '\r' may turn out to start the line end */
    size_t sure = buf[len - 1] == '\r' ? len - 1 : len;
    if (sure - pos > max) {
        t->end = sure;
        return MC_TOK_LONG;
    }
    return MC_TOK_AGAIN;
}

bool mc_tok_skip(const uint8_t *buf, size_t pos, size_t len, size_t *end)
{
    size_t d = find_delim(buf, pos, len);
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

int mc_line_next(struct parse_state *ps, const uint8_t *buf, size_t len, size_t *pos,
                 bool limited, struct mc_tok *t)
{
    size_t p = *pos;
    /* line bytes before its "\n" once this step is taken; every byte counted is before it */
    uint64_t upto;
    enum mc_tok_kind kind = mc_tok_next(buf, p, len, MC_KEY_MAX, t);
    switch (kind) {
    case MC_TOK_AGAIN:
        *pos = t->start;
        upto = ps->c + (len - p);
        break;
    case MC_TOK_LONG:
        *pos = t->end;
        upto = ps->c + (len - p);
        break;
    case MC_TOK_WORD:
        *pos = t->end;
        upto = ps->c + (t->end - p);
        break;
    default: /* MC_TOK_EOL */
        *pos = t->end;
        upto = ps->c + (t->end - 1 - p);
        break;
    }
    if (limited && upto > MC_LINE_MAX) return mc_fail(ps, "line too long");
    ps->c += *pos - p;
    return (int)kind;
}
