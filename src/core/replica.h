/*
 * replica.h - reads served by replicas (read_from, notes/sentinel.md). A pool whose source
 * follows replicas has CONF_REPLICA_SLOTS replica slots per master after its masters
 * (pool_rt.nshards on): slot k of master m is server nshards + m * CONF_REPLICA_SLOTS + k, empty
 * (topo_slot_empty) until its source puts a replica there. A read-only request routed to master
 * m may go to one of its replicas, as read_from says; writes, transactions, blocking commands,
 * scripts, Pub/Sub and what the proxy answers itself always go to the master.
 *
 * Threads: the loop's own (it reads the table the loop picked up).
 */
#ifndef NC_REPLICA_H
#define NC_REPLICA_H

#include <stdint.h>

struct msg;
struct pool_rt;

/* The server a request routed to master m goes to: m, or one of its replicas (rr turns between
 * them), or DIST_NONE (read_from replica with no replica up). Only for pools with replica slots. */
uint32_t replica_route(struct pool_rt *p, const struct msg *req, uint32_t m, uint32_t *rr);

#endif
