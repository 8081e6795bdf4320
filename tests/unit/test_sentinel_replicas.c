/*
 * test_sentinel_replicas.c - unit tests of how the Sentinel source follows replicas
 * (topo/topo_sentinel_replicas.c): which replicas of a SENTINEL REPLICAS answer are up, and the
 * changes that bring a shard's replica slots to them (a slot keeps its replica while it is up,
 * the master never takes a slot, more replicas than slots fill the slots in order).
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
#include <cmocka.h>

#include "topo/topo_sentinel_int.h"

/* One replica entry of a SENTINEL REPLICAS answer, as RESP text. */
static void add_replica(char *out, size_t cap, unsigned port, const char *flags, const char *link)
{
    char one[512];
    snprintf(one, sizeof(one),
             "*8\r\n$2\r\nip\r\n$9\r\n127.0.0.1\r\n$4\r\nport\r\n$%zu\r\n%u\r\n$5\r\nflags\r\n$%zu\r\n%s\r\n"
             "$18\r\nmaster-link-status\r\n$%zu\r\n%s\r\n",
             (size_t)snprintf(NULL, 0, "%u", port), port, strlen(flags), flags, strlen(link), link);
    strncat(out, one, cap - strlen(out) - 1);
}

static void test_replicas_up(void **state)
{
    (void)state;
    char text[4096] = "*5\r\n";
    add_replica(text, sizeof(text), 7001, "slave", "ok");
    add_replica(text, sizeof(text), 7002, "s_down,slave", "ok");
    add_replica(text, sizeof(text), 7003, "slave,disconnected", "err");
    add_replica(text, sizeof(text), 7004, "slave", "err"); /* its link to the master is down */
    add_replica(text, sizeof(text), 7005, "slave,promoted", "ok");
    struct resp_value v;
    assert_int_equal(resp_value_parse(text, strlen(text), &v), (ssize_t)strlen(text));
    struct sentinel_replica_list list;
    sentinel_replicas_read(&v, &list);
    resp_value_free(&v);
    assert_true(list.have);
    assert_int_equal(list.n, 1);
    assert_int_equal(list.r[0].port, 7001);
    assert_string_equal(list.r[0].host, "127.0.0.1");
    assert_true(sentinel_has_flag("s_down,slave", "slave"));
    assert_false(sentinel_has_flag("s_down,slave", "down"));
}

/* A set of one master (port 6000) and 3 slots at the given ports (0: empty). */
static struct topo_set *slots_set(const unsigned ports[3])
{
    struct topo_server sv[4];
    char texts[4][32];
    memset(sv, 0, sizeof(sv));
    for (int i = 0; i < 4; i++) {
        unsigned port = i == 0 ? 6000 : ports[i - 1];
        snprintf(texts[i], sizeof(texts[i]), port ? "127.0.0.1:%u" : "", port);
        sv[i].name = i == 0 ? "m" : "m/replica";
        sv[i].ketama_name = sv[i].name;
        sv[i].role = i == 0 ? TOPO_ROLE_MASTER : TOPO_ROLE_REPLICA;
        sv[i].addr = (struct conf_addr){ .text = texts[i], .host = port ? "127.0.0.1" : "", .port = (uint16_t)port };
    }
    struct topo_set *set = topo_set_create(sv, 4);
    assert_non_null(set);
    return set;
}

static void up_list(struct sentinel_replica_list *l, const unsigned *ports, uint32_t n)
{
    memset(l, 0, sizeof(*l));
    l->have = true;
    for (uint32_t i = 0; i < n; i++) {
        l->r[i].port = (uint16_t)ports[i];
        strcpy(l->r[i].host, "127.0.0.1");
    }
    l->n = n;
}

static void test_slots_follow_the_replicas_up(void **state)
{
    (void)state;
    struct sentinel_change ch[8];
    struct sentinel_replica_list l;
    struct topo_set *set = slots_set((unsigned[]){ 0, 0, 0 });
    up_list(&l, (unsigned[]){ 7001, 7002 }, 2);
    assert_int_equal(sentinel_replicas_plan(set, 1, 3, 0, &l, ch), 2); /* empty slots filled in order */
    assert_int_equal(ch[0].idx, 1);
    assert_int_equal(ch[0].port, 7001);
    assert_int_equal(ch[1].idx, 2);
    assert_int_equal(ch[1].port, 7002);
    topo_set_put(set);
    set = slots_set((unsigned[]){ 7001, 7002, 0 });
    up_list(&l, (unsigned[]){ 7002, 7003 }, 2); /* 7001 is down, 7003 is new */
    assert_int_equal(sentinel_replicas_plan(set, 1, 3, 0, &l, ch), 2);
    assert_int_equal(ch[0].idx, 1); /* 7001's slot emptied ... */
    assert_int_equal(ch[0].port, 0);
    assert_int_equal(ch[1].idx, 1); /* ... and taken by 7003; 7002 keeps its slot */
    assert_int_equal(ch[1].port, 7003);
    up_list(&l, (unsigned[]){ 7001, 7002 }, 2);
    assert_int_equal(sentinel_replicas_plan(set, 1, 3, 0, &l, ch), 0); /* nothing moved */
    topo_set_put(set);
}

static void test_the_master_never_takes_a_slot(void **state)
{
    (void)state;
    struct sentinel_change ch[8];
    struct sentinel_replica_list l;
    struct topo_set *set = slots_set((unsigned[]){ 6000, 7001, 0 }); /* a replica promoted since */
    up_list(&l, (unsigned[]){ 6000, 7001, 7002, 7003, 7004 }, 5);
    uint32_t n = sentinel_replicas_plan(set, 1, 3, 0, &l, ch);
    assert_int_equal(n, 3);
    assert_int_equal(ch[0].idx, 1); /* the master's address leaves its slot */
    assert_int_equal(ch[0].port, 0);
    assert_int_equal(ch[1].port, 7002); /* the slots fill with the first replicas up */
    assert_int_equal(ch[2].port, 7003);
    for (uint32_t i = 0; i < n; i++) assert_int_not_equal(ch[i].port, 6000);
    topo_set_put(set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replicas_up),
        cmocka_unit_test(test_slots_follow_the_replicas_up),
        cmocka_unit_test(test_the_master_never_takes_a_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
