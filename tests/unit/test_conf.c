/*
 * test_conf.c - unit tests of src/conf: every file under tests/unit/data/conf/good loads with the
 * expected values (defaults included), every file under bad/ fails with exactly the expected
 * messages, conf/nutcrackers.yml and the 46 distribution-vector configs load (one by one and
 * merged into one 46-pool file), the address parsers, and refcounting (also across threads).
 *
 * Data: $NC_TEST_DATA_DIR (tests/unit/data) and $NC_VECTORS_DIR (tests/vectors), set by
 * `make check`; without them the paths below the source tree (NC_TOP_SRCDIR) are used.
 *
 * Threads: the test's own, plus the ones test_refs_threads starts.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "conf/conf_int.h"
#include "hash/dist.h"
#include "hash/hash.h"

#ifndef NC_TOP_SRCDIR
#define NC_TOP_SRCDIR "."
#endif

#define MAX_ERRS 32

/* ---- helpers ---- */

struct errs {
    char *line[MAX_ERRS];
    size_t n;
};

static void errs_collect(void *ctx, const char *line)
{
    struct errs *e = ctx;
    if (e->n < MAX_ERRS) e->line[e->n] = strdup(line);
    e->n++;
}

static void errs_free(struct errs *e)
{
    for (size_t i = 0; i < e->n && i < MAX_ERRS; i++) free(e->line[i]);
    e->n = 0;
}

static void errs_print(const struct errs *e)
{
    for (size_t i = 0; i < e->n && i < MAX_ERRS; i++) print_message("  got: %s\n", e->line[i]);
}

/* A directory from the environment, or below the source tree. */
static const char *dir_from(const char *env, const char *fallback)
{
    const char *d = getenv(env);
    return d != NULL && d[0] != '\0' ? d : fallback;
}

static const char *data_dir(void)
{
    return dir_from("NC_TEST_DATA_DIR", NC_TOP_SRCDIR "/tests/unit/data");
}

static const char *vectors_dir(void)
{
    return dir_from("NC_VECTORS_DIR", NC_TOP_SRCDIR "/tests/vectors");
}

static char *path_join(const char *dir, const char *rel)
{
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/%s", dir, rel);
    return p;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    size_t cap = 1 << 16, used = 0, n;
    char *buf = malloc(cap);
    assert_non_null(buf);
    while ((n = fread(buf + used, 1, cap - used - 1, f)) > 0) {
        used += n;
        if (used + 1 == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    fclose(f);
    buf[used] = '\0';
    *len = used;
    return buf;
}

/* Loads data/conf/<rel>, which must load without a single message. */
static struct conf *load_good(const char *rel)
{
    char *conf_rel = path_join("conf", rel);
    char *path = path_join(data_dir(), conf_rel);
    struct errs e = { .n = 0 };
    struct conf *c = conf_load(path, errs_collect, &e);
    if (c == NULL || e.n != 0) {
        print_error("%s did not load cleanly\n", path);
        errs_print(&e);
    }
    assert_non_null(c);
    assert_int_equal(e.n, 0);
    assert_string_equal(c->path, path);
    assert_int_equal(atomic_load(&c->refs), 1);
    errs_free(&e);
    free(path);
    free(conf_rel);
    return c;
}

static const struct conf_pool *pool(const struct conf *c, const char *name)
{
    const struct conf_pool *p = conf_pool_find(c, name);
    if (p == NULL) print_error("no pool '%s'\n", name);
    assert_non_null(p);
    assert_string_equal(p->name, name);
    return p;
}

static void check_tcp(const struct conf_addr *a, const char *text, const char *host, int port)
{
    assert_string_equal(a->text, text);
    assert_string_equal(a->host, host);
    assert_int_equal(a->port, port);
    assert_false(a->is_unix);
    assert_int_equal(a->perm, -1);
}

static void check_unix(const struct conf_addr *a, const char *path, int perm)
{
    assert_string_equal(a->text, path);
    assert_string_equal(a->host, path);
    assert_int_equal(a->port, 0);
    assert_true(a->is_unix);
    assert_int_equal(a->perm, perm);
}

/* name NULL: an unnamed server. */
static void check_server(const struct conf_server *s, const char *pname, uint32_t weight,
                         const char *name, const char *ketama_name, int line)
{
    assert_string_equal(s->pname, pname);
    assert_int_equal(s->weight, weight);
    if (name == NULL) {
        assert_null(s->name);
        assert_string_equal(s->stats_name, pname);
    } else {
        assert_non_null(s->name);
        assert_string_equal(s->name, name);
        assert_string_equal(s->stats_name, name);
    }
    assert_string_equal(s->ketama_name, ketama_name);
    assert_int_equal(s->line, line);
}

/* Every key but listen and servers at its default. */
static void check_defaults(const struct conf_pool *p)
{
    assert_int_equal(p->hash, HASH_FNV1A_64);
    assert_false(p->has_hash_tag);
    assert_int_equal(p->distribution, DIST_KETAMA);
    assert_int_equal(p->timeout, -1);
    assert_int_equal(p->backlog, 512);
    assert_int_equal(p->client_connections, 0);
    assert_false(p->redis);
    assert_false(p->redis_flush);
    assert_false(p->tcpkeepalive);
    assert_int_equal(p->tcpkeepidle, -1);
    assert_int_equal(p->tcpkeepcnt, -1);
    assert_int_equal(p->tcpkeepintvl, -1);
    assert_false(p->reuseport);
    assert_null(p->redis_auth);
    assert_int_equal(p->redis_db, 0);
    assert_false(p->preconnect);
    assert_false(p->auto_eject_hosts);
    assert_int_equal(p->server_connections, 1);
    assert_int_equal(p->dedicated_connections, 64);
    assert_int_equal(p->server_retry_timeout, 30000);
    assert_int_equal(p->server_failure_limit, 2);
    assert_false(p->client_cluster_mode);
    assert_null(p->cluster_announce.host);
}

/* ---- good files ---- */

static void test_good_minimal(void **state)
{
    (void)state;
    struct conf *c = load_good("good/minimal.yml");
    assert_int_equal(c->npools, 1);
    assert_int_equal(c->generation, 0);
    assert_true(c->loaded_at > 0);
    const struct conf_pool *p = pool(c, "alpha");
    assert_int_equal(p->line, 2);
    check_tcp(&p->listen, "127.0.0.1:22121", "127.0.0.1", 22121);
    assert_int_equal(p->listen_line, 3);
    check_defaults(p);
    assert_int_equal(p->nservers, 1);
    check_server(&p->servers[0], "127.0.0.1:6379:1", 1, NULL, "127.0.0.1:6379", 5);
    check_tcp(&p->servers[0].addr, "127.0.0.1:6379", "127.0.0.1", 6379);
    assert_null(conf_pool_find(c, "beta"));
    assert_null(conf_pool_find(c, "alph"));
    conf_unref(c);
}

static void test_good_all_keys(void **state)
{
    (void)state;
    struct conf *c = load_good("good/all_keys.yml");
    assert_int_equal(c->npools, 1);
    const struct conf_pool *p = pool(c, "full");
    check_tcp(&p->listen, "0.0.0.0:22130", "0.0.0.0", 22130);
    assert_int_equal(p->hash, HASH_MURMUR);
    assert_true(p->has_hash_tag);
    assert_memory_equal(p->hash_tag, "{}", 2);
    assert_int_equal(p->distribution, DIST_MODULA);
    assert_int_equal(p->timeout, 400);
    assert_int_equal(p->backlog, 1024);
    assert_int_equal(p->client_connections, 100);
    assert_true(p->redis);
    assert_true(p->tcpkeepalive);
    assert_int_equal(p->tcpkeepidle, 60);
    assert_int_equal(p->tcpkeepcnt, 5);
    assert_int_equal(p->tcpkeepintvl, 10);
    assert_true(p->reuseport);
    assert_string_equal(p->redis_auth, "s3cret");
    assert_int_equal(p->redis_db, 3);
    assert_true(p->preconnect);
    assert_true(p->auto_eject_hosts);
    assert_int_equal(p->server_connections, 4);
    assert_int_equal(p->dedicated_connections, 7);
    assert_int_equal(p->server_retry_timeout, 2000);
    assert_int_equal(p->server_failure_limit, 5);
    assert_int_equal(p->nservers, 2);
    assert_true(p->redis_flush);
    check_server(&p->servers[0], "127.0.0.1:6380:2", 2, NULL, "127.0.0.1:6380", 26);
    check_server(&p->servers[1], "127.0.0.1:6381:3", 3, NULL, "127.0.0.1:6381", 27);
    conf_unref(c);
}

static void test_good_crlf(void **state)
{
    (void)state;
    struct conf *c = load_good("good/crlf.yml");
    assert_int_equal(c->npools, 2);
    const struct conf_pool *a = pool(c, "alpha");
    assert_int_equal(a->line, 2);
    check_tcp(&a->listen, "127.0.0.1:22121", "127.0.0.1", 22121);
    assert_int_equal(a->hash, HASH_MD5);
    assert_true(a->redis);
    assert_int_equal(a->nservers, 2);
    check_server(&a->servers[0], "127.0.0.1:6379:1", 1, "one", "one", 7);
    check_server(&a->servers[1], "127.0.0.1:6380:1", 1, "two", "two", 8);
    const struct conf_pool *b = pool(c, "beta");
    assert_int_equal(b->line, 10);
    check_unix(&b->listen, "/tmp/nutcrackers-crlf.sock", 0600);
    assert_int_equal(b->timeout, 250);
    check_server(&b->servers[0], "127.0.0.1:11211:1", 1, NULL, "127.0.0.1", 14);
    conf_unref(c);
}

static void test_good_unix_listen(void **state)
{
    (void)state;
    struct conf *c = load_good("good/unix_listen.yml");
    const struct conf_pool *p = pool(c, "sock");
    check_unix(&p->listen, "/tmp/nutcrackers-test.sock", 0660);
    assert_int_equal(p->nservers, 2);
    check_server(&p->servers[0], "/var/run/redis/redis.sock:1", 1, "local", "local", 5);
    check_unix(&p->servers[0].addr, "/var/run/redis/redis.sock", -1);
    check_server(&p->servers[1], "/var/run/redis/other.sock:2", 2, NULL,
                 "/var/run/redis/other.sock", 6);
    check_unix(&p->servers[1].addr, "/var/run/redis/other.sock", -1);
    check_defaults(p);
    p = pool(c, "plain");
    check_unix(&p->listen, "/tmp/nutcrackers-test2.sock", -1);
    check_server(&p->servers[0], "10.0.0.1:6379:1", 1, NULL, "10.0.0.1:6379", 10);
    conf_unref(c);
}

/* commands: every entry form (any case, blanks, the default mode, the limits), kept lowercase
 * with its line; an empty list. */
static void test_good_commands(void **state)
{
    (void)state;
    static const struct conf_command want[] = {
        { "json.get", 1, 1, 1, true, 5 }, { "json.set", 1, 1, 1, false, 6 }, { "ts.madd", 1, -3, 3, false, 7 },
        { "x.neg", 2, -2, 1, true, 8 }, { "a_b-c|d.e", 63, -63, 63, false, 9 }, { "get", 1, 1, 1, false, 10 },
    };
    struct conf *c = load_good("good/commands.yml");
    const struct conf_pool *p = pool(c, "declared");
    assert_int_equal(p->ncommands, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < p->ncommands; i++) {
        const struct conf_command *got = &p->commands[i];
        assert_string_equal(got->name, want[i].name);
        assert_int_equal(got->first, want[i].first);
        assert_int_equal(got->last, want[i].last);
        assert_int_equal(got->step, want[i].step);
        assert_int_equal(got->readonly, want[i].readonly);
        assert_int_equal(got->line, want[i].line);
    }
    assert_int_equal(conf_pool_key_line(p, "commands"), 4);
    p = pool(c, "empty");
    assert_int_equal(p->ncommands, 0);
    conf_unref(c);
}

/* client_cluster_mode and cluster_announce: an announced name, the listen address (no
 * cluster_announce), IPv6, a unix-socket listen with an announced address, and false. */
static void test_good_cluster_clients(void **state)
{
    (void)state;
    struct conf *c = load_good("good/cluster_clients.yml");
    const struct conf_pool *p = pool(c, "announced");
    assert_true(p->client_cluster_mode);
    check_tcp(&p->cluster_announce, "proxy.example.net:6379", "proxy.example.net", 6379);
    assert_int_equal(conf_pool_key_line(p, "cluster_announce"), 6);
    p = pool(c, "listen_default");
    assert_true(p->client_cluster_mode);
    assert_null(p->cluster_announce.host);
    p = pool(c, "ipv6");
    check_tcp(&p->cluster_announce, "[::1]:22142", "::1", 22142);
    p = pool(c, "unix");
    check_unix(&p->listen, "/tmp/nutcrackers-cluster.sock", -1);
    check_tcp(&p->cluster_announce, "10.0.0.5:22143", "10.0.0.5", 22143);
    p = pool(c, "off");
    assert_false(p->client_cluster_mode);
    assert_null(p->cluster_announce.host);
    conf_unref(c);
}

static void test_good_named_servers(void **state)
{
    (void)state;
    struct conf *c = load_good("good/named_servers.yml");
    const struct conf_pool *p = pool(c, "beta");
    assert_true(p->has_hash_tag);
    assert_int_equal(p->timeout, 400);
    assert_int_equal(p->nservers, 5);
    check_server(&p->servers[0], "127.0.0.1:6380:1", 1, "server1", "server1", 11);
    check_server(&p->servers[1], "127.0.0.1:6381:1", 1, "server2", "server2", 12);
    check_server(&p->servers[2], "127.0.0.1:6382:1", 1, "server3", "server3", 13);
    check_server(&p->servers[3], "redis4.example.com:6383:7", 7, "server4", "server4", 14);
    check_tcp(&p->servers[3].addr, "redis4.example.com:6383", "redis4.example.com", 6383);
    check_server(&p->servers[4], "127.0.0.1:6384:1", 1, NULL, "127.0.0.1:6384", 15);
    conf_unref(c);
}

static void test_good_port_11211(void **state)
{
    (void)state;
    struct conf *c = load_good("good/port_11211.yml");
    const struct conf_pool *p = pool(c, "mc");
    assert_int_equal(p->nservers, 4);
    check_server(&p->servers[0], "127.0.0.1:11211:1", 1, NULL, "127.0.0.1", 5);
    check_server(&p->servers[1], "127.0.0.1:11212:1", 1, NULL, "127.0.0.1:11212", 6);
    check_server(&p->servers[2], "cache.example.com:11211:5", 5, NULL, "cache.example.com", 7);
    check_server(&p->servers[3], "127.0.0.1:11211:1", 1, "named", "named", 8);
    check_tcp(&p->servers[3].addr, "127.0.0.1:11211", "127.0.0.1", 11211);
    conf_unref(c);
}

static void test_good_bools(void **state)
{
    (void)state;
    struct conf *c = load_good("good/bools.yml");
    const struct conf_pool *a = pool(c, "a"), *b = pool(c, "b");
    assert_true(a->redis && a->preconnect && a->auto_eject_hosts && a->tcpkeepalive &&
                a->reuseport);
    assert_false(b->redis || b->preconnect || b->auto_eject_hosts || b->tcpkeepalive ||
                 b->reuseport);
    conf_unref(c);
}

static void test_good_flow_quoted(void **state)
{
    (void)state;
    struct conf *c = load_good("good/flow_quoted.yml");
    const struct conf_pool *p = pool(c, "flow");
    check_tcp(&p->listen, "127.0.0.1:22140", "127.0.0.1", 22140);
    assert_int_equal(p->hash, HASH_FNV1A_32);
    assert_int_equal(p->backlog, 64);
    assert_true(p->redis);
    check_server(&p->servers[0], "127.0.0.1:6379:1", 1, "a", "a", 3);
    check_server(&p->servers[1], "127.0.0.1:6380:1", 1, "b", "b", 3);
    p = pool(c, "block");
    check_tcp(&p->listen, "127.0.0.1:22141", "127.0.0.1", 22141);
    assert_int_equal(p->timeout, 1000);
    check_server(&p->servers[0], "127.0.0.1:6381:1", 1, NULL, "127.0.0.1:6381", 7);
    conf_unref(c);
}

static void test_good_ipv6(void **state)
{
    (void)state;
    struct conf *c = load_good("good/ipv6.yml");
    const struct conf_pool *p = pool(c, "v6");
    check_tcp(&p->listen, "[::1]:22150", "::1", 22150);
    check_server(&p->servers[0], "[::1]:6379:1", 1, NULL, "[::1]:6379", 5);
    check_tcp(&p->servers[0].addr, "[::1]:6379", "::1", 6379);
    check_server(&p->servers[1], "::1:6380:2", 2, NULL, "::1:6380", 6);
    check_tcp(&p->servers[1].addr, "::1:6380", "::1", 6380);
    check_server(&p->servers[2], "[fe80::1]:11211:1", 1, NULL, "[fe80::1]", 7);
    conf_unref(c);
}

static void test_good_document_markers(void **state)
{
    (void)state;
    struct conf *c = load_good("good/document_markers.yml");
    const struct conf_pool *p = pool(c, "alpha");
    assert_int_equal(p->line, 6);
    assert_int_equal(p->listen_line, 7);
    check_server(&p->servers[0], "127.0.0.1:6379:1", 1, NULL, "127.0.0.1:6379", 11);
    check_defaults(p);
    conf_unref(c);
}

static void test_good_redis_auth(void **state)
{
    (void)state;
    char pw[CONF_REDIS_AUTH_MAX];
    memset(pw, 'p', sizeof(pw) - 1);
    pw[sizeof(pw) - 1] = '\0';
    struct conf *c = load_good("good/redis_auth.yml");
    const struct conf_pool *p = pool(c, "auth");
    assert_string_equal(p->redis_auth, pw);
    assert_int_equal(strlen(p->redis_auth), CONF_REDIS_AUTH_MAX - 1);
    assert_int_equal(p->redis_db, 15);
    p = pool(c, "noauth");
    assert_null(p->redis_auth);
    conf_unref(c);
}

static void test_good_hash_names(void **state)
{
    (void)state;
    struct conf *c = load_good("good/hash_names.yml");
    assert_int_equal(c->npools, HASH_COUNT);
    for (int i = 0; i < HASH_COUNT; i++) {
        char name[64];
        snprintf(name, sizeof(name), "h_%s", hash_table[i].name);
        const struct conf_pool *p = pool(c, name);
        assert_int_equal(p->hash, i);
        assert_int_equal(p->distribution, i % DIST_COUNT);
        assert_int_equal(p->listen.port, 23000 + i);
        assert_ptr_equal(p, &c->pools[i]);
    }
    conf_unref(c);
}

static void test_good_limits(void **state)
{
    (void)state;
    struct conf *c = load_good("good/limits.yml");
    const struct conf_pool *p = pool(c, "low");
    assert_int_equal(p->listen.port, 1);
    assert_int_equal(p->timeout, -1);
    assert_int_equal(p->backlog, 0);
    assert_int_equal(p->client_connections, 0);
    assert_int_equal(p->tcpkeepidle, 1);
    assert_int_equal(p->tcpkeepcnt, 1);
    assert_int_equal(p->tcpkeepintvl, 1);
    assert_int_equal(p->server_connections, 1);
    assert_int_equal(p->server_retry_timeout, 0);
    assert_int_equal(p->server_failure_limit, 1);
    check_server(&p->servers[0], "127.0.0.1:1:1", 1, NULL, "127.0.0.1:1", 15);
    p = pool(c, "high");
    assert_int_equal(p->listen.port, 65535);
    assert_int_equal(p->timeout, INT32_MAX);
    assert_int_equal(p->backlog, INT32_MAX);
    assert_int_equal(p->client_connections, INT32_MAX);
    assert_int_equal(p->redis_db, INT32_MAX);
    assert_int_equal(p->tcpkeepidle, 32767);
    assert_int_equal(p->tcpkeepcnt, 127);
    assert_int_equal(p->tcpkeepintvl, 32767);
    assert_int_equal(p->server_connections, INT32_MAX);
    assert_int_equal(p->server_retry_timeout, INT32_MAX);
    assert_int_equal(p->server_failure_limit, INT32_MAX);
    check_server(&p->servers[0], "127.0.0.1:65535:2147483647", INT32_MAX, NULL,
                 "127.0.0.1:65535", 29);
    p = pool(c, "zero");
    check_unix(&p->listen, "/tmp/nutcrackers-zero.sock", 0);
    assert_int_equal(p->timeout, 0);
    check_server(&p->servers[0], "localhost:6379:1", 1, NULL, "localhost:6379", 34);
    conf_unref(c);
}

/* conf/nutcrackers.yml: twemproxy's five example pools. */
static void test_example_config(void **state)
{
    (void)state;
    char *candidates[] = {
        path_join(data_dir(), "../../../conf/nutcrackers.yml"),
        path_join(NC_TOP_SRCDIR, "conf/nutcrackers.yml"),
    };
    const char *path = NULL;
    for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]) && path == NULL; i++) {
        FILE *f = fopen(candidates[i], "r");
        if (f != NULL) {
            fclose(f);
            path = candidates[i];
        }
    }
    if (path == NULL) print_error("conf/nutcrackers.yml not found (from %s or %s)\n", data_dir(),
                                  NC_TOP_SRCDIR);
    assert_non_null(path);

    struct errs e = { .n = 0 };
    struct conf *c = conf_load(path, errs_collect, &e);
    errs_print(&e);
    assert_non_null(c);
    assert_int_equal(e.n, 0);
    assert_int_equal(c->npools, 5);
    const char *order[] = { "alpha", "beta", "gamma", "delta", "omega" };
    for (size_t i = 0; i < 5; i++) assert_string_equal(c->pools[i].name, order[i]);

    const struct conf_pool *p = pool(c, "alpha");
    check_tcp(&p->listen, "127.0.0.1:22121", "127.0.0.1", 22121);
    assert_true(p->redis && p->auto_eject_hosts);
    assert_int_equal(p->server_retry_timeout, 2000);
    assert_int_equal(p->server_failure_limit, 1);
    assert_int_equal(p->timeout, -1);
    p = pool(c, "beta");
    assert_true(p->has_hash_tag);
    assert_int_equal(p->nservers, 4);
    assert_string_equal(p->servers[3].stats_name, "server4");
    p = pool(c, "gamma");
    assert_int_equal(p->backlog, 1024);
    assert_true(p->preconnect);
    assert_false(p->redis);
    p = pool(c, "delta");
    assert_int_equal(p->timeout, 100);
    assert_int_equal(p->nservers, 10);
    assert_string_equal(p->servers[9].pname, "127.0.0.1:11223:1");
    p = pool(c, "omega");
    check_unix(&p->listen, "/tmp/gamma", 0666);
    assert_int_equal(p->hash, HASH_HSIEH);
    assert_int_equal(p->servers[0].weight, 100000);
    conf_unref(c);
    free(candidates[0]);
    free(candidates[1]);
}

/* ---- bad files: the exact messages, without the "<path>:" every one starts with ---- */

struct bad_case {
    const char *file;
    const char *msg[16];
};

#define HASH_NAMES                                                                          \
    "one_at_a_time, md5, crc16, crc32, crc32a, fnv1_64, fnv1a_64, fnv1_32, fnv1a_32, hsieh, " \
    "murmur, jenkins"
#define RANGE_INT "2147483647)"
#define SERVER_FORM "host:port:weight [name] or /path:weight [name]"

static const struct bad_case bad_cases[] = {
    { "empty.yml", { "1: no pools defined" } },
    { "comments_only.yml", { "1: no pools defined" } },
    { "syntax_indent.yml", { "3:8: mapping values are not allowed in this context" } },
    { "syntax_unclosed_quote.yml", { "5:1: found unexpected end of stream" } },
    { "syntax_tab.yml", { "2:1: found character that cannot start any token" } },
    { "multi_document.yml", { "6:1: only one YAML document is supported" } },
    { "alias.yml", { "7:12: aliases are not supported (*servers)" } },
    { "nul_in_value.yml", { "2:11: a NUL character inside a value is not supported" } },
    { "top_scalar.yml", { "1: expected a mapping of pool names to pools, got a scalar" } },
    { "top_sequence.yml", { "1: expected a mapping of pool names to pools, got a sequence" } },
    { "pool_not_mapping.yml",
      { "1: pool 'alpha': expected a mapping of keys, got a scalar",
        "3: pool 'beta': expected a mapping of keys, got a sequence",
        "4: pool 'gamma': expected a mapping of keys, got an empty value" } },
    { "pool_name.yml",
      { "1: a pool name must be a non-empty scalar, got an empty value",
        "5: a pool name must be a non-empty scalar, got a sequence" } },
    { "unknown_key.yml",
      { "2: pool 'alpha': key 'listne': unknown key",
        "3: pool 'alpha': key 'sentinel_hosts': unknown key",
        "1: pool 'alpha': key 'listen': required key is missing" } },
    { "wrong_type.yml",
      { "2: pool 'alpha': key 'listen': expected an address, got a sequence",
        "3: pool 'alpha': key 'timeout': expected an integer, got a sequence",
        "4: pool 'alpha': key 'redis': expected true or false, got a mapping",
        "6: pool 'alpha': key 'hash': expected a name, got a sequence",
        "7: pool 'alpha': key 'redis_auth': expected a string, got a mapping",
        "8: pool 'alpha': key 'redis_flush': expected true or false, got 'always'" } },
    { "not_integer.yml",
      { "3: pool 'alpha': key 'backlog': expected an integer, got 'abc'",
        "4: pool 'alpha': key 'timeout': expected an integer, got '1.5'",
        "5: pool 'alpha': key 'redis_db': expected an integer, got ''",
        "6: pool 'alpha': key 'server_connections': expected an integer, got '0x10'",
        "7: pool 'alpha': key 'client_connections': expected an integer, got '10k'" } },
    { "out_of_range.yml",
      { "3: pool 'alpha': key 'backlog': -1 is out of range (must be between 0 and " RANGE_INT,
        "4: pool 'alpha': key 'server_connections': 0 is out of range (must be between 1 and "
        RANGE_INT,
        "5: pool 'alpha': key 'timeout': -2 is out of range (must be between -1 and " RANGE_INT,
        "6: pool 'alpha': key 'server_failure_limit': 0 is out of range (must be between 1 and "
        RANGE_INT,
        "7: pool 'alpha': key 'redis_db': -1 is out of range (must be between 0 and " RANGE_INT,
        "8: pool 'alpha': key 'tcpkeepcnt': 128 is out of range (must be between 1 and 127)",
        "9: pool 'alpha': key 'tcpkeepidle': 0 is out of range (must be between 1 and 32767)",
        "10: pool 'alpha': key 'tcpkeepintvl': 32768 is out of range (must be between 1 and "
        "32767)",
        "11: pool 'alpha': key 'client_connections': -5 is out of range (must be between 0 and "
        RANGE_INT,
        "12: pool 'alpha': key 'server_retry_timeout': -1 is out of range (must be between 0 and "
        RANGE_INT,
        "13: pool 'alpha': key 'dedicated_connections': -1 is out of range (must be between 0 and "
        RANGE_INT,
        "18: pool 'beta': key 'timeout': 99999999999999999999999 is out of range (must be "
        "between -1 and " RANGE_INT,
        "19: pool 'beta': key 'backlog': 2147483648 is out of range (must be between 0 and "
        RANGE_INT,
        "22: pool 'beta': key 'client_idle_timeout': -100 is out of range (must be between 0 and "
        RANGE_INT } },
    { "unknown_hash.yml",
      { "3: pool 'alpha': key 'hash': unknown hash 'fnv1a' (valid: " HASH_NAMES ")" } },
    { "unknown_distribution.yml",
      { "3: pool 'alpha': key 'distribution': unknown distribution 'consistent' (valid: ketama, "
        "modula, random)" } },
    { "hash_tag.yml",
      { "3: pool 'one': key 'hash_tag': expected exactly two characters (e.g. \"{}\"), got '{'",
        "8: pool 'three': key 'hash_tag': expected exactly two characters (e.g. \"{}\"), got "
        "'{}}'",
        "13: pool 'empty': key 'hash_tag': expected exactly two characters (e.g. \"{}\"), got "
        "''" } },
    { "weight.yml",
      { "4: pool 'alpha': key 'servers': '127.0.0.1:6379:0': bad weight '0' (must be a number "
        "between 1 and " RANGE_INT,
        "5: pool 'alpha': key 'servers': '127.0.0.1:6380:-1': bad weight '-1' (must be a number "
        "between 1 and " RANGE_INT,
        "6: pool 'alpha': key 'servers': '127.0.0.1:6381:abc': bad weight 'abc' (must be a "
        "number between 1 and " RANGE_INT,
        /* "- 127.0.0.1:6382:" is a mapping in YAML: the ':' ends a key */
        "7: pool 'alpha': key 'servers': expected a server \"host:port:weight [name]\", got a "
        "mapping",
        "8: pool 'alpha': key 'servers': '127.0.0.1:6383:2147483648': bad weight '2147483648' "
        "(must be a number between 1 and " RANGE_INT,
        "9: pool 'alpha': key 'servers': '127.0.0.1:6384': missing ':port' (expected "
        SERVER_FORM ")" } },
    { "servers_entries.yml",
      { "4: pool 'alpha': key 'servers': expected a server \"host:port:weight [name]\", got an "
        "empty value",
        "5: pool 'alpha': key 'servers': expected a server \"host:port:weight [name]\", got an "
        "empty value",
        "6: pool 'alpha': key 'servers': expected a server \"host:port:weight [name]\", got a "
        "mapping",
        "7: pool 'alpha': key 'servers': expected a server \"host:port:weight [name]\", got a "
        "sequence",
        "8: pool 'alpha': key 'servers': '127.0.0.1:6379:1 name extra': unexpected 'extra' "
        "after the server name",
        "9: pool 'alpha': key 'servers': '127.0.0.1': missing ':weight' (expected " SERVER_FORM
        ")",
        "10: pool 'alpha': key 'servers': ':1': missing ':port' (expected " SERVER_FORM ")" } },
    { "servers_not_sequence.yml",
      { "3: pool 'alpha': key 'servers': expected a sequence of \"host:port:weight [name]\", "
        "got a scalar",
        "7: pool 'beta': key 'servers': expected a sequence of \"host:port:weight [name]\", got "
        "a mapping" } },
    { "servers_empty.yml",
      { "3: pool 'alpha': key 'servers': no servers (at least one is needed)",
        "6: pool 'beta': key 'servers': expected a sequence of \"host:port:weight [name]\", got "
        "an empty value" } },
    { "missing_servers.yml", { "1: pool 'alpha': key 'servers': required key is missing" } },
    { "missing_listen.yml", { "1: pool 'alpha': key 'listen': required key is missing" } },
    { "duplicate_pool.yml", { "9: pool 'alpha': duplicate pool name (first at line 1)" } },
    { "duplicate_listen.yml",
      { "10: pool 'gamma': key 'listen': '127.0.0.1:22121' is already the listen address of "
        "pool 'alpha' (line 2)",
        "18: pool 'sock2': key 'listen': '/tmp/nutcrackers-dup.sock' is already the listen "
        "address of pool 'sock1' (line 14)" } },
    { "duplicate_server_name.yml",
      { "6: pool 'alpha': key 'servers': '127.0.0.1:6381:1 server1': duplicate server name "
        "'server1' (first at line 4)",
        "8: pool 'alpha': key 'servers': '127.0.0.1:6382:1': duplicate server name "
        "'127.0.0.1:6382:1' (first at line 7)" } },
    { "duplicate_key.yml",
      { "6: pool 'alpha': key 'timeout': duplicate key (first at line 3)",
        "7: pool 'alpha': key 'servers': duplicate key (first at line 4)" } },
    { "bad_port.yml",
      { "2: pool 'p0': key 'listen': '127.0.0.1:0': bad port '0' (must be a number between 1 "
        "and 65535)",
        "4: pool 'p0': key 'servers': '127.0.0.1:0:1': bad port '0' (must be a number between 1 "
        "and 65535)",
        "6: pool 'p1': key 'listen': '127.0.0.1:65536': bad port '65536' (must be a number "
        "between 1 and 65535)",
        "8: pool 'p1': key 'servers': '127.0.0.1:99999:1': bad port '99999' (must be a number "
        "between 1 and 65535)",
        "10: pool 'p2': key 'listen': '127.0.0.1:abc': bad port 'abc' (must be a number between "
        "1 and 65535)",
        "12: pool 'p2': key 'servers': '127.0.0.1:redis:1': bad port 'redis' (must be a number "
        "between 1 and 65535)",
        "14: pool 'p3': key 'listen': '127.0.0.1:': bad port '' (must be a number between 1 and "
        "65535)",
        "18: pool 'p4': key 'listen': ':22125': missing host before ':22125'",
        "22: pool 'p5': key 'listen': 'localhost': missing ':port' (expected host:port or an "
        "absolute unix socket path)" } },
    { "unix_listen.yml",
      { "2: pool 'a': key 'listen': '/tmp/nutcrackers-a.sock 0999': bad permissions '0999' "
        "(must be an octal number between 0 and 0777)",
        "6: pool 'b': key 'listen': '/tmp/nutcrackers-b.sock rw': bad permissions 'rw' (must be "
        "an octal number between 0 and 0777)",
        "10: pool 'c': key 'listen': '/tmp/nutcrackers-c.sock 01777': bad permissions '01777' "
        "(must be an octal number between 0 and 0777)",
        "14: pool 'd': key 'listen': 'tmp/nutcrackers-d.sock': missing ':port' (expected "
        "host:port or an absolute unix socket path)",
        "18: pool 'e': key 'listen': '/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock': unix socket path is too long "
        "(114 bytes, at most 107)",
        "20: pool 'e': key 'servers': '/tmp/bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
        "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.sock:1': unix socket path is "
        "too long (118 bytes, at most 107)",
        "22: pool 'f': key 'listen': '127.0.0.1:22126 0666': unexpected '0666' after "
        "host:port" } },
    { "redis_auth_long.yml",
      { "4: pool 'alpha': key 'redis_auth': too long (256 bytes; must be at most 255)" } },
    { "bad_bool.yml",
      { "3: pool 'alpha': key 'redis': expected true or false, got 'maybe'",
        "4: pool 'alpha': key 'preconnect': expected true or false, got '1'",
        "5: pool 'alpha': key 'auto_eject_hosts': expected true or false, got 'on'",
        "6: pool 'alpha': key 'tcpkeepalive': expected true or false, got ''" } },
    { "crlf_errors.yml",
      { "4: pool 'alpha': key 'backlog': -3 is out of range (must be between 0 and " RANGE_INT,
        "6: pool 'alpha': key 'servers': '127.0.0.1:6379:0': bad weight '0' (must be a number "
        "between 1 and " RANGE_INT } },
    { "sentinels.yml",
      {
        "6: pool 'alpha': key 'sentinels': '127.0.0.1:26379': listed twice",
        "7: pool 'alpha': key 'sentinels': '/tmp/sentinel.sock': expected \"host:port\" (a sentinel is reached over TCP, it has no weight)",
        "8: pool 'alpha': key 'sentinels': '127.0.0.1:26380:1': expected \"host:port\" (a sentinel is reached over TCP, it has no weight)",
        "9: pool 'alpha': key 'read_from': expected master, prefer_master, replica, prefer_replica or any, got 'replicas'",
        "12: pool 'alpha': key 'servers': '127.0.0.1:6380:1': a server of a pool with sentinels needs a name (the sentinels' master name)",
        "16: pool 'beta': key 'sentinel_auth': set without sentinels",
        "15: pool 'beta': key 'read_from': 'any' needs replicas: a pool with sentinels or redis_cluster",
        "21: pool 'gamma': key 'sentinels': expected a sequence of \"host:port\", got an empty sequence",
        "26: pool 'delta': key 'sentinels': sentinels need a redis pool (redis: true)" } },
    { "cluster_clients.yml",
      {
        "3: pool 'memcached': key 'client_cluster_mode': cluster-mode clients need a redis pool (redis: true)",
        "9: pool 'unix': key 'client_cluster_mode': a unix-socket listen cannot be announced to cluster clients: "
        "set cluster_announce (\"host:port\")",
        "15: pool 'without': key 'cluster_announce': set without client_cluster_mode: true",
        "21: pool 'values': key 'client_cluster_mode': expected true or false, got 'sometimes'",
        "28: pool 'wildcard': key 'cluster_announce': '0.0.0.0:22153': a wildcard address: announce one clients "
        "connect to",
        "35: pool 'forms': key 'cluster_announce': '/tmp/proxy.sock': expected \"host:port\" that cluster clients "
        "connect to, not a unix socket",
        "42: pool 'ipv6': key 'cluster_announce': '::1:22155': an IPv6 address goes in brackets: [::1]:port",
        "49: pool 'noport': key 'cluster_announce': 'proxy.example.net': missing ':port' (expected \"host:port\" "
        "that cluster clients connect to)",
        "56: pool 'list': key 'cluster_announce': expected \"host:port\" that cluster clients connect to, got a "
        "sequence",
        "63: pool 'chars': key 'cluster_announce': 'proxy@host:22158': not a host name or an IP address",
        "70: pool 'long': key 'cluster_announce': '"
        "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
        "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
        "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
        "hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"
        ":22159': a host name longer than 253 characters" } },
    { "commands.yml",
      {
        "6: pool 'forms': key 'commands': 'FOO 1 1': expected \"NAME FIRST LAST STEP [readonly|write]\"",
        "7: pool 'forms': key 'commands': 'FOO 1 1 1 write extra': expected \"NAME FIRST LAST STEP [readonly|write]\"",
        "8: pool 'forms': key 'commands': 'FOO 0 1 1': FIRST 0: a command with no key cannot be routed (FIRST is 1 "
        "or more)",
        "9: pool 'forms': key 'commands': 'FOO 1 1 0': STEP 0: the distance between keys is 1 or more",
        "10: pool 'forms': key 'commands': 'FOO one 1 1': FIRST 'one' is not an integer",
        "11: pool 'forms': key 'commands': 'FOO 1 -x 1': LAST '-x' is not an integer",
        "12: pool 'forms': key 'commands': 'FOO 1 1 1 sometimes': unknown mode 'sometimes' (readonly or write)",
        "13: pool 'forms': key 'commands': 'FOO 64 64 1': FIRST 64 is out of range (1 to 63)",
        "14: pool 'forms': key 'commands': 'FOO 3 2 1': LAST 2 is before FIRST 3 (a negative LAST counts from the end)",
        "15: pool 'forms': key 'commands': 'FOO$ 1 1 1': a command name is letters, digits, '.', '_', '-' and '|'",
        "16: pool 'forms': key 'commands': 'ABCDEFGHIJKLMNOPQRSTUVWX 1 1 1': too long for a command name",
        "17: pool 'forms': key 'commands': 'json.get 1 1 1': command 'json.get' declared twice (first at line 5)",
        "18: pool 'forms': key 'commands': expected a command \"NAME FIRST LAST STEP [readonly|write]\", got a "
        "sequence",
        "23: pool 'memcached': key 'commands': declared commands are redis commands: this pool is a memcached pool "
        "(set redis: true)",
        "29: pool 'scalar': key 'commands': expected a sequence of \"NAME FIRST LAST STEP [readonly|write]\", got a "
        "scalar" } },
    { "many_errors.yml",
      { "4: pool 'alpha': key 'hash': unknown hash 'sha1' (valid: " HASH_NAMES ")",
        "5: pool 'alpha': key 'timeout': expected an integer, got 'soon'",
        "7: pool 'alpha': key 'servers': '127.0.0.1:6379:0': bad weight '0' (must be a number "
        "between 1 and " RANGE_INT,
        "14: pool 'gamma': key 'distribution': unknown distribution 'round_robin' (valid: "
        "ketama, modula, random)",
        "15: pool 'gamma': key 'bogus': unknown key",
        "18: pool 'gamma': key 'servers': '127.0.0.1:6380:1 a': duplicate server name 'a' "
        "(first at line 17)",
        "20: pool 'delta': key 'redis': expected true or false, got 'perhaps'",
        "19: pool 'delta': key 'listen': required key is missing",
        "19: pool 'delta': key 'servers': required key is missing",
        "13: pool 'gamma': key 'listen': '127.0.0.1:22121' is already the listen address of "
        "pool 'alpha' (line 3)" } },
};

static size_t bad_nmsgs(const struct bad_case *bc)
{
    size_t n = 0;
    while (n < sizeof(bc->msg) / sizeof(bc->msg[0]) && bc->msg[n] != NULL) n++;
    return n;
}

static void test_bad_file(void **state)
{
    const struct bad_case *bc = *state;
    char *rel = path_join("conf/bad", bc->file);
    char *path = path_join(data_dir(), rel);
    struct errs e = { .n = 0 };
    struct conf *c = conf_load(path, errs_collect, &e);
    size_t want = bad_nmsgs(bc);

    if (c != NULL || e.n != want) {
        print_error("%s: loaded=%d, %zu messages, expected %zu\n", bc->file, c != NULL, e.n,
                    want);
        errs_print(&e);
    }
    assert_null(c);
    assert_int_equal(e.n, want);
    for (size_t i = 0; i < want; i++) {
        char *expect = path_join(path, bc->msg[i]);
        expect[strlen(path)] = ':'; /* "<path>:<message>" */
        if (strcmp(e.line[i], expect) != 0) {
            print_error("message %zu of %s:\n  want: %s\n  got:  %s\n", i, bc->file, expect,
                        e.line[i]);
        }
        assert_string_equal(e.line[i], expect);
        free(expect);
    }
    errs_free(&e);
    free(path);
    free(rel);
}

static const char *const good_files[] = {
    "minimal.yml", "all_keys.yml", "crlf.yml", "unix_listen.yml", "named_servers.yml",
    "port_11211.yml", "bools.yml", "flow_quoted.yml", "ipv6.yml", "document_markers.yml",
    "redis_auth.yml", "hash_names.yml", "limits.yml", "cluster_clients.yml", "commands.yml",
};

/* Every file in data/conf/good and data/conf/bad is covered by a test above, and vice versa. */
static void test_data_files_covered(void **state)
{
    (void)state;
    const char *sub[] = { "conf/good", "conf/bad" };
    for (size_t s = 0; s < 2; s++) {
        char *dir = path_join(data_dir(), sub[s]);
        DIR *d = opendir(dir);
        if (d == NULL) print_error("cannot open %s: %s\n", dir, strerror(errno));
        assert_non_null(d);
        size_t nfiles = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            if (de->d_name[0] == '.') continue;
            bool found = false;
            if (s == 0) {
                for (size_t i = 0; i < sizeof(good_files) / sizeof(good_files[0]); i++) {
                    found = found || strcmp(good_files[i], de->d_name) == 0;
                }
            } else {
                for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
                    found = found || strcmp(bad_cases[i].file, de->d_name) == 0;
                }
            }
            if (!found) print_error("%s/%s has no test\n", sub[s], de->d_name);
            assert_true(found);
            nfiles++;
        }
        closedir(d);
        free(dir);
        assert_int_equal(nfiles, s == 0 ? sizeof(good_files) / sizeof(good_files[0])
                                        : sizeof(bad_cases) / sizeof(bad_cases[0]));
    }
}

/* ---- the distribution vectors: each config alone, then all 46 as one file ---- */

#define NVECTORS 46

struct vector_case {
    char name[64], hash[32], dist[16], weights[64], names[128], tag[8], ports[64];
};

/* Reads tests/vectors/cases.tsv (one row a case); returns the number of rows. */
static size_t vector_cases(struct vector_case *vc, size_t max)
{
    char *path = path_join(vectors_dir(), "cases.tsv");
    FILE *f = fopen(path, "r");
    if (f == NULL) print_error("cannot open %s: %s\n", path, strerror(errno));
    assert_non_null(f);
    char line[1024];
    size_t n = 0;
    assert_non_null(fgets(line, sizeof(line), f)); /* header */
    while (n < max && fgets(line, sizeof(line), f) != NULL) {
        struct vector_case *v = &vc[n];
        int got = sscanf(line, "%63s %31s %15s %63s %127s %7s %63s", v->name, v->hash, v->dist,
                         v->weights, v->names, v->tag, v->ports);
        assert_int_equal(got, 7);
        /*
         * cases.tsv says server1..server4 for this case, but its .yml (the config twemproxy ran)
         * names the servers as below: the .yml wins.
         */
        if (strcmp(v->name, "modula_fnv1a_64_named_unsorted_w1234") == 0) {
            assert_string_equal(v->names, "server1,server2,server3,server4");
            snprintf(v->names, sizeof(v->names), "zulu,alpha,mike-long,bravo");
        }
        n++;
    }
    fclose(f);
    free(path);
    return n;
}

/* The i-th comma-separated field of list into out. */
static void csv_field(const char *list, size_t i, char *out, size_t outlen)
{
    while (i-- > 0) {
        list = strchr(list, ',');
        assert_non_null(list);
        list++;
    }
    size_t n = strcspn(list, ",");
    assert_true(n < outlen);
    memcpy(out, list, n);
    out[n] = '\0';
}

static void check_vector_pool(const struct conf_pool *p, const struct vector_case *v)
{
    assert_string_equal(hash_table[p->hash].name, v->hash);
    assert_string_equal(dist_type_name(p->distribution), v->dist);
    assert_true(p->redis);
    assert_false(p->auto_eject_hosts);
    assert_int_equal(p->timeout, 5000);
    if (strcmp(v->tag, "-") == 0) {
        assert_false(p->has_hash_tag);
    } else {
        assert_true(p->has_hash_tag);
        assert_memory_equal(p->hash_tag, v->tag, 2);
    }
    assert_int_equal(p->nservers, 4);
    for (size_t i = 0; i < 4; i++) {
        const struct conf_server *s = &p->servers[i];
        char field[64];
        csv_field(v->weights, i, field, sizeof(field));
        assert_int_equal(s->weight, strtoul(field, NULL, 10));
        csv_field(v->ports, i, field, sizeof(field));
        assert_int_equal(s->addr.port, strtoul(field, NULL, 10));
        assert_string_equal(s->addr.host, "127.0.0.1");
        if (strcmp(v->names, "-") == 0) {
            assert_null(s->name);
        } else {
            csv_field(v->names, i, field, sizeof(field));
            assert_string_equal(s->name, field);
            assert_string_equal(s->ketama_name, field);
        }
    }
}

static void test_vectors_each(void **state)
{
    (void)state;
    struct vector_case vc[NVECTORS + 1];
    size_t n = vector_cases(vc, NVECTORS + 1);
    assert_int_equal(n, NVECTORS);
    for (size_t i = 0; i < n; i++) {
        char file[96];
        snprintf(file, sizeof(file), "%.63s.yml", vc[i].name);
        char *path = path_join(vectors_dir(), file);
        struct errs e = { .n = 0 };
        struct conf *c = conf_load(path, errs_collect, &e);
        if (c == NULL) print_error("%s did not load\n", path);
        errs_print(&e);
        assert_non_null(c);
        assert_int_equal(c->npools, 1);
        const struct conf_pool *p = pool(c, "vec");
        check_tcp(&p->listen, "127.0.0.1:22199", "127.0.0.1", 22199);
        check_vector_pool(p, &vc[i]);
        conf_unref(c);
        free(path);
    }
}

/* Appends text to the growing buffer *buf (length *len). */
static void append(char **buf, size_t *len, const char *text, size_t n)
{
    *buf = realloc(*buf, *len + n + 1);
    assert_non_null(*buf);
    memcpy(*buf + *len, text, n);
    *len += n;
    (*buf)[*len] = '\0';
}

/* All 46 vector configs in one file: pool "vec" renamed after its case, listen ports 30000+i. */
static void test_vectors_merged(void **state)
{
    (void)state;
    struct vector_case vc[NVECTORS + 1];
    size_t n = vector_cases(vc, NVECTORS + 1);
    assert_int_equal(n, NVECTORS);
    char *merged = NULL;
    size_t mlen = 0;
    for (size_t i = 0; i < n; i++) {
        char file[96], head[96];
        snprintf(file, sizeof(file), "%.63s.yml", vc[i].name);
        char *path = path_join(vectors_dir(), file);
        size_t len;
        char *text = read_all(path, &len);
        assert_non_null(text);
        assert_int_equal(strncmp(text, "vec:\n", 5), 0);
        char *port = strstr(text, "127.0.0.1:22199");
        assert_non_null(port);
        snprintf(head, sizeof(head), "%.63s:\n", vc[i].name);
        append(&merged, &mlen, head, strlen(head));
        append(&merged, &mlen, text + 5, (size_t)(port - text) - 5);
        snprintf(head, sizeof(head), "127.0.0.1:%zu", 30000 + i);
        append(&merged, &mlen, head, strlen(head));
        const char *after = port + strlen("127.0.0.1:22199");
        append(&merged, &mlen, after, strlen(after));
        free(text);
        free(path);
    }

    struct errs e = { .n = 0 };
    struct conf *c = conf_load_string(merged, mlen, "vectors-merged.yml", errs_collect, &e);
    errs_print(&e);
    assert_non_null(c);
    assert_int_equal(c->npools, NVECTORS);
    assert_string_equal(c->path, "vectors-merged.yml");
    for (size_t i = 0; i < n; i++) {
        const struct conf_pool *p = pool(c, vc[i].name);
        assert_ptr_equal(p, &c->pools[i]);
        assert_int_equal(p->listen.port, 30000 + i);
        check_vector_pool(p, &vc[i]);
    }
    conf_unref(c);
    free(merged);
}

/* ---- loading from memory, file errors ---- */

static void test_string_and_name(void **state)
{
    (void)state;
    static const char text[] = "p:\n  listen: 127.0.0.1:1\n  servers: [127.0.0.1:2:1]\n";
    struct errs e = { .n = 0 };
    struct conf *c = conf_load_string(text, sizeof(text) - 1, "mem.yml", errs_collect, &e);
    assert_non_null(c);
    assert_string_equal(c->path, "mem.yml");
    conf_unref(c);

    /* only len bytes are read: the cut leaves no servers */
    c = conf_load_string(text, 25, NULL, errs_collect, &e);
    assert_null(c);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.line[0], "(string):1: pool 'p': key 'servers': required key is missing");
    errs_free(&e);

    /* no callback: to stderr, same result */
    c = conf_load_string("x: 1\n", 5, "stderr.yml", NULL, NULL);
    assert_null(c);
}

static void test_nesting_limit(void **state)
{
    (void)state;
    char text[128];
    struct errs e = { .n = 0 };
    /* the top mapping is level 1; the 31st '[' (column 34) opens level 32, the 32nd level 33 */
    snprintf(text, sizeof(text), "a: %.*s%.*s\n", 40, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
             40, "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
    assert_null(conf_load_string(text, strlen(text), "deep.yml", errs_collect, &e));
    assert_int_equal(e.n, 1);
    assert_string_equal(e.line[0], "deep.yml:1:35: nesting deeper than 32 levels");
    errs_free(&e);
}

static void test_missing_file(void **state)
{
    (void)state;
    struct errs e = { .n = 0 };
    struct conf *c = conf_load("/nonexistent/nutcrackers.yml", errs_collect, &e);
    assert_null(c);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.line[0],
                        "/nonexistent/nutcrackers.yml: cannot read the file: No such file or "
                        "directory");
    errs_free(&e);
}

static void test_control_chars_in_message(void **state)
{
    (void)state;
    static const char text[] = "\"a\\nb\":\n  \"x\\ty\": 1\n";
    struct errs e = { .n = 0 };
    assert_null(conf_load_string(text, sizeof(text) - 1, "cc.yml", errs_collect, &e));
    assert_int_equal(e.n, 3);
    assert_string_equal(e.line[0], "cc.yml:2: pool 'a?b': key 'x?y': unknown key");
    errs_free(&e);
}

/* ---- the string parsers ---- */

static void test_parse_int(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_int_equal(conf_parse_int("42", 2, 10, 0, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(conf_parse_int("-1", 2, 10, -1, 100, &v), 0);
    assert_int_equal(v, -1);
    assert_int_equal(conf_parse_int("+7", 2, 10, 0, 100, &v), 0);
    assert_int_equal(v, 7);
    assert_int_equal(conf_parse_int("0666", 4, 8, 0, 0777, &v), 0);
    assert_int_equal(v, 0666);
    assert_int_equal(conf_parse_int("-", 1, 10, -5, 5, &v), -EINVAL);
    assert_int_equal(conf_parse_int("", 0, 10, -5, 5, &v), -EINVAL);
    assert_int_equal(conf_parse_int("1 ", 2, 10, -5, 5, &v), -EINVAL);
    assert_int_equal(conf_parse_int("-7", 2, 8, -100, 100, &v), -EINVAL);
    assert_int_equal(conf_parse_int("8", 1, 8, 0, 100, &v), -EINVAL);
    assert_int_equal(conf_parse_int("101", 3, 10, 0, 100, &v), -ERANGE);
    assert_int_equal(conf_parse_int("9223372036854775807", 19, 10, INT64_MIN, INT64_MAX, &v), 0);
    assert_int_equal(v, INT64_MAX);
    assert_int_equal(conf_parse_int("9223372036854775808", 19, 10, INT64_MIN, INT64_MAX, &v),
                     -ERANGE);
    assert_int_equal(conf_parse_int("99999999999999999999999", 23, 10, 0, 1, &v), -ERANGE);
    /* only len bytes count */
    assert_int_equal(conf_parse_int("123", 2, 10, 0, 100, &v), 0);
    assert_int_equal(v, 12);
}

static void test_parse_server(void **state)
{
    (void)state;
    static const struct {
        const char *in, *host, *text, *pname, *ketama, *name;
        int port;
        uint32_t weight;
        bool is_unix;
    } ok[] = {
        { "10.0.0.1:6379:3", "10.0.0.1", "10.0.0.1:6379", "10.0.0.1:6379:3", "10.0.0.1:6379",
          NULL, 6379, 3, false },
        { "10.0.0.1:11211:1\tcache", "10.0.0.1", "10.0.0.1:11211", "10.0.0.1:11211:1", "cache",
          "cache", 11211, 1, false },
        { "h:11211:2", "h", "h:11211", "h:11211:2", "h", NULL, 11211, 2, false },
        { "/tmp/a:b.sock:4", "/tmp/a:b.sock", "/tmp/a:b.sock", "/tmp/a:b.sock:4",
          "/tmp/a:b.sock", NULL, 0, 4, true },
        { "[2001:db8::1]:7000:1  n", "2001:db8::1", "[2001:db8::1]:7000", "[2001:db8::1]:7000:1",
          "n", "n", 7000, 1, false },
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct conf_server s;
        char err[CONF_ERR_MAX] = "";
        int rc = conf_server_parse(ok[i].in, &s, err, sizeof(err));
        if (rc != 0) print_error("'%s': %s\n", ok[i].in, err);
        assert_int_equal(rc, 0);
        assert_string_equal(s.addr.host, ok[i].host);
        assert_string_equal(s.addr.text, ok[i].text);
        assert_int_equal(s.addr.port, ok[i].port);
        assert_int_equal(s.addr.is_unix, ok[i].is_unix);
        assert_int_equal(s.weight, ok[i].weight);
        assert_string_equal(s.pname, ok[i].pname);
        assert_string_equal(s.ketama_name, ok[i].ketama);
        if (ok[i].name != NULL) assert_string_equal(s.name, ok[i].name);
        else assert_null(s.name);
        assert_string_equal(s.stats_name, ok[i].name != NULL ? ok[i].name : ok[i].pname);
        conf_server_deinit(&s);
    }
}

static void test_parse_listen(void **state)
{
    (void)state;
    struct conf_addr a, b;
    char err[CONF_ERR_MAX];
    assert_int_equal(conf_listen_parse("LocalHost:80", &a, err, sizeof(err)), 0);
    assert_int_equal(conf_listen_parse("localhost:80", &b, err, sizeof(err)), 0);
    assert_true(conf_addr_same(&a, &b)); /* host names compare without case */
    conf_addr_deinit(&b);
    assert_int_equal(conf_listen_parse("localhost:81", &b, err, sizeof(err)), 0);
    assert_false(conf_addr_same(&a, &b));
    conf_addr_deinit(&b);
    assert_int_equal(conf_listen_parse("/tmp/LocalHost", &b, err, sizeof(err)), 0);
    assert_false(conf_addr_same(&a, &b));
    conf_addr_deinit(&a);
    assert_int_equal(conf_listen_parse("/tmp/localhost  0700", &a, err, sizeof(err)), 0);
    assert_int_equal(a.perm, 0700);
    assert_false(conf_addr_same(&a, &b)); /* paths compare exactly */
    conf_addr_deinit(&a);
    conf_addr_deinit(&b);
    assert_int_equal(conf_listen_parse("", &a, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "expected host:port or an absolute unix socket path");
}

/* ---- refcounting ---- */

static void test_refs(void **state)
{
    (void)state;
    struct conf *c = load_good("good/named_servers.yml");
    assert_ptr_equal(conf_ref(c), c);
    assert_ptr_equal(conf_ref(c), c);
    assert_int_equal(atomic_load(&c->refs), 3);
    conf_unref(c);
    conf_unref(c);
    assert_int_equal(atomic_load(&c->refs), 1);
    assert_string_equal(conf_pool_find(c, "beta")->servers[0].name, "server1");
    conf_unref(c); /* frees: ASan reports any leak or later use */
    conf_unref(NULL);
}

#define REF_THREADS 4
#define REF_ROUNDS 20000

static void *ref_worker(void *arg)
{
    struct conf *c = arg;
    for (int i = 0; i < REF_ROUNDS; i++) {
        struct conf *mine = conf_ref(c);
        if (conf_pool_find(mine, "alpha") == NULL) abort();
        conf_unref(mine);
    }
    conf_unref(c); /* the reference the main thread took for this worker */
    return NULL;
}

static void test_refs_threads(void **state)
{
    (void)state;
    struct conf *c = load_good("good/minimal.yml");
    pthread_t t[REF_THREADS];
    for (int i = 0; i < REF_THREADS; i++) {
        assert_int_equal(pthread_create(&t[i], NULL, ref_worker, conf_ref(c)), 0);
    }
    conf_unref(c); /* the last worker to finish frees it */
    for (int i = 0; i < REF_THREADS; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
}

int main(void)
{
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(test_good_minimal),
        cmocka_unit_test(test_good_all_keys),
        cmocka_unit_test(test_good_crlf),
        cmocka_unit_test(test_good_unix_listen),
        cmocka_unit_test(test_good_cluster_clients),
        cmocka_unit_test(test_good_commands),
        cmocka_unit_test(test_good_named_servers),
        cmocka_unit_test(test_good_port_11211),
        cmocka_unit_test(test_good_bools),
        cmocka_unit_test(test_good_flow_quoted),
        cmocka_unit_test(test_good_ipv6),
        cmocka_unit_test(test_good_document_markers),
        cmocka_unit_test(test_good_redis_auth),
        cmocka_unit_test(test_good_hash_names),
        cmocka_unit_test(test_good_limits),
        cmocka_unit_test(test_example_config),
        cmocka_unit_test(test_data_files_covered),
        cmocka_unit_test(test_vectors_each),
        cmocka_unit_test(test_vectors_merged),
        cmocka_unit_test(test_string_and_name),
        cmocka_unit_test(test_nesting_limit),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_control_chars_in_message),
        cmocka_unit_test(test_parse_int),
        cmocka_unit_test(test_parse_server),
        cmocka_unit_test(test_parse_listen),
        cmocka_unit_test(test_refs),
        cmocka_unit_test(test_refs_threads),
    };
    enum { NFIXED = sizeof(fixed) / sizeof(fixed[0]), NBAD = sizeof(bad_cases) / sizeof(bad_cases[0]) };
    static struct CMUnitTest tests[NFIXED + NBAD];
    static char names[NBAD][96];

    memcpy(tests, fixed, sizeof(fixed));
    for (size_t i = 0; i < NBAD; i++) {
        snprintf(names[i], sizeof(names[i]), "test_bad_file(%s)", bad_cases[i].file);
        tests[NFIXED + i] = (struct CMUnitTest){
            .name = names[i],
            .test_func = test_bad_file,
            .initial_state = (void *)&bad_cases[i],
        };
    }
    return _cmocka_run_group_tests("conf", tests, NFIXED + NBAD, NULL, NULL);
}
