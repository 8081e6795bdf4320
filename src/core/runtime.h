/*
 * runtime.h - what every thread shares for one config generation: the conf, and per pool its
 * protocol and its key distribution (the routing table). Built by the master before the workers
 * start, immutable afterwards, so every worker routes a key to the same server by construction.
 *
 * Threads: created and destroyed by the master; read by workers and the stats thread. The only
 * mutable field, pool_shared.nclients, is an atomic (client_connections is enforced across workers).
 */
#ifndef NC_RUNTIME_H
#define NC_RUNTIME_H

#include <stdatomic.h>
#include <stdint.h>

#include "conf/conf.h"
#include "hash/dist.h"
#include "proto/proto.h"

struct pool_shared {
    uint32_t idx;
    const struct conf_pool *cp;
    const struct proto_ops *proto;
    struct dist *dist;            /* routing table over cp->servers, all live */
    atomic_long nclients;         /* client connections of this pool, all workers */
};

struct runtime {
    struct conf *conf;            /* a reference */
    struct pool_shared *pools;
    size_t npools;
};

/* Builds the shared state of conf (takes its own reference). NULL when out of memory. */
struct runtime *runtime_create(struct conf *conf);
void runtime_destroy(struct runtime *rt);

/* The server index for a key in this pool, or DIST_NONE. */
uint32_t pool_route(const struct pool_shared *p, const uint8_t *key, size_t len);

#endif
