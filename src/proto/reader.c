/*
 * reader.c - the read-and-parse loop's cold end (see reader.h): dropping a reader's buffer and
 * partial message, and its parse state.
 *
 * Threads: the owner of the reader.
 */
#include "config.h"
#include "proto/reader.h"

void reader_reset(struct reader *r, struct msg_pool *pp)
{
    if (r->buf != NULL) mbuf_unref(r->buf);
    r->buf = NULL;
    r->pos = 0;
    if (r->msg != NULL) msg_put(pp, r->msg);
    r->msg = NULL;
}

void reader_deinit(struct reader *r, struct msg_pool *pp)
{
    reader_reset(r, pp);
    parse_state_free(&r->ps);
}
