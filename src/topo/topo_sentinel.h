/*
 * topo_sentinel.h - the Redis Sentinel topology source (topo_sentinel.c, notes/sentinel.md).
 *
 * Threads: the master's event loop.
 */
#ifndef NC_TOPO_SENTINEL_H
#define NC_TOPO_SENTINEL_H

#include "topo/topology.h"

extern const struct topo_source_ops topo_sentinel_ops;

#endif
