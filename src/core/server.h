/*
 * server.h - a worker's side of a pool (pool_rt) and of each backend server (server_rt) in one
 * config generation, and the server connections: connect, write queued requests, read and match
 * replies, fail on errors. The connections of a server_rt are its backend's (core/backend.h),
 * which the server_rts of other generations with the same backend share.
 *
 * Threads: pool_rt, server_rt, backends and their conns belong to one worker.
 */
#ifndef NC_SERVER_H
#define NC_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "core/conn.h"
#include "core/runtime.h"

struct worker;
struct worker_gen;
struct backend;
struct stats_pool_block;
struct stats_server_block;

struct server_rt {
    struct pool_rt *pool;
    uint32_t idx;                 /* index in the pool's servers (conf order) */
    const struct conf_server *cs;
    struct stats_server_block *st; /* this worker's counters for it (found by name) */
    struct backend *be;           /* its connections (core/backend.h) */
};

struct pool_rt {
    struct worker *w;
    struct worker_gen *gen;       /* the generation it belongs to */
    struct pool_shared *shared;
    const struct conf_pool *cp;
    const struct proto_ops *proto;
    struct stats_pool_block *st;  /* this worker's counters for the pool (found by name) */
    struct server_rt *servers;
    uint32_t nservers;
    struct route *route;          /* the routing table this worker uses (a reference) */
    uint64_t route_version;
};

/* Picks up the pool's new routing table (after an ejection or a return). */
void pool_rt_refresh(struct pool_rt *p);

/* The server for a key: one relaxed load to see whether the table changed, then the lookup. */
static inline uint32_t pool_rt_route(struct pool_rt *p, const uint8_t *key, size_t len)
{
    if (atomic_load_explicit(&p->shared->version, memory_order_relaxed) != p->route_version)
        pool_rt_refresh(p);
    return dist_dispatch(p->route->dist, pool_key_hash(p->shared, key, len));
}

/* Sets up p for shared (one generation's pool); its servers get their backends from
 * backend_acquire() (the caller, core/gen.c). Returns 0 or -ENOMEM. */
int pool_rt_init(struct pool_rt *p, struct worker_gen *g, struct pool_shared *shared);
/* Frees p (its servers must have released their backends). */
void pool_rt_deinit(struct pool_rt *p);

/* Queues req on a connection of server s (connecting it if needed); hint picks the connection
 * (a client's id, so one client's requests stay in order on one connection). Returns 0, or
 * -errno when the server cannot be reached now (the caller fails the request). */
int server_enqueue(struct server_rt *s, struct msg *req, uint64_t hint);
/* Opens the connections of s now (preconnect). */
void server_preconnect(struct server_rt *s);
/* Fails what c holds and frees it (its backend is going away). */
void server_conn_destroy(struct conn *c);

/* The socket is readable / writable (called from the conn's event, conn.c). */
void server_on_read(int fd, short what, void *arg);
void server_on_write(int fd, short what, void *arg);
/* Writes what is queued on c now, if it is connected (the worker's flush queue). */
void server_flush(struct conn *c);
/* Whether the reply about to be parsed on c must have its top-level elements recorded. */
bool server_head_wants_elems(const struct conn *c);

#endif
