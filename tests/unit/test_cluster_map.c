/*
 * test_cluster_map.c - unit tests of how the Redis Cluster source reads its cluster
 * (topo/topo_cluster_map.c): CLUSTER SHARDS and CLUSTER SLOTS replies (as redis 7.0 sends them)
 * into nodes and slot owners, and the places the nodes take in a pool: a node keeps its place,
 * a new master takes the first free one, replicas go to their master's replica places, a failed
 * master takes none, more masters than places are counted.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "topo/topo_cluster_int.h"

/* A bulk string "$<len>\r\n<s>\r\n" appended to out. */
static void put_bulk(char *out, size_t cap, const char *s)
{
    size_t n = strlen(out);
    snprintf(out + n, cap - n, "$%zu\r\n%s\r\n", strlen(s), s);
}

static void put_text(char *out, size_t cap, const char *s)
{
    size_t n = strlen(out);
    snprintf(out + n, cap - n, "%s", s);
}

/* One node of a CLUSTER SHARDS shard, as redis 7.0 sends it (RESP2: a flat array of 14). */
static void put_shard_node(char *out, size_t cap, const char *id, unsigned port, const char *endpoint,
                           const char *role, const char *health)
{
    char num[32];
    put_text(out, cap, "*14\r\n");
    put_bulk(out, cap, "id");
    put_bulk(out, cap, id);
    put_bulk(out, cap, "port");
    snprintf(num, sizeof(num), ":%u\r\n", port);
    put_text(out, cap, num);
    put_bulk(out, cap, "ip");
    put_bulk(out, cap, "127.0.0.1");
    put_bulk(out, cap, "endpoint");
    put_bulk(out, cap, endpoint);
    put_bulk(out, cap, "role");
    put_bulk(out, cap, role);
    put_bulk(out, cap, "replication-offset");
    put_text(out, cap, ":100\r\n");
    put_bulk(out, cap, "health");
    put_bulk(out, cap, health);
}

/* A shard header: its slot ranges (pairs), then "nodes" and the count of nodes that follow. */
static void put_shard(char *out, size_t cap, const unsigned *ranges, size_t nranges, size_t nnodes)
{
    char num[32];
    put_text(out, cap, "*4\r\n");
    put_bulk(out, cap, "slots");
    snprintf(num, sizeof(num), "*%zu\r\n", nranges * 2);
    put_text(out, cap, num);
    for (size_t i = 0; i < nranges * 2; i++) {
        snprintf(num, sizeof(num), ":%u\r\n", ranges[i]);
        put_text(out, cap, num);
    }
    put_bulk(out, cap, "nodes");
    snprintf(num, sizeof(num), "*%zu\r\n", nnodes);
    put_text(out, cap, num);
}

#define ID(c) c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c /* 40 chars */

static void parse(const char *text, struct resp_value *v)
{
    ssize_t n = resp_value_parse(text, strlen(text), v);
    assert_int_equal(n, (ssize_t)strlen(text));
}

/* Three shards: 7001 [0-5460] with replica 7004, 7002 [5461-10922, 16000-16383] with replica
 * 7005 (an endpoint "?": its ip is used), 7003 [10923-15999] with replica 7006 still loading. */
static void three_shards(char *out, size_t cap)
{
    static const unsigned a[] = { 0, 5460 }, b[] = { 5461, 10922, 16000, 16383 }, c[] = { 10923, 15999 };
    out[0] = '\0';
    put_text(out, cap, "*3\r\n");
    put_shard(out, cap, a, 1, 2);
    put_shard_node(out, cap, ID("a"), 7001, "127.0.0.1", "master", "online");
    put_shard_node(out, cap, ID("d"), 7004, "127.0.0.1", "replica", "online");
    put_shard(out, cap, b, 2, 2);
    put_shard_node(out, cap, ID("b"), 7002, "127.0.0.1", "master", "online");
    put_shard_node(out, cap, ID("e"), 7005, "?", "replica", "online");
    put_shard(out, cap, c, 1, 2);
    put_shard_node(out, cap, ID("c"), 7003, "localhost", "master", "online");
    put_shard_node(out, cap, ID("f"), 7006, "127.0.0.1", "replica", "loading"); /* not synced yet */
}

static void test_shards(void **state)
{
    (void)state;
    static char text[16384];
    three_shards(text, sizeof(text));
    struct resp_value v;
    parse(text, &v);
    struct cluster_map *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    assert_int_equal(cluster_map_from_shards(&v, m), 0);
    assert_int_equal(m->n, 6);
    assert_string_equal(m->nodes[0].id, ID("a"));
    assert_true(m->nodes[0].master);
    assert_int_equal(m->nodes[1].port, 7004);
    assert_false(m->nodes[1].master);
    assert_string_equal(m->nodes[1].master_id, ID("a"));
    assert_string_equal(m->nodes[3].host, "127.0.0.1"); /* endpoint "?": the ip */
    assert_string_equal(m->nodes[4].host, "localhost"); /* the endpoint when there is one */
    assert_true(m->nodes[5].failed);
    assert_int_equal(m->owner[0], 0);
    assert_int_equal(m->owner[5460], 0);
    assert_int_equal(m->owner[5461], 2);
    assert_int_equal(m->owner[10923], 4);
    assert_int_equal(m->owner[15999], 4);
    assert_int_equal(m->owner[16000], 2);
    assert_int_equal(m->owner[16383], 2);
    cluster_map_free(m);
    resp_value_free(&v);
    free(m);
}

static void test_shards_failed_master_and_bad(void **state)
{
    (void)state;
    static char text[8192];
    static const unsigned none[] = { 0, 0 }, all[] = { 0, 16383 };
    text[0] = '\0';
    put_text(text, sizeof(text), "*2\r\n");
    put_shard(text, sizeof(text), none, 0, 1); /* the old master, failed, no slots */
    put_shard_node(text, sizeof(text), ID("a"), 7001, "127.0.0.1", "master", "fail");
    put_shard(text, sizeof(text), all, 1, 1);
    put_shard_node(text, sizeof(text), ID("b"), 7002, "127.0.0.1", "master", "online");
    struct resp_value v;
    parse(text, &v);
    struct cluster_map *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    assert_int_equal(cluster_map_from_shards(&v, m), 0);
    assert_int_equal(m->n, 1); /* the failed master takes no place */
    assert_int_equal(m->nodes[0].port, 7002);
    assert_int_equal(m->owner[16383], 0);
    cluster_map_free(m);
    resp_value_free(&v);
    parse("*1\r\n$5\r\nslots\r\n", &v); /* not a shard */
    assert_int_equal(cluster_map_from_shards(&v, m), -1);
    resp_value_free(&v);
    parse("-ERR unknown subcommand\r\n", &v);
    assert_int_equal(cluster_map_from_shards(&v, m), -1);
    assert_int_equal(cluster_map_from_slots(&v, m), -1);
    resp_value_free(&v);
    free(m);
}

/* CLUSTER SLOTS with a master of two ranges (listed twice, one node) and its replica. */
static void test_slots(void **state)
{
    (void)state;
    const char *text = "*3\r\n"
                       "*4\r\n:0\r\n:99\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$40\r\n" ID("a") "\r\n"
                       "*3\r\n$9\r\n127.0.0.1\r\n:7004\r\n$40\r\n" ID("d") "\r\n"
                       "*3\r\n:100\r\n:16000\r\n*3\r\n$9\r\n127.0.0.1\r\n:7002\r\n$40\r\n" ID("b") "\r\n"
                       "*4\r\n:16001\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:7001\r\n$40\r\n" ID("a") "\r\n"
                       "*3\r\n$9\r\n127.0.0.1\r\n:7004\r\n$40\r\n" ID("d") "\r\n";
    struct resp_value v;
    parse(text, &v);
    struct cluster_map *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    assert_int_equal(cluster_map_from_slots(&v, m), 0);
    assert_int_equal(m->n, 3);
    assert_int_equal(m->owner[0], 0);
    assert_int_equal(m->owner[100], 2);
    assert_int_equal(m->owner[16383], 0);
    assert_false(m->nodes[1].master);
    assert_string_equal(m->nodes[1].master_id, ID("a"));
    cluster_map_free(m);
    resp_value_free(&v);
    free(m);
}

/* A pool of 4 master places and 1 replica place each, the seed 7003 in place 0. */
static struct topo_set *pool_set(void)
{
    struct topo_server s[8];
    char names[8][24];
    for (int i = 0; i < 8; i++) {
        if (i < 4) snprintf(names[i], sizeof(names[i]), "node%d", i + 1);
        else snprintf(names[i], sizeof(names[i]), "node%d/replica1", i - 3);
        s[i] = (struct topo_server){ .name = names[i], .ketama_name = names[i], .weight = 1,
                                     .addr = { .text = "", .host = "", .perm = -1 },
                                     .role = i < 4 ? TOPO_ROLE_MASTER : TOPO_ROLE_REPLICA };
    }
    s[0].addr = (struct conf_addr){ .text = "127.0.0.1:7003", .host = "127.0.0.1", .port = 7003, .perm = -1 };
    return topo_set_create(s, 8);
}

/* Places m's nodes in cur: a new set (with its slot map). */
static struct topo_set *place(const struct topo_set *cur, const struct cluster_map *m, uint32_t *lost)
{
    struct topo_server out[8];
    static char texts[8][CLUSTER_HOST_MAX + 8];
    uint16_t *slots = malloc(DIST_NSLOTS * sizeof(*slots));
    assert_non_null(slots);
    *lost = cluster_places(cur, 4, 1, m, out, texts, slots);
    struct topo_set *set = topo_set_create(out, 8);
    assert_non_null(set);
    set->slots = slots;
    return set;
}

static void test_places(void **state)
{
    (void)state;
    static char text[16384];
    three_shards(text, sizeof(text));
    struct resp_value v;
    parse(text, &v);
    struct cluster_map *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    assert_int_equal(cluster_map_from_shards(&v, m), 0);
    /* 7003 listed as "localhost" by its endpoint: not the seed's 127.0.0.1, so a new place */
    snprintf(m->nodes[4].host, sizeof(m->nodes[4].host), "127.0.0.1");
    struct topo_set *cur = pool_set(), *next;
    uint32_t lost;
    next = place(cur, m, &lost);
    assert_int_equal(lost, 0);
    assert_int_equal(next->servers[0].addr.port, 7003); /* the seed keeps its place */
    assert_int_equal(next->servers[1].addr.port, 7001);
    assert_int_equal(next->servers[2].addr.port, 7002);
    assert_true(topo_slot_empty(next, 3));
    assert_int_equal(next->servers[4].addr.port, 0);    /* 7003's replica 7006 is loading: none */
    assert_int_equal(next->servers[5].addr.port, 7004); /* 7001's replica, in place 1's */
    assert_int_equal(next->servers[6].addr.port, 7005);
    assert_int_equal(next->servers[5].role, TOPO_ROLE_REPLICA);
    assert_int_equal(next->slots[0], 1);
    assert_int_equal(next->slots[10923], 0);
    assert_int_equal(next->slots[16383], 2);
    assert_string_equal(next->servers[1].name, "node2");
    assert_string_equal(next->servers[1].addr.text, "127.0.0.1:7001");
    /* 7001 fails over to 7004: 7004 takes the first free master place (7001's: the shard stays
     * where it was), the others stay */
    m->nodes[0].master = false;
    snprintf(m->nodes[0].master_id, sizeof(m->nodes[0].master_id), "%s", ID("d"));
    m->nodes[1].master = true;
    m->nodes[1].master_id[0] = '\0';
    m->owner[0] = 1;
    topo_set_put(cur);
    cur = next;
    next = place(cur, m, &lost);
    assert_int_equal(next->servers[0].addr.port, 7003);
    assert_int_equal(next->servers[1].addr.port, 7004);
    assert_int_equal(next->servers[2].addr.port, 7002);
    assert_true(topo_slot_empty(next, 3));
    assert_int_equal(next->servers[5].addr.port, 7001); /* 7004's replica now */
    assert_int_equal(next->slots[0], 1);
    topo_set_put(cur);
    topo_set_put(next);
    cluster_map_free(m);
    resp_value_free(&v);
    free(m);
}

static void test_places_full(void **state)
{
    (void)state;
    static char text[32768];
    static const unsigned r[6][2] = { { 0, 99 }, { 100, 199 }, { 200, 299 }, { 300, 399 }, { 400, 499 }, { 500, 16383 } };
    text[0] = '\0';
    put_text(text, sizeof(text), "*6\r\n");
    for (unsigned i = 0; i < 6; i++) {
        char id[41];
        memset(id, 'a' + (int)i, 40);
        id[40] = '\0';
        put_shard(text, sizeof(text), r[i], 1, 1);
        put_shard_node(text, sizeof(text), id, 7001 + i, "127.0.0.1", "master", "online");
    }
    struct resp_value v;
    parse(text, &v);
    struct cluster_map *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    assert_int_equal(cluster_map_from_shards(&v, m), 0);
    struct topo_set *cur = pool_set();
    uint32_t lost;
    struct topo_set *next = place(cur, m, &lost);
    assert_int_equal(lost, 2); /* 6 masters, 4 places */
    assert_int_equal(next->slots[0], 1);
    assert_int_equal(next->slots[500], TOPO_SLOT_NONE);
    topo_set_put(cur);
    topo_set_put(next);
    cluster_map_free(m);
    resp_value_free(&v);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shards),
        cmocka_unit_test(test_shards_failed_master_and_bad),
        cmocka_unit_test(test_slots),
        cmocka_unit_test(test_places),
        cmocka_unit_test(test_places_full),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
