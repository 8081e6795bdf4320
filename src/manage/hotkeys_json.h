/*
 * hotkeys_json.h - the hot keys as the manage port shows them: every worker's window of a pool
 * (stats/stats_hotkeys.h) merged, the `hotkeys` command's JSON, and the share of a pool's hottest
 * key (the only number of them Prometheus gets: no key name leaves by /metrics).
 *
 *   {"window_seconds":3,"sample_every":16,"pools":{"<pool>":{"rate":<sampled keys per second>,
 *    "keys":[{"key":"<key>","len":<its length>,"rate":<requests per second>}, ...]}}}
 *
 * A key is a JSON string of its first HOTKEYS_KEY_MAX bytes; "truncated":true when it is longer
 * ("len" is its full length), and "key_hex" (those bytes in hex) when a byte is not printable
 * ASCII, so that a binary key can be told exactly.
 *
 * Threads: the stats thread (it takes the workers' windows: stats_hotkeys_take).
 */
#ifndef NC_HOTKEYS_JSON_H
#define NC_HOTKEYS_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "common/textbuf.h"
#include "stats/stats_hotkeys.h"

struct runtime;
struct pool_shared;

#define HOTKEYS_SHOW_DEFAULT 10   /* keys per pool `hotkeys` shows */

/* Pool p's hot keys over every worker (nworkers: the length of its wstats), highest rate first,
 * up to max in out; *total_rate: its sampled keys per second. Returns how many, or -ENOMEM. */
long hotkeys_collect(const struct pool_shared *p, size_t nworkers, uint64_t now_usec, struct hotkey *out,
                     size_t max, double *total_rate);
/* The hottest key's rate over the pool's sampled rate (0..1; 0 when nothing was sampled). */
double hotkeys_top_share(const struct pool_shared *p, size_t nworkers, uint64_t now_usec);

/* Appends "<key object>" for one key. */
void hotkeys_json_key(struct textbuf *b, const struct hotkey *k);
/* Appends the whole `hotkeys` document for rt's pools (only: that one pool), max keys each;
 * every: the sampling (-H). Returns 0 or -ENOMEM. */
int hotkeys_json_render(struct textbuf *b, const struct runtime *rt, const struct pool_shared *only, size_t max,
                        uint32_t every, uint64_t now_usec);

#endif
