/*
 * fuzz_check_text.c - the manage fuzz targets' reply checks (see fuzz_check_text.h).
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"
#include "fuzz_check_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_check.h"
#include "json_check.h"

bool fz_utf8_valid(const char *p, size_t len)
{
    const uint8_t *s = (const uint8_t *)p;
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1, cp = c & 0x1fu;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2, cp = c & 0x0fu;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3, cp = c & 0x07u;
        } else {
            return false;
        }
        if (len - i <= n) return false;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) return false;
            cp = cp << 6 | (s[i + k] & 0x3fu);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n + 1;
    }
    return true;
}

void fz_check_cmd_reply(const char *p, size_t len)
{
    FZ_CHECK(len >= 2 && p[len - 2] == '\r' && p[len - 1] == '\n');
    FZ_CHECK(fz_utf8_valid(p, len));
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\r') FZ_CHECK(i + 1 < len && p[i + 1] == '\n');
        else if (c == '\n') FZ_CHECK(i > 0 && p[i - 1] == '\r');
        else FZ_CHECK(c >= 0x20 && c != 0x7f);
    }
    if (p[0] != '{') return;
    FZ_CHECK(memchr(p, '\n', len) == p + len - 1); /* one line */
    struct jv *v = jv_parse(p, len - 2);
    FZ_CHECK(v != NULL && v->type == JV_OBJECT);
    jv_free(v);
}

/* A Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*; returns its length (0: none). */
static size_t fz_prom_name(const char *p, const char *end)
{
    size_t n = 0;
    while (p + n < end) {
        char c = p[n];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(n > 0 && c >= '0' && c <= '9')) break;
        n++;
    }
    return n;
}

/* name="value" pairs in braces, value escapes \\ \" \n only; returns the bytes after them. */
static const char *fz_prom_labels(const char *p, const char *end)
{
    FZ_CHECK(p < end && *p == '{');
    p++;
    for (;;) {
        size_t n = fz_prom_name(p, end);
        FZ_CHECK(n > 0 && p + n + 1 < end && p[n] == '=' && p[n + 1] == '"');
        for (p += n + 2; p < end && *p != '"'; p++) {
            if (*p == '\\') {
                FZ_CHECK(p + 1 < end && (p[1] == '\\' || p[1] == '"' || p[1] == 'n'));
                p++;
            }
        }
        FZ_CHECK(p + 1 < end);
        p++;
        if (*p == '}') return p + 1;
        FZ_CHECK(*p == ',');
        p++;
    }
}

/* The text exposition format, version 0.0.4: "# HELP", "# TYPE" and sample lines. */
static void fz_check_prom(const char *p, size_t len)
{
    FZ_CHECK(len > 0 && p[len - 1] == '\n' && fz_utf8_valid(p, len));
    const char *end = p + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        FZ_CHECK(nl != NULL && nl > p);
        if (*p == '#') {
            FZ_CHECK(nl - p > 7 && (memcmp(p, "# HELP ", 7) == 0 || memcmp(p, "# TYPE ", 7) == 0));
            FZ_CHECK(fz_prom_name(p + 7, nl) > 0);
        } else {
            size_t n = fz_prom_name(p, nl);
            FZ_CHECK(n > 0);
            const char *q = p + n;
            if (q < nl && *q == '{') q = fz_prom_labels(q, nl);
            FZ_CHECK(q < nl && *q == ' ' && q + 1 < nl);
            for (q++; q < nl; q++) FZ_CHECK(strchr("0123456789.eE+-InfNa", *q) != NULL);
        }
        p = nl + 1;
    }
}

/* Finds header name (case-insensitive) in the head; returns its value's length, or -1. */
static long fz_http_header(const char *head, size_t hlen, const char *name, const char **value)
{
    size_t nlen = strlen(name);
    const char *p = memchr(head, '\n', hlen) + 1, *end = head + hlen;
    long found = -1;
    while (p < end) {
        const char *eol = memchr(p, '\r', (size_t)(end - p));
        FZ_CHECK(eol != NULL && eol + 1 < end && eol[1] == '\n');
        const char *colon = memchr(p, ':', (size_t)(eol - p));
        FZ_CHECK(colon != NULL && colon > p && colon + 1 < eol && colon[1] == ' ');
        if ((size_t)(colon - p) == nlen && strncasecmp(p, name, nlen) == 0) {
            FZ_CHECK(found < 0); /* once */
            *value = colon + 2;
            found = eol - (colon + 2);
        }
        p = eol + 2;
    }
    return found;
}

int fz_check_http_response(const char *p, size_t len, bool head)
{
    const char *sep = NULL;
    for (size_t i = 0; i + 4 <= len && sep == NULL; i++) {
        if (memcmp(p + i, "\r\n\r\n", 4) == 0) sep = p + i;
    }
    FZ_CHECK(sep != NULL && len > 13 && memcmp(p, "HTTP/1.1 ", 9) == 0);
    FZ_CHECK(p[9] >= '1' && p[9] <= '5' && p[10] >= '0' && p[10] <= '9' && p[11] >= '0' &&
             p[11] <= '9' && p[12] == ' ');
    int status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    size_t hlen = (size_t)(sep - p) + 2; /* the status line and the headers, each with its CRLF */
    FZ_CHECK(fz_utf8_valid(p, hlen));
    for (size_t i = 0; i < hlen; i++) FZ_CHECK((unsigned char)p[i] >= 0x20 || p[i] == '\r' || p[i] == '\n');
    const char *body = sep + 4, *cl, *type, *conn;
    size_t blen = len - (size_t)(body - p);
    long cl_len = fz_http_header(p, hlen, "Content-Length", &cl);
    long type_len = fz_http_header(p, hlen, "Content-Type", &type);
    FZ_CHECK(cl_len > 0 && cl_len < 21 && type_len > 0);
    FZ_CHECK(fz_http_header(p, hlen, "Connection", &conn) == 5 && memcmp(conn, "close", 5) == 0);
    char num[24];
    memcpy(num, cl, (size_t)cl_len);
    num[cl_len] = '\0';
    char *e;
    unsigned long long want = strtoull(num, &e, 10);
    FZ_CHECK(*e == '\0' && num[0] >= '0' && num[0] <= '9');
    if (status == 405) FZ_CHECK(fz_http_header(p, hlen, "Allow", &conn) == 9 && memcmp(conn, "GET, HEAD", 9) == 0);
    if (head) {
        FZ_CHECK(blen == 0);
        return status;
    }
    FZ_CHECK(blen == want);
    if (type_len == 16 && memcmp(type, "application/json", 16) == 0) {
        FZ_CHECK(status == 200 && blen > 1 && body[blen - 1] == '\n' && memchr(body, '\n', blen) == body + blen - 1);
        struct jv *v = jv_parse(body, blen);
        FZ_CHECK(v != NULL && v->type == JV_OBJECT);
        jv_free(v);
    } else if (type_len > 26 && memcmp(type, "text/plain; version=0.0.4;", 26) == 0) {
        FZ_CHECK(status == 200);
        fz_check_prom(body, blen);
    } else {
        FZ_CHECK(type_len == 25 && memcmp(type, "text/plain; charset=utf-8", 25) == 0);
        FZ_CHECK(blen > 0 && body[blen - 1] == '\n' && fz_utf8_valid(body, blen));
        for (size_t i = 0; i < blen; i++) FZ_CHECK((unsigned char)body[i] >= 0x20 || body[i] == '\n');
    }
    return status;
}

static bool fz_is(const char *p, size_t len, const char *s)
{
    return len == strlen(s) && memcmp(p, s, len) == 0;
}

int fz_http_ref_status(const char *line, size_t len, bool *head)
{
    size_t m = 0;
    while (m < len && line[m] >= 'A' && line[m] <= 'Z') m++;
    if (m == 0 || m >= 16 || m == len || line[m] != ' ') return 0;
    size_t t = m + 1, te = t;
    while (te < len && line[te] != ' ') te++;
    if (te == t || te == len) return 0;
    const char *v = line + te + 1;
    size_t vlen = len - te - 1;
    if (!fz_is(v, vlen, "HTTP/1.0") && !fz_is(v, vlen, "HTTP/1.1")) return 0;
    *head = fz_is(line, m, "HEAD");
    for (size_t i = t; i < te; i++) {
        if ((unsigned char)line[i] <= ' ' || (unsigned char)line[i] >= 0x7f) return 400;
    }
    if (!*head && !fz_is(line, m, "GET")) return 405;
    const char *path = line + t;
    const char *q = memchr(path, '?', te - t);
    size_t plen = q != NULL ? (size_t)(q - path) : te - t;
    if (fz_is(path, plen, "/") || fz_is(path, plen, "/metrics") || fz_is(path, plen, "/latency") ||
        fz_is(path, plen, "/healthz"))
        return 200;
    return 404;
}
