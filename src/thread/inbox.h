/*
 * inbox.h - the only way into a worker (and into the stats thread, and for reload requests into
 * the master): a small mutex-protected FIFO of typed messages plus an eventfd that wakes the
 * owner's event loop.
 *
 * Threads: any thread may inbox_push(); only the owning thread calls inbox_drain() (from the event
 * callback on efd). The mutex is taken once per hand-off (a new client, a reload, a stop),
 * never on the request path. The mutex also orders everything the pusher wrote before the push
 * (a new runtime, its stats blocks) before the taker's reads.
 */
#ifndef NC_INBOX_H
#define NC_INBOX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct runtime;
struct reload_req;
struct manage_password;
struct loop_msg;

enum inbox_type {
    INBOX_NEW_CLIENT,   /* fd: an accepted client socket (the worker takes it over); pool: its pool
                         * in the generation numbered generation */
    INBOX_RELOAD,       /* rt: a new config generation (the taker gets the reference) */
    INBOX_RELOAD_REQ,   /* to the master: req asks for a reload and waits for its answer */
    INBOX_PASSWORD,     /* to the stats thread: password, the manage password a reload read (the
                         * taker wipes and frees it) */
    INBOX_ROUTES,       /* a topology source moved servers: pick up the pools' tables now */
    INBOX_DRAIN,        /* the process stops: serve what clients already sent, then close them */
    INBOX_STOP,         /* leave the event loop */
};

struct inbox_item {
    struct inbox_item *next;
    enum inbox_type type;
    int fd;
    uint32_t pool;
    uint64_t generation;
    struct runtime *rt;
    struct reload_req *req;
    struct manage_password *password;
};

struct inbox {
    pthread_mutex_t lock;
    struct inbox_item *head, *tail;
    int efd;            /* eventfd, readable when items wait */
    struct loop_msg *mhead, *mtail; /* messages from other loops (core/feature.h), linked as
                                     * they are: posting one allocates nothing, cannot fail */
};

int inbox_init(struct inbox *ib);
/* Closes fds of undelivered NEW_CLIENT items, drops the references RELOAD and RELOAD_REQ items
 * hold, wipes and frees a PASSWORD item's password, and frees the messages no loop took. */
void inbox_deinit(struct inbox *ib);
/* Queues a copy of item and wakes the worker. Returns 0 or -errno. */
int inbox_push(struct inbox *ib, const struct inbox_item *item);
/* Takes up to INBOX_DRAIN_MAX items of the queue and calls fn on each in FIFO order (fn takes over
 * what the item holds: its fd, runtime or request), then frees them; with more left, the eventfd
 * is woken again, so the owner's loop serves its other events before the next ones. */
#define INBOX_DRAIN_MAX 64
typedef void (*inbox_fn)(void *arg, const struct inbox_item *it);
void inbox_drain(struct inbox *ib, inbox_fn fn, void *arg);
/* Queues m (the taker takes it over) and wakes the owner: no allocation. */
void inbox_post(struct inbox *ib, struct loop_msg *m);
/* Takes the messages queued (call after inbox_drain, which reads the eventfd) and calls fn on each
 * in FIFO order; fn takes it over. */
typedef void (*inbox_msg_fn)(void *arg, struct loop_msg *m);
void inbox_drain_msgs(struct inbox *ib, inbox_msg_fn fn, void *arg);

#endif
