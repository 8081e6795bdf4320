/*
 * gen.h - a loop's side of one config generation: its pool_rts (and their server_rts) for one
 * runtime, and how many of the loop's clients use it.
 *
 * A loop has a current generation (new clients join it) and may keep older ones while clients
 * still use them: a client moves to the current generation only when it has nothing queued, so a
 * pipeline is never split across two configs (client_follow_reload). An old generation is
 * destroyed once no client uses it and the backends only it uses have nothing in flight.
 *
 * Threads: a gen belongs to one loop.
 */
#ifndef NC_GEN_H
#define NC_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

struct loop;
struct runtime;
struct pool_rt;

struct gen {
    TAILQ_ENTRY(gen) link;        /* the loop's generations, oldest first */
    struct loop *loop;
    struct runtime *rt;           /* a reference */
    struct pool_rt *pools;        /* rt->npools */
    size_t npools;
    uint32_t nclients;            /* this loop's clients on it */
};

TAILQ_HEAD(gen_tqh, gen);

/* Builds the loop's side of rt (takes over the caller's reference on rt) and appends it to the
 * loop's generations; its servers acquire their backends (connections of a server that stays
 * are kept). NULL when out of memory (the reference is dropped). */
struct gen *gen_create(struct loop *l, struct runtime *rt);
/* Releases its backends (closing connections no other generation uses), frees it and drops its
 * runtime reference. */
void gen_destroy(struct gen *g);
/* Not current, no client, and nothing in flight on a backend only it uses. */
bool gen_idle(const struct gen *g);
/* Its pool named name, or NULL. */
struct pool_rt *gen_pool_find(struct gen *g, const char *name);
/* Opens the connections of its preconnect pools that are not open yet. */
void gen_preconnect(struct gen *g);

#endif
