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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/conn.h"
#include "core/pool.h"

extern const struct conn_ops server_conn_ops;

/* Queues req on a connection of server s (connecting it if needed) of the set of protocol variant
 * (proto.h: the variant its client speaks); hint picks the connection (a client's id, so one
 * client's requests stay in order on one connection). Returns 0, or -errno when the server cannot
 * be reached now (the caller fails the request). */
int server_enqueue(struct server_rt *s, struct msg *req, uint64_t hint, uint8_t variant);
/* Queues req on server connection c (connecting it if needed); server_idx: the index of c's
 * server in the pool of req's client. Returns 0, or -errno when the server cannot be reached. */
int server_conn_enqueue(struct conn *c, struct msg *req, uint32_t server_idx);
/* Opens the connections of s now (preconnect): those of the first protocol variant (RESP2). */
void server_preconnect(struct server_rt *s);
/* Fails what c holds (errno err) and closes its socket; it reconnects on demand. */
void server_conn_close(struct conn *c, int err);
/* c's server did not answer within the pool's `timeout` something the proxy waits for outside
 * the connection's queue (a subscription's confirmations, feature/pubsub.c): closed as a request that
 * timed out (logged, counted in server_timedout and as a failure of the server). */
void server_conn_timed_out(struct conn *c);
/* Fails what c holds and frees it (its backend is going away). */
void server_conn_destroy(struct conn *c);

/* The server role's conn_ops, which the dedicated role (core/dedicated.c) shares: a dedicated
 * connection connects, writes, reads and fails as any server connection. */
bool server_on_writable(struct conn *c);
void server_on_readable(struct conn *c);
void server_flush(struct conn *c);
void server_msg_begin(void *ctx, struct parse_state *ps);
int server_parse(void *ctx, struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                 size_t *consumed);
void server_on_handshake(struct conn *c, int err);
/* rsp read on c is the reply to the oldest request written on it (FIFO): completes that request.
 * Returns 0, or -EPROTO when none waits (a reply nobody asked for). */
int server_on_reply(void *ctx, struct msg *rsp);
/* What a server connection does with the bytes it reads (its replies are as large as the server
 * makes them). */
#define SERVER_SINK \
    { .begin = server_msg_begin, .parse = server_parse, .on_msg = server_on_reply, .msg_max = UINT64_MAX }

#endif
