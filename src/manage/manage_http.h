/*
 * manage_http.h - the little HTTP the manage port speaks, so people can curl it and Prometheus can
 * scrape it: "GET /metrics" (Prometheus text format), "GET /" (the status JSON), "GET /latency"
 * (the status latency JSON) and "GET /healthz" (200 or 503, manage_health.h), HEAD too (the
 * headers of the GET, without a body, whatever the status); every response closes the connection.
 * Anything else gets 404 or 405 (the port is read-only), or 400 when the target holds a byte that
 * is not visible ASCII (RFC 9112: the path is not cut at a NUL, for one).
 *
 * Threads: the stats thread.
 */
#ifndef NC_MANAGE_HTTP_H
#define NC_MANAGE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "manage/manage_cmd.h"

struct manage_http_req {
    char method[16];
    char path[256];   /* without the query string; truncated paths are not found */
    bool truncated;
    bool bad;         /* the target holds a byte other than visible ASCII (a NUL, a control
                       * character, a byte >= 0x80): 400 Bad Request */
};

/* Whether line is an HTTP request line ("<METHOD> <target> HTTP/1.x"); fills req if so. */
bool manage_http_request_line(const char *line, size_t len, struct manage_http_req *req);

/* Appends the whole response to req (status line, headers, body). */
void manage_http_respond(struct manage_ctx *ctx, const struct manage_http_req *req, struct textbuf *out);

/* Appends a response with the given status and a one-line text body (errors) to req (NULL: not
 * known); the response to a HEAD request has no body. */
void manage_http_error(const struct manage_http_req *req, struct textbuf *out, int status,
                       const char *reason);

#endif
