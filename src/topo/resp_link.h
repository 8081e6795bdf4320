/*
 * resp_link.h - a RESP client connection of the master's event loop: connects (non-blocking),
 * sends commands, hands each reply to the callback of the command it answers, and hands the
 * replies nobody asked for (pub/sub messages) to on_push. What the topology sources talk to the
 * services they follow with (the Redis Sentinels). Plain TCP.
 *
 * A link that fails (connect refused, a reset, a reply that is not RESP, a reply later than its
 * timeout) calls every pending callback with NULL, then on_close once; the owner frees it
 * (resp_link_free, never from inside one of its callbacks: resp_link_free_later).
 *
 * Threads: the thread of its event base (the master).
 */
#ifndef NC_RESP_LINK_H
#define NC_RESP_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "topo/resp_value.h"

struct event_base;
struct resp_link;

struct resp_link_cbs {
    void (*on_ready)(void *arg, struct resp_link *k);       /* connected */
    void (*on_push)(void *arg, struct resp_link *k, const struct resp_value *v);
    void (*on_close)(void *arg, struct resp_link *k, const char *why);
};

/* v NULL: the link failed before the reply came. */
typedef void (*resp_reply_fn)(void *arg, struct resp_link *k, const struct resp_value *v);

/* Starts connecting to host:port; NULL when out of memory or the connect fails at once (why says
 * why). timeout_ms bounds the connect and every reply. */
struct resp_link *resp_link_open(struct event_base *base, const char *host, uint16_t port, uint32_t timeout_ms,
                                 const struct resp_link_cbs *cbs, void *arg, char *why, size_t whylen);
/* Queues a command of argc arguments (written once connected); fn gets its reply. Returns 0 or
 * -ENOMEM (the link is then failed). */
int resp_link_send(struct resp_link *k, int argc, const char *const *argv, resp_reply_fn fn, void *fnarg);
/* Closes the link without calling anything. */
void resp_link_free(struct resp_link *k);
/* The same, after the current callback returns. */
void resp_link_free_later(struct resp_link *k);
/* Frees the links of base given up with resp_link_free_later whose free has not run yet (the
 * loop stopped first): for the base's owner before event_base_free, which runs no callback.
 * Returns how many. */
size_t resp_link_reap_pending(struct event_base *base);

#endif
