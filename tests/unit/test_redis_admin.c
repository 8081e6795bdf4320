/*
 * test_redis_admin.c - unit tests of redis 7's functions, the introspection commands and the
 * single-key commands the table took in with them (src/proto/redis_admin.c, their rows in
 * src/proto/redis_cmd.c): each row's arity, keys and flags; local()'s decisions for FUNCTION,
 * CONFIG, ROLE and MEMORY; the fragments of FUNCTION and CONFIG (every server, or the first) and
 * their merged replies, a server's error included; keys on two servers for the one-server
 * commands (LCS, RENAME, FCALL, ...).
 *
 * Threads: the test's only.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/util.h"
#include "proto/proto.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"
#include "local_client.h"
#include "proto_drv.h"

#define W CMD_F_WRITE
#define BIG_MBUF 16384
#define SMALL_MBUF 512

/* ---------------------------------------------------------------- the table's rows */

struct row {
    const char *name;
    int8_t arity, first, last, step, numkeys;
    uint32_t flags;
    uint8_t local, fan;
};

static const struct row rows[] = {
    { "bitfield_ro", -2, 1, 1, 1, 0, 0, 0, 0 },
    { "bitop", -4, 2, -1, 1, 0, W | CMD_F_FRAG_ONE, 0, 0 },
    { "config", -2, 1, 1, 1, 0, CMD_F_LOCAL | CMD_F_FRAG_ALL, REDIS_LOCAL_CONFIG, REDIS_FAN_FIRST },
    { "dump", 2, 1, 1, 1, 0, 0, 0, 0 },
    { "eval_ro", -3, 0, 0, 0, 2, CMD_F_FRAG_ONE, 0, 0 },
    { "evalsha_ro", -3, 0, 0, 0, 2, W | CMD_F_FRAG_ONE, 0, 0 }, /* the master: its script is there */
    { "expiretime", 2, 1, 1, 1, 0, 0, 0, 0 },
    { "fcall", -3, 0, 0, 0, 2, W | CMD_F_FRAG_ONE, 0, 0 },
    { "fcall_ro", -3, 0, 0, 0, 2, CMD_F_FRAG_ONE, 0, 0 },
    { "function", -2, 1, 1, 1, 0, W | CMD_F_LOCAL | CMD_F_FRAG_ALL, REDIS_LOCAL_FUNCTION, REDIS_FAN_FUNCTION },
    { "georadius_ro", -6, 1, 1, 1, 0, 0, 0, 0 },
    { "georadiusbymember_ro", -5, 1, 1, 1, 0, 0, 0, 0 },
    { "hexpire", -6, 1, 1, 1, 0, W, 0, 0 },
    { "hexpireat", -6, 1, 1, 1, 0, W, 0, 0 },
    { "hexpiretime", -5, 1, 1, 1, 0, 0, 0, 0 },
    { "hgetdel", -5, 1, 1, 1, 0, W, 0, 0 },
    { "hgetex", -5, 1, 1, 1, 0, W, 0, 0 },
    { "hpersist", -5, 1, 1, 1, 0, W, 0, 0 },
    { "hpexpire", -6, 1, 1, 1, 0, W, 0, 0 },
    { "hpexpireat", -6, 1, 1, 1, 0, W, 0, 0 },
    { "hpexpiretime", -5, 1, 1, 1, 0, 0, 0, 0 },
    { "hpttl", -5, 1, 1, 1, 0, 0, 0, 0 },
    { "hsetex", -6, 1, 1, 1, 0, W, 0, 0 },
    { "httl", -5, 1, 1, 1, 0, 0, 0, 0 },
    { "lcs", -3, 1, 2, 1, 0, CMD_F_FRAG_ONE, 0, 0 },
    { "lmpop", -4, 0, 0, 0, 1, W | CMD_F_FRAG_ONE, 0, 0 },
    { "memory", -2, 2, 2, 1, 0, CMD_F_LOCAL, REDIS_LOCAL_MEMORY, 0 },
    { "object", -2, 2, 2, 1, 0, 0, 0, 0 },
    { "pexpiretime", 2, 1, 1, 1, 0, 0, 0, 0 },
    { "rename", 3, 1, 2, 1, 0, W | CMD_F_FRAG_ONE, 0, 0 },
    { "renamenx", 3, 1, 2, 1, 0, W | CMD_F_FRAG_ONE, 0, 0 },
    { "restore", -4, 1, 1, 1, 0, W, 0, 0 },
    { "role", 1, 1, -1, 1, 0, CMD_F_LOCAL, REDIS_LOCAL_ROLE, 0 },
    { "sintercard", -3, 0, 0, 0, 1, CMD_F_FRAG_ONE, 0, 0 },
    { "sort_ro", -2, 1, 1, 1, 0, 0, 0, 0 },
    { "substr", 4, 1, 1, 1, 0, 0, 0, 0 },
    { "zintercard", -3, 0, 0, 0, 1, CMD_F_FRAG_ONE, 0, 0 },
    { "zmpop", -4, 0, 0, 0, 1, W | CMD_F_FRAG_ONE, 0, 0 },
};

/* Each row as redis 7 defines the command (arity, key positions, write or read) with the
 * proxy's flags; none of them is counted as refused any more. The reads (no CMD_F_WRITE) are
 * what read_from may send to a replica. */
static void test_rows(void **state)
{
    (void)state;
    for (size_t i = 0; i < NC_ARRAY_LEN(rows); i++) {
        const struct row *r = &rows[i];
        int ci = redis_cmd_lookup((const uint8_t *)r->name, strlen(r->name));
        if (ci < 0) print_error("%s: not in the table\n", r->name);
        assert_true(ci >= 0);
        const struct redis_cmd *c = &redis_cmds[ci];
        if (c->arity != r->arity || c->flags != r->flags) print_error("%s: row differs\n", r->name);
        assert_int_equal(c->arity, r->arity);
        assert_int_equal(c->first_key, r->first);
        assert_int_equal(c->last_key, r->last);
        assert_int_equal(c->key_step, r->step);
        assert_int_equal(c->numkeys_pos, r->numkeys);
        assert_int_equal(c->flags, r->flags);
        assert_int_equal(c->local, r->local);
        assert_int_equal(c->fan, r->fan);
        assert_int_equal(c->timeout_arg, 0);
        assert_int_equal(redis_refused_lookup((const uint8_t *)r->name, strlen(r->name)), -1);
    }
    /* what stays refused: a server's own business, replication, blocking on replicas */
    static const char *const kept[] = { "acl", "debug", "monitor", "save", "shutdown", "replicaof", "wait",
                                        "slowlog", "latency", "module", "swapdb", "migrate" };
    for (size_t i = 0; i < NC_ARRAY_LEN(kept); i++) {
        assert_int_equal(redis_cmd_lookup((const uint8_t *)kept[i], strlen(kept[i])), -1);
        assert_true(redis_refused_lookup((const uint8_t *)kept[i], strlen(kept[i])) >= 0);
    }
}

/* ---------------------------------------------------------------- local() */

static const char role_reply[] = "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n";

static void test_role(void **state)
{
    (void)state;
    struct client c;
    client_open(&c, NULL, 0);
    expect(&c, "ROLE", role_reply);
    expect(&c, "role", role_reply);
    char t[256];
    assert_int_equal(client_say(&c, "HELLO 3", t, sizeof(t)), PROTO_FORWARD);
    assert_int_equal(c.s.variant, REDIS_RESP3);
    expect(&c, "ROLE", role_reply); /* redis's ROLE is the same array in RESP3 */
    client_close(&c);
}

static void test_function_local(void **state)
{
    (void)state;
    struct client c;
    client_open(&c, NULL, 0);
    static const char *const forwarded[] = {
        "FUNCTION LOAD code", "function load REPLACE code", "FUNCTION DELETE lib", "FUNCTION FLUSH ASYNC",
        "FUNCTION RESTORE payload REPLACE", "FUNCTION LIST", "FUNCTION LIST WITHCODE LIBRARYNAME l*",
        "FUNCTION DUMP", "FUNCTION STATS", "FUNCTION HELP",
        "FUNCTION LOAD", "FUNCTION DELETE", "FUNCTION DUMP x", /* the servers answer their errors */
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(forwarded); i++) expect_forward(&c, forwarded[i]);
    static const char kill[] = "-ERR FUNCTION KILL is not supported by the proxy: a function runs on the "
                               "server of its keys, send FUNCTION KILL to that server\r\n";
    expect(&c, "FUNCTION KILL", kill);
    expect(&c, "function kill", kill);
    expect(&c, "FUNCTION NoSuch x", "-ERR unknown subcommand 'NoSuch'. Try FUNCTION HELP.\r\n");
    expect(&c, "FUNCTION", "-ERR wrong number of arguments for 'function' command\r\n");
    client_close(&c);
}

static void test_config_local(void **state)
{
    (void)state;
    struct client c;
    client_open(&c, NULL, 0);
    expect_forward(&c, "CONFIG GET maxmemory");
    expect_forward(&c, "config get save appendonly");
    expect_forward(&c, "CONFIG GET"); /* the first server's arity error */
    expect_forward(&c, "CONFIG HELP");
    expect(&c, "CONFIG SET maxmemory 10", "-ERR CONFIG SET is not supported by the proxy: set it on each server\r\n");
    expect(&c, "config set", "-ERR CONFIG SET is not supported by the proxy: set it on each server\r\n");
    expect(&c, "CONFIG REWRITE", "-ERR CONFIG REWRITE is not supported by the proxy: run it on each server\r\n");
    expect(&c, "CONFIG RESETSTAT", "-ERR CONFIG RESETSTAT is not supported by the proxy: run it on each server\r\n");
    expect(&c, "CONFIG foo", "-ERR unknown subcommand 'foo'. Try CONFIG HELP.\r\n");
    client_close(&c);
    /* not before AUTH */
    client_open(&c, "pw", 0);
    expect(&c, "CONFIG GET maxmemory", "-NOAUTH Authentication required.\r\n");
    expect(&c, "ROLE", "-NOAUTH Authentication required.\r\n");
    expect(&c, "AUTH pw", "+OK\r\n");
    expect_forward(&c, "CONFIG GET maxmemory");
    client_close(&c);
}

static void test_memory_local(void **state)
{
    (void)state;
    static const char refusal[] =
        "-ERR MEMORY without a key is not supported by the proxy: MEMORY USAGE key is routed by its key; "
        "ask each server for DOCTOR, STATS, MALLOC-STATS or PURGE\r\n";
    struct client c;
    client_open(&c, NULL, 0);
    expect_forward(&c, "MEMORY USAGE k");
    expect_forward(&c, "MEMORY USAGE k SAMPLES 0");
    expect_forward(&c, "MEMORY FOO k"); /* the key's server answers redis's error */
    static const char *const keyless[] = { "MEMORY STATS", "MEMORY DOCTOR", "MEMORY MALLOC-STATS",
                                           "MEMORY PURGE", "MEMORY HELP", "MEMORY USAGE" };
    for (size_t i = 0; i < NC_ARRAY_LEN(keyless); i++) expect(&c, keyless[i], refusal);
    client_close(&c);
}

/* ---------------------------------------------------------------- fragments and merged replies */

struct fan {
    struct tenv e;
    struct drv rq, rs;
    struct msg *req;
    char *in;       /* the request's bytes */
    size_t len;
};

/* Parses line (RESP; a word "@N" becomes N bytes of 'x': a library's code) over mbufs of mbuf
 * bytes and fragments it over the servers where[0..n). */
static void fan_open(struct fan *f, const char *line, size_t mbuf, const uint32_t *where, uint32_t n)
{
    memset(f, 0, sizeof(*f));
    char wbuf[512];
    const char *argv[16];
    int argc = split_words(line, wbuf, sizeof(wbuf), argv, 16);
    char *big[16] = { 0 };
    size_t size = 1024;
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] != '@') continue;
        size_t bn = (size_t)atoi(argv[i] + 1);
        big[i] = malloc(bn + 1);
        assert_non_null(big[i]);
        memset(big[i], 'x', bn);
        big[i][bn] = '\0';
        argv[i] = big[i];
        size += bn + 32;
    }
    f->in = malloc(size);
    assert_non_null(f->in);
    f->len = resp_build(f->in, size, argc, argv);
    for (int i = 0; i < argc; i++) free(big[i]);
    drv_open(&f->rq, &f->e, mbuf, &redis_proto, false, false);
    drv_feed(&f->rq, f->in, f->len, 0);
    assert_false(f->rq.failed);
    assert_int_equal(f->rq.nout, 1);
    f->req = f->rq.out[0];
    assert_int_equal(f->req->reject, REJECT_NONE);
    drv_init(&f->rs, &f->e, &redis_proto, true, false);
    assert_int_equal(redis_proto.fragment(f->req, where, n, &f->e.pp), 0);
}

/* Each fragment is the client's request as it came, to where[f]. */
static void fan_check_copies(struct fan *f, const uint32_t *where, uint32_t nfrags)
{
    assert_int_equal(f->req->nfrags, nfrags);
    for (uint32_t i = 0; i < nfrags; i++) {
        struct msg *fr = f->req->frags[i];
        assert_int_equal(fr->server_idx, where[i]);
        char *got = msg_text(fr);
        assert_int_equal(strlen(got), f->len);
        assert_memory_equal(got, f->in, f->len);
        free(got);
    }
}

/* Parses replies[i] as fragment i's reply, coalesces: returns the rc, the reply in *text. */
static int fan_merge(struct fan *f, const char *const *replies, char **text, uint8_t *type)
{
    size_t first = f->rs.nout;
    for (uint32_t i = 0; i < f->req->nfrags; i++) drv_feed(&f->rs, replies[i], strlen(replies[i]), 0);
    assert_false(f->rs.failed);
    assert_int_equal(f->rs.nout, first + f->req->nfrags);
    for (uint32_t i = 0; i < f->req->nfrags; i++) f->req->frags[i]->peer = f->rs.out[first + i];
    struct msg *rsp = msg_get(&f->e.pp);
    assert_non_null(rsp);
    int rc = redis_proto.coalesce(NULL, f->req, rsp);
    *text = msg_text(rsp);
    *type = rsp->rsp_type;
    msg_put(&f->e.pp, rsp);
    return rc;
}

static void fan_close(struct fan *f)
{
    for (uint32_t i = 0; i < f->req->nfrags; i++) msg_put(&f->e.pp, f->req->frags[i]);
    free(f->in);
    drv_deinit(&f->rs);
    drv_close(&f->rq);
}

struct merge_case {
    const char *line;
    const char *replies[3];
    int rc;
    const char *want;
};

static const uint32_t every3[] = { 0, 1, 2 };

static void check_merge(const struct merge_case *mc, uint32_t nfrags, size_t mbuf)
{
    struct fan f;
    fan_open(&f, mc->line, mbuf, every3, 3);
    fan_check_copies(&f, every3, nfrags);
    char *text;
    uint8_t type;
    int rc = fan_merge(&f, mc->replies, &text, &type);
    if (rc != mc->rc || (rc == 0 && strcmp(text, mc->want) != 0)) print_error("%s -> %d '%s'\n", mc->line, rc, text);
    assert_int_equal(rc, mc->rc);
    if (rc == 0) assert_string_equal(text, mc->want);
    else assert_string_equal(text, "");
    free(text);
    fan_close(&f);
}

/* FUNCTION LOAD, DELETE, FLUSH, RESTORE: the request to every server; the library's name or +OK
 * once every server accepted, else the first error in server order (the rest are not looked at). */
static void test_function_every_server(void **state)
{
    (void)state;
    static const char lib[] = "$5\r\nmylib\r\n";
    static const char exists[] = "-ERR Library 'mylib' already exists\r\n";
    static const char nolib[] = "-ERR Library not found\r\n";
    static const struct merge_case cases[] = {
        { "FUNCTION LOAD code", { lib, lib, lib }, 0, lib },
        { "FUNCTION LOAD code", { lib, exists, lib }, 0, exists },
        { "FUNCTION LOAD code", { "-ERR Missing library metadata\r\n", "-ERR x\r\n", "-ERR y\r\n" }, 0,
          "-ERR Missing library metadata\r\n" },
        { "FUNCTION LOAD code", { lib, "+OK\r\n", lib }, -EINVAL, NULL },
        { "FUNCTION DELETE mylib", { "+OK\r\n", "+OK\r\n", "+OK\r\n" }, 0, "+OK\r\n" },
        { "FUNCTION DELETE mylib", { "+OK\r\n", "+OK\r\n", nolib }, 0, nolib },
        { "FUNCTION DELETE mylib", { "+OK\r\n", ":1\r\n", "+OK\r\n" }, -EINVAL, NULL },
        { "FUNCTION FLUSH SYNC", { "+OK\r\n", "+OK\r\n", "+OK\r\n" }, 0, "+OK\r\n" },
        { "FUNCTION RESTORE payload REPLACE", { "+OK\r\n", "+OK\r\n", "+OK\r\n" }, 0, "+OK\r\n" },
        { "FUNCTION RESTORE bad", { "-ERR DUMP payload version or checksum are wrong\r\n", "+OK\r\n", "+OK\r\n" },
          0, "-ERR DUMP payload version or checksum are wrong\r\n" },
        /* RESP3 servers: an attribute before +OK, a blob error */
        { "FUNCTION FLUSH", { "|1\r\n+a\r\n+b\r\n+OK\r\n", "+OK\r\n", "+OK\r\n" }, 0, "+OK\r\n" },
        { "FUNCTION DELETE l", { "+OK\r\n", "!9\r\nERR nolib\r\n", "+OK\r\n" }, 0, "!9\r\nERR nolib\r\n" },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) check_merge(&cases[i], 3, BIG_MBUF);
    /* a library's code is not a key: larger than an mbuf, it is read in pieces and sent whole */
    check_merge(&(struct merge_case){ "FUNCTION LOAD REPLACE @5000", { lib, lib, lib }, 0, lib }, 3, SMALL_MBUF);
}

/* FUNCTION LIST, DUMP, STATS, HELP and CONFIG GET, HELP: the first live server's reply as it
 * came (its error too). */
static void test_first_server(void **state)
{
    (void)state;
    static const struct merge_case cases[] = {
        { "FUNCTION LIST", { "*0\r\n" }, 0, "*0\r\n" },
        { "FUNCTION DUMP", { "$4\r\n\xf5\xc3\x40\x01\r\n" }, 0, "$4\r\n\xf5\xc3\x40\x01\r\n" },
        { "FUNCTION STATS", { "*4\r\n$14\r\nrunning_script\r\n$-1\r\n$7\r\nengines\r\n*0\r\n" }, 0,
          "*4\r\n$14\r\nrunning_script\r\n$-1\r\n$7\r\nengines\r\n*0\r\n" },
        { "FUNCTION HELP", { "*1\r\n+FUNCTION <subcommand>\r\n" }, 0, "*1\r\n+FUNCTION <subcommand>\r\n" },
        { "CONFIG GET maxmemory", { "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n" }, 0,
          "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n" },
        { "CONFIG GET maxmemory", { "%1\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n" }, 0, /* RESP3 */
          "%1\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n" },
        { "CONFIG GET", { "-ERR wrong number of arguments for 'config|get' command\r\n" }, 0,
          "-ERR wrong number of arguments for 'config|get' command\r\n" },
        { "CONFIG HELP", { "*1\r\n+CONFIG <subcommand>\r\n" }, 0, "*1\r\n+CONFIG <subcommand>\r\n" },
    };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) check_merge(&cases[i], 1, BIG_MBUF);
    /* the first live one: server 0 ejected, the core passes 1 and 2 */
    static const uint32_t live[] = { 1, 2 };
    struct fan f;
    fan_open(&f, "CONFIG GET save", BIG_MBUF, live, 2);
    fan_check_copies(&f, live, 1);
    fan_close(&f);
}

/* The commands whose keys must be on one server: on two, no fragment, the proxy's error. */
static void test_one_server_keys(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        const char *name;
    } cases[] = {
        { "LCS a b", "lcs" }, { "RENAME a b", "rename" }, { "RENAMENX a b", "renamenx" },
        { "BITOP AND d a b", "bitop" }, { "LMPOP 2 a b LEFT", "lmpop" }, { "ZMPOP 2 a b MIN", "zmpop" },
        { "SINTERCARD 2 a b", "sintercard" }, { "ZINTERCARD 2 a b LIMIT 1", "zintercard" },
        { "FCALL f 2 a b x", "fcall" }, { "FCALL_RO f 3 a b c", "fcall_ro" },
        { "EVAL_RO s 2 a b", "eval_ro" }, { "EVALSHA_RO s 2 a b", "evalsha_ro" },
    };
    static const uint32_t two[] = { 0, 1, 1 };
    for (size_t i = 0; i < NC_ARRAY_LEN(cases); i++) {
        struct fan f;
        memset(&f, 0, sizeof(f));
        char wbuf[256];
        const char *argv[16];
        int argc = split_words(cases[i].line, wbuf, sizeof(wbuf), argv, 16);
        char in[512];
        size_t len = resp_build(in, sizeof(in), argc, argv);
        drv_open(&f.rq, &f.e, BIG_MBUF, &redis_proto, false, false);
        drv_feed(&f.rq, in, len, 1);
        assert_int_equal(f.rq.nout, 1);
        struct msg *req = f.rq.out[0];
        assert_true(req->nkeys >= 2);
        assert_int_equal(redis_proto.fragment(req, two, req->nkeys, &f.e.pp), 0);
        assert_int_equal(req->nfrags, 0);
        struct msg *rsp = msg_get(&f.e.pp);
        assert_int_equal(redis_proto.coalesce(NULL, req, rsp), 0);
        char want[160], *got = msg_text(rsp);
        snprintf(want, sizeof(want), "-ERR the keys of '%s' are on more than one server (hash tags keep them on one)\r\n",
                 cases[i].name);
        assert_string_equal(got, want);
        free(got);
        msg_put(&f.e.pp, rsp);
        drv_close(&f.rq);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_role),
        cmocka_unit_test(test_function_local),
        cmocka_unit_test(test_config_local),
        cmocka_unit_test(test_memory_local),
        cmocka_unit_test(test_function_every_server),
        cmocka_unit_test(test_first_server),
        cmocka_unit_test(test_one_server_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
