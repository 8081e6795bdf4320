/*
 * stats_buf.c - the bounded growable buffer and its escaping appenders (see stats_buf.h).
 *
 * Threads: the buffer's owner only.
 */
#include "config.h"
#include "manage/stats_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void stats_buf_init(struct stats_buf *b, size_t limit)
{
    memset(b, 0, sizeof(*b));
    b->limit = limit;
}

void stats_buf_deinit(struct stats_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof(*b));
}

void stats_buf_reset(struct stats_buf *b)
{
    b->len = 0;
    b->failed = false;
}

/* Makes room for n more bytes. */
static bool stats_buf_reserve(struct stats_buf *b, size_t n)
{
    if (b->failed) return false;
    if (n > b->limit - b->len) {
        b->failed = true;
        return false;
    }
    if (b->len + n <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n) cap = cap > b->limit / 2 ? b->limit : cap * 2;
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void stats_buf_add(struct stats_buf *b, const void *data, size_t len)
{
    if (len == 0 || !stats_buf_reserve(b, len)) return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

void stats_buf_adds(struct stats_buf *b, const char *s)
{
    stats_buf_add(b, s, strlen(s));
}

void stats_buf_addc(struct stats_buf *b, char c)
{
    if (!stats_buf_reserve(b, 1)) return;
    b->data[b->len++] = c;
}

void stats_buf_addf(struct stats_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof(small)) {
        stats_buf_add(b, small, (size_t)n);
        return;
    }
    if (!stats_buf_reserve(b, (size_t)n + 1)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void stats_buf_add_u64(struct stats_buf *b, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    stats_buf_add(b, tmp + i, sizeof(tmp) - i);
}

void stats_buf_add_i64(struct stats_buf *b, int64_t v)
{
    if (v < 0) {
        stats_buf_addc(b, '-');
        stats_buf_add_u64(b, (uint64_t)0 - (uint64_t)v);
        return;
    }
    stats_buf_add_u64(b, (uint64_t)v);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0 if it is not one. */
static size_t stats_utf8_seq(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t len;
    uint32_t min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
    else return 0;
    if (len > n) return 0;
    uint32_t cp = c & (0x3fu >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

void stats_buf_add_json_str(struct stats_buf *b, const char *str, size_t len)
{
    const uint8_t *s = (const uint8_t *)str;
    stats_buf_addc(b, '"');
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c == '"' || c == '\\') {
            stats_buf_addc(b, '\\');
            stats_buf_addc(b, (char)c);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            stats_buf_addf(b, "\\u%04x", (unsigned)c);
            i++;
        } else {
            size_t n = stats_utf8_seq(s + i, len - i);
            if (n == 0) {
                stats_buf_adds(b, "\\ufffd");
                i++;
            } else {
                stats_buf_add(b, s + i, n);
                i += n;
            }
        }
    }
    stats_buf_addc(b, '"');
}

void stats_buf_add_quoted(struct stats_buf *b, const uint8_t *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        uint8_t c = s[i];
        if (c == '"' || c == '\\') {
            stats_buf_addc(b, '\\');
            stats_buf_addc(b, (char)c);
        } else if (c >= 0x20 && c < 0x7f) {
            stats_buf_addc(b, (char)c);
        } else {
            stats_buf_addf(b, "\\x%02x", (unsigned)c);
        }
    }
}
