/*
 * manage_input.c - a manage client's lines, from the bytes read to the replies (see
 * manage_input.h).
 *
 * Threads: the stats thread only.
 */
#include "config.h"
#include "manage/manage_input.h"

#include <string.h>

void manage_input_received(struct manage_input *in, size_t n)
{
    in->got_input = true;
    in->inlen += n;
}

bool manage_input_has_line(const struct manage_input *in)
{
    return memchr(in->in, '\n', in->inlen) != NULL;
}

void manage_input_silent(struct manage_ctx *ctx, struct manage_input *in, struct textbuf *out)
{
    manage_render_status(ctx, out, false);
    textbuf_adds(out, "\r\n");
    in->close_after = true;
}

/* One line (its line end removed): an HTTP header or the blank line ending them, an HTTP request
 * line, or a command. */
static void manage_input_line(struct manage_ctx *ctx, struct manage_input *in, const char *line, size_t len,
                              struct textbuf *out)
{
    if (in->http) {
        if (len == 0) {
            manage_http_respond(ctx, &in->http_req, out);
            in->close_after = true;
        } else if (++in->http_headers > MANAGE_HTTP_MAX_HEADERS) {
            manage_http_error(&in->http_req, out, 431, "Request Header Fields Too Large");
            in->close_after = true;
        }
        return;
    }
    if (manage_http_request_line(line, len, &in->http_req)) {
        in->http = true;
        return;
    }
    enum manage_rc rc = manage_exec(ctx, &in->sess, line, len, out);
    if (rc == MANAGE_QUIT) {
        in->close_after = true;
    } else if (rc == MANAGE_ERROR && ++in->errors >= MANAGE_MAX_ERRORS) {
        textbuf_adds(out, "ERR: too many errors, closing\r\n");
        in->close_after = true;
    }
}

bool manage_input_step(struct manage_ctx *ctx, struct manage_input *in, struct textbuf *out)
{
    char *nl = memchr(in->in, '\n', in->inlen);
    if (nl == NULL) {
        if (in->inlen < sizeof(in->in)) return false;
        if (in->http) manage_http_error(&in->http_req, out, 431, "Request Header Fields Too Large");
        else textbuf_addf(out, "ERR: line too long (the limit is %d bytes)\r\n", MANAGE_LINE_MAX);
        in->inlen = 0;
        in->close_after = true;
        return true;
    }
    size_t len = (size_t)(nl - in->in);
    size_t used = len + 1;
    if (len > 0 && in->in[len - 1] == '\r') len--;
    manage_input_line(ctx, in, in->in, len, out);
    memmove(in->in, in->in + used, in->inlen - used);
    in->inlen -= used;
    return true;
}

void manage_input_eof(struct manage_ctx *ctx, struct manage_input *in, struct textbuf *out)
{
    if (in->inlen > 0 && !in->close_after) {
        size_t len = in->inlen;
        if (in->in[len - 1] == '\r') len--;
        in->inlen = 0;
        manage_input_line(ctx, in, in->in, len, out);
    }
    if (!in->got_input) manage_input_silent(ctx, in, out);
    else if (in->http && out->len == 0) manage_http_respond(ctx, &in->http_req, out);
    in->close_after = true;
}
