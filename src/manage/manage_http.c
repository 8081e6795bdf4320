/*
 * manage_http.c - HTTP request lines and responses of the manage port (see manage_http.h).
 *
 * Threads: the stats thread.
 */
#include "config.h"
#include "manage/manage_http.h"

#include <string.h>

#include "manage/manage_health.h"

#define MANAGE_HTTP_JSON "application/json"
#define MANAGE_HTTP_PROM "text/plain; version=0.0.4; charset=utf-8"
#define MANAGE_HTTP_TEXT "text/plain; charset=utf-8"

bool manage_http_request_line(const char *line, size_t len, struct manage_http_req *req)
{
    const char *sp1 = memchr(line, ' ', len);
    if (sp1 == NULL || sp1 == line) return false;
    size_t mlen = (size_t)(sp1 - line);
    const char *target = sp1 + 1;
    size_t rest = len - mlen - 1;
    const char *sp2 = memchr(target, ' ', rest);
    if (sp2 == NULL || sp2 == target) return false;
    size_t tlen = (size_t)(sp2 - target);
    const char *version = sp2 + 1;
    size_t vlen = rest - tlen - 1;
    if (vlen != 8 || memcmp(version, "HTTP/1.", 7) != 0 || (version[7] != '0' && version[7] != '1'))
        return false;
    if (mlen >= sizeof(req->method)) return false;
    for (size_t i = 0; i < mlen; i++) {
        if (line[i] < 'A' || line[i] > 'Z') return false;
    }
    memcpy(req->method, line, mlen);
    req->method[mlen] = '\0';
    req->bad = false;
    for (size_t i = 0; i < tlen; i++) {
        unsigned char c = (unsigned char)target[i];
        if (c < 0x21 || c > 0x7e) req->bad = true; /* a byte a target may not hold */
    }
    const char *q = memchr(target, '?', tlen);
    if (q != NULL) tlen = (size_t)(q - target);
    req->truncated = tlen >= sizeof(req->path);
    if (req->truncated) tlen = sizeof(req->path) - 1;
    memcpy(req->path, target, tlen);
    req->path[tlen] = '\0';
    return true;
}

static void manage_http_head(struct textbuf *out, int status, const char *reason, const char *type,
                             size_t length, const char *extra)
{
    textbuf_addf(out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
                        "Cache-Control: no-cache\r\nConnection: close\r\n\r\n",
                   status, reason, type, length, extra ? extra : "");
}

/* A response whose body is its reason, one line; the answer to a HEAD request has no body. */
static void manage_http_text(struct textbuf *out, int status, const char *reason, const char *extra,
                             bool head)
{
    size_t len = strlen(reason) + 1;
    manage_http_head(out, status, reason, MANAGE_HTTP_TEXT, len, extra);
    if (!head) textbuf_addf(out, "%s\n", reason);
}

void manage_http_error(const struct manage_http_req *req, struct textbuf *out, int status,
                       const char *reason)
{
    manage_http_text(out, status, reason, NULL, req != NULL && strcmp(req->method, "HEAD") == 0);
}

/* 200 when every pool has a live server, else 503 naming the pools that have none. */
static void manage_http_health(struct manage_ctx *ctx, bool head, struct textbuf *out)
{
    struct textbuf body;
    textbuf_init(&body, out->limit);
    bool ok = manage_health_render(ctx->src->rt, &body);
    if (textbuf_failed(&body)) {
        textbuf_deinit(&body);
        manage_http_text(out, 500, "Internal Server Error", NULL, head);
        return;
    }
    manage_http_head(out, ok ? 200 : 503, ok ? "OK" : "Service Unavailable", MANAGE_HTTP_TEXT, body.len, NULL);
    if (!head) textbuf_add(out, body.data, body.len);
    textbuf_deinit(&body);
}

void manage_http_respond(struct manage_ctx *ctx, const struct manage_http_req *req, struct textbuf *out)
{
    bool head = strcmp(req->method, "HEAD") == 0;
    if (req->bad) {
        manage_http_text(out, 400, "Bad Request", NULL, head);
        return;
    }
    if (!head && strcmp(req->method, "GET") != 0) {
        manage_http_text(out, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n", false);
        return;
    }
    if (!req->truncated && strcmp(req->path, "/healthz") == 0) {
        manage_http_health(ctx, head, out);
        return;
    }
    bool metrics = !req->truncated && strcmp(req->path, "/metrics") == 0;
    bool json = !req->truncated && strcmp(req->path, "/") == 0;
    bool latency = !req->truncated && strcmp(req->path, "/latency") == 0;
    if (!metrics && !json && !latency) {
        manage_http_text(out, 404, "Not Found", NULL, head);
        return;
    }
    struct textbuf body;
    textbuf_init(&body, out->limit);
    if (metrics) {
        manage_render_metrics(ctx, &body);
    } else {
        if (latency) manage_render_latency(ctx, &body);
        else manage_render_status(ctx, &body, true);
        textbuf_addc(&body, '\n');
    }
    if (textbuf_failed(&body)) {
        textbuf_deinit(&body);
        manage_http_text(out, 500, "Internal Server Error", NULL, head);
        return;
    }
    manage_http_head(out, 200, "OK", metrics ? MANAGE_HTTP_PROM : MANAGE_HTTP_JSON, body.len, NULL);
    if (!head) textbuf_add(out, body.data, body.len);
    textbuf_deinit(&body);
}
