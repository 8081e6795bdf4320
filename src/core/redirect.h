/*
 * redirect.h - requests a Redis Cluster node did not run because their slot is held elsewhere
 * (-MOVED <slot> <host:port>: the slot's master; -ASK <slot> <host:port>: this key, while the
 * slot moves) or is being moved (-TRYAGAIN), sent on so that the client never sees the
 * redirection (notes/cluster.md). A -MOVED also asks the pool's topology source for a new slot
 * map (pool_topology_recheck: many of them make one question). A request redirected to a node
 * the pool does not hold yet, or told to try again, waits a little (REDIRECT_WAIT_USEC, doubling)
 * and is routed again by its key with the newest map. After REDIRECT_MAX redirections the client
 * gets the -TRYAGAIN as it is, or for a -MOVED/-ASK the proxy's error (EHOSTUNREACH).
 *
 * Only pools whose topology source says its servers redirect (topo_source_ops.redirects). On a
 * dedicated connection its holder decides (dedicated_holder.redirect): a blocking command moves
 * to a connection of the node named; a transaction's or a subscriber's relays it.
 *
 * Threads: the loop's own.
 */
#ifndef NC_REDIRECT_H
#define NC_REDIRECT_H

#include <stdbool.h>

struct conn;
struct loop;
struct msg;

#define REDIRECT_MAX 16             /* redirections of one request */
#define REDIRECT_WAIT_USEC 10000u   /* the first wait; doubles, at most 32 times as long */

/* Server connection c's request req got rsp, a redirection (rsp->rsp_redirect). True when req
 * was sent on or waits (rsp is freed), false when rsp is to be relayed as it is. */
bool redirect_request(struct conn *c, struct msg *req, struct msg *rsp);
/* The loop ends: every waiting request fails. */
void redirect_release_all(struct loop *l);

#endif
