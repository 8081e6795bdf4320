/*
 * manage_input.h - one manage client's input, without its socket: the bytes read go into a
 * bounded line buffer, and each complete line runs (a command, or an HTTP request line and then
 * its headers), its reply appended to an output buffer. manage_conn.c owns the socket, the events
 * and the writing of the replies (one reply at a time); the fuzz targets (tests/fuzz/
 * fuzz_manage_line.c, fuzz_manage_http.c) drive this with reads of their own. Internal to the
 * manage port: manage_conn.h has the limits' story.
 *
 * Threads: the stats thread (the fuzzer's thread in the fuzz targets).
 */
#ifndef NC_MANAGE_INPUT_H
#define NC_MANAGE_INPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "manage/manage_cmd.h"
#include "manage/manage_http.h"

#define MANAGE_LINE_MAX 4096          /* bytes of a line, its CRLF or LF included */
#define MANAGE_MAX_ERRORS 16          /* error replies before the connection is closed */
#define MANAGE_HTTP_MAX_HEADERS 100   /* header lines after an HTTP request line */

struct manage_input {
    char in[MANAGE_LINE_MAX];
    size_t inlen;
    bool got_input;         /* any byte ever received */
    bool close_after;       /* close once the pending reply is written */
    bool http;              /* an HTTP request line was seen: reading its headers */
    unsigned http_headers;
    struct manage_http_req http_req;
    unsigned errors;
    struct manage_session sess;
};

/* Where the next read goes: *room bytes there (0: full of lines still to run). */
static inline char *manage_input_room(struct manage_input *in, size_t *room)
{
    *room = sizeof(in->in) - in->inlen;
    return in->in + in->inlen;
}

/* n (> 0) bytes were read into the room. */
void manage_input_received(struct manage_input *in, size_t n);

/* Whether a complete line is waiting. */
bool manage_input_has_line(const struct manage_input *in);

/* Runs the next complete line, appending its reply (maybe none) to out; when the buffer is full
 * without a line end, appends the too-long error instead, drops the bytes and sets close_after.
 * Returns false (and does nothing) when more bytes are needed. */
bool manage_input_step(struct manage_ctx *ctx, struct manage_input *in, struct textbuf *out);

/* The client closed its side: runs a last unterminated line (unless closing already), then gives
 * a client that never sent a byte the silent client's JSON, and an HTTP request without its blank
 * line its response (when nothing else was answered). Sets close_after. */
void manage_input_eof(struct manage_ctx *ctx, struct manage_input *in, struct textbuf *out);

/* A client that sent nothing for a while: the JSON of the last -i interval; sets close_after. */
void manage_input_silent(struct manage_ctx *ctx, struct manage_input *in, struct textbuf *out);

#endif
