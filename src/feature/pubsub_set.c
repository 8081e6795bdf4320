/*
 * pubsub_set.c - a subscriber's set of names (see pubsub_int.h): a hash table of (kind, name),
 * grown by doubling, each name with the server it is on; its counts per kind, as redis counts a
 * client's subscriptions. The bytes it holds count against the client's memory limit.
 *
 * Threads: the loop owning the client.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/client.h"
#include "feature/pubsub_int.h"

static uint32_t ps_hash(uint8_t kind, const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u ^ kind;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Where (kind, name) is in ps's table, or where its chain ends. */
struct ps_name **ps_slot(struct pubsub *ps, uint8_t kind, const uint8_t *p, size_t n)
{
    struct ps_name **at = &ps->table[ps_hash(kind, p, n) & (ps->nbuckets - 1)];
    for (; *at != NULL; at = &(*at)->next) {
        const struct ps_name *e = *at;
        if (e->kind == kind && e->len == n && memcmp(e->bytes, p, n) == 0) break;
    }
    return at;
}

static int ps_grow(struct pubsub *ps)
{
    uint32_t nb = ps->nbuckets * 2;
    struct ps_name **t = calloc(nb, sizeof(*t));
    if (t == NULL) return -ENOMEM;
    for (uint32_t i = 0; i < ps->nbuckets; i++) {
        struct ps_name *e, *next;
        for (e = ps->table[i]; e != NULL; e = next) {
            next = e->next;
            uint32_t b = ps_hash(e->kind, e->bytes, e->len) & (nb - 1);
            e->next = t[b];
            t[b] = e;
        }
    }
    free(ps->table);
    ps->table = t;
    ps->nbuckets = nb;
    return 0;
}

/* Adds (kind, name) on server when it is not there. Returns 1 (added), 0 (there already) or
 * -ENOMEM. */
int ps_add(struct pubsub *ps, uint8_t kind, const uint8_t *p, size_t n, uint32_t server)
{
    if (*ps_slot(ps, kind, p, n) != NULL) return 0;
    if (ps->nnames >= ps->nbuckets && ps_grow(ps) < 0) return -ENOMEM;
    struct ps_name *e = malloc(sizeof(*e) + n);
    if (e == NULL) return -ENOMEM;
    e->server = server;
    e->len = (uint32_t)n;
    e->kind = kind;
    memcpy(e->bytes, p, n);
    struct ps_name **at = ps_slot(ps, kind, p, n);
    e->next = NULL;
    *at = e;
    ps->nnames++;
    ps->count[kind]++;
    client_hold(ps->c, (int64_t)(sizeof(*e) + n)); /* over its limit: closed from the flush queue */
    return 1;
}

void ps_unlink(struct pubsub *ps, struct ps_name **at)
{
    struct ps_name *e = *at;
    *at = e->next;
    ps->nnames--;
    ps->count[e->kind]--;
    client_hold(ps->c, -(int64_t)(sizeof(*e) + e->len));
    free(e);
}

/* The count redis gives in a confirmation of kind: the shard channels count apart. */
int64_t ps_count(const struct pubsub *ps, uint8_t kind)
{
    if (kind == PROTO_PS_SHARD) return (int64_t)ps->count[PROTO_PS_SHARD];
    return (int64_t)(ps->count[PROTO_PS_CHANNEL] + ps->count[PROTO_PS_PATTERN]);
}
