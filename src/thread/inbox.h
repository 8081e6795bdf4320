/*
 * inbox.h - the only way into a worker: a small mutex-protected FIFO of typed messages plus an
 * eventfd that wakes the worker's event loop.
 *
 * Threads: any thread may inbox_push(); only the owning worker calls inbox_pop() (from the event
 * callback on inbox_fd()). The mutex is taken once per hand-off (a new client, a stop), never on
 * the request path.
 */
#ifndef NC_INBOX_H
#define NC_INBOX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum inbox_type {
    INBOX_NEW_CLIENT,   /* fd: an accepted client socket (the worker takes it over); pool: its pool */
    INBOX_STOP,         /* leave the event loop */
};

struct inbox_item {
    struct inbox_item *next;
    enum inbox_type type;
    int fd;
    uint32_t pool;
};

struct inbox {
    pthread_mutex_t lock;
    struct inbox_item *head, *tail;
    int efd;            /* eventfd, readable when items wait */
};

int inbox_init(struct inbox *ib);
void inbox_deinit(struct inbox *ib);      /* closes fds of undelivered NEW_CLIENT items */
/* Queues a copy of item and wakes the worker. Returns 0 or -errno. */
int inbox_push(struct inbox *ib, const struct inbox_item *item);
/* Takes the whole queue (FIFO order), or NULL. The caller frees items with free(). */
struct inbox_item *inbox_take_all(struct inbox *ib);

#endif
