/*
 * test_topology.c - unit tests of topology sources and the routing tables built from their server
 * sets (topo/topology.h, core/route.h): the static source's set is the YAML list; a new set that
 * moves a server to another address keeps its identity (every key routes to the same index, its
 * health stays) and the table points at the new address; a set of another size is refused; a
 * pool with sentinels gets the Sentinel source, a worker's recheck eventfd, and keeps across a
 * reload where its servers were moved to (a server moved to a new address starts with a clean
 * failure record); links given up (resp_link_free_later) whose free had not run when the loop
 * stopped are freed by resp_link_reap_pending (the ASan stage would report them leaked).
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "conf/conf.h"
#include "core/route.h"
#include "core/runtime.h"
#include "topo/resp_link.h"
#include "topo/topology.h"

#define NKEYS 2000

static const char pool_yaml[] =
    "alpha:\n"
    "  listen: 127.0.0.1:22121\n"
    "  redis: true\n"
    "  auto_eject_hosts: true\n"
    "  server_failure_limit: 1\n"
    "  servers:\n"
    "   - 127.0.0.1:6379:1 s1\n"
    "   - 127.0.0.1:6380:2 s2\n"
    "   - /tmp/nc-topo-s3.sock:1 s3\n";

/* The runtime of yaml (a reload of prev when not NULL). */
static struct runtime *load_yaml(const char *yaml, const struct runtime *prev)
{
    struct conf *c = conf_load_string(yaml, strlen(yaml), "test.yml", NULL, NULL);
    assert_non_null(c);
    struct runtime *rt = runtime_create(c, prev, 1);
    conf_unref(c);
    assert_non_null(rt);
    return rt;
}

static struct runtime *load(void)
{
    return load_yaml(pool_yaml, NULL);
}

static void test_static_set_is_the_yaml_list(void **state)
{
    (void)state;
    struct runtime *rt = load();
    struct pool_shared *p = runtime_pool_find(rt, "alpha");
    assert_string_equal(p->source_ops->name, "static");
    assert_null(p->source_ops->start); /* it never changes */
    struct route *r = pool_route_get(p);
    const struct topo_set *set = r->set;
    assert_int_equal(set->nservers, 3);
    assert_int_equal(set->serial, 1);
    assert_string_equal(set->servers[0].name, "s1");
    assert_string_equal(set->servers[0].ketama_name, "s1");
    assert_string_equal(set->servers[1].addr.host, "127.0.0.1");
    assert_int_equal(set->servers[1].addr.port, 6380);
    assert_int_equal(set->servers[1].weight, 2);
    assert_true(set->servers[2].addr.is_unix);
    assert_string_equal(set->servers[2].addr.host, "/tmp/nc-topo-s3.sock");
    for (uint32_t i = 0; i < 3; i++) assert_int_equal(set->servers[i].role, TOPO_ROLE_MASTER);
    route_put(r);
    runtime_put(rt);
}

/* The set of p with server i moved to 127.0.0.1:port. */
static struct topo_set *moved_set(struct pool_shared *p, uint32_t i, uint16_t port)
{
    struct route *r = pool_route_get(p);
    struct topo_server servers[3];
    memcpy(servers, r->set->servers, sizeof(servers));
    char text[32];
    snprintf(text, sizeof(text), "127.0.0.1:%u", port);
    servers[i].addr.host = "127.0.0.1";
    servers[i].addr.port = port;
    servers[i].addr.is_unix = false;
    servers[i].addr.text = text;
    struct topo_set *set = topo_set_create(servers, 3);
    route_put(r);
    assert_non_null(set);
    return set;
}

static void test_moved_server_keeps_its_identity(void **state)
{
    (void)state;
    struct runtime *rt = load();
    struct pool_shared *p = runtime_pool_find(rt, "alpha");
    assert_true(pool_server_failed(p, 2, 1000)); /* s3 ejected: its health must stay */
    static uint32_t before[NKEYS];
    char key[32];
    uint32_t on[3] = { 0, 0, 0 };
    for (int k = 0; k < NKEYS; k++) {
        int n = snprintf(key, sizeof(key), "key:%d", k);
        before[k] = pool_route(p, (const uint8_t *)key, (size_t)n);
        assert_true(before[k] < 2);
        on[before[k]]++;
    }
    assert_true(on[0] > NKEYS / 10 && on[1] > NKEYS / 10); /* both live servers take keys */
    uint64_t v = atomic_load(&p->version);
    struct route *r0 = pool_route_get(p);
    pool_publish_set(p, moved_set(p, 1, 7000)); /* s2 moves */
    assert_true(atomic_load(&p->version) > v);
    struct route *r1 = pool_route_get(p);
    assert_ptr_not_equal(r1->set, r0->set);
    assert_int_equal(r1->set->serial, r0->set->serial + 1);
    assert_int_equal(r1->set->servers[1].addr.port, 7000);
    assert_string_equal(r1->set->servers[1].addr.text, "127.0.0.1:7000");
    assert_string_equal(r1->set->servers[1].name, "s2");
    assert_false(topo_same_addr(r0->set, r1->set, 1));
    assert_true(topo_same_addr(r0->set, r1->set, 0));
    assert_int_equal(r0->set->servers[1].addr.port, 6380); /* the old table's set is untouched */
    assert_true(pool_server_ejected(p, 2));
    for (int k = 0; k < NKEYS; k++) {
        int n = snprintf(key, sizeof(key), "key:%d", k);
        assert_int_equal(pool_route(p, (const uint8_t *)key, (size_t)n), before[k]);
    }
    route_put(r0);
    route_put(r1);
    runtime_put(rt);
}

static const char sentinel_yaml[] =
    "alpha:\n"
    "  listen: 127.0.0.1:22121\n"
    "  redis: true\n"
    "  auto_eject_hosts: true\n"
    "  server_failure_limit: 1\n"
    "  sentinels:\n"
    "   - 127.0.0.1:26379\n"
    "  servers:\n"
    "   - 127.0.0.1:6379:1 s1\n"
    "   - 127.0.0.1:6380:2 s2\n"
    "   - 127.0.0.1:6381:1 s3\n";

static void test_sentinel_pool_moves_and_keeps_its_moves_on_reload(void **state)
{
    (void)state;
    struct runtime *rt = load_yaml(sentinel_yaml, NULL);
    struct pool_shared *p = runtime_pool_find(rt, "alpha");
    assert_string_equal(p->source_ops->name, "sentinel");
    assert_non_null(p->source_ops->start);
    assert_true(p->recheck_fd >= 0);
    pool_topology_recheck(p); /* any thread may ask; the eventfd counts */
    uint64_t asked = 0;
    assert_int_equal(read(p->recheck_fd, &asked, sizeof(asked)), (ssize_t)sizeof(asked));
    assert_int_equal(asked, 1);
    assert_true(pool_server_failed(p, 1, 1000)); /* s2 ejected at its old address */
    pool_publish_set(p, moved_set(p, 1, 7001));
    assert_false(pool_server_ejected(p, 1)); /* the new address has a clean record */
    /* a reload that drops s3 and adds s4: s2 stays where it moved, s1 and s4 as configured */
    static const char reloaded[] = "alpha:\n"
                                   "  listen: 127.0.0.1:22121\n"
                                   "  redis: true\n"
                                   "  sentinels:\n"
                                   "   - 127.0.0.1:26379\n"
                                   "  servers:\n"
                                   "   - 127.0.0.1:6379:1 s1\n"
                                   "   - 127.0.0.1:6380:2 s2\n"
                                   "   - 127.0.0.1:6382:1 s4\n";
    struct runtime *rt2 = load_yaml(reloaded, rt);
    struct pool_shared *p2 = runtime_pool_find(rt2, "alpha");
    struct route *r = pool_route_get(p2);
    assert_int_equal(r->set->servers[0].addr.port, 6379);
    assert_int_equal(r->set->servers[1].addr.port, 7001);
    assert_string_equal(r->set->servers[1].addr.text, "127.0.0.1:7001");
    assert_int_equal(r->set->servers[2].addr.port, 6382);
    route_put(r);
    runtime_put(rt2);
    runtime_put(rt);
}

static void test_set_of_another_size_is_refused(void **state)
{
    (void)state;
    struct runtime *rt = load();
    struct pool_shared *p = runtime_pool_find(rt, "alpha");
    struct route *r = pool_route_get(p);
    struct topo_set *two = topo_set_create(r->set->servers, 2);
    assert_non_null(two);
    uint64_t v = atomic_load(&p->version);
    pool_publish_set(p, two); /* taken over and dropped */
    assert_int_equal(atomic_load(&p->version), v);
    struct route *r1 = pool_route_get(p);
    assert_ptr_equal(r1, r);
    route_put(r1);
    route_put(r);
    runtime_put(rt);
}

/* A port of 127.0.0.1 nothing listens on (bound, never listening: a connect is refused). */
static uint16_t refused_port(int *fd)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(*fd >= 0);
    assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

/* Three links given up before the loop runs again: freed by resp_link_reap_pending, once (a
 * second call finds none); a link still open is not touched. */
static void test_links_given_up_are_freed_at_the_stop(void **state)
{
    (void)state;
    static const struct resp_link_cbs cbs = { 0 };
    struct event_base *base = event_base_new();
    assert_non_null(base);
    int fd;
    uint16_t port = refused_port(&fd);
    char why[128];
    struct resp_link *kept = resp_link_open(base, "127.0.0.1", port, 1000, &cbs, NULL, why, sizeof(why));
    assert_non_null(kept);
    for (int i = 0; i < 3; i++) {
        struct resp_link *k = resp_link_open(base, "127.0.0.1", port, 1000, &cbs, NULL, why, sizeof(why));
        assert_non_null(k);
        resp_link_free_later(k);
    }
    assert_int_equal(resp_link_reap_pending(base), 3);
    assert_int_equal(resp_link_reap_pending(base), 0);
    resp_link_free(kept);
    event_base_free(base);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_static_set_is_the_yaml_list),
        cmocka_unit_test(test_moved_server_keeps_its_identity),
        cmocka_unit_test(test_set_of_another_size_is_refused),
        cmocka_unit_test(test_sentinel_pool_moves_and_keeps_its_moves_on_reload),
        cmocka_unit_test(test_links_given_up_are_freed_at_the_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
