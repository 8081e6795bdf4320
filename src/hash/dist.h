/*
 * dist.h - key distributions of twemproxy 0.5.0: ketama, modula, random; and the slot
 * table of a Redis Cluster pool.
 *
 * A struct dist is built once from a pool's servers and their live set and is immutable afterwards:
 * any number of threads may call dist_dispatch() on it at the same time. When the live set changes
 * (ejection, return) or the config is reloaded, a new one is built and the old one is destroyed
 * once nobody uses it. That protocol is the caller's: core/route.h wraps each dist in a refcounted
 * routing table, publishes it under the pool's mutex with a version counter, and lets workers
 * check that version with one relaxed load per request.
 *
 * Threads: build/destroy by one thread; dispatch from any thread.
 */
#ifndef NC_DIST_H
#define NC_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The config's distributions (DIST_COUNT of them, named), then the slot table of a Redis Cluster
 * pool, which its topology source builds (dist_build_slots). */
enum dist_type { DIST_KETAMA, DIST_MODULA, DIST_RANDOM, DIST_COUNT, DIST_SLOTS = DIST_COUNT };

#define DIST_NONE UINT32_MAX /* dispatch result when no server is live */

/* Returns the dist_type for a config name of len bytes, or -1 if unknown. */
int dist_type_from_name(const char *name, size_t len);
const char *dist_type_name(enum dist_type type);

struct dist_server {
    /* ketama: the configured name if any, else "host:port" ("host" alone when port is 11211). */
    const char *ketama_name;
    /* modula ordering: the configured name if any, else "host:port:weight". */
    const char *sort_name;
    uint32_t weight; /* >= 1 */
};

struct dist;

/*
 * Builds the distribution over servers[0..n). live[i] false leaves server i out (NULL: all live).
 * Returns NULL on allocation failure. The strings are not kept after the call.
 */
struct dist *dist_build(enum dist_type type, const struct dist_server *servers, size_t n,
                        const bool *live);
void dist_destroy(struct dist *d);

#define DIST_NSLOTS 16384u /* Redis Cluster's hash slots: a key hash's low 14 bits */

/* A slot table: owner[s] is the index of the server that holds slot s, or DIST_NONE. Returns
 * NULL on allocation failure. The array is not kept. */
struct dist *dist_build_slots(const uint32_t *owner);

/*
 * The index (into the servers array given to dist_build) of the server for this key hash, or
 * DIST_NONE when no server is live. DIST_RANDOM ignores the hash.
 */
uint32_t dist_dispatch(const struct dist *d, uint32_t hash);
/* What kind of table d is. */
enum dist_type dist_type_of(const struct dist *d);

#endif
