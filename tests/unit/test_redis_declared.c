/*
 * test_redis_declared.c - unit tests of a redis pool's declared commands (`commands:`,
 * src/proto/redis_declared.c): the built-in names that cannot be declared and why, the entry a
 * declaration gives (key positions, mode, FRAG_ONE, arity), the pool's table and its lookup, and
 * the request parser routing declared commands' keys (FIRST/LAST/STEP forms, a negative LAST, a
 * built-in declared anew, arity rejects, undeclared names still refused), RESP and inline, whole,
 * split at every byte and one byte at a time.
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

#include "conf/conf.h"
#include "proto/proto.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"
#include "proto/redis_declared.h"
#include "proto_drv.h"

/* ---------------------------------------------------------------- helpers */

struct errs {
    char lines[32][512];
    size_t n;
};

static void errs_collect(void *ctx, const char *line)
{
    struct errs *e = ctx;
    assert_true(e->n < sizeof(e->lines) / sizeof(e->lines[0]));
    snprintf(e->lines[e->n++], sizeof(e->lines[0]), "%s", line);
}

/* A conf of one redis pool declaring the commands of entries (a YAML flow sequence's items). */
static struct conf *load_pool(const char *entries)
{
    char text[4096];
    int n = snprintf(text, sizeof(text),
                     "alpha:\n  listen: 127.0.0.1:22121\n  redis: true\n  commands: [%s]\n"
                     "  servers:\n   - 127.0.0.1:6379:1\n",
                     entries);
    struct errs e = { .n = 0 };
    struct conf *c = conf_load_string(text, (size_t)n, "declared.yml", errs_collect, &e);
    for (size_t i = 0; i < e.n; i++) print_error("%s\n", e.lines[i]);
    assert_non_null(c);
    return c;
}

/* ---------------------------------------------------------------- built-ins */

static void test_builtins_that_cannot_be_declared(void **state)
{
    (void)state;
    /* each reason, and the built-ins (space-separated) that get it */
    static const char *const refused[][2] = {
        { "splits it per server", "mget del mset exists unlink touch" },
        { "answers it itself", "info ping auth quit hello client cluster readonly echo select reset" },
        { "every server", "keys dbsize randomkey" },
        { "Pub/Sub", "subscribe ssubscribe psubscribe unsubscribe" },
        { "it blocks", "blpop brpop bzmpop blmove" },
        { "transactions", "multi exec discard watch unwatch" },
        { "no key", "command time lolwut" },
        { "STREAMS", "xread xreadgroup" },
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        char names[128], *save = NULL;
        snprintf(names, sizeof(names), "%s", refused[i][1]);
        for (char *n = strtok_r(names, " ", &save); n != NULL; n = strtok_r(NULL, " ", &save)) {
            int k = redis_cmd_lookup((const uint8_t *)n, strlen(n));
            assert_true(k >= 0);
            const char *why = redis_declared_refusal(&redis_cmds[k]);
            if (why == NULL || strstr(why, refused[i][0]) == NULL)
                print_error("%s: %s\n", n, why != NULL ? why : "(declarable)");
            assert_non_null(why);
            assert_non_null(strstr(why, refused[i][0]));
        }
    }
    static const char *const plain[] = { "get", "set", "msetnx", "eval", "zunionstore", "sort", "xadd", "rpoplpush" };
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
        int k = redis_cmd_lookup((const uint8_t *)plain[i], strlen(plain[i]));
        assert_true(k >= 0);
        assert_null(redis_declared_refusal(&redis_cmds[k]));
    }
}

static void test_check_reports_each_entry_with_its_line(void **state)
{
    (void)state;
    struct conf *c = load_pool("\"JSON.GET 1 1 1\", MGET 1 -1 1, GET 2 2 1, SET 1 1 1, BLPOP 1 -2 1, "
                               "GETRANGE 1 3 1");
    struct errs e = { .n = 0 };
    assert_int_equal(redis_declared_check(&c->pools[0], errs_collect, &e), 3);
    assert_int_equal(e.n, 3);
    assert_string_equal(e.lines[0], "declared.yml:4: pool 'alpha': key 'commands': 'mget' cannot be declared: the "
                                    "proxy splits it per server and merges the replies");
    assert_string_equal(e.lines[1], "declared.yml:4: pool 'alpha': key 'commands': 'get' takes exactly 2 arguments "
                                    "(its name included): its keys cannot be at 2 to 2");
    assert_string_equal(e.lines[2], "declared.yml:4: pool 'alpha': key 'commands': 'blpop' cannot be declared: it "
                                    "blocks: the proxy runs it on a server connection of its client's own");
    assert_int_equal(proto_conf_check(c, errs_collect, &e), 3);
    conf_unref(c);
}

/* ---------------------------------------------------------------- entries and the table */

static void test_entries(void **state)
{
    (void)state;
    struct conf *c = load_pool("JSON.GET 1 1 1 readonly, X.TWO 1 2 1, X.ALL 1 -1 2, X.NEG 2 -3 1 readonly, "
                               "X.STEP 1 5 2, X.ONE 3 3 2, APPEND 2 2 1, EVAL 3 3 1 readonly, GETRANGE 1 1 1");
    const struct conf_pool *p = &c->pools[0];
    static const struct {
        int8_t arity;
        uint32_t flags;
    } want[] = {
        { -2, 0 },
        { -2, CMD_F_WRITE | CMD_F_FRAG_ONE },
        { -2, CMD_F_WRITE | CMD_F_FRAG_ONE },
        { -5, CMD_F_FRAG_ONE },               /* keys from 2 to the third from last: 5 args at least */
        { -2, CMD_F_WRITE | CMD_F_FRAG_ONE },
        { -4, CMD_F_WRITE },                  /* one key: no FRAG_ONE */
        { 3, CMD_F_WRITE },                   /* APPEND's exact arity stays */
        { -4, 0 },                            /* EVAL's -3 is less strict than a key at 3 */
        { 4, CMD_F_WRITE },                   /* GETRANGE's exact 4 */
    };
    for (size_t i = 0; i < p->ncommands; i++) {
        const struct conf_command *d = &p->commands[i];
        int k = redis_cmd_lookup((const uint8_t *)d->name, strlen(d->name));
        struct redis_cmd e = redis_declared_entry(d, k >= 0 ? &redis_cmds[k] : NULL);
        assert_string_equal(e.name, d->name);
        assert_int_equal(e.arity, want[i].arity);
        assert_int_equal(e.flags, want[i].flags);
        assert_int_equal(e.first_key, d->first);
        assert_int_equal(e.last_key, d->last);
        assert_int_equal(e.key_step, d->step);
        assert_int_equal(e.numkeys_pos, 0);
        assert_int_equal(e.local, 0);
        assert_int_equal(e.fan, 0);
        assert_int_equal(e.timeout_arg, 0);
    }
    conf_unref(c);
}

static void test_table_and_lookup(void **state)
{
    (void)state;
    const void *none = (const void *)1;
    struct conf *c = load_pool("SUBSCRIBE 1 1 1");
    c->pools[0].ncommands = 0; /* a pool without declarations: no table of its own */
    assert_int_equal(redis_declared_new(&c->pools[0], &none), 0);
    assert_null(none);
    conf_unref(c);

    c = load_pool("ZZ.LAST 1 1 1, JSON.GET 1 1 1 readonly, APPEND 2 2 1, BF.ADD 1 1 1, a.b 1 1 1");
    const void *t = NULL;
    assert_int_equal(redis_declared_new(&c->pools[0], &t), 0);
    assert_non_null(t);
    const struct redis_cmd *table = t;
    int app = redis_cmd_lookup((const uint8_t *)"append", 6);
    for (size_t i = 0; i < redis_ncmds; i++) { /* the built-ins, APPEND declared anew */
        assert_string_equal(table[i].name, redis_cmds[i].name);
        if ((int)i != app) assert_memory_equal(&table[i], &redis_cmds[i], sizeof(table[i]));
    }
    assert_int_equal(table[app].first_key, 2);
    static const char *const sorted[] = { "a.b", "bf.add", "json.get", "zz.last" };
    for (size_t i = 0; i < 4; i++) {
        assert_string_equal(table[redis_ncmds + i].name, sorted[i]);
        assert_int_equal(redis_declared_lookup(table, (const uint8_t *)sorted[i], strlen(sorted[i])),
                         (int)(redis_ncmds + i));
    }
    assert_int_equal(redis_declared_lookup(table, (const uint8_t *)"JSON.Get", 8), (int)redis_ncmds + 2);
    assert_int_equal(redis_declared_lookup(table, (const uint8_t *)"json.get\0x", 10), -1);
    assert_int_equal(redis_declared_lookup(table, (const uint8_t *)"json.ge", 7), -1);
    assert_int_equal(redis_declared_lookup(table, (const uint8_t *)"json.gett", 9), -1);
    assert_int_equal(redis_declared_lookup(table, (const uint8_t *)"", 0), -1);
    assert_int_equal(redis_declared_lookup(table, (const uint8_t *)"abcdefghijklmnopqrstuvwxyz", 26), -1);
    assert_int_equal(redis_declared_lookup(table, (const uint8_t *)"append", 6), -1); /* a built-in's name */
    redis_declared_free(t);
    redis_declared_free(NULL);
    conf_unref(c);
}

/* ---------------------------------------------------------------- the parser */

/* One line per request: its reject, command (a built-in's name, or "declared+i"), flags, keys. */
static char *summarize(const struct msg *m)
{
    char cmd[32];
    if (m->cmd == REDIS_CMD_NONE) snprintf(cmd, sizeof(cmd), "none");
    else if (m->cmd < redis_ncmds) snprintf(cmd, sizeof(cmd), "%s", redis_cmds[m->cmd].name);
    else snprintf(cmd, sizeof(cmd), "declared+%zu", (size_t)(m->cmd - redis_ncmds));
    size_t size = 1024;
    char *s = malloc(size);
    assert_non_null(s);
    int n = snprintf(s, size, "rej=%d cmd=%s flags=%x keys=", m->reject, cmd, m->cmd_flags);
    for (uint32_t i = 0; i < m->nkeys; i++)
        n += snprintf(s + n, size - (size_t)n, "[%.*s]", (int)m->keys[i].len, (const char *)m->keys[i].ptr);
    return s;
}

static void test_parser_routes_declared_keys(void **state)
{
    (void)state;
    struct conf *c = load_pool("JSON.SET 1 1 1, X.NEG 2 -2 1 readonly, X.STEP 1 5 2, X.PAIRS 1 -1 2, "
                               "APPEND 2 2 1, X.ONE 2 2 1 readonly");
    const void *t = NULL;
    assert_int_equal(redis_declared_new(&c->pools[0], &t), 0);
    static const char in[] =
        "*4\r\n$8\r\nJSON.SET\r\n$3\r\ndoc\r\n$1\r\n$\r\n$2\r\n{}\r\n"
        "*5\r\n$5\r\nx.neg\r\n$3\r\nopt\r\n$2\r\nk1\r\n$2\r\nk2\r\n$4\r\nlast\r\n"
        "*5\r\n$6\r\nX.STEP\r\n$2\r\nk1\r\n$1\r\nv\r\n$2\r\nk2\r\n$1\r\nv\r\n"
        "*5\r\n$7\r\nx.pairs\r\n$2\r\nk1\r\n$2\r\nv1\r\n$2\r\nk2\r\n$2\r\nv2\r\n"
        "*4\r\n$7\r\nx.pairs\r\n$2\r\nk1\r\n$2\r\nv1\r\n$2\r\nk2\r\n"
        "*3\r\n$6\r\nAPPEND\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"
        "*1\r\n$8\r\njson.set\r\n"
        "*3\r\n$5\r\nX.NEG\r\n$1\r\na\r\n$1\r\nb\r\n"
        "*2\r\n$8\r\nJSON.GET\r\n$3\r\ndoc\r\n"
        "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
        "x.one a b c\r\n";
    char expect[2048];
    snprintf(expect, sizeof(expect),
             "rej=0 cmd=declared+0 flags=%x keys=[doc]\n"
             "rej=0 cmd=declared+1 flags=%x keys=[k1][k2]\n"
             "rej=0 cmd=declared+4 flags=%x keys=[k1][k2]\n"
             "rej=0 cmd=declared+3 flags=%x keys=[k1][k2]\n"
             "rej=%d cmd=declared+3 flags=0 keys=\n"
             "rej=0 cmd=append flags=%x keys=[value]\n"
             "rej=%d cmd=declared+0 flags=0 keys=\n"
             "rej=%d cmd=declared+1 flags=0 keys=\n"
             "rej=%d cmd=none flags=0 keys=\n"
             "rej=0 cmd=get flags=0 keys=[k]\n"
             "rej=0 cmd=declared+2 flags=0 keys=[b]\n",
             CMD_F_WRITE, CMD_F_FRAG_ONE, CMD_F_WRITE | CMD_F_FRAG_ONE, CMD_F_WRITE | CMD_F_FRAG_ONE, REJECT_ARITY,
             CMD_F_WRITE, REJECT_ARITY, REJECT_ARITY, REJECT_UNSUPPORTED);
    drv_check_stream_table(&redis_proto, t, in, sizeof(in) - 1, expect, summarize);
    /* the same bytes with no table of the pool's: only the built-ins */
    char *plain = drv_transcript(&redis_proto, false, false, 0, 512, in, sizeof(in) - 1, NULL, 0, summarize);
    assert_non_null(strstr(plain, "rej=0 cmd=append flags=100 keys=[key]\n"));
    assert_null(strstr(plain, "declared"));
    free(plain);
    redis_declared_free(t);
    conf_unref(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtins_that_cannot_be_declared),
        cmocka_unit_test(test_check_reports_each_entry_with_its_line),
        cmocka_unit_test(test_entries),
        cmocka_unit_test(test_table_and_lookup),
        cmocka_unit_test(test_parser_routes_declared_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
