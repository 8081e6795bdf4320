/*
 * topo_cluster.h - the Redis Cluster topology source (topo_cluster.c, notes/cluster.md).
 *
 * Threads: the master's event loop.
 */
#ifndef NC_TOPO_CLUSTER_H
#define NC_TOPO_CLUSTER_H

#include "topo/topology.h"

extern const struct topo_source_ops topo_cluster_ops;

#endif
