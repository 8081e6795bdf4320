/*
 * memcache_token.h - the memcached line tokenizer (see memcache.h's mc_tok), inline: every token
 * of every request and reply goes through it, a few bytes each ("get", a key, "VALUE", "0", "16",
 * "END"), so the calls would cost more than the scans.
 *
 * Threads: pure functions over the caller's parse state; any thread.
 */
#ifndef NC_MEMCACHE_TOKEN_H
#define NC_MEMCACHE_TOKEN_H

#include "proto/memcache.h"

/* Index of the first ' ' or '\n' in buf[pos, len), or len. */
static inline size_t mc_find_delim(const uint8_t *buf, size_t pos, size_t len)
{
    while (pos < len && buf[pos] != ' ' && buf[pos] != '\n') pos++;
    return pos;
}

/* Finds the next token in buf[pos, len). */
static inline enum mc_tok_kind mc_tok_next(const uint8_t *buf, size_t pos, size_t len, size_t max,
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
    size_t d = mc_find_delim(buf, pos + 1, len);
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

/*
 * Takes the next step on a line from buf[*pos]: consumes the spaces (MC_TOK_AGAIN), a token
 * (MC_TOK_WORD, at t), the part in sight of a too-long token (MC_TOK_LONG) or the line end
 * (MC_TOK_EOL), and counts the line's bytes in ps->c (0 at a line's start). Returns that kind,
 * or PARSE_ERROR "line too long" when limited and the line has more than MC_LINE_MAX bytes
 * before its "\n" (decided the same way however the bytes are split).
 */
static inline int mc_line_next(struct parse_state *ps, const uint8_t *buf, size_t len, size_t *pos,
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

#endif
