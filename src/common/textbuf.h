/*
 * textbuf.h - a growable byte buffer with an optional size limit: the one every text the process
 * builds goes into (the manage port's JSON, Prometheus text and lines; the replies a protocol
 * composes itself, proto/). Appends never fail loudly: on allocation failure or when the limit
 * would be passed the buffer is marked failed and further appends do nothing; the caller checks
 * textbuf_failed() once at the end.
 *
 * A zeroed struct textbuf is an empty buffer without a limit (limit 0 means none).
 *
 * Threads: a buffer belongs to the thread that uses it.
 */
#ifndef NC_TEXTBUF_H
#define NC_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct textbuf {
    char *data;
    size_t len;
    size_t cap;
    size_t limit;   /* len never exceeds it (0: no limit) */
    bool failed;
};

/* An empty buffer that may grow up to limit bytes (0: no limit). */
void textbuf_init(struct textbuf *b, size_t limit);
/* Frees the memory; the buffer is empty again (its limit kept). */
void textbuf_deinit(struct textbuf *b);
/* Empties it (keeps the memory, clears the failure). */
void textbuf_reset(struct textbuf *b);
static inline bool textbuf_failed(const struct textbuf *b) { return b->failed; }

void textbuf_add(struct textbuf *b, const void *data, size_t len);
void textbuf_adds(struct textbuf *b, const char *s);
void textbuf_addc(struct textbuf *b, char c);
void textbuf_addf(struct textbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void textbuf_add_u64(struct textbuf *b, uint64_t v);
void textbuf_add_i64(struct textbuf *b, int64_t v);

#endif
