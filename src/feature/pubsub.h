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
 * A client has its state (its feature slot, feature/features.h) only while it has subscriptions or
 * one in progress; otherwise request_dispatch's one test for the unusual path is all it costs.
 *
 * Threads: the loop owning the client.
 */
#ifndef NC_PUBSUB_H
#define NC_PUBSUB_H

#include <stdbool.h>

#include "core/conn.h"
#include "core/feature.h"
#include "msg/msg.h"

/* The role of a dedicated connection while a subscriber holds it: the server role's writes, its
 * own reads (confirmations and messages come unasked, not one reply per request). */
extern const struct conn_ops pubsub_conn_ops;

/* The feature (core/feature.h): gate (a subscribed client's refusals in RESP2), serve (the
 * subscription commands and RESET), close and describe. */
extern const struct feature_ops pubsub_feature;

#endif
