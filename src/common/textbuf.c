/*
 * textbuf.c - the growable buffer with an optional limit (see textbuf.h).
 *
 * Threads: the buffer's owner only.
 */
#include "config.h"
#include "common/textbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void textbuf_init(struct textbuf *b, size_t limit)
{
    memset(b, 0, sizeof(*b));
    b->limit = limit;
}

void textbuf_deinit(struct textbuf *b)
{
    size_t limit = b->limit;
    free(b->data);
    memset(b, 0, sizeof(*b));
    b->limit = limit;
}

void textbuf_reset(struct textbuf *b)
{
    b->len = 0;
    b->failed = false;
}

/* Makes room for n more bytes. */
static bool textbuf_reserve(struct textbuf *b, size_t n)
{
    size_t limit = b->limit != 0 ? b->limit : SIZE_MAX;
    if (b->failed) return false;
    if (n > limit - b->len) {
        b->failed = true;
        return false;
    }
    if (b->len + n <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + n) cap = cap > limit / 2 ? limit : cap * 2;
    char *p = realloc(b->data, cap);
    if (p == NULL) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void textbuf_add(struct textbuf *b, const void *data, size_t len)
{
    if (len == 0 || !textbuf_reserve(b, len)) return;
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

void textbuf_adds(struct textbuf *b, const char *s)
{
    textbuf_add(b, s, strlen(s));
}

void textbuf_addc(struct textbuf *b, char c)
{
    if (!textbuf_reserve(b, 1)) return;
    b->data[b->len++] = c;
}

void textbuf_addf(struct textbuf *b, const char *fmt, ...)
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
        textbuf_add(b, small, (size_t)n);
        return;
    }
    if (!textbuf_reserve(b, (size_t)n + 1)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void textbuf_add_u64(struct textbuf *b, uint64_t v)
{
    char tmp[24];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    textbuf_add(b, tmp + i, sizeof(tmp) - i);
}

void textbuf_add_i64(struct textbuf *b, int64_t v)
{
    if (v < 0) {
        textbuf_addc(b, '-');
        textbuf_add_u64(b, (uint64_t)0 - (uint64_t)v);
        return;
    }
    textbuf_add_u64(b, (uint64_t)v);
}

