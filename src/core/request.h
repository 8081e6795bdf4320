/*
 * request.h - what happens to a parsed request: answered by the proxy (its protocol's local():
 * PING, AUTH, rejects, ...; errors), routed by key to one server (on a connection of the protocol
 * variant its client speaks), or split into fragments (one per server: by key, or one to every
 * server for CMD_F_FRAG_ALL) whose replies are coalesced (a request forwarded past its client's
 * fair share of the server connections waits in the proxy first: fair.h); and what happens when
 * its reply arrives or its server fails.
 *
 * Threads: the loop owning the client (and so the request, its fragments and replies).
 */
#ifndef NC_REQUEST_H
#define NC_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "core/conn.h"
#include "msg/msg.h"

struct loop;

/* A request parsed on client c: queues it on c and answers or forwards it. Returns non-zero
 * when the client should stop reading: quit (or a memcached flush_all/verbosity with noreply),
 * or the client was dropped (over its held-bytes limit, client.c). */
int request_dispatch(struct conn *c, struct msg *req);
/* A request whose turn has come (no feature holds it back): a feature of its client may answer it
 * outright (feature_gate), else request_serve. Returns as request_dispatch. */
int request_run(struct conn *c, struct msg *req);
/* Serves a request: a feature's (feature_serve), answered by the proxy when its protocol answers
 * it (local()), else forwarded. Returns as request_dispatch. */
int request_serve(struct conn *c, struct msg *req);
/* Routes req (of client c) by its keys and queues it (or its fragments) on server connections,
 * now or, when c has its share of them in flight, once enough of it is answered (core/fair.h). */
void request_forward(struct loop *l, struct conn *c, struct msg *req);
/* The routing itself, now (req is charged to c's share already). */
void request_route(struct loop *l, struct conn *c, struct msg *req);
/* Answers req (of client c) with the reply text[0..len) (the proxy's own). */
/* Queues rsp on client c as a reply of no request (a pushed message: redis Pub/Sub), after the
 * replies already queued; c's memory limit counts it. Returns 0 or -ENOMEM (rsp freed). */
int request_push(struct conn *c, struct msg *rsp);
void request_answer(struct conn *c, struct msg *req, const char *text, size_t len);
/* Fails req with errno err: its client gets the protocol's error reply. */
void request_fail(struct loop *l, struct msg *req, int err);
/* req (or a fragment) has its reply in req->peer, or failed with req->err, or was a noreply
 * request that has been written. */
void request_complete(struct loop *l, struct msg *req);
/* Frees req, its reply and its fragments' replies. */
void request_free(struct loop *l, struct msg *req);
struct stats_pool_block;
/* Records the client-observed latency of a finished request (and the slowlog). */
void request_record_latency(struct loop *l, struct msg *req, struct stats_pool_block *ps, uint64_t now);
/* Queues, after c's earlier requests, a final error reply for an unparseable stream. */
void request_protocol_error(struct conn *c, const char *why);

#endif
