/*
 * fuzz_check_text.h - what a manage port reply must look like, for the manage fuzz targets
 * (fuzz_manage_line, fuzz_manage_http): text replies (CRLF lines of UTF-8 text, a JSON document
 * as one line that parses), HTTP responses (status line, headers, Content-Length that is the
 * body's, a body of its type: JSON, Prometheus text, text lines), and a reference reading of an
 * HTTP request line, written from the spec in manage_http.h rather than from its code, that
 * says which status the response must have. A failed check aborts (fuzz_check.h).
 *
 * Threads: the fuzzer's only.
 */
#ifndef NC_FUZZ_CHECK_TEXT_H
#define NC_FUZZ_CHECK_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Whether p[0..len) is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF). */
bool fz_utf8_valid(const char *p, size_t len);

/* A command reply: one or more lines of UTF-8 text without control bytes, each ending in CRLF;
 * one that starts with '{' is a single line holding one JSON document. */
void fz_check_cmd_reply(const char *p, size_t len);

/* An HTTP response, whole: "HTTP/1.1 <code> <reason>" CRLF, headers, a blank line, and a body of
 * Content-Length bytes of its Content-Type (none for a HEAD request). Returns the code. */
int fz_check_http_response(const char *p, size_t len, bool head);

/* The reference reading of a line as an HTTP request line: 0 when it is not one ("<METHOD>
 * <target> HTTP/1.0|1" with single spaces, METHOD of 1..15 capital letters, a non-empty target
 * without spaces), else the status its response must have in the fuzz fixture (every pool has a
 * live server): 400 for a target holding a byte that is not visible ASCII, 405 for a method other
 * than GET and HEAD, 200 for "/", "/metrics", "/latency" and
 * "/healthz" (the target up to its '?', compared as bytes), else 404. *head: whether it is HEAD. */
int fz_http_ref_status(const char *line, size_t len, bool *head);

#endif
