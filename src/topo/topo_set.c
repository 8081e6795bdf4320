/*
 * topo_set.c - server sets (see topology.h): creation with their own copies of the strings, the
 * reference count, and the pool's own distribution over a set.
 *
 * Threads: a set is built by one thread, then read by any; the last topo_set_put frees it.
 */
#include "config.h"
#include "topo/topology.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes of s with its NUL (0 for NULL). */
static size_t topo_strsize(const char *s)
{
    return s != NULL ? strlen(s) + 1 : 0;
}

/* Copies s into the arena at *at (advancing it); NULL stays NULL. */
static char *topo_strcopy(char **at, const char *s)
{
    if (s == NULL) return NULL;
    size_t n = strlen(s) + 1;
    char *d = memcpy(*at, s, n);
    *at += n;
    return d;
}

struct topo_set *topo_set_create(const struct topo_server *servers, uint32_t n)
{
    size_t strings = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct topo_server *s = &servers[i];
        strings += topo_strsize(s->name) + topo_strsize(s->ketama_name) + topo_strsize(s->addr.text) +
                   topo_strsize(s->addr.host);
    }
    size_t head = sizeof(struct topo_set) + (size_t)n * sizeof(struct topo_server);
    struct topo_set *set = calloc(1, head + strings);
    if (set == NULL) return NULL;
    atomic_init(&set->refs, 1);
    set->nservers = n;
    char *at = (char *)set + head;
    for (uint32_t i = 0; i < n; i++) {
        struct topo_server *d = &set->servers[i];
        *d = servers[i];
        d->name = topo_strcopy(&at, servers[i].name);
        d->ketama_name = topo_strcopy(&at, servers[i].ketama_name);
        d->addr.text = topo_strcopy(&at, servers[i].addr.text);
        d->addr.host = topo_strcopy(&at, servers[i].addr.host);
    }
    return set;
}

struct topo_set *topo_set_ref(struct topo_set *s)
{
    atomic_fetch_add(&s->refs, 1);
    return s;
}

void topo_set_put(struct topo_set *s)
{
    if (s != NULL && atomic_fetch_sub(&s->refs, 1) == 1) {
        free(s->slots);
        free(s);
    }
}

struct topo_set *topo_set_inherit(const struct topo_set *first, const struct topo_set *prev)
{
    struct topo_server *servers = calloc(first->nservers ? first->nservers : 1, sizeof(*servers));
    if (servers == NULL) return NULL;
    for (uint32_t i = 0; i < first->nservers; i++) {
        servers[i] = first->servers[i];
        for (uint32_t j = 0; prev != NULL && j < prev->nservers; j++) {
            if (strcmp(prev->servers[j].name, servers[i].name) != 0) continue;
            servers[i].addr = prev->servers[j].addr;
            servers[i].role = prev->servers[j].role;
            break;
        }
    }
    struct topo_set *set = topo_set_create(servers, first->nservers);
    free(servers);
    if (set == NULL) return NULL;
    set->serial = first->serial;
    const uint16_t *slots = prev != NULL && prev->nservers == first->nservers ? prev->slots : first->slots;
    if (slots != NULL) { /* the same places: the map the pool had still says where its slots are */
        set->slots = malloc(DIST_NSLOTS * sizeof(*set->slots));
        if (set->slots == NULL) {
            topo_set_put(set);
            return NULL;
        }
        memcpy(set->slots, slots, DIST_NSLOTS * sizeof(*set->slots));
    }
    return set;
}

void topo_recheck_taken(int fd)
{
    uint64_t n;
    if (read(fd, &n, sizeof(n)) < 0) {
        /* EAGAIN: taken by an earlier call */
    }
}

bool topo_same_addr(const struct topo_set *a, const struct topo_set *b, uint32_t i)
{
    const struct conf_addr *x = &a->servers[i].addr, *y = &b->servers[i].addr;
    return x->is_unix == y->is_unix && x->port == y->port && strcmp(x->host, y->host) == 0;
}

struct dist *topo_build_dist(const struct conf_pool *cp, const struct topo_set *set, const bool *live)
{
    uint32_t n = set->nservers;
    struct dist_server *ds = calloc(n ? n : 1, sizeof(*ds));
    if (ds == NULL) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        ds[i].ketama_name = set->servers[i].ketama_name;
        ds[i].sort_name = set->servers[i].name; /* name, else host:port:weight */
        ds[i].weight = set->servers[i].weight;
    }
    struct dist *d = dist_build(cp->distribution, ds, n, live);
    free(ds);
    return d;
}
