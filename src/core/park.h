/*
 * park.h - requests a server did not run because it is not what the pool's topology says, parked
 * until the topology source says where the server went (notes/sentinel.md): a write a demoted
 * master refused (redis -READONLY: it did not run; the server is a replica now), and the
 * requests queued behind a new connection's gate (proto_ops.setup_check: ROLE) that found the
 * server is no master (never written). The request is held (its reply not yet relayed), the
 * source is asked to look again at once (pool_topology_recheck), and when the loop picks up a
 * set that moves that server (pool_rt_refresh_moved) the request is sent once more, to the new
 * address. Only if nothing moves within the pool's `timeout` (PARK_USEC without one), or the
 * second try fails too, the client gets the -READONLY it had (or "Remote address changed").
 * Writes routed to a master whose failover has begun (topo_server.hold) wait the same way, and
 * go where it moves, or to it again when its source stops holding them.
 *
 * Only pools whose source moves servers (Sentinel) park, only requests on shared connections
 * (a transaction's dedicated connection is its own: its commands are not sent again alone).
 *
 * Threads: the loop's own.
 */
#ifndef NC_PARK_H
#define NC_PARK_H

#include <stdbool.h>
#include <stdint.h>

struct conn;
struct loop;
struct msg;
struct pool_rt;

#define PARK_USEC 2000000u /* without a pool timeout: two of the Sentinel source's polls */

/* Server connection c's request req did not run there: it got rsp, a -READONLY, or (rsp NULL)
 * it waited behind a gate that refused the server. True when req is parked (it owns rsp now),
 * false when it is to be answered now (with rsp, or its failure). */
bool park_request(struct conn *c, struct msg *req, struct msg *rsp);
/* A write req routed to server s of p, which holds its writes (topo_server.hold: a failover of
 * it is under way): parked until s moves or stops holding (false: not a write, or parked once
 * already; it is sent now). */
bool park_held_write(struct loop *l, struct pool_rt *p, struct msg *req, uint32_t s);
/* Whether park_request would take req (of server connection c): a client's request on a shared
 * connection of a pool whose servers move, not parked before. */
bool park_possible(const struct conn *c, const struct msg *req);
/* Server s of pool p moved (the loop closed its connections): its parked requests go to its new
 * address. */
void park_server_moved(struct loop *l, struct pool_rt *p, uint32_t s);
/* The loop ends: every parked request gets its reply. */
void park_release_all(struct loop *l);

#endif
