/*
 * feature.h - features attached to the core through a table of hooks. A feature is something a
 * client may be in, or ask for, that changes how its requests are served beyond "answer it or
 * route it by key": transactions and blocking commands, Pub/Sub, CLIENT LIST (src/feature/). The
 * core (client.c, request.c, conn.c, server.c, loop.c) names none of them: it walks the loop's
 * feature table at the points of a client's life where a feature may act:
 *
 *   dispatch  a request arrives: a feature whose commands it is (order_flags), or that holds the
 *             client's state, decides when it runs (transactions hold requests behind a step)
 *   gate      a request's turn has come: a feature holding the client's state may answer it
 *             outright (a subscribed RESP2 client's refusals)
 *   serve     a request runs: a feature whose commands it is (serve_flags), or that holds the
 *             client's state, serves it; else the protocol's local answer or routing by key
 *   local     the protocol's local() answered with the feature's local_code: the feature completes
 *             the answer (CLIENT LIST gathers it from every loop)
 *   written   the client's replies were written (a held request may go on)
 *   blocked   the client left (EOF, hang-up): whether a server is blocked for it alone (it is
 *             closed at once then)
 *   waits     whether the client waits for a server without a request of its own in flight (a
 *             subscriber): it is not idle
 *   close     the client is closing (before its queued requests are freed)
 *   describe  what a list of clients shows of it
 *   loop_msg, loop_msg_free, loop_deinit   messages between loops (struct loop_msg), the loop's end
 * A reload needs no hook: a client with any feature's state stays on the generation it started on
 * (that state lives on that generation's servers) until the state is gone. Neither does a drain: a
 * draining client closes once its queue is empty, and close releases every state.
 *
 * Per-client state: conn.feat[slot] (a feature's own struct, NULL when the client is not in it),
 * set and cleared through feature_attach/feature_detach, which keep conn.feat_on (a bit per slot)
 * so that the plain GET/SET path pays one test for all features together (request_dispatch).
 *
 * Threads: the table is const and shared; everything it is called on belongs to one loop.
 */
#ifndef NC_FEATURE_H
#define NC_FEATURE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/proto.h"

struct conn;
struct loop;
struct msg;
struct loop_msg;

#define FEATURE_SLOTS 2        /* per-client state slots (conn.feat) */
#define FEATURE_LOOP_SLOTS 1   /* per-loop state slots (loop.feat) */
#define FEATURE_NONE (-1)

struct feature_ops {
    const char *name;
    int slot;                  /* its per-client state slot, FEATURE_NONE: it keeps none */
    int loop_slot;             /* its per-loop state slot, FEATURE_NONE: none */
    uint32_t order_flags;      /* the commands (CMD_F_*) whose order it decides */
    uint32_t serve_flags;      /* the commands it serves */
    int local_code;            /* the proto_local answer it completes (0: none) */

    /* Returns -1 when it does not take req (the next feature, then the core, serve it), else
     * request_dispatch's value. */
    int (*dispatch)(struct conn *c, struct msg *req);
    /* Answers req now (true) or lets it run (false). */
    bool (*gate)(struct conn *c, struct msg *req);
    /* Returns -1 when req is not its to serve, else request_dispatch's value. */
    int (*serve)(struct conn *c, struct msg *req);
    /* rsp: the protocol's local() output (taken over). */
    void (*local)(struct conn *c, struct msg *req, struct msg *rsp);
    void (*written)(struct conn *c);
    bool (*blocked)(const struct conn *c);
    /* Whether c waits for a server with no request of its own in flight (a subscriber waits for
     * its messages): it is not idle (client_idle_timeout). */
    bool (*waits)(const struct conn *c);
    void (*close)(struct conn *c);
    void (*describe)(const struct conn *c, struct proto_client_state *st);
    void (*loop_msg)(struct loop *l, struct loop_msg *m);
    void (*loop_msg_free)(struct loop_msg *m);
    void (*loop_deinit)(struct loop *l);
};

struct feature_table {
    const struct feature_ops *const *ops;
    uint32_t n;
};

/*
 * A message from one loop to another on behalf of a feature (its own struct embeds this first).
 * The thread layer carries it (struct loop_peers) and hands it to the receiving loop's
 * feature_loop_msg; it cannot fail.
 */
struct loop_msg {
    struct loop_msg *next;     /* the carrier's link (thread/inbox.c) */
    uint32_t feature;          /* the index of its feature in the loops' table */
    uint32_t from;             /* the loop that sent it first */
};

/* An empty table: a loop that serves no feature (unit tests of the core). */
extern const struct feature_table feature_table_none;

/* Makes t the features of loop l (before it serves a client). */
void feature_install(struct loop *l, const struct feature_table *t);
/* f's index in l's table (struct loop_msg.feature), or UINT32_MAX when l does not serve it. */
uint32_t feature_index(const struct loop *l, const struct feature_ops *f);

/* c enters feature f's state (st, its own) or leaves it. */
void feature_attach(struct conn *c, const struct feature_ops *f, void *st);
void feature_detach(struct conn *c, const struct feature_ops *f);

/* The hook walks (see the top of this file). */
int feature_dispatch(struct conn *c, struct msg *req);
bool feature_gate(struct conn *c, struct msg *req);
int feature_serve(struct conn *c, struct msg *req);
/* Whether a feature completes the local answer code (rsp taken over then). */
bool feature_local(struct conn *c, struct msg *req, struct msg *rsp, int code);
void feature_written(struct conn *c);
bool feature_blocked(const struct conn *c);
bool feature_waits(const struct conn *c);
void feature_close(struct conn *c);
void feature_describe(const struct conn *c, struct proto_client_state *st);
void feature_loop_msg(struct loop *l, struct loop_msg *m);
/* Frees m when nobody will take it (an inbox torn down); features: the table the loops had. */
void feature_loop_msg_free(const struct feature_table *features, struct loop_msg *m);
void feature_loop_deinit(struct loop *l);

#endif
