/*
 * manage_conn.h - the manage port's connections: accept, bounded line input, bounded output,
 * timeouts, HTTP requests and the silent-client JSON, all non-blocking on one event base.
 *
 *   - a line is at most MANAGE_LINE_MAX bytes (CRLF or LF); a longer one gets an error and the
 *     connection is closed;
 *   - one reply at a time: while a reply is being written nothing more is read or run, so a client
 *     that does not read holds at most one reply, MANAGE_LINE_MAX bytes of input and a small
 *     socket send buffer; clients take turns (one reply each per turn of the event loop);
 *   - a client that sends nothing for MANAGE_SILENT_MSEC (or closes its side without sending
 *     anything) gets the JSON of the last -i interval and is closed, as twemproxy's stats port does;
 *   - a connection idle for MANAGE_IDLE_SEC is closed; at most MANAGE_MAX_CLIENTS at once;
 *   - after MANAGE_MAX_ERRORS error replies the connection is closed;
 *   - a closing connection sends FIN and drains (bounded) what the client still sends, so its last
 *     reply is not destroyed by a reset.
 *
 * Threads: the stats thread only (the event base is its own).
 */
#ifndef NC_MANAGE_CONN_H
#define NC_MANAGE_CONN_H

#include "manage/manage_cmd.h"
#include "manage/manage_input.h" /* MANAGE_LINE_MAX, MANAGE_MAX_ERRORS, MANAGE_HTTP_MAX_HEADERS */

struct event_base;
struct manage_server;

#define MANAGE_OUT_MAX (64u << 20)      /* the largest reply */
#define MANAGE_SNDBUF (64 << 10)        /* socket send buffer of a manage client */
#define MANAGE_MAX_CLIENTS 256
#define MANAGE_SILENT_MSEC 300
#define MANAGE_IDLE_SEC 30
#define MANAGE_LINGER_MSEC 2000
#define MANAGE_LINGER_BYTES (16u << 20)

/* Serves lfd (a listening socket; taken over, closed on destroy) on base with ctx's commands. */
struct manage_server *manage_server_create(struct event_base *base, int lfd, struct manage_ctx *ctx);
/* Closes the listener and every client. */
void manage_server_destroy(struct manage_server *ms);

#endif
