/*
 * conf_cluster_clients.c - the pool keys of cluster-mode clients (notes/cluster-clients.md):
 * `cluster_announce` (the host:port the proxy announces to Redis Cluster clients as the one node
 * of its cluster) and what `client_cluster_mode` (a plain boolean of the key table, conf_keys.c)
 * must agree on once the pool is parsed: a redis pool; an address to announce (cluster_announce,
 * or a TCP listen address); no cluster_announce without it.
 *
 * Threads: whoever loads a config. Nothing is kept.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conf/conf_int.h"

#define CONF_ANNOUNCE_FORM "expected \"host:port\" that cluster clients connect to"
#define CONF_ANNOUNCE_HOST_MAX 253 /* a DNS name */

/* Why host cannot be announced to clients, or NULL: a wildcard address (what a listener binds,
 * not what a client connects to), a byte that would break the lines of CLUSTER NODES, or a name
 * longer than DNS allows. */
static const char *conf_announce_host_bad(const char *host)
{
    static const char *const wildcards[] = { "0.0.0.0", "::", "*" };
    for (size_t i = 0; i < sizeof(wildcards) / sizeof(wildcards[0]); i++) {
        if (strcmp(host, wildcards[i]) == 0) return "a wildcard address: announce one clients connect to";
    }
    for (const char *c = host; *c != '\0'; c++) {
        if (*c < '!' || *c > '~' || *c == '@' || *c == ',') return "not a host name or an IP address";
    }
    if (strlen(host) > CONF_ANNOUNCE_HOST_MAX) return "a host name longer than 253 characters";
    return NULL;
}

int conf_cluster_announce_parse(const char *key, const struct conf_node *v, struct conf_pool *p,
                                struct conf_report *r)
{
    char err[CONF_ERR_MAX];
    if (v->kind != CONF_NODE_SCALAR || v->len == 0) {
        conf_report(r, v->line, 0, p->name, key, "%s, got %s", CONF_ANNOUNCE_FORM, conf_node_what(v));
        return -EINVAL;
    }
    if (v->text[0] == '/') {
        conf_report(r, v->line, 0, p->name, key, "'%s': %s, not a unix socket", v->text, CONF_ANNOUNCE_FORM);
        return -EINVAL;
    }
    struct conf_addr a;
    int rc = conf_listen_parse(v->text, &a, err, sizeof(err));
    if (rc == -EINVAL && strchr(v->text, ':') == NULL) /* (not the listen key's words) */
        snprintf(err, sizeof(err), "missing ':port' (%s)", CONF_ANNOUNCE_FORM);
    if (rc == 0) {
        const char *bad = strchr(a.host, ':') != NULL && v->text[0] != '['
                              ? "an IPv6 address goes in brackets: [::1]:port"
                              : conf_announce_host_bad(a.host);
        if (bad != NULL) {
            conf_addr_deinit(&a);
            snprintf(err, sizeof(err), "%s", bad);
            rc = -EINVAL;
        }
    }
    if (rc != 0) {
        conf_report(r, v->line, 0, p->name, key, "'%s': %s", v->text, rc == -ENOMEM ? "out of memory" : err);
        return rc;
    }
    p->cluster_announce = a;
    return 0;
}

unsigned conf_cluster_clients_check(const struct conf_pool *p, struct conf_report *r)
{
    unsigned n = 0;
    if (!p->client_cluster_mode) {
        if (p->cluster_announce.host != NULL) {
            conf_report(r, conf_pool_key_line(p, "cluster_announce"), 0, p->name, "cluster_announce",
                        "set without client_cluster_mode: true");
            n++;
        }
        return n;
    }
    int line = conf_pool_key_line(p, "client_cluster_mode");
    if (!p->redis) {
        conf_report(r, line, 0, p->name, "client_cluster_mode", "cluster-mode clients need a redis pool (redis: true)");
        n++;
    }
    if (p->cluster_announce.host == NULL && p->listen.is_unix) {
        conf_report(r, line, 0, p->name, "client_cluster_mode",
                    "a unix-socket listen cannot be announced to cluster clients: set cluster_announce "
                    "(\"host:port\")");
        n++;
    }
    return n;
}
