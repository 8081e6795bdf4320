/*
 * runtime.h - what every thread shares for one config generation: the conf, and per pool its
 * protocol, its client count, the health of its servers and its routing table (core/route.h: how
 * they are built, published and read).
 *
 * Each pool's servers come from its topology source (topo/topology.h): the set it published last
 * and the routing table built from it live here (core/route.h).
 *
 * A runtime is one config generation (1 at start, +1 per reload). It is refcounted: the master
 * holds the current one, each worker holds every generation some of its clients still use, the
 * stats thread holds the one it renders; the last runtime_put() frees it, on whatever thread.
 *
 * Per worker and pool it also holds where that worker counts (stats_pool_block and the server
 * blocks), filled by stats_bind() from the workers' name-keyed stats registries: a pool or server
 * that stays across a reload keeps counting in the same blocks.
 *
 * Threads: built by the master, immutable once published (through an inbox) except the atomics;
 * pools' health and routes are shared by every worker, the stats thread and the master's prober,
 * through atomics and the per-pool mutex only.
 */
#ifndef NC_RUNTIME_H
#define NC_RUNTIME_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/ratelimit.h"
#include "conf/conf.h"
#include "proto/proto.h"

struct stats_pool_block;
struct stats_server_block;
struct route;
struct server_health;
struct nc_ratelimit;
struct transport_ctx;
struct topo_source;
struct topo_source_ops;
struct topo_set;
struct event_base;

/* The client count of a pool name: shared by the generations in which the pool has that name, so
 * that client_connections counts the clients still on an older generation too. */
struct pool_clients {
    atomic_uint refs;
    atomic_long n;
};

/* Who is told after a source published a new set (the master: it wakes every worker, which
 * closes its connections to servers that moved at once, busy or idle). */
struct runtime_waker {
    void (*wake)(void *arg);
    void *arg;
};

struct pool_shared {
    uint32_t idx;
    const struct conf_pool *cp;
    const struct proto_ops *proto;
    const void *parse_table;         /* its clients' requests are parsed with (parse_state.table,
                                      * proto_ops.parse_table_new): built with the generation,
                                      * read-only; NULL: the protocol's own */
    struct pool_clients *clients;    /* client connections of this pool name, all workers and
                                      * generations (a reference) */
    struct server_health *health;    /* cp->nservers */
    struct nc_ratelimit *refused_log; /* log lines of refused commands: proto->nrefused + 1 */
    const struct transport_ctx *client_tp; /* how its listener's clients move bytes (net/transport.h) */
    const struct transport_ctx *server_tp; /* how its server connections (and probes) move bytes */
    const struct topo_source_ops *source_ops; /* where its servers come from (topo/topology.h) */
    struct topo_source *source;      /* a source running on the master (runtime_sources_start);
                                      * NULL: its set never changes */
    struct runtime_waker waker;      /* told after the source published (the master's) */
    atomic_uint topo_up;             /* a source that moves servers: how many of the services it
                                      * follows answer now (Sentinel: sentinels), for the stats */
    int recheck_fd;                  /* a source that moves servers: an eventfd any worker writes to
                                      * ask it to look again now (pool_topology_recheck); -1: none */
    _Atomic uint64_t version;        /* bumped with every new route; loaded per request by every
                                      * worker: the mutex below starts the next cache line */
    alignas(64) pthread_mutex_t lock; /* guards set and route (publication and pick-up) */
    struct topo_set *set;            /* its servers as its source last published them */
    struct route *route;             /* current routing table, built from set and health */
    /* where each worker counts for this pool: wstats[worker], wservers[worker * nservers + s] */
    struct stats_pool_block **wstats;
    struct stats_server_block **wservers;
    /* log lines of clients whose handshake failed: written by any worker, on a cache line of its
     * own (a flood of failed handshakes must not bounce the lines every request reads) */
    alignas(64) struct nc_ratelimit handshake_log;
};

struct runtime {
    atomic_uint refs;
    struct conf *conf;               /* a reference; conf->generation is this generation */
    uint64_t generation;             /* 1 at start, +1 per successful reload */
    uint64_t loaded_at_usec;         /* wall clock when it was built */
    struct pool_shared *pools;
    size_t npools;
    size_t nworkers;                 /* the length of every pool's wstats */
};

/*
 * Builds the shared state of conf (takes its own reference) for nworkers workers, with one
 * reference for the caller. prev: the generation it replaces, or NULL; a server that stays (same
 * pool name, same name and address) keeps its health (an ejected server stays ejected). The
 * stats pointers are left NULL for stats_bind(). NULL when out of memory.
 */
struct runtime *runtime_create(struct conf *conf, const struct runtime *prev, size_t nworkers);
struct runtime *runtime_get(struct runtime *rt);
void runtime_put(struct runtime *rt);

/* Starts the sources of rt's pools that follow their servers at run time, on base (the master's,
 * after rt is published); each publishes new sets into its pool (pool_publish_set, route.h),
 * then calls waker (may be NULL). */
void runtime_sources_start(struct runtime *rt, struct event_base *base, const struct runtime_waker *waker);
/* Stops them (rt is replaced, or the process stops): its pools keep their last sets. */
void runtime_sources_stop(struct runtime *rt);

/* Asks p's topology source to look at its servers again now (a write was refused by a server
 * that is no master any more). Any thread; nothing for a pool whose servers never move. */
void pool_topology_recheck(struct pool_shared *p);

/* The client count of pool p (all workers, all generations). */
static inline atomic_long *pool_nclients(const struct pool_shared *p)
{
    return &p->clients->n;
}

/* The pool named name, or NULL. */
struct pool_shared *runtime_pool_find(const struct runtime *rt, const char *name);

/*
 * Whether server b of pool pb is the same backend as server a of pool pa, so that connections to
 * a may serve b: same pool name, server name and address, protocol, redis_auth, redis_db and
 * server_connections.
 */
bool runtime_same_backend(const struct conf_pool *pa, const struct conf_server *a,
                          const struct conf_pool *pb, const struct conf_server *b);

#endif
