/*
 * txn.h - transactions (redis MULTI, EXEC, DISCARD, WATCH, UNWATCH; the protocol marks them with
 * CMD_F_TXN_MASK) for one client, on a dedicated server connection (core/dedicated.h). The design
 * and its reasons: notes/transactions.md.
 *
 * - MULTI is answered by the proxy; each command after it is checked (a refused one is answered
 *   its error and marks the transaction aborted, as redis does), routed (every key of every
 *   queued command, and of WATCH, must map to one server: a command whose keys map elsewhere
 *   gets an error naming the two servers and aborts the transaction), held by the proxy and
 *   answered as queued. Nothing of it reaches a server before EXEC.
 * - EXEC of an aborted transaction is answered by the proxy (redis: -EXECABORT). Otherwise the
 *   client takes a dedicated connection to that server (any server for a keyless transaction)
 *   and the proxy writes MULTI, the queued commands and EXEC on it at once; it drops the replies
 *   to MULTI and the queued commands and the client gets EXEC's.
 * - WATCH takes the dedicated connection to its keys' server and keeps it until EXEC, DISCARD,
 *   UNWATCH or the client leaves; the transaction that follows must map to that server.
 * - A request that goes to the dedicated connection (WATCH, EXEC, UNWATCH) waits until every
 *   earlier request of its client is answered, and the client's later requests wait until it
 *   is answered (held in the client's queue, msg.txn_wait): its order against the client's
 *   other requests, which use the shared connections, is the order the client sent them in.
 * - HELLO and RESET (CMD_F_SWITCH: they move the client's later requests to the server
 *   connections of another protocol variant) wait the same way until every earlier request of the
 *   client is answered; RESET ends the transaction and the WATCH first, as redis does.
 * - A blocking command (CMD_F_BLOCK: redis BLPOP, ..., XREAD BLOCK) outside MULTI is ordered the
 *   same way and sent on a dedicated connection to its keys' server (every key on one server, else
 *   an error naming two), which goes back to its set once answered; while a WATCH is on that
 *   server, on the WATCH's connection. Inside MULTI it is queued like any command (redis runs it
 *   without blocking). notes/blocking-commands.md.
 * - A client that leaves gives its dedicated connection back clean (UNWATCH when it watched); the
 *   connection of a blocking command still unanswered is closed instead.
 *   When the dedicated connection fails while it holds a WATCH, the WATCH is lost: EXEC then
 *   answers the connection's error.
 *
 * A client has its state (its feature slot, feature/features.h) only while it is in a transaction,
 * watches, or has requests held; the core then calls the feature's hooks for it (core/feature.h):
 * dispatch (txn_dispatch: every request of the client, and the CMD_F_TXN_MASK and CMD_F_BLOCK
 * commands of any client), written (txn_resume: a request on the dedicated connection that got its
 * answer lets the held requests go on, in order), blocked (its blocking command is unanswered on a
 * server: a client that leaves frees it at once) and close (the requests it holds back, its queued
 * commands and its state are freed, its dedicated connection given back clean). A client with no
 * state pays nothing: request_dispatch's one test.
 *
 * Threads: the loop owning the client.
 */
#ifndef NC_TXN_H
#define NC_TXN_H

#include "core/feature.h"

extern const struct feature_ops txn_feature;

#endif
