/*
 * stats_buf.h - a growable byte buffer with a size limit, for rendering replies (JSON, Prometheus
 * text, manage-port lines). Appends never fail loudly: on allocation failure or when the limit
 * would be passed the buffer is marked failed and further appends do nothing; the caller checks
 * stats_buf_failed() once at the end.
 *
 * Threads: a buffer belongs to the thread that uses it (the stats thread, or a unit test).
 */
#ifndef NC_STATS_BUF_H
#define NC_STATS_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stats_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t limit;   /* len never exceeds it */
    bool failed;
};

/* An empty buffer that may grow up to limit bytes. */
void stats_buf_init(struct stats_buf *b, size_t limit);
void stats_buf_deinit(struct stats_buf *b);
/* Empties it (keeps the memory, clears the failure). */
void stats_buf_reset(struct stats_buf *b);
static inline bool stats_buf_failed(const struct stats_buf *b) { return b->failed; }

void stats_buf_add(struct stats_buf *b, const void *data, size_t len);
void stats_buf_adds(struct stats_buf *b, const char *s);
void stats_buf_addc(struct stats_buf *b, char c);
void stats_buf_addf(struct stats_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void stats_buf_add_u64(struct stats_buf *b, uint64_t v);
void stats_buf_add_i64(struct stats_buf *b, int64_t v);

/* Appends s (len bytes) as a JSON string, quotes included: ", \ and control characters escaped,
 * bytes that are not valid UTF-8 replaced by U+FFFD. */
void stats_buf_add_json_str(struct stats_buf *b, const char *s, size_t len);
/* Appends s as the inside of a quoted string for text lines: printable ASCII as is, except " and
 * \ (backslashed); every other byte as \xHH. */
void stats_buf_add_quoted(struct stats_buf *b, const uint8_t *s, size_t len);

#endif
