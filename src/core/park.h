/*
 * park.h - writes a demoted master refused, parked until its pool's topology source says where
 * the master went (notes/sentinel.md). A redis -READONLY reply means the write did not run: the
 * server it went to is a replica now. The request is held (its reply not yet relayed), the
 * source is asked to look again at once (pool_topology_recheck), and when the loop picks up a
 * set that moves that server (pool_rt_refresh_moved) the request is sent once more, to the new
 * address. Only if nothing moves within the pool's `timeout` (PARK_USEC without one), or the
 * second try is refused too, the client gets the -READONLY it had.
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

/* Server connection c's request req got rsp, a -READONLY. True when req is parked (it owns rsp
 * now), false when the reply is to be relayed as it is. */
bool park_readonly(struct conn *c, struct msg *req, struct msg *rsp);
/* Server s of pool p moved (the loop closed its connections): its parked requests go to its new
 * address. */
void park_server_moved(struct loop *l, struct pool_rt *p, uint32_t s);
/* The loop ends: every parked request gets its reply. */
void park_release_all(struct loop *l);

#endif
