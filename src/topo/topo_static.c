/*
 * topo_static.c - the static topology source: a pool's servers are its YAML `servers:` list, in
 * that order, all masters, at the addresses written; the set never changes while the config
 * generation lives (a reload builds a new generation with a new first set). Also where a pool's
 * source is chosen.
 *
 * Threads: first() runs on the thread that builds a generation (the master).
 */
#include "config.h"
#include "topo/topology.h"
#include "topo/topo_cluster.h"
#include "topo/topo_sentinel.h"

#include <stdlib.h>

struct topo_set *topo_static_servers(const struct conf_pool *cp)
{
    uint32_t n = (uint32_t)cp->nservers;
    struct topo_server *servers = calloc(n ? n : 1, sizeof(*servers));
    if (servers == NULL) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        const struct conf_server *cs = &cp->servers[i];
        servers[i] = (struct topo_server){
            .name = cs->stats_name,
            .ketama_name = cs->ketama_name,
            .addr = cs->addr,
            .weight = cs->weight,
            .role = TOPO_ROLE_MASTER,
        };
        if (cs->replica_slot) servers[i] = topo_place_empty(cs, TOPO_ROLE_REPLICA); /* until its source puts one there */
    }
    struct topo_set *set = topo_set_create(servers, n);
    free(servers);
    if (set != NULL) set->serial = 1;
    return set;
}

struct topo_server topo_place_empty(const struct conf_server *cs, enum topo_role role)
{
    return (struct topo_server){
        .name = cs->stats_name,
        .ketama_name = cs->ketama_name,
        .addr = { .text = "", .host = "", .port = 0, .perm = -1 },
        .weight = cs->weight,
        .role = (uint8_t)role,
    };
}

static const struct topo_source_ops topo_static_ops = {
    .name = "static",
    .first = topo_static_servers,
    .start = NULL,
    .stop = NULL,
    .build_dist = NULL,
};

const struct topo_source_ops *topo_source_for_pool(const struct conf_pool *cp)
{
    if (cp->redis_cluster) return &topo_cluster_ops;
    return cp->nsentinels > 0 ? &topo_sentinel_ops : &topo_static_ops;
}
