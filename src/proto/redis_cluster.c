/*
 * redis_cluster.c - what the proxy answers cluster-mode clients, in a pool with
 * client_cluster_mode (notes/cluster-clients.md): the proxy is the one node of a Redis Cluster,
 * a master without replicas that owns all 16384 slots, at the announced address. So a cluster
 * client (redis-py's RedisCluster, go-redis's ClusterClient, ioredis's Cluster, JedisCluster)
 * sends everything to the proxy, which routes each key as it routes any other client's.
 *
 * The announced address is cluster_announce; else the pool's listen address; for a wildcard
 * listen address (0.0.0.0, ::), the address the client connected to. The node id is 40 hex digits
 * of the announced "host:port" (its MD5, then the first 4 bytes of the MD5 of that digest), so
 * proxies that announce one address announce one node. The replies are redis 7.0's, in RESP2 and
 * RESP3 (the shapes of a redis-server 7.0.15 with cluster-enabled, one node owning every slot):
 *   - CLUSTER SLOTS: one range, 0-16383, of the node [host, port, id, {}];
 *   - CLUSTER SHARDS: one shard (slots [0, 16383]) of the node (id, port, ip, endpoint, role
 *     master, replication-offset 0, health online), maps in RESP3;
 *   - CLUSTER NODES: its line, "<id> <host>:<port>@<cport> myself,master - 0 0 1 connected 0-16383",
 *     the bus port cport being port + 10000, or 0 when that is no port;
 *   - CLUSTER INFO: state ok, every slot assigned and ok, one known node, size 1, epochs 1;
 *   - CLUSTER MYID: the id; CLUSTER KEYSLOT key: the key's slot (hash_keyslot);
 *   - CLUSTER HELP: what is answered; any other subcommand: redis's unknown-subcommand error;
 *   - READONLY, READWRITE: +OK (reads and writes go where the pool sends them).
 * Also the parser options of a pool (proto_ops.parse_opts): a pool without client_cluster_mode
 * refuses these commands as unknown, as twemproxy does (redis_req.c).
 *
 * Threads: no state of its own; a loop calls it on its clients' sessions and its msgs.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include "common/sock.h"
#include "conf/conf.h"
#include "hash/hash.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"

#define CLUSTER_ID_LEN 40          /* hex digits of a node id */
#define CLUSTER_BUS_OFFSET 10000u  /* redis's cluster bus port: its port + 10000 */
#define CLUSTER_EPOCH 1            /* the node's config epoch, and the cluster's */

/* The node a client is told of: where it is and its id. */
struct cluster_node {
    char host[NI_MAXHOST];
    uint16_t port;
    char id[CLUSTER_ID_LEN + 1];
};

uint8_t redis_parse_opts(const struct conf_pool *cp)
{
    return cp->client_cluster_mode ? REDIS_OPT_CLUSTER : 0;
}

static bool cluster_host_wildcard(const char *host)
{
    return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0 || strcmp(host, "*") == 0 || *host == '\0';
}

/* 40 hex digits of "host:port": its MD5 (32), then the first 4 bytes of the MD5 of that (8). */
static void cluster_node_id(const char *host, uint16_t port, char *id)
{
    char text[NI_MAXHOST + 8];
    uint8_t d[2][16];
    int n = snprintf(text, sizeof(text), "%s:%u", host, port);
    hash_md5_digest((const uint8_t *)text, n > 0 ? (size_t)n : 0, d[0]);
    hash_md5_digest(d[0], sizeof(d[0]), d[1]);
    for (int i = 0; i < CLUSTER_ID_LEN / 2; i++) snprintf(id + 2 * i, 3, "%02x", d[i / 16][i % 16]);
}

/* The node client s is told of: the pool's announced address, or for a wildcard listen address
 * the one the client connected to (an IPv4 client of a dual-stack listener: its IPv4 address). */
static void cluster_node_of(const struct proto_session *s, const struct conf_pool *cp, struct cluster_node *n)
{
    const struct conf_addr *a = cp->cluster_announce.host != NULL ? &cp->cluster_announce : &cp->listen;
    snprintf(n->host, sizeof(n->host), "%s", a->host != NULL ? a->host : "");
    n->port = a->port;
    char local[NI_MAXHOST];
    uint16_t port;
    if (cluster_host_wildcard(n->host) && sock_addr_ip(s->fd, false, local, sizeof(local), &port) == 0) {
        bool mapped = strncmp(local, "::ffff:", 7) == 0 && strchr(local, '.') != NULL;
        snprintf(n->host, sizeof(n->host), "%s", mapped ? local + 7 : local);
        n->port = port;
    }
    cluster_node_id(n->host, n->port, n->id);
}

static void cluster_add_int(struct textbuf *t, long long v)
{
    textbuf_addf(t, ":%lld\r\n", v);
}

static void cluster_add_str(struct textbuf *t, const char *s)
{
    resp_add_bulk(t, s, strlen(s));
}

/* A map of n pairs: RESP3's map, RESP2's flat array of 2n. */
static void cluster_add_map(struct textbuf *t, uint8_t variant, unsigned n)
{
    textbuf_addf(t, variant == REDIS_RESP3 ? "%%%u\r\n" : "*%u\r\n", variant == REDIS_RESP3 ? n : 2 * n);
}

static void cluster_slots(struct textbuf *t, uint8_t variant, const struct cluster_node *n)
{
    textbuf_adds(t, "*1\r\n*3\r\n");
    cluster_add_int(t, 0);
    cluster_add_int(t, HASH_SLOTS - 1);
    textbuf_adds(t, "*4\r\n");
    cluster_add_str(t, n->host);
    cluster_add_int(t, n->port);
    cluster_add_str(t, n->id);
    cluster_add_map(t, variant, 0); /* no hostname is announced */
}

static void cluster_shards(struct textbuf *t, uint8_t variant, const struct cluster_node *n)
{
    textbuf_adds(t, "*1\r\n");
    cluster_add_map(t, variant, 2);
    cluster_add_str(t, "slots");
    textbuf_adds(t, "*2\r\n");
    cluster_add_int(t, 0);
    cluster_add_int(t, HASH_SLOTS - 1);
    cluster_add_str(t, "nodes");
    textbuf_adds(t, "*1\r\n");
    cluster_add_map(t, variant, 7); /* redis 7.0's fields, in its order */
    cluster_add_str(t, "id");
    cluster_add_str(t, n->id);
    cluster_add_str(t, "port");
    cluster_add_int(t, n->port);
    cluster_add_str(t, "ip");
    cluster_add_str(t, n->host);
    cluster_add_str(t, "endpoint");
    cluster_add_str(t, n->host);
    cluster_add_str(t, "role");
    cluster_add_str(t, "master");
    cluster_add_str(t, "replication-offset");
    cluster_add_int(t, 0);
    cluster_add_str(t, "health");
    cluster_add_str(t, "online");
}

static void cluster_nodes(struct textbuf *t, uint8_t variant, const struct cluster_node *n)
{
    struct textbuf line = { 0 };
    unsigned cport = n->port + CLUSTER_BUS_OFFSET <= UINT16_MAX ? n->port + CLUSTER_BUS_OFFSET : 0;
    textbuf_addf(&line, "%s %s:%u@%u myself,master - 0 0 %d connected 0-%u\n", n->id, n->host, n->port, cport,
                 CLUSTER_EPOCH, HASH_SLOTS - 1);
    if (textbuf_failed(&line)) t->failed = true;
    else resp_add_text(t, variant, line.data, line.len);
    textbuf_deinit(&line);
}

static void cluster_info(struct textbuf *t, uint8_t variant)
{
    char text[512];
    int n = snprintf(text, sizeof(text),
                     "cluster_state:ok\r\ncluster_slots_assigned:%u\r\ncluster_slots_ok:%u\r\n"
                     "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\n"
                     "cluster_size:1\r\ncluster_current_epoch:%d\r\ncluster_my_epoch:%d\r\n"
                     "cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n"
                     "total_cluster_links_buffer_limit_exceeded:0\r\n",
                     HASH_SLOTS, HASH_SLOTS, CLUSTER_EPOCH, CLUSTER_EPOCH);
    resp_add_text(t, variant, text, n > 0 ? (size_t)n : 0);
}

static void cluster_help(struct textbuf *t)
{
    static const char *const lines[] = {
        "CLUSTER <subcommand> [<arg> ...]. The proxy answers these, as one node owning every slot:",
        "INFO", "    The cluster's state and size.",
        "KEYSLOT <key>", "    The slot of <key>.",
        "MYID", "    The id of the node.",
        "NODES", "    The node's line: its address, its role and its slots.",
        "SHARDS", "    The one shard: its slots and its node.",
        "SLOTS", "    The slot range and the node serving it.",
        "HELP", "    This text.",
    };
    textbuf_addf(t, "*%zu\r\n", sizeof(lines) / sizeof(lines[0]));
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) textbuf_addf(t, "+%s\r\n", lines[i]);
}

enum cluster_sub { SUB_SLOTS, SUB_SHARDS, SUB_NODES, SUB_INFO, SUB_MYID, SUB_KEYSLOT, SUB_HELP };

/* The reply to CLUSTER <which> (its arity checked) into t. */
static void cluster_render(struct textbuf *t, enum cluster_sub which, const struct proto_session *s,
                           const struct conf_pool *cp, const struct msg *req)
{
    struct cluster_node n;
    if (which != SUB_INFO && which != SUB_KEYSLOT && which != SUB_HELP) cluster_node_of(s, cp, &n);
    switch (which) {
    case SUB_SLOTS: cluster_slots(t, s->variant, &n); break;
    case SUB_SHARDS: cluster_shards(t, s->variant, &n); break;
    case SUB_NODES: cluster_nodes(t, s->variant, &n); break;
    case SUB_INFO: cluster_info(t, s->variant); break;
    case SUB_MYID: cluster_add_str(t, n.id); break;
    case SUB_KEYSLOT: cluster_add_int(t, hash_keyslot(req->keys[1].ptr, req->keys[1].len)); break;
    case SUB_HELP: cluster_help(t); break;
    }
}

int redis_cluster_local(const struct proto_session *s, const struct conf_pool *cp, const struct msg *req,
                        struct msg *rsp)
{
    static const struct {
        const char *name;
        uint32_t argc; /* CLUSTER and the subcommand included */
    } subs[] = {
        [SUB_SLOTS] = { "slots", 2 }, [SUB_SHARDS] = { "shards", 2 }, [SUB_NODES] = { "nodes", 2 },
        [SUB_INFO] = { "info", 2 },   [SUB_MYID] = { "myid", 2 },     [SUB_KEYSLOT] = { "keyslot", 3 },
        [SUB_HELP] = { "help", 2 },
    };
    if (redis_cmds[req->cmd].local == REDIS_LOCAL_READONLY) return redis_answer(rsp, "+OK\r\n", PROTO_ANSWERED);
    const struct msg_key *sub = &req->keys[0]; /* CLUSTER's arity: at least the subcommand */
    size_t i = 0;
    while (i < sizeof(subs) / sizeof(subs[0]) && !redis_key_is(sub, subs[i].name)) i++;
    if (i == sizeof(subs) / sizeof(subs[0])) return redis_answer_unknown_sub(sub, "CLUSTER", rsp);
    if (req->nkeys + 1 != subs[i].argc)
        return redis_answer_named(rsp, "-ERR wrong number of arguments for 'cluster|", sub, "' command\r\n", true);
    struct textbuf t = { 0 };
    cluster_render(&t, (enum cluster_sub)i, s, cp, req);
    return redis_answer_text(&t, rsp);
}
