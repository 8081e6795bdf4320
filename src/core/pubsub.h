/*
 * pubsub.h - a client's Pub/Sub subscriptions (the protocol marks the commands CMD_F_PUBSUB: redis
 * (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE), on dedicated server connections (core/dedicated.h) of its
 * own. The design and its reasons: notes/pubsub.md.
 *
 * - A channel (a shard channel) lives on the server its name routes to, as a key; a pattern on
 *   every server. The client takes a dedicated connection to each server it needs (one per server,
 *   whatever the kinds) and keeps them while it has a subscription; they carry its (un)subscribe
 *   requests and bring its messages, which the proxy queues on the client as replies of no request
 *   (so they leave in order with its replies, and a client that does not read is bounded by its
 *   memory limit like any other).
 * - The proxy keeps the client's set: the confirmations it writes count the client's subscriptions
 *   (redis's counts), in the order of the arguments, once every server concerned confirmed the
 *   subscription (a PUBLISH after the confirmation reaches it). Unsubscribing is answered at once; a
 *   message for a name the client no longer has is dropped.
 * - Subscribed in a variant that allows only the subscription commands (redis RESP2), the others
 *   get the protocol's refusal and PING its subscribed reply (proto_pubsub.subscribed_reply).
 * - With no subscription left (or at RESET, or when the client leaves), its dedicated connections
 *   are closed: nothing of them is left on a server. One of them failing, or its server not
 *   confirming within the pool's `timeout`, closes the client once its replies are written (its
 *   subscriptions there are gone; redis clients subscribe again when they reconnect).
 *
 * A client has its state (c->psub) only while it has subscriptions or one in progress; otherwise
 * c->psub is NULL and request_dispatch's one test for the unusual path is all it costs.
 *
 * Threads: the loop owning the client.
 */
#ifndef NC_PUBSUB_H
#define NC_PUBSUB_H

#include <stdbool.h>

#include "core/conn.h"
#include "msg/msg.h"

/* The role of a dedicated connection while a subscriber holds it: the server role's writes, its
 * own reads (confirmations and messages come unasked, not one reply per request). */
extern const struct conn_ops pubsub_conn_ops;

/* req of subscribed client c (c->psub set) is one the protocol refuses in its subscribed mode, or
 * answers otherwise (redis RESP2: PING): answers it, returns true. request_dispatch asks it of a
 * client with no request held (c->txn NULL); a held one is asked when its turn comes (txn_run,
 * pubsub_serve). */
bool pubsub_restricted(struct conn *c, struct msg *req);
/* A request of c that is a CMD_F_PUBSUB command, or RESET (which ends the subscriptions), or any
 * request of a subscribed client (request_serve calls it for those). Returns -1 when it is not
 * pub/sub's to serve (the caller serves it as usual), else what request_dispatch returns. */
int pubsub_serve(struct conn *c, struct msg *req);
/* What c's line in a list of clients shows of its subscriptions (core/clientlist.c). */
void pubsub_client_state(const struct conn *c, struct proto_client_state *st);
/* c is closing: its waiting requests are marked done (freed with the client), its dedicated
 * connections closed, its state freed. */
void pubsub_client_close(struct conn *c);

#endif
