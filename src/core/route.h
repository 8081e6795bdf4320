/*
 * route.h - routing: the health of a pool's servers (shared by every worker) and the routing
 * tables built from it, and the hash of a key (hash_tag applied).
 *
 * Routing tables are immutable and refcounted (struct route). A pool publishes a new one when its
 * live set changes (a server ejected or re-admitted) or its topology source publishes a new server
 * set (topo/topology.h): under the pool's mutex it builds the table,
 * swaps it in and bumps `version`. A worker keeps a reference to the table it routes with and
 * checks `version` (one relaxed load) per request (core/pool.h); only when it changed does it take
 * the mutex to pick up the new table. So every worker routes with the same live set, except for
 * the instant a change propagates, and no lock is taken on the request path. The manage port's
 * find_key and the master's prober use the same tables and health.
 *
 * Threads: any; health through atomics, tables under the pool's mutex (never on the request path).
 */
#ifndef NC_ROUTE_H
#define NC_ROUTE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ratelimit.h"
#include "core/runtime.h"
#include "hash/dist.h"
#include "topo/topology.h"

/* An immutable routing table with its reference count: the key -> server table, and the server
 * set it was built from (where each server is now). */
struct route {
    atomic_uint refs;
    struct dist *dist;
    struct topo_set *set;            /* a reference */
    uint64_t version;
    bool any_hold;                   /* a server of set holds its writes (topo_server.hold) */
};

/* Liveness of one server, shared by all workers (auto_eject_hosts). */
struct server_health {
    atomic_uint failures;            /* consecutive failures seen by any worker */
    _Atomic uint64_t failing_since;  /* monotonic usec of the first of them (0: none) */
    _Atomic uint64_t ejected_until;  /* monotonic usec; 0 = in the distribution */
    _Atomic uint64_t ejected_at;     /* wall-clock usec of the last ejection (stats) */
    atomic_bool probing;             /* the master's prober is trying it */
    struct nc_ratelimit fail_log;    /* its notice lines on failures: connect, timeout, lost */
    struct nc_ratelimit state_log;   /* its lines on ejections and returns */
};

/* How many ejection and return lines of one server a log interval may hold. */
#define SERVER_STATE_LOG_BURST 10

/* Whether a notice line about a server's failures or state (limiter rl of its health) may be
 * written now; then *suppressed is the number of lines left out before it. */
bool server_log_allowed(struct nc_ratelimit *rl, uint64_t *suppressed);

/* Builds the first table of p (before p is shared), from p->set. NULL when out of memory. */
struct route *route_build_first(struct pool_shared *p);

/* A topology source published a new set of p's servers (struct topo_sink.publish; arg: p, set
 * taken over): the routing table is rebuilt from it and published. Servers keep their index and
 * name; one whose address changed has its connections moved there by every worker (pool.c). */
void pool_publish_set(void *arg, struct topo_set *set);

/* The current routing table of p, with a reference for the caller. */
struct route *pool_route_get(struct pool_shared *p);
void route_put(struct route *r);

/* The hash of a key in this pool (hash_tag applied). */
uint32_t pool_key_hash(const struct pool_shared *p, const uint8_t *key, size_t len);
/* The server index for a key with the pool's current table (takes the mutex: for the manage
 * port and tests; workers route through their cached table), or DIST_NONE. */
uint32_t pool_route(struct pool_shared *p, const uint8_t *key, size_t len);

/*
 * Health. A failure of server s (connect error, reset, EOF with requests outstanding, timeout, a
 * reply saying the server is unusable): with auto_eject_hosts, the server_failure_limit-th
 * consecutive one ejects it for server_retry_timeout ms and publishes a new route. Returns true
 * when this call ejected it. A good reply resets the count.
 */
bool pool_server_failed(struct pool_shared *p, uint32_t s, uint64_t now_usec);
static inline void pool_server_ok(struct pool_shared *p, uint32_t s)
{
    if (atomic_load_explicit(&p->health[s].failures, memory_order_relaxed) != 0) {
        atomic_store_explicit(&p->health[s].failures, 0, memory_order_relaxed);
        atomic_store_explicit(&p->health[s].failing_since, 0, memory_order_relaxed);
    }
}
bool pool_server_ejected(const struct pool_shared *p, uint32_t s);
/* Puts an ejected server back (it answered a probe) and publishes a new route. */
void pool_server_readmit(struct pool_shared *p, uint32_t s);
/* Keeps s ejected for another retry period (its probe failed). */
void pool_server_reeject(struct pool_shared *p, uint32_t s, uint64_t now_usec);

#endif
