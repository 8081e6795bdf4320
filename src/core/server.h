/*
 * server.h - server connections, the server role of a conn (server_conn_ops): lazy non-blocking
 * connect, the protocol's set-up requests on connect, pipelined writes of queued requests, FIFO
 * matching of replies, timeouts, failure accounting (ejection is pool-wide, core/route.h), and
 * the counters of each server. The connections of a server_rt (core/pool.h) are its backend's
 * (core/backend.h), which the server_rts of other generations with the same backend share.
 *
 * Threads: server connections belong to one loop.
 */
#ifndef NC_SERVER_H
#define NC_SERVER_H

#include <stdint.h>

#include "core/conn.h"
#include "core/pool.h"

extern const struct conn_ops server_conn_ops;

/* Queues req on a connection of server s (connecting it if needed); hint picks the connection
 * (a client's id, so one client's requests stay in order on one connection). Returns 0, or
 * -errno when the server cannot be reached now (the caller fails the request). */
int server_enqueue(struct server_rt *s, struct msg *req, uint64_t hint);
/* Opens the connections of s now (preconnect). */
void server_preconnect(struct server_rt *s);
/* Fails what c holds and frees it (its backend is going away). */
void server_conn_destroy(struct conn *c);

#endif
