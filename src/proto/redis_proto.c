/*
 * redis_proto.c - redis_proto, the redis protocol's proto_ops (proto.h): parser state reset/free,
 * the proxy's own error replies, the health probe, the token helpers the parsers share, and the
 * RESP pieces of the replies the proxy builds in a text buffer (common/textbuf.h).
 *
 * Threads: const ops and pure functions; any worker, on its own parse_state and msgs.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/redis.h"
#include "proto/redis_cmd.h"
#include "proto/redis_declared.h"

long redis_line(const uint8_t *buf, size_t len, size_t max)
{
    /* the CR may be at index max - 2 at the latest, its LF right after */
    size_t lim = len < max - 1 ? len : max - 1;
    const uint8_t *cr = memchr(buf, '\r', lim);
    if (cr == NULL) return len >= max - 1 ? REDIS_LINE_BAD : REDIS_LINE_AGAIN;
    size_t i = (size_t)(cr - buf);
    if (i + 1 >= len) return REDIS_LINE_AGAIN;
    return buf[i + 1] == '\n' ? (long)i : REDIS_LINE_BAD;
}

bool redis_parse_int(const uint8_t *p, size_t n, int64_t *out)
{
    bool neg = false;
    if (n > 0 && p[0] == '-') {
        neg = true;
        p++;
        n--;
    }
    if (n == 0 || n > 19 || p[0] < '0' || p[0] > '9') return false;
    if (p[0] == '0' && (n > 1 || neg)) return false; /* "01", "-0" */
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        v = v * 10 + (uint64_t)(p[i] - '0'); /* 19 digits fit in uint64 */
    }
    if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0)) return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

bool redis_parse_timeout(const uint8_t *p, size_t n, uint32_t unit_ms, uint32_t *ms)
{
    char text[REDIS_MAX_TIMEOUT_LEN + 1];
    if (n == 0 || n > REDIS_MAX_TIMEOUT_LEN) return false;
    for (size_t i = 0; i < n; i++) { /* digits, sign, point and exponent only: no "inf", "0x" */
        uint8_t c = p[i];
        bool ok = (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
        if (!ok) return false;
        text[i] = (char)c;
    }
    text[n] = '\0';
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (end != text + n || errno == ERANGE || !(v >= 0.0)) return false;
    double u = v * (double)unit_ms;
    if (u == 0.0 || u >= (double)MSG_BLOCK_FOREVER) {
        *ms = MSG_BLOCK_FOREVER;
        return true;
    }
    uint32_t r = (uint32_t)u;
    *ms = (double)r < u ? r + 1 : r; /* rounded up: 0.0001 s still waits */
    return true;
}

/* (redis.h) Control bytes of mid (CR, LF, NUL, ...) become spaces, so that they cannot end or
 * split the reply line. */
size_t redis_reply_line(char *buf, size_t size, const char *pre, const uint8_t *mid,
                               size_t mid_len, const char *post, bool lower)
{
    size_t pl = strlen(pre), ql = strlen(post);
    if (size < pl + ql) return 0;
    if (mid_len > size - pl - ql) mid_len = size - pl - ql;
    memcpy(buf, pre, pl);
    for (size_t i = 0; i < mid_len; i++) {
        uint8_t c = mid[i];
        if (c < 0x20 || c == 0x7f) c = ' ';
        else if (lower && c >= 'A' && c <= 'Z') c = (uint8_t)(c + ('a' - 'A'));
        buf[pl + i] = (char)c;
    }
    memcpy(buf + pl + mid_len, post, ql);
    return pl + mid_len + ql;
}

size_t redis_reject_reply(const struct msg *req, char *buf, size_t size)
{
    size_t n = req->name != NULL ? req->name_len : 0;
    if (n > REDIS_NAME_PREFIX) n = REDIS_NAME_PREFIX;
    if (req->reject == REJECT_ARITY)
        return redis_reply_line(buf, size, "-ERR wrong number of arguments for '", req->name, n,
                                "' command\r\n", true);
    size_t len = redis_reply_line(buf, size, "-ERR unsupported command '", req->name, n, "'\r\n", true);
    if (req->reject_reason == NULL || len < 2) return len;
    /* "... 'xread' <reason>\r\n": the reason is the proxy's own static text */
    size_t r = strlen(req->reject_reason);
    if (len + 1 + r > size) return len;
    buf[len - 2] = ' ';
    memcpy(buf + len - 1, req->reject_reason, r);
    memcpy(buf + len - 1 + r, "\r\n", 2);
    return len + 1 + r;
}

static int redis_refused_bucket(const struct msg *req)
{
    if (req->reject != REJECT_UNSUPPORTED) return -1;
    int i = req->name != NULL ? redis_refused_lookup(req->name, req->name_len) : -1;
    return i >= 0 ? i : REDIS_NREFUSED;
}

static size_t redis_error_reply(const struct msg *req, int err, char *buf, size_t size)
{
    (void)req; /* the same for every request */
    char tmp[128];
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    const char *text = strerror_r(err, tmp, sizeof(tmp));
#else
    const char *text = tmp;
    if (strerror_r(err, tmp, sizeof(tmp)) != 0) snprintf(tmp, sizeof(tmp), "Unknown error %d", err);
#endif
    return redis_reply_line(buf, size, "-ERR ", (const uint8_t *)text, strlen(text), "\r\n", false);
}

/* "-ERR Protocol error: <why>", the parser's text byte for byte as redis writes its own: after
 * "got" in "expected '$', got 'X'" any byte but CR and LF, which show as spaces (here too). */
static size_t redis_protocol_error_reply(const char *why, char *buf, size_t size)
{
    static const char pre[] = "-ERR Protocol error: ";
    size_t pl = sizeof(pre) - 1, n = strlen(why);
    if (size < pl + 2) return 0;
    if (n > size - pl - 2) n = size - pl - 2;
    memcpy(buf, pre, pl);
    for (size_t i = 0; i < n; i++) buf[pl + i] = why[i] == '\r' || why[i] == '\n' ? ' ' : why[i];
    memcpy(buf + pl + n, "\r\n", 2);
    return pl + n + 2;
}

void resp_add_bulk(struct textbuf *t, const void *data, size_t n)
{
    textbuf_addf(t, "$%zu\r\n", n);
    textbuf_add(t, data, n);
    textbuf_add(t, "\r\n", 2);
}

void resp_add_text(struct textbuf *t, uint8_t variant, const void *data, size_t n)
{
    if (variant == REDIS_RESP3) {
        textbuf_addf(t, "=%zu\r\ntxt:", n + 4);
        textbuf_add(t, data, n);
        textbuf_add(t, "\r\n", 2);
        return;
    }
    resp_add_bulk(t, data, n);
}

void resp_add_null(struct textbuf *t, uint8_t variant)
{
    textbuf_adds(t, variant == REDIS_RESP3 ? "_\r\n" : "$-1\r\n");
}

const struct proto_ops redis_proto = {
    .name = "redis",
    .parse_req = redis_parse_req,
    .parse_rsp = redis_parse_rsp,
    .parse_opts = redis_parse_opts,
    .parse_table_new = redis_declared_new,
    .parse_table_free = redis_declared_free,
    .conf_check = redis_declared_check,
    .fragment = redis_fragment,
    .coalesce = redis_coalesce,
    .reject_reply = redis_reject_reply,
    .refused_names = redis_refused_names,
    .nrefused = REDIS_NREFUSED,
    .refused_bucket = redis_refused_bucket,
    .error_reply = redis_error_reply,
    .protocol_error_reply = redis_protocol_error_reply,
    .session_init = redis_session_init,
    .session_free = redis_session_free,
    .local = redis_local,
    .list_filter = redis_list_filter,
    .client_line = redis_client_line,
    .list_reply = redis_list_reply,
    .server_setup = redis_server_setup,
    .setup_check = redis_setup_check,
    .redirect_target = redis_redirect_target,
    .asking = redis_asking,
    .probe_request = "*1\r\n$4\r\nPING\r\n",
    .probe_alive = redis_probe_alive,
    .max_clients_reply = "-ERR max number of clients reached\r\n",
    .txn_reply = redis_txn_reply,
    .txn_clean_request = "*1\r\n$7\r\nUNWATCH\r\n",
    .pubsub = &redis_pubsub,
};
