/*
 * pool.h - a loop's view of a pool (pool_rt) and of each of its servers (server_rt) in one config
 * generation: the shared pool (core/runtime.h), this loop's counter blocks, its servers' backend
 * connections (core/backend.h), and the routing table it routes with (core/route.h), picked up
 * again only when the pool publishes a new one.
 *
 * Threads: a pool_rt and its server_rts belong to one loop.
 */
#ifndef NC_POOL_H
#define NC_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "core/route.h"
#include "core/runtime.h"

struct loop;
struct gen;
struct backend;
struct stats_pool_block;
struct stats_server_block;

struct server_rt {
    struct pool_rt *pool;
    uint32_t idx;                 /* index in the pool's servers (conf order) */
    const struct conf_server *cs;
    struct stats_server_block *st; /* this loop's counters for it (found by name) */
    struct backend *be;           /* its connections (core/backend.h) */
    TAILQ_ENTRY(server_rt) be_link; /* the backend's users, oldest generation first */
};

TAILQ_HEAD(server_rt_tqh, server_rt);

struct pool_rt {
    struct loop *loop;
    struct gen *gen;              /* the generation it belongs to */
    struct pool_shared *shared;
    const struct conf_pool *cp;
    const struct proto_ops *proto;
    struct stats_pool_block *st;  /* this loop's counters for the pool (found by name) */
    struct server_rt *servers;
    uint32_t nservers;
    uint32_t nshards;             /* servers[0..nshards) own the keys (the servers written); the
                                   * rest are replica slots (conf_server.replica_slot) */
    uint8_t parse_opts;           /* its clients' requests are parsed with (proto_ops.parse_opts) */
    const void *parse_table;      /* and with this command table (pool_shared.parse_table) */
    struct route *route;          /* the routing table this loop uses (a reference) */
    uint64_t route_version;
    uint32_t fair_est;            /* the reply size its clients get, averaged: a new client's
                                   * first guess (core/fair.h) */
    uint32_t hot_countdown;       /* keyed requests until the next one whose keys are sampled for
                                   * the hot keys (request.c, stats/stats_hotkeys.h) */
};

/* Sets up p for shared (one generation's pool); its servers get their backends from
 * backend_acquire() (the caller, core/gen.c). Returns 0 or -ENOMEM. */
int pool_rt_init(struct pool_rt *p, struct gen *g, struct pool_shared *shared);
/* Frees p (its servers must have released their backends). */
void pool_rt_deinit(struct pool_rt *p);

/* Picks up the pool's new routing table (after an ejection or a return) while a request is being
 * routed. A table whose server set moved a server to another address is left for the end of the
 * loop's pass (loop.moved_pending, pool_rt_refresh_moved): closing that server's connections
 * here would fail other requests, and take a transaction's connection, inside the routing of
 * this one. */
void pool_rt_refresh(struct pool_rt *p);
/* Picks up the pool's newest table where no request is being routed (the loop's pass end, a
 * wake-up from the topology source): the connections of a server at another address are closed
 * (what is queued or in flight on them fails; nothing more is written to the old address). */
void pool_rt_refresh_moved(struct pool_rt *p);
/* Where server s of p is now (its topology's newest address this loop has picked up). */
const struct conf_addr *pool_rt_server_addr(struct pool_rt *p, uint32_t s);

/* A master of p for a request any of them answers (turn's, or the next one holding a server:
 * a cluster's empty places are skipped), or DIST_NONE. */
uint32_t pool_rt_any_master(struct pool_rt *p, uint32_t turn);

/* Whether p's keys go by hash slot (a Redis Cluster's slot map): requests of several keys are
 * split per slot, not per server. */
static inline bool pool_rt_by_slot(const struct pool_rt *p)
{
    return dist_type_of(p->route->dist) == DIST_SLOTS;
}

/* The slot of a key of a pool that routes by slot. */
static inline uint32_t pool_rt_slot(const struct pool_rt *p, const uint8_t *key, size_t len)
{
    return pool_key_hash(p->shared, key, len) & (DIST_NSLOTS - 1);
}

/* The server for a key: one relaxed load to see whether the table changed, then the lookup. */
static inline uint32_t pool_rt_route(struct pool_rt *p, const uint8_t *key, size_t len)
{
    if (atomic_load_explicit(&p->shared->version, memory_order_relaxed) != p->route_version)
        pool_rt_refresh(p);
    return dist_dispatch(p->route->dist, pool_key_hash(p->shared, key, len));
}

#endif
