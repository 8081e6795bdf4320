/*
 * reader_scrub.h - reader_room (proto/reader.h) for the drivers that check a parser: the unit
 * tests' (tests/unit/proto_drv.c) and the fuzzers' (tests/fuzz/fuzz_feed.c). When the reader moves
 * a full buffer's unconsumed tail to a fresh one, the old tail is overwritten once copied and,
 * under ASan, poisoned while a msg keeps the old buffer: a parser that kept a pointer into bytes it
 * had not consumed reads garbage, or is reported. A reference taken here keeps the old buffer
 * alive for that; it is dropped before the parser runs again, so lifetimes stay the core's.
 *
 * Threads: the reader's owner.
 */
#ifndef NC_TEST_READER_SCRUB_H
#define NC_TEST_READER_SCRUB_H

#include <sanitizer/asan_interface.h> /* (gcc's and clang's; without ASan its macros do nothing) */
#include <string.h>

#include "proto/reader.h"

static inline int reader_room_scrub(struct reader *r, struct mbuf_pool *mp, uint8_t **at,
                                    uint32_t *room)
{
    struct mbuf *old = r->buf;
    uint32_t pos = r->pos;
    /* the chunk a pool that keeps them hands out next may have been poisoned in an earlier life */
    if (mp->free != NULL) ASAN_UNPOISON_MEMORY_REGION(mp->free->data, mp->free->cap);
    if (old != NULL) mbuf_ref(old);
    int rc = reader_room(r, mp, at, room);
    if (old == NULL) return rc;
    if (r->buf != old) {
        memset(old->data + pos, '#', old->len - pos);
        if (old->refs > 1) ASAN_POISON_MEMORY_REGION(old->data + pos, old->len - pos);
    }
    mbuf_unref(old);
    return rc;
}

#endif
