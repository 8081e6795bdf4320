/*
 * conf_cluster.c - the pool key `redis_cluster` (notes/cluster.md): a redis pool whose `servers:`
 * are seed nodes of a Redis Cluster. Once the pool is parsed, the seeds move to p->seeds and the
 * pool gets the fixed set of places its cluster source fills at run time: CONF_CLUSTER_MASTERS
 * node places ("node1", "node2", ...: the masters, in the order the source meets them), then, when
 * it reads from replicas, CONF_REPLICA_SLOTS replica places per master ("node1/replica1", ...),
 * as a Sentinel pool's. Keys go by Redis Cluster's hash slot (CRC16 of the key's {hash tag}), so
 * `hash`, `hash_tag` and `distribution` do not apply: -t warns when they are set.
 *
 * Threads: whoever loads a config. Nothing is kept.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "conf/conf_int.h"

unsigned conf_cluster_check(const struct conf_pool *p, struct conf_report *r)
{
    unsigned n = 0;
    if (!p->redis_cluster) return 0;
    int line = conf_pool_key_line(p, "redis_cluster");
    if (!p->redis) {
        conf_report(r, line, 0, p->name, "redis_cluster", "needs a redis pool (redis: true)");
        n++;
    }
    if (p->nsentinels > 0) {
        conf_report(r, line, 0, p->name, "redis_cluster", "a pool follows either sentinels or a cluster, not both");
        n++;
    }
    if (p->redis_db != 0) {
        conf_report(r, conf_pool_key_line(p, "redis_db"), 0, p->name, "redis_db",
                    "a Redis Cluster has database 0 only");
        n++;
    }
    if (p->server_tls) {
        conf_report(r, conf_pool_key_line(p, "server_tls"), 0, p->name, "server_tls",
                    "not supported with redis_cluster yet (the proxy asks the nodes for the slot map over plain TCP)");
        n++;
    }
    for (size_t i = 0; i < p->nservers; i++) {
        if (!p->servers[i].addr.is_unix) continue;
        conf_report(r, p->servers[i].line, 0, p->name, "servers",
                    "'%s': a cluster's seed nodes are host:port:weight (the cluster announces TCP addresses)",
                    p->servers[i].pname);
        n++;
    }
    return n;
}

void conf_cluster_warn(const struct conf_pool *p, struct conf_report *r)
{
    static const char *const ignored[] = { "hash", "hash_tag", "distribution" };
    if (!p->redis_cluster) return;
    for (size_t i = 0; i < NC_ARRAY_LEN(ignored); i++) {
        int line = conf_pool_key_line(p, ignored[i]);
        if (line == p->line) continue; /* not set */
        conf_warn(r, line, p->name, ignored[i],
                  "ignored by a redis_cluster pool: keys go by the cluster's hash slots (CRC16, {hash tags})");
    }
}

/* Node place k (0-based): "<a seed's host:port:weight> node<k+1>", at that seed's address until
 * its source puts a node there. */
static int conf_node_place(struct conf_pool *p, struct conf_server *place, size_t k, struct conf_report *r)
{
    const struct conf_server *seed = &p->seeds[k % p->nseeds];
    char text[1200], err[CONF_ERR_MAX];
    snprintf(text, sizeof(text), "%s node%zu", seed->pname, k + 1);
    int rc = conf_server_parse(text, place, err, sizeof(err));
    if (rc != 0) {
        conf_report(r, seed->line, 0, p->name, "servers", "'%s': %s", seed->pname, rc == -ENOMEM ? "out of memory" : err);
        return rc;
    }
    place->line = seed->line;
    place->node_place = true;
    return 0;
}

int conf_cluster_places(struct conf_pool *p, struct conf_report *r)
{
    if (!p->redis_cluster || p->nservers == 0) return 0;
    struct conf_server *places = calloc(CONF_CLUSTER_MASTERS, sizeof(*places));
    if (places == NULL) {
        conf_report(r, p->line, 0, p->name, "servers", "out of memory");
        return -ENOMEM;
    }
    p->seeds = p->servers;
    p->nseeds = p->nservers;
    p->servers = places;
    p->nservers = 0;
    for (size_t k = 0; k < CONF_CLUSTER_MASTERS; k++) {
        int rc = conf_node_place(p, &places[k], k, r);
        if (rc != 0) return rc;
        p->nservers++;
    }
    p->hash = HASH_CRC16;
    p->has_hash_tag = true;
    p->hash_tag[0] = '{';
    p->hash_tag[1] = '}';
    p->distribution = DIST_KETAMA; /* not used: the source's slot map routes */
    return 0;
}

void conf_cluster_deinit(struct conf_pool *p)
{
    for (size_t i = 0; i < p->nseeds; i++) conf_server_deinit(&p->seeds[i]);
    free(p->seeds);
    p->seeds = NULL;
    p->nseeds = 0;
}
