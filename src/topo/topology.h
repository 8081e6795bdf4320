/*
 * topology.h - where a pool's servers come from: a topology source produces the pool's server set
 * (each server's name, address, role and weight), and the core builds the routing table that
 * workers and the manage port read from the newest set it published (core/route.h).
 *
 * A server's identity is its name (the stats key, and the name its ketama points are made from):
 * a set that changes only a server's address keeps its identity, its points, its counters and its
 * connections' accounting; the workers close the connections to the old address and connect to
 * the new one (core/pool.c). Sources:
 *   - static (topo_static.c): the YAML `servers:` list; the set never changes (a reload builds a
 *     new generation).
 *   - Redis Sentinel (topo_sentinel.c) follows the masters' addresses at run time: it implements
 *     start(), runs on the master's event base and publishes each new set through its sink.
 *   - a source that replaces the key -> server routing (Redis Cluster's slot map) also implements
 *     build_dist(): the routing table is then its slot table instead of the pool's distribution.
 * The design: notes/topology.md.
 *
 * Threads: a set is immutable once published and refcounted (any thread reads it and drops its
 * reference); a source runs on the thread that started it (the master).
 */
#ifndef NC_TOPOLOGY_H
#define NC_TOPOLOGY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "conf/conf.h"
#include "hash/dist.h"

struct event_base;

enum topo_role { TOPO_ROLE_MASTER = 0, TOPO_ROLE_REPLICA = 1 };

/* One server as its source sees it. */
struct topo_server {
    const char *name;             /* its identity: the key of its counters (stats_name) */
    const char *ketama_name;      /* what its ketama points are made from */
    struct conf_addr addr;        /* where it is now */
    uint32_t weight;
    uint8_t role;                 /* enum topo_role */
    bool hold;                    /* writes to it wait: its source says it is being replaced (a
                                   * Sentinel failover under way); they go where it moves */
};

/* The servers of one pool at one moment (index i: the pool's server i). Immutable once published. */
struct topo_set {
    atomic_uint refs;
    uint64_t serial;              /* 1 for a pool's first set, +1 for each one published after it */
    uint16_t *slots;              /* a Redis Cluster pool's slot map (DIST_NSLOTS entries: the
                                   * index of the server holding each hash slot, TOPO_SLOT_NONE);
                                   * NULL for the others, and before the cluster first answered.
                                   * Owned by the set (freed with it). */
    uint32_t nservers;
    struct topo_server servers[];
};

#define TOPO_SLOT_NONE UINT16_MAX /* a hash slot no server of the set holds */

/* A set of n servers (refs = 1, serial 0) whose strings are copied from the given ones. */
struct topo_set *topo_set_create(const struct topo_server *servers, uint32_t n);
struct topo_set *topo_set_ref(struct topo_set *s);
void topo_set_put(struct topo_set *s);
/* Whether server i of set is a place with nobody in it (a replica slot with no replica, a
 * cluster's node place with no node): never connected to, holds no keys. */
static inline bool topo_slot_empty(const struct topo_set *set, uint32_t i)
{
    const struct topo_server *s = &set->servers[i];
    return !s->addr.is_unix && s->addr.port == 0;
}

/* Whether server i is at the same address in a and b. */
bool topo_same_addr(const struct topo_set *a, const struct topo_set *b, uint32_t i);

/* A source has seen its sink's recheck_fd readable: the workers' requests are taken (the eventfd
 * reset; one look answers them all). */
void topo_recheck_taken(int fd);

/* Where a running source publishes a new set of its pool (it takes over the reference). */
struct topo_sink {
    void (*publish)(void *arg, struct topo_set *set);
    void *arg;
    int recheck_fd;               /* readable when a worker asks the source to look again now
                                   * (an eventfd; the source reads it, never closes it) */
    atomic_uint *up;              /* where the source says how many of its services answer */
};

struct topo_source;

struct topo_source_ops {
    const char *name;             /* "static", ...: for logs and stats */
    /* The pool's first set, from its config (serial 1). NULL when out of memory. */
    struct topo_set *(*first)(const struct conf_pool *cp);
    /* Follows the pool at run time on base (the master's), from set (the pool's current one: its
     * first, or what the generation it replaces had learned), publishing through sink. Returns a
     * source for stop(), or NULL (out of memory: the pool keeps its set). NULL op: the set never
     * changes. */
    struct topo_source *(*start)(const struct conf_pool *cp, struct topo_set *set, struct event_base *base,
                                 const struct topo_sink *sink);
    void (*stop)(struct topo_source *src);
    /* The routing table over set (live[i]: server i takes keys). NULL op: the pool's distribution
     * (ketama, modula, random) over the servers' names and weights (topo_build_dist). */
    struct dist *(*build_dist)(const struct conf_pool *cp, const struct topo_set *set, const bool *live);
    /* Its servers answer a request for a key another one holds with where it is (Redis
     * Cluster's -MOVED, -ASK): the core sends the request there (core/redirect.h). */
    bool redirects;
};

/* The source of a pool's servers, chosen by its config: Sentinel for a pool with `sentinels`,
 * Redis Cluster for a pool with `redis_cluster`, else static. */
const struct topo_source_ops *topo_source_for_pool(const struct conf_pool *cp);
/* The config's `servers:` list as a set (serial 1), every server a master at the address
 * written: the static source's only set, the others' first. NULL when out of memory. */
struct topo_set *topo_static_servers(const struct conf_pool *cp);
/* An empty place (topo_slot_empty) of the given role. */
struct topo_server topo_place_empty(const struct conf_server *cs, enum topo_role role);

/* first with each server that prev (the pool's set in the generation before) has by the same
 * name at prev's address and role: a reload does not undo what a source learned. A new set, or
 * NULL when out of memory. */
struct topo_set *topo_set_inherit(const struct topo_set *first, const struct topo_set *prev);

/* The pool's own distribution over set: ketama points from each server's ketama_name, modula's
 * order by name, weights; servers with !live[i] take no keys. NULL when out of memory. */
struct dist *topo_build_dist(const struct conf_pool *cp, const struct topo_set *set, const bool *live);

#endif
