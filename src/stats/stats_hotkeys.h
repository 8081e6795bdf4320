/*
 * stats_hotkeys.h - hot keys: each worker samples the keys of its requests per pool into an
 * approximate top list, and the stats thread reads every worker's list of a pool and merges them
 * (the manage port's `hotkeys`, Prometheus' share of the hottest key). notes/hotkeys.md.
 *
 * Per worker and pool (struct stats_hotkeys, made on the first sample): a count-min sketch with
 * conservative update counts the sampled keys of the current epoch (HOTKEYS_EPOCH_USEC); a table of
 * HOTKEYS_TOP candidates holds the keys with the highest estimates. When an epoch ends (seen at a
 * sample), its candidates join a ring of the last HOTKEYS_EPOCHS epochs, the sketch is cleared,
 * and the ring's lists, merged, are published: the window.
 *
 * Keys are bytes: the first HOTKEYS_KEY_MAX are kept, with the full length and a 64-bit hash of
 * the whole key, which is its identity (two keys longer than the prefix that share it are still
 * two keys).
 *
 * Threads: a struct stats_hotkeys is written by its worker only (no lock, no allocation but the
 * first). The published window goes through a triple buffer: the worker fills its own buffer and
 * swaps it with the middle one (an atomic exchange); the stats thread swaps the middle one with its
 * own when it is newer. Each buffer belongs to one side at a time, so neither waits. The pool
 * block's pointer to it is stored with release and loaded with acquire.
 */
#ifndef NC_STATS_HOTKEYS_H
#define NC_STATS_HOTKEYS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOTKEYS_KEY_MAX 128           /* key bytes kept */
#define HOTKEYS_TOP 32                /* candidates per worker and pool: the most `hotkeys` shows */
#define HOTKEYS_EPOCH_USEC 1000000u   /* an epoch */
#define HOTKEYS_EPOCHS 3              /* the window: the last 3 epochs */
#define HOTKEYS_STALE_USEC 5000000u   /* a window that ended longer ago is not shown */
#define HOTKEYS_REQ_KEYS 16           /* keys of one sampled request counted (multi-key commands) */
#define HOTKEYS_EVERY_DEFAULT 16      /* -H: a request in 16 is sampled */
#define HOTKEYS_EVERY_MAX 1048576
#define HOTKEYS_CMS_DEPTH 4
#define HOTKEYS_CMS_WIDTH 512         /* a power of two */

struct hotkeys_entry {
    uint64_t hash;                    /* of the whole key: its identity */
    uint32_t len;                     /* the key's full length */
    uint32_t count;                   /* samples */
    uint8_t key[HOTKEYS_KEY_MAX];     /* its first min(len, HOTKEYS_KEY_MAX) bytes */
};

/* A list of keys over a span of time: an epoch's candidates, or a published window (on cache lines
 * of its own: the buffers change hands between the threads). */
struct hotkeys_list {
    _Alignas(64) uint64_t start_usec, end_usec; /* monotonic (nc_usec_now) */
    uint64_t total;                   /* keys sampled in it */
    uint32_t every;                   /* the sampling interval they were taken with */
    uint32_t n;
    struct hotkeys_entry e[HOTKEYS_TOP]; /* a window: highest count first */
};

struct stats_hotkeys {
    /* the worker's */
    uint32_t every;                   /* a request in `every` is sampled (on average) */
    uint32_t rng;                     /* xorshift state: the gaps between samples */
    uint64_t cand_hash[HOTKEYS_TOP];  /* the current epoch's candidates (their keys: ring[cur].e),
                                       * apart so that a lookup reads 4 cache lines */
    uint32_t cand_count[HOTKEYS_TOP];
    uint32_t min_count, min_at;       /* the lowest candidate, once the table is full */
    uint32_t cms[HOTKEYS_CMS_DEPTH][HOTKEYS_CMS_WIDTH];
    struct hotkeys_list ring[HOTKEYS_EPOCHS + 1]; /* the current epoch (cur) and the last ones */
    uint32_t cur, nclosed;
    struct hotkeys_list *back;        /* the buffer it fills next */
    /* shared: the buffer last published (its address | 1 while the reader has not taken it), and
     * the stats thread's buffer, on a line that the worker writes once per epoch */
    _Alignas(64) _Atomic uintptr_t middle;
    struct hotkeys_list *front;
    struct hotkeys_list bufs[3];
};

/* One key of a merged list (the stats thread's). */
struct hotkey {
    uint64_t hash;
    uint32_t len;
    double rate;                      /* estimated requests per second */
    uint8_t key[HOTKEYS_KEY_MAX];
};

/* Worker: a new, empty set that samples one request in `every` (>= 1); NULL: out of memory. */
struct stats_hotkeys *stats_hotkeys_create(uint32_t every, uint32_t seed);
void stats_hotkeys_destroy(struct stats_hotkeys *h);

/* Worker: counts a sampled key at now_usec (an epoch that has ended is published first). */
void stats_hotkeys_add(struct stats_hotkeys *h, const uint8_t *key, size_t len, uint64_t now_usec);
/* Worker: the requests until the next sample, between every/2 and every*3/2 (never a fixed
 * stride, which a client sending the same few keys in turn would alias with). */
uint32_t stats_hotkeys_gap(struct stats_hotkeys *h);
/* Worker: publishes the window now (stats_hotkeys_add does when an epoch ends). */
void stats_hotkeys_rotate(struct stats_hotkeys *h, uint64_t now_usec);

/* Stats thread: the newest window h published (the same one again when none is newer). */
const struct hotkeys_list *stats_hotkeys_take(struct stats_hotkeys *h);

/*
 * Stats thread: merges windows (one per worker, NULL ones skipped) into out (max entries), the same
 * key's rates summed, highest rate first; a window that ended more than HOTKEYS_STALE_USEC before
 * now_usec counts for nothing, and one whose worker got no sample since it ended is spread over the
 * time since. *total_rate: the sampled keys per second of all of them. Returns the entries written,
 * or -ENOMEM.
 */
long stats_hotkeys_merge(const struct hotkeys_list *const *lists, size_t n, uint64_t now_usec,
                         struct hotkey *out, size_t max, double *total_rate);

/* The 64-bit hash of a key the lists use (any thread). */
uint64_t stats_hotkeys_hash(const uint8_t *key, size_t len);

#endif
