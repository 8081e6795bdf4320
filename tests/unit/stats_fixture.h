/*
 * stats_fixture.h - what the manage unit tests (test_stats_render, test_manage) share: a real
 * config (parsed from YAML text), its runtime, a few worker counter blocks bound to it and the
 * stats_source over them, as the stats thread has.
 *
 * Threads: the test's only (plus any writer threads a test starts itself).
 */
#ifndef NC_TEST_STATS_FIXTURE_H
#define NC_TEST_STATS_FIXTURE_H

#include <stddef.h>

#include "conf/conf.h"
#include "core/route.h"
#include "core/runtime.h"
#include "core/runtime_stats.h"
#include "manage/text_escape.h"
#include "manage/stats_snapshot.h"
#include "stats/stats.h"

#define SFIX_MAX_WORKERS 8

struct sfix {
    struct conf *conf;
    struct runtime *rt;
    struct stats_worker *blocks[SFIX_MAX_WORKERS];
    size_t nworkers;
    struct stats_source src;
};

/* Two pools: "alpha" (redis, ketama, servers s1 s2 s3) and a pool whose name and server names need
 * escaping in JSON and Prometheus. */
extern const char sfix_yaml[];

/* Builds everything from yaml with nworkers blocks; fails the test on error. */
void sfix_init(struct sfix *f, const char *yaml, size_t nworkers);
void sfix_deinit(struct sfix *f);

/* Index of the pool named name (fails the test if absent). */
size_t sfix_pool(const struct sfix *f, const char *name);

/* Worker w's counter block for pool `pool` / its server k (as the worker finds them: through the
 * runtime, by name). */
struct stats_pool_block *sfix_pb(const struct sfix *f, size_t w, const char *pool);
struct stats_server_block *sfix_sb(const struct sfix *f, size_t w, const char *pool, size_t k);

/* A NUL-terminated copy of a buffer's bytes (free() it). */
char *sfix_cstr(const struct textbuf *b);

#endif
