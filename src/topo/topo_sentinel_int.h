/*
 * topo_sentinel_int.h - what the files of the Sentinel source share (topo_sentinel.c: the links,
 * the rounds and the masters; topo_sentinel_replicas.c: the replicas and their slots).
 *
 * Threads: the master's event loop.
 */
#ifndef NC_TOPO_SENTINEL_INT_H
#define NC_TOPO_SENTINEL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "topo/resp_value.h"
#include "topo/topology.h"

#define SENTINEL_HOST_MAX 256
#define SENTINEL_REPLICAS_MAX 16   /* replicas of one master read from one answer */

/* One server of the set at a new place (a master moved, a replica slot filled or emptied). */
struct sentinel_change {
    uint32_t idx;
    uint16_t port;                 /* 0 with host "": an emptied replica slot */
    char host[SENTINEL_HOST_MAX];
};

/* The replicas one sentinel reported up for one master. */
struct sentinel_replica_list {
    bool have;                     /* an answer came */
    uint32_t n;
    struct {
        uint16_t port;
        char host[SENTINEL_HOST_MAX];
    } r[SENTINEL_REPLICAS_MAX];
};

/* Whether the comma-separated flags (of a SENTINEL MASTER or REPLICAS answer) hold flag. */
bool sentinel_has_flag(const char *flags, const char *flag);
/* A port in decimal text, 1..65535. */
bool sentinel_port(const char *text, uint16_t *port);
/* Reads a SENTINEL REPLICAS answer into list: the replicas up (none of the flags s_down, o_down,
 * disconnected; master-link-status ok). */
void sentinel_replicas_read(const struct resp_value *v, struct sentinel_replica_list *list);
/* The changes that bring the replica slots of shard m of set (slots [nshards + m * slots, + slots))
 * to list: a slot keeps its replica while it is up, the others empty, new replicas take empty
 * slots in order; the master itself never takes one. Appended to ch; returns how many. */
uint32_t sentinel_replicas_plan(const struct topo_set *set, uint32_t nshards, uint32_t slots, uint32_t m,
                                const struct sentinel_replica_list *list, struct sentinel_change *ch);

#endif
