/*
 * topo_cluster_map.c - what a node says of its cluster, read into a node list and a slot owner
 * table, and the places of the pool those nodes take (see topo_cluster_int.h).
 *
 * CLUSTER SHARDS (redis 7): an array of shards, each a map {slots: [start, end, ...], nodes:
 * [{id, port, ip, endpoint, role, health, ...}, ...]} (flat arrays in RESP2). CLUSTER SLOTS: an
 * array of [start, end, [host, port, id, ...] (the master), [host, port, id, ...] (replicas)...].
 * A node's address is its endpoint (what the cluster tells clients to use), else its ip.
 *
 * Threads: any (pure functions).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_cluster_int.h"

/* The value after the element equal to key in a flat key-value array, or NULL. */
static const struct resp_value *cm_field(const struct resp_value *v, const char *key)
{
    if (v->type != RESP_ARRAY) return NULL;
    for (size_t i = 0; i + 1 < v->n; i += 2) {
        const struct resp_value *k = &v->elems[i];
        if ((k->type == RESP_BULK || k->type == RESP_STATUS) && strcmp(k->str, key) == 0) return &v->elems[i + 1];
    }
    return NULL;
}

static const char *cm_str(const struct resp_value *v)
{
    return v != NULL && (v->type == RESP_BULK || v->type == RESP_STATUS) ? v->str : NULL;
}

/* An integer value (a RESP int, or digits in a string). */
static bool cm_int(const struct resp_value *v, int64_t min, int64_t max, int64_t *out)
{
    if (v == NULL) return false;
    int64_t x;
    if (v->type == RESP_INT) {
        x = v->num;
    } else {
        const char *s = cm_str(v);
        char *end;
        if (s == NULL || *s == '\0') return false;
        x = strtoll(s, &end, 10);
        if (*end != '\0') return false;
    }
    if (x < min || x > max) return false;
    *out = x;
    return true;
}

/* Adds a node (host, port, id) to m; its index, or -1 (full, or a field missing). */
static int cm_add(struct cluster_map *m, const char *host, int64_t port, const char *id, bool master)
{
    if (host == NULL || id == NULL || port <= 0 || port > 65535 || m->n >= CLUSTER_MAX_NODES) return -1;
    if (host[0] == '\0' || strcmp(host, "?") == 0 || strlen(host) >= CLUSTER_HOST_MAX || strlen(id) > CLUSTER_ID_LEN)
        return -1;
    struct cluster_node *d = &m->nodes[m->n];
    memset(d, 0, sizeof(*d));
    snprintf(d->host, sizeof(d->host), "%s", host);
    snprintf(d->id, sizeof(d->id), "%s", id);
    d->port = (uint16_t)port;
    d->master = master;
    return (int)m->n++;
}

/* Marks slots [start, end] as held by node k. */
static bool cm_own(struct cluster_map *m, const struct resp_value *a, const struct resp_value *b, int k)
{
    int64_t start, end;
    if (!cm_int(a, 0, DIST_NSLOTS - 1, &start) || !cm_int(b, start, DIST_NSLOTS - 1, &end)) return false;
    for (int64_t s = start; s <= end; s++) m->owner[s] = (uint16_t)k;
    return true;
}

static bool cm_init(struct cluster_map *m, size_t cap)
{
    memset(m, 0, sizeof(*m));
    for (uint32_t s = 0; s < DIST_NSLOTS; s++) m->owner[s] = TOPO_SLOT_NONE;
    if (cap > CLUSTER_MAX_NODES) cap = CLUSTER_MAX_NODES;
    m->nodes = calloc(cap ? cap : 1, sizeof(*m->nodes));
    return m->nodes != NULL;
}

void cluster_map_free(struct cluster_map *m)
{
    free(m->nodes);
    m->nodes = NULL;
    m->n = 0;
}

/* The nodes of one shard; its master's index in *master (-1: none). */
static bool cm_shard_nodes(struct cluster_map *m, const struct resp_value *nodes, int *master)
{
    int first = (int)m->n;
    *master = -1;
    for (size_t i = 0; i < nodes->n; i++) {
        const struct resp_value *nd = &nodes->elems[i];
        const char *host = cm_str(cm_field(nd, "endpoint"));
        if (host == NULL || host[0] == '\0' || strcmp(host, "?") == 0) host = cm_str(cm_field(nd, "ip"));
        const char *role = cm_str(cm_field(nd, "role")), *health = cm_str(cm_field(nd, "health"));
        int64_t port;
        if (role == NULL || !cm_int(cm_field(nd, "port"), 1, 65535, &port)) continue; /* a TLS-only node: "tls-port" */
        bool is_master = strcmp(role, "master") == 0, failed = health != NULL && strcmp(health, "fail") == 0;
        if (is_master && failed) continue; /* the cluster agreed it is down: its replica takes its slots */
        int k = cm_add(m, host, port, cm_str(cm_field(nd, "id")), is_master);
        if (k < 0) continue;
        m->nodes[k].failed = failed || (health != NULL && strcmp(health, "online") != 0); /* "loading": not yet */
        if (is_master && *master < 0) *master = k;
    }
    for (int k = first; *master >= 0 && k < (int)m->n; k++) {
        if (!m->nodes[k].master) snprintf(m->nodes[k].master_id, sizeof(m->nodes[k].master_id), "%s", m->nodes[*master].id);
    }
    return true;
}

int cluster_map_from_shards(const struct resp_value *v, struct cluster_map *m)
{
    if (v->type != RESP_ARRAY) return -1;
    size_t cap = 0;
    for (size_t i = 0; i < v->n; i++) {
        const struct resp_value *nodes = cm_field(&v->elems[i], "nodes");
        if (nodes == NULL || nodes->type != RESP_ARRAY) return -1;
        cap += nodes->n;
    }
    if (!cm_init(m, cap)) return -1;
    for (size_t i = 0; i < v->n; i++) {
        const struct resp_value *slots = cm_field(&v->elems[i], "slots");
        int master;
        cm_shard_nodes(m, cm_field(&v->elems[i], "nodes"), &master);
        if (slots == NULL || slots->type != RESP_ARRAY || slots->n % 2 != 0) goto bad;
        for (size_t k = 0; master >= 0 && k < slots->n; k += 2) {
            if (!cm_own(m, &slots->elems[k], &slots->elems[k + 1], master)) goto bad;
        }
    }
    return 0;
bad:
    cluster_map_free(m);
    return -1;
}

/* The node [host, port, id, ...] of a CLUSTER SLOTS range: its index (an existing one for the
 * same address), or -1. */
static int cm_slots_node(struct cluster_map *m, const struct resp_value *nd, bool master, const char *master_id)
{
    int64_t port;
    if (nd->type != RESP_ARRAY || nd->n < 3 || !cm_int(&nd->elems[1], 1, 65535, &port)) return -1;
    const char *host = cm_str(&nd->elems[0]), *id = cm_str(&nd->elems[2]);
    for (uint32_t k = 0; host != NULL && k < m->n; k++) {
        if (m->nodes[k].port == port && strcmp(m->nodes[k].host, host) == 0) return (int)k;
    }
    int k = cm_add(m, host, port, id, master);
    if (k >= 0 && !master) snprintf(m->nodes[k].master_id, sizeof(m->nodes[k].master_id), "%s", master_id);
    return k;
}

int cluster_map_from_slots(const struct resp_value *v, struct cluster_map *m)
{
    if (v->type != RESP_ARRAY) return -1;
    size_t cap = 0;
    for (size_t i = 0; i < v->n; i++) cap += v->elems[i].type == RESP_ARRAY ? v->elems[i].n : 0;
    if (!cm_init(m, cap)) return -1;
    for (size_t i = 0; i < v->n; i++) {
        const struct resp_value *r = &v->elems[i];
        if (r->type != RESP_ARRAY || r->n < 3) goto bad;
        int master = cm_slots_node(m, &r->elems[2], true, "");
        if (master < 0 || !cm_own(m, &r->elems[0], &r->elems[1], master)) goto bad;
        for (size_t k = 3; k < r->n; k++) (void)cm_slots_node(m, &r->elems[k], false, m->nodes[master].id);
    }
    return 0;
bad:
    cluster_map_free(m);
    return -1;
}

/* ---- places ---- */

static bool cm_at(const struct topo_server *s, const struct cluster_node *nd)
{
    return !s->addr.is_unix && s->addr.port == nd->port && strcmp(s->addr.host, nd->host) == 0;
}

/* Server i of out: node nd, or the empty place (nd NULL), of the given role. */
static void cm_put(const struct topo_set *cur, struct topo_server *out, char (*texts)[CLUSTER_HOST_MAX + 8], uint32_t i,
                   const struct cluster_node *nd, enum topo_role role)
{
    out[i] = cur->servers[i];
    out[i].role = (uint8_t)role;
    out[i].hold = false;
    if (nd == NULL) {
        out[i].addr = (struct conf_addr){ .text = "", .host = "", .port = 0, .perm = -1 };
        return;
    }
    snprintf(texts[i], sizeof(texts[i]), strchr(nd->host, ':') != NULL ? "[%s]:%u" : "%s:%u", nd->host,
             (unsigned)nd->port);
    out[i].addr = (struct conf_addr){ .text = texts[i], .host = (char *)nd->host, .port = nd->port, .perm = -1 };
}

/* Masters: each keeps its place (same address), the others take the first free ones. place[k]:
 * node k's place (UINT32_MAX: none). Returns how many masters found none. */
static uint32_t cm_place_masters(const struct topo_set *cur, uint32_t nmasters, const struct cluster_map *m,
                                 uint32_t *place, int *taken)
{
    uint32_t lost = 0;
    for (uint32_t k = 0; k < m->n; k++) {
        place[k] = UINT32_MAX;
        for (uint32_t i = 0; m->nodes[k].master && i < nmasters; i++) {
            if (taken[i] < 0 && !topo_slot_empty(cur, i) && cm_at(&cur->servers[i], &m->nodes[k])) {
                taken[i] = (int)k;
                place[k] = i;
                break;
            }
        }
    }
    uint32_t next = 0;
    for (uint32_t k = 0; k < m->n; k++) {
        if (!m->nodes[k].master || place[k] != UINT32_MAX) continue;
        while (next < nmasters && taken[next] >= 0) next++;
        if (next == nmasters) {
            lost++;
            continue;
        }
        taken[next] = (int)k;
        place[k] = next;
    }
    return lost;
}

/* The replica places of master place i (node km): its replicas that are not failed, each
 * keeping its place, the others in the first free ones. */
static void cm_place_replicas(const struct topo_set *cur, uint32_t base, uint32_t nslots, const struct cluster_map *m,
                              int km, struct topo_server *out, char (*texts)[CLUSTER_HOST_MAX + 8])
{
    int got[CONF_REPLICA_SLOTS];
    bool used[CLUSTER_MAX_NODES] = { false };
    for (uint32_t j = 0; j < nslots && j < CONF_REPLICA_SLOTS; j++) {
        got[j] = -1;
        for (uint32_t k = 0; km >= 0 && k < m->n; k++) {
            const struct cluster_node *nd = &m->nodes[k];
            if (!used[k] && !nd->master && !nd->failed && strcmp(nd->master_id, m->nodes[km].id) == 0 &&
                !topo_slot_empty(cur, base + j) && cm_at(&cur->servers[base + j], nd)) {
                got[j] = (int)k;
                used[k] = true;
                break;
            }
        }
    }
    for (uint32_t j = 0; j < nslots && j < CONF_REPLICA_SLOTS; j++) {
        for (uint32_t k = 0; got[j] < 0 && km >= 0 && k < m->n; k++) {
            const struct cluster_node *nd = &m->nodes[k];
            if (used[k] || nd->master || nd->failed || strcmp(nd->master_id, m->nodes[km].id) != 0) continue;
            got[j] = (int)k;
            used[k] = true;
        }
        cm_put(cur, out, texts, base + j, got[j] >= 0 ? &m->nodes[got[j]] : NULL, TOPO_ROLE_REPLICA);
    }
}

uint32_t cluster_places(const struct topo_set *cur, uint32_t nmasters, uint32_t replica_slots,
                        const struct cluster_map *m, struct topo_server *out, char (*texts)[CLUSTER_HOST_MAX + 8],
                        uint16_t *slots)
{
    uint32_t place[CLUSTER_MAX_NODES];
    int taken[CONF_CLUSTER_MASTERS];
    if (nmasters > CONF_CLUSTER_MASTERS) nmasters = CONF_CLUSTER_MASTERS;
    for (uint32_t i = 0; i < nmasters; i++) taken[i] = -1;
    uint32_t lost = cm_place_masters(cur, nmasters, m, place, taken);
    for (uint32_t i = 0; i < nmasters && i < cur->nservers; i++)
        cm_put(cur, out, texts, i, taken[i] >= 0 ? &m->nodes[taken[i]] : NULL, TOPO_ROLE_MASTER);
    for (uint32_t i = 0; replica_slots > 0 && i < nmasters; i++) {
        uint32_t base = nmasters + i * replica_slots;
        if (base + replica_slots <= cur->nservers) cm_place_replicas(cur, base, replica_slots, m, taken[i], out, texts);
    }
    for (uint32_t s = 0; s < DIST_NSLOTS; s++) {
        uint16_t k = m->owner[s];
        slots[s] = k != TOPO_SLOT_NONE && place[k] != UINT32_MAX ? (uint16_t)place[k] : TOPO_SLOT_NONE;
    }
    return lost;
}
