/*
 * test_redis_cluster.c - unit tests of what cluster-mode clients are answered (redis_cluster.c,
 * a pool with client_cluster_mode): CLUSTER SLOTS, SHARDS, NODES, INFO, MYID, KEYSLOT and HELP
 * byte for byte in RESP2 and RESP3 (the shapes of a redis-server 7.0.15 with cluster-enabled),
 * the node id (the MD5s of "host:port", computed here by Python's hashlib), the announced address
 * (cluster_announce, the listen address, IPv6, the address a client of a wildcard listener
 * connected to), the bus port, the errors (arity, unknown subcommands), READONLY and READWRITE,
 * NOAUTH before AUTH, and the parser's options of a pool (proto_ops.parse_opts).
 *
 * Threads: the test's only.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf/conf.h"
#include "local_client.h"
#include "proto/proto.h"
#include "proto/redis.h"

/* md5("127.0.0.1:7000") in hex, then the first 4 bytes of the md5 of that digest */
#define ID_7000 "9a36407534dec74266835e720da181835e0d1363"

/* A client of a pool with client_cluster_mode announcing host:port (host NULL: none, so the
 * listen address, listen_host:listen_port, is announced). */
static void cluster_open(struct client *c, const char *host, uint16_t port, const char *listen_host,
                         uint16_t listen_port)
{
    client_open(c, NULL, 0);
    c->cp.client_cluster_mode = true;
    c->cp.cluster_announce.host = (char *)host;
    c->cp.cluster_announce.port = port;
    c->cp.listen.host = (char *)listen_host;
    c->cp.listen.port = listen_port;
    c->d.opts = redis_proto.parse_opts(&c->cp);
    assert_int_equal(c->d.opts, REDIS_OPT_CLUSTER);
}

static void test_replies_resp2(void **state)
{
    (void)state;
    struct client c;
    cluster_open(&c, "127.0.0.1", 7000, "0.0.0.0", 22121);
    expect(&c, "CLUSTER SLOTS",
           "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:7000\r\n$40\r\n" ID_7000 "\r\n*0\r\n");
    expect(&c, "cluster shards",
           "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n*14\r\n$2\r\nid\r\n$40\r\n" ID_7000
           "\r\n$4\r\nport\r\n:7000\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n"
           "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n");
    expect(&c, "CLUSTER NODES",
           "$102\r\n" ID_7000 " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-16383\n\r\n");
    expect(&c, "CLUSTER INFO",
           "$312\r\ncluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n"
           "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:1\r\ncluster_size:1\r\n"
           "cluster_current_epoch:1\r\ncluster_my_epoch:1\r\ncluster_stats_messages_sent:0\r\n"
           "cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n\r\n");
    expect(&c, "CLUSTER MYID", "$40\r\n" ID_7000 "\r\n");
    expect(&c, "CLUSTER KEYSLOT somekey", ":11058\r\n");
    expect(&c, "CLUSTER KEYSLOT foo{hash_tag}", ":2515\r\n");
    expect(&c, "READONLY", "+OK\r\n");
    expect(&c, "readwrite", "+OK\r\n");
    client_close(&c);
}

/* RESP3: SLOTS' metadata and SHARDS' shard and node are maps, NODES and INFO verbatim strings. */
static void test_replies_resp3(void **state)
{
    (void)state;
    struct client c;
    cluster_open(&c, "127.0.0.1", 7000, "127.0.0.1", 22121);
    c.s.variant = REDIS_RESP3;
    expect(&c, "CLUSTER SLOTS",
           "*1\r\n*3\r\n:0\r\n:16383\r\n*4\r\n$9\r\n127.0.0.1\r\n:7000\r\n$40\r\n" ID_7000 "\r\n%0\r\n");
    expect(&c, "CLUSTER SHARDS",
           "*1\r\n%2\r\n$5\r\nslots\r\n*2\r\n:0\r\n:16383\r\n$5\r\nnodes\r\n*1\r\n%7\r\n$2\r\nid\r\n$40\r\n" ID_7000
           "\r\n$4\r\nport\r\n:7000\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$8\r\nendpoint\r\n$9\r\n127.0.0.1\r\n"
           "$4\r\nrole\r\n$6\r\nmaster\r\n$18\r\nreplication-offset\r\n:0\r\n$6\r\nhealth\r\n$6\r\nonline\r\n");
    expect(&c, "CLUSTER NODES",
           "=106\r\ntxt:" ID_7000 " 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-16383\n\r\n");
    char t[1024];
    assert_int_equal(client_say(&c, "CLUSTER INFO", t, sizeof(t)), PROTO_ANSWERED);
    assert_memory_equal(t, "=316\r\ntxt:cluster_state:ok\r\n", 26);
    expect(&c, "CLUSTER MYID", "$40\r\n" ID_7000 "\r\n");
    client_close(&c);
}

/* Where the node is: the listen address without cluster_announce, a name, IPv6 (no brackets, as
 * redis writes it), and the bus port: port + 10000, or 0 when that is no port. */
static void test_announced_address(void **state)
{
    (void)state;
    static const struct {
        const char *announce, *listen;
        uint16_t port;
        const char *slots, *node;
    } cases[] = {
        { NULL, "127.0.0.1", 22121, "$9\r\n127.0.0.1\r\n:22121\r\n$40\r\n800412e90c212566f6ac958169ac9e33c7c646ee",
          "$103\r\n800412e90c212566f6ac958169ac9e33c7c646ee 127.0.0.1:22121@32121 myself" },
        { "proxy.example.net", "0.0.0.0", 6379,
          "$17\r\nproxy.example.net\r\n:6379\r\n$40\r\n6d71511e55d3d66c7b04a71c6e2bbdf57b52ef06",
          "$110\r\n6d71511e55d3d66c7b04a71c6e2bbdf57b52ef06 proxy.example.net:6379@16379 myself" },
        { "::1", "::", 7000, "$3\r\n::1\r\n:7000\r\n$40\r\nfc9ac20513bc01cad7ecd072fcb7dabd36368eba",
          "$96\r\nfc9ac20513bc01cad7ecd072fcb7dabd36368eba ::1:7000@17000 myself" },
        { "10.1.2.3", "0.0.0.0", 55535, "$8\r\n10.1.2.3\r\n:55535\r\n$40\r\nf68051160ec6b51bf65a9edbcdf25b31be4affc8",
          "$102\r\nf68051160ec6b51bf65a9edbcdf25b31be4affc8 10.1.2.3:55535@65535 myself" },
        { "10.1.2.3", "0.0.0.0", 60000, "$8\r\n10.1.2.3\r\n:60000\r\n$40\r\n9c9c86b7e65930a16bfa7080e5e11d7baafaf092",
          "$98\r\n9c9c86b7e65930a16bfa7080e5e11d7baafaf092 10.1.2.3:60000@0 myself" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct client c;
        bool own = cases[i].announce != NULL;
        cluster_open(&c, cases[i].announce, own ? cases[i].port : 0, cases[i].listen, own ? 22121 : cases[i].port);
        char t[1024];
        assert_int_equal(client_say(&c, "CLUSTER SLOTS", t, sizeof(t)), PROTO_ANSWERED);
        if (strstr(t, cases[i].slots) == NULL) print_error("case %zu: %s\n", i, t);
        assert_non_null(strstr(t, cases[i].slots));
        assert_int_equal(client_say(&c, "CLUSTER NODES", t, sizeof(t)), PROTO_ANSWERED);
        if (strncmp(t, cases[i].node, strlen(cases[i].node)) != 0) print_error("case %zu: %s\n", i, t);
        assert_memory_equal(t, cases[i].node, strlen(cases[i].node));
        client_close(&c);
    }
}

/* A wildcard listen address is announced as the address the client connected to. */
static void test_wildcard_listen(void **state)
{
    (void)state;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(l >= 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(l, 1), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &alen), 0);
    int cfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof(a)), 0);
    int sfd = accept(l, NULL, NULL);
    assert_true(sfd >= 0);
    struct client c;
    cluster_open(&c, NULL, 0, "0.0.0.0", 1);
    c.s.fd = sfd;
    char t[1024], want[64];
    assert_int_equal(client_say(&c, "CLUSTER SLOTS", t, sizeof(t)), PROTO_ANSWERED);
    snprintf(want, sizeof(want), "$9\r\n127.0.0.1\r\n:%u\r\n", ntohs(a.sin_port));
    if (strstr(t, want) == NULL) print_error("%s\n", t);
    assert_non_null(strstr(t, want));
    client_close(&c);
    close(sfd);
    close(cfd);
    close(l);
}

static void test_errors(void **state)
{
    (void)state;
    struct client c;
    cluster_open(&c, "127.0.0.1", 7000, "127.0.0.1", 22121);
    static const struct {
        const char *line, *sub;
        bool arity; /* else unknown */
    } cases[] = {
        { "CLUSTER SLOTS x", "slots", true },
        { "CLUSTER KEYSLOT", "keyslot", true },
        { "cluster KeySlot a b", "keyslot", true },
        { "CLUSTER MYID x", "myid", true },
        { "CLUSTER Foo", "Foo", false },
        /* what the proxy does not serve is unknown to it (a cluster of one node has nothing to do) */
        { "CLUSTER ADDSLOTS 1", "ADDSLOTS", false },
        { "CLUSTER COUNTKEYSINSLOT 1", "COUNTKEYSINSLOT", false },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[128];
        snprintf(want, sizeof(want),
                 cases[i].arity ? "-ERR wrong number of arguments for 'cluster|%s' command\r\n"
                                : "-ERR unknown subcommand '%s'. Try CLUSTER HELP.\r\n",
                 cases[i].sub);
        expect(&c, cases[i].line, want);
    }
    char t[1024];
    assert_int_equal(client_say(&c, "CLUSTER HELP", t, sizeof(t)), PROTO_ANSWERED);
    assert_memory_equal(t, "*15\r\n+CLUSTER <subcommand>", 25);
    assert_non_null(strstr(t, "\r\n+KEYSLOT <key>\r\n"));
    client_close(&c);
}

/* Before AUTH, a pool with redis_auth answers NOAUTH, as to every other command. */
static void test_noauth(void **state)
{
    (void)state;
    struct client c;
    client_open(&c, "pw", 0);
    c.cp.client_cluster_mode = true;
    c.cp.listen.host = (char *)"127.0.0.1";
    c.cp.listen.port = 7000;
    c.d.opts = REDIS_OPT_CLUSTER;
    expect(&c, "CLUSTER SLOTS", "-NOAUTH Authentication required.\r\n");
    expect(&c, "READONLY", "-NOAUTH Authentication required.\r\n");
    expect(&c, "AUTH pw", "+OK\r\n");
    expect(&c, "CLUSTER MYID", "$40\r\n" ID_7000 "\r\n");
    client_close(&c);
}

/* Without client_cluster_mode the parser is given no option (its requests: test_redis.c). */
static void test_parse_opts(void **state)
{
    (void)state;
    struct conf_pool cp;
    memset(&cp, 0, sizeof(cp));
    cp.redis = true;
    assert_int_equal(redis_proto.parse_opts(&cp), 0);
    cp.client_cluster_mode = true;
    assert_int_equal(redis_proto.parse_opts(&cp), REDIS_OPT_CLUSTER);
    assert_null(memcache_proto.parse_opts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replies_resp2),   cmocka_unit_test(test_replies_resp3),
        cmocka_unit_test(test_announced_address), cmocka_unit_test(test_wildcard_listen),
        cmocka_unit_test(test_errors),          cmocka_unit_test(test_noauth),
        cmocka_unit_test(test_parse_opts),
    };
    return cmocka_run_group_tests_name("redis_cluster", tests, NULL, NULL);
}
