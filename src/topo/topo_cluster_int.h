/*
 * topo_cluster_int.h - private to the Redis Cluster source: what a node said of the cluster
 * (CLUSTER SHARDS, or CLUSTER SLOTS where SHARDS is missing) read into a node list and a slot
 * owner table, and the places of the pool those nodes take (topo_cluster_map.c: pure functions,
 * unit-tested).
 *
 * Threads: the master's event loop (any thread for the pure functions).
 */
#ifndef NC_TOPO_CLUSTER_INT_H
#define NC_TOPO_CLUSTER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "topo/resp_value.h"
#include "topo/topology.h"

#define CLUSTER_HOST_MAX 256
#define CLUSTER_ID_LEN 40
#define CLUSTER_MAX_NODES 1024u   /* nodes read from one answer at most */

struct cluster_node {
    char id[CLUSTER_ID_LEN + 1];
    char master_id[CLUSTER_ID_LEN + 1]; /* a replica's master ("" for a master) */
    char host[CLUSTER_HOST_MAX];
    uint16_t port;
    bool master;
    bool failed;                  /* health other than "online" (SHARDS: "fail", "loading"): not a
                                   * replica to read from */
};

/* A cluster as one node described it. */
struct cluster_map {
    struct cluster_node *nodes;
    uint32_t n;
    uint16_t owner[DIST_NSLOTS];  /* the node (index in nodes) holding each slot, or TOPO_SLOT_NONE */
};

/* Reads a CLUSTER SHARDS reply (RESP2 or RESP3) into m (its nodes allocated). Returns 0, or -1
 * when it is not one (m then holds nothing). */
int cluster_map_from_shards(const struct resp_value *v, struct cluster_map *m);
/* The same for a CLUSTER SLOTS reply (nodes holding no slot are not in it). */
int cluster_map_from_slots(const struct resp_value *v, struct cluster_map *m);
void cluster_map_free(struct cluster_map *m);

/* The places the nodes of m take in a pool whose current set is cur, masters in [0, nmasters),
 * replicas (replica_slots per master, when cur has them) after them: a node keeps the place it
 * has (same address and role), a new one takes the first free place of its kind. out[] (cur's
 * size) gets the new servers (names from cur, addresses pointing into m), slots[] the place of
 * each slot's master (TOPO_SLOT_NONE where none). Returns how many masters found no place. */
uint32_t cluster_places(const struct topo_set *cur, uint32_t nmasters, uint32_t replica_slots,
                        const struct cluster_map *m, struct topo_server *out, char (*texts)[CLUSTER_HOST_MAX + 8],
                        uint16_t *slots);

#endif
