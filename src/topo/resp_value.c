/*
 * resp_value.c - reading one RESP reply into a tree (see resp_value.h). Only what redis and its
 * Sentinel send: simple strings, errors, integers, bulk strings, arrays (and RESP3's null, maps,
 * sets and pushes, read as arrays).
 *
 * Threads: any; a value belongs to its parser's thread.
 */
#include "config.h"
#include "topo/resp_value.h"

#include <stdlib.h>
#include <string.h>

/* The line starting at buf[0] (its type byte excluded): its length up to CR, or -1 when no CRLF
 * is there yet. */
static ssize_t resp_line(const char *buf, size_t len)
{
    const char *cr = memchr(buf, '\r', len);
    if (cr == NULL || (size_t)(cr - buf) + 1 >= len) return -1;
    return cr - buf;
}

static bool resp_int(const char *s, size_t n, int64_t *out)
{
    bool neg = n > 0 && s[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i == n || n > 20) return false;
    int64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return true;
}

static ssize_t resp_parse_at(const char *buf, size_t len, struct resp_value *out, int depth);

static ssize_t resp_parse_array(const char *buf, size_t len, size_t head, int64_t n, bool pairs,
                                struct resp_value *out, int depth)
{
    if (n < 0) {
        out->type = RESP_NIL;
        return (ssize_t)head;
    }
    uint64_t count = (uint64_t)n * (pairs ? 2u : 1u);
    if (count > RESP_VALUE_MAX_ELEMS || depth >= RESP_VALUE_MAX_DEPTH) return -1;
    out->type = RESP_ARRAY;
    out->elems = calloc(count ? count : 1, sizeof(*out->elems));
    if (out->elems == NULL) return -1;
    size_t off = head;
    for (uint64_t i = 0; i < count; i++) {
        out->n++; /* counted before it is read: what a failed element holds is freed with out */
        ssize_t r = resp_parse_at(buf + off, len - off, &out->elems[i], depth + 1);
        if (r <= 0) return r;
        off += (size_t)r;
    }
    return (ssize_t)off;
}

static ssize_t resp_parse_at(const char *buf, size_t len, struct resp_value *out, int depth)
{
    memset(out, 0, sizeof(*out));
    if (len < 3) return 0;
    ssize_t ln = resp_line(buf + 1, len - 1);
    if (ln < 0) return len > 64 * 1024 ? -1 : 0;
    size_t head = (size_t)ln + 3; /* type byte, line, CRLF */
    const char *line = buf + 1;
    int64_t n = 0;
    switch (buf[0]) {
    case '+': case '-':
        out->type = buf[0] == '+' ? RESP_STATUS : RESP_ERROR;
        out->str = strndup(line, (size_t)ln);
        out->len = (size_t)ln;
        return out->str != NULL ? (ssize_t)head : -1;
    case ':':
        out->type = RESP_INT;
        return resp_int(line, (size_t)ln, &out->num) ? (ssize_t)head : -1;
    case '_':
        out->type = RESP_NIL;
        return (ssize_t)head;
    case '$':
        if (!resp_int(line, (size_t)ln, &n) || n > (int64_t)RESP_VALUE_MAX_BULK) return -1;
        if (n < 0) {
            out->type = RESP_NIL;
            return (ssize_t)head;
        }
        if (len < head + (size_t)n + 2) return 0;
        if (buf[head + (size_t)n] != '\r' || buf[head + (size_t)n + 1] != '\n') return -1;
        out->type = RESP_BULK;
        out->str = malloc((size_t)n + 1);
        if (out->str == NULL) return -1;
        memcpy(out->str, buf + head, (size_t)n);
        out->str[n] = '\0';
        out->len = (size_t)n;
        return (ssize_t)(head + (size_t)n + 2);
    case '*': case '~': case '>': case '%':
        if (!resp_int(line, (size_t)ln, &n)) return -1;
        return resp_parse_array(buf, len, head, n, buf[0] == '%', out, depth);
    default:
        return -1;
    }
}

ssize_t resp_value_parse(const char *buf, size_t len, struct resp_value *out)
{
    ssize_t r = resp_parse_at(buf, len, out, 0);
    if (r <= 0) resp_value_free(out);
    return r;
}

void resp_value_free(struct resp_value *v)
{
    for (size_t i = 0; i < v->n; i++) resp_value_free(&v->elems[i]);
    free(v->elems);
    free(v->str);
    memset(v, 0, sizeof(*v));
}

const char *resp_value_str(const struct resp_value *v, size_t i)
{
    if (v->type != RESP_ARRAY || i >= v->n) return NULL;
    const struct resp_value *e = &v->elems[i];
    return e->type == RESP_BULK || e->type == RESP_STATUS ? e->str : NULL;
}

const char *resp_value_field(const struct resp_value *v, const char *key)
{
    for (size_t i = 0; v->type == RESP_ARRAY && i + 1 < v->n; i += 2) {
        const char *k = resp_value_str(v, i);
        if (k != NULL && strcmp(k, key) == 0) return resp_value_str(v, i + 1);
    }
    return NULL;
}
