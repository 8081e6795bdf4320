/*
 * topo_sentinel_replicas.c - the replicas of the Sentinel source (notes/sentinel.md): which
 * replicas a sentinel reports up, and how the replica slots of a shard follow them (a pool that
 * reads from replicas has CONF_REPLICA_SLOTS slots per server, conf_sentinel.c).
 *
 * Threads: the master's event loop.
 */
#include "config.h"
#include "topo/topo_sentinel_int.h"

#include <stdlib.h>
#include <string.h>

bool sentinel_port(const char *text, uint16_t *port)
{
    char *end;
    unsigned long v = text != NULL ? strtoul(text, &end, 10) : 0;
    if (text == NULL || *end != '\0' || v == 0 || v > 65535) return false;
    *port = (uint16_t)v;
    return true;
}

bool sentinel_has_flag(const char *flags, const char *flag)
{
    size_t n = strlen(flag);
    for (const char *p = flags; p != NULL && *p != '\0';) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        if (len == n && memcmp(p, flag, n) == 0) return true;
        p = comma != NULL ? comma + 1 : NULL;
    }
    return false;
}

void sentinel_replicas_read(const struct resp_value *v, struct sentinel_replica_list *list)
{
    memset(list, 0, sizeof(*list));
    if (v == NULL || v->type != RESP_ARRAY) return;
    list->have = true;
    for (size_t i = 0; i < v->n && list->n < SENTINEL_REPLICAS_MAX; i++) {
        const struct resp_value *r = &v->elems[i];
        const char *ip = resp_value_field(r, "ip"), *flags = resp_value_field(r, "flags");
        const char *link = resp_value_field(r, "master-link-status");
        uint16_t port;
        if (ip == NULL || strlen(ip) >= SENTINEL_HOST_MAX || !sentinel_port(resp_value_field(r, "port"), &port))
            continue;
        if (flags == NULL || sentinel_has_flag(flags, "s_down") || sentinel_has_flag(flags, "o_down") ||
            sentinel_has_flag(flags, "promoted") ||
            sentinel_has_flag(flags, "disconnected") || link == NULL || strcmp(link, "ok") != 0)
            continue;
        list->r[list->n].port = port;
        memcpy(list->r[list->n].host, ip, strlen(ip) + 1);
        list->n++;
    }
}

static bool sentinel_at(const struct conf_addr *a, const char *host, uint16_t port)
{
    return !a->is_unix && a->port == port && strcmp(a->host, host) == 0;
}

/* Whether list holds host:port. */
static bool sentinel_listed(const struct sentinel_replica_list *list, const char *host, uint16_t port)
{
    for (uint32_t i = 0; i < list->n; i++) {
        if (list->r[i].port == port && strcmp(list->r[i].host, host) == 0) return true;
    }
    return false;
}

uint32_t sentinel_replicas_plan(const struct topo_set *set, uint32_t nshards, uint32_t slots, uint32_t m,
                                const struct sentinel_replica_list *list, struct sentinel_change *ch)
{
    uint32_t base = nshards + m * slots, n = 0;
    bool keep[SENTINEL_REPLICAS_MAX] = { false }; /* list entries already in a slot */
    bool empty[64] = { false };
    const struct conf_addr *master = &set->servers[m].addr;
    for (uint32_t k = 0; k < slots && k < 64; k++) {
        const struct conf_addr *a = &set->servers[base + k].addr;
        empty[k] = topo_slot_empty(set, base + k);
        if (empty[k]) continue;
        bool up = sentinel_listed(list, a->host, a->port) && !sentinel_at(master, a->host, a->port);
        for (uint32_t i = 0; up && i < list->n; i++) {
            if (list->r[i].port == a->port && strcmp(list->r[i].host, a->host) == 0) keep[i] = true;
        }
        if (up) continue;
        ch[n++] = (struct sentinel_change){ .idx = base + k, .port = 0, .host = "" };
        empty[k] = true;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < list->n; i++) {
        if (keep[i] || sentinel_at(master, list->r[i].host, list->r[i].port)) continue;
        while (k < slots && k < 64 && !empty[k]) k++;
        if (k == slots || k == 64) break; /* more replicas up than slots: the first ones serve */
        /* a slot emptied above and filled again is one change: the later one wins */
        ch[n] = (struct sentinel_change){ .idx = base + k, .port = list->r[i].port };
        memcpy(ch[n].host, list->r[i].host, strlen(list->r[i].host) + 1);
        n++;
        empty[k] = false;
    }
    return n;
}
