/*
 * clientlist.h - a list of a pool's clients over every loop (redis CLIENT LIST; the design:
 * notes/client-list.md), and the asker's own line (redis CLIENT INFO: no message). The protocol
 * checks the request and renders each client's line (proto_ops.list_filter, client_line,
 * list_reply); this feature gathers the lines:
 *   - the asking loop renders its own clients of the pool and sends a question (a struct
 *     clientlist_msg) to every other loop, through the thread layer's post() (struct loop_peers);
 *   - each of them renders its own clients of the pool (the pool's name, whatever generation they
 *     are on) into the message and posts it back;
 *   - when every answer is in, the request gets its reply (the lines in loop order; with ID, in
 *     the order of the ids given, as redis), in order with the client's others
 *     (a request waiting like a fan-out request: a client that leaves meanwhile orphans it, and
 *     it is freed when the last answer arrives).
 * With one loop no message is sent. A message is handed over without allocation (the inbox
 * links it), so a question always comes back; one whose asker is gone (its loop torn down) is
 * freed where it lies (the feature's loop_msg_free).
 *
 * Threads: a clientlist_msg belongs to one thread at a time: the asker's until posted, then the
 * receiver's until it posts it back. The gatherings belong to the asking loop.
 */
#ifndef NC_CLIENTLIST_H
#define NC_CLIENTLIST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "common/textbuf.h"
#include "core/feature.h"
#include "proto/proto.h"

struct conn;
struct loop;
struct msg;

/* The lines one loop rendered; with an ID filter, where each client's line is in text (the
 * asker lists them in the order of the ids given, as redis does). */
struct clientlist_line {
    uint64_t id;
    size_t off, len;
};
struct clientlist_part {
    struct textbuf text;
    struct clientlist_line *lines; /* by_id only: nlines of them */
    uint32_t nlines, cap;
    bool failed;                  /* out of memory: lines are missing */
};

/* A question from loop head.from (answered false) or its answer back (answered true). */
struct clientlist_msg {
    struct loop_msg head;         /* first: what the loops' carrier takes (core/feature.h) */
    uint32_t at;                  /* the loop that renders its clients */
    uint64_t token;               /* the asker's gathering */
    bool answered;
    char *pool;                   /* the pool's name */
    const struct proto_ops *proto;
    struct proto_list_filter filter;
    struct clientlist_part part;  /* the answer: the lines of the loop's clients */
};

/* The feature (core/feature.h): local completes the protocol's PROTO_CLIENT_LIST answer (starts
 * the gathering, or answers an error at once; the request is done when every loop's lines are
 * in), loop_msg answers another loop's question or collects an answer, loop_msg_free frees a
 * message nobody will take (an inbox torn down), loop_deinit frees the loop's gatherings. */
extern const struct feature_ops clientlist_feature;

#endif
