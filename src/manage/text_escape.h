/*
 * text_escape.h - appending strings to a text buffer (common/textbuf.h) escaped for the manage
 * port's outputs: JSON strings, and quoted strings in text lines (slowlog, Prometheus labels).
 *
 * Threads: a buffer belongs to the thread that uses it (the stats thread, or a unit test).
 */
#ifndef NC_TEXT_ESCAPE_H
#define NC_TEXT_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

#include "common/textbuf.h"

/* Appends s (len bytes) as a JSON string, quotes included: ", \ and control characters escaped,
 * bytes that are not valid UTF-8 replaced by U+FFFD. */
void textbuf_add_json_str(struct textbuf *b, const char *s, size_t len);
/* Appends s as the inside of a quoted string for text lines: printable ASCII as is, except " and
 * \ (backslashed); every other byte as \xHH. */
void textbuf_add_quoted(struct textbuf *b, const uint8_t *s, size_t len);

#endif
