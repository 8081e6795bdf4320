/*
 * test_redis_hello.c - unit tests of the connection handshake the proxy answers for redis
 * (redis_local.c, redis_info.c): HELLO's checks and what it changes in the session, AUTH with a
 * username, CLIENT's subcommands (CLIENT LIST's filter and lines), ECHO, SELECT, RESET, and
 * HELLO's and INFO's replies built from every server's INFO (fragments, HELLO's lowest version,
 * INFO's merged sections, failed fragments, errors), with the servers' replies parsed split at
 * every byte, RESP2 and RESP3. The client: local_client.c.
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
#include <unistd.h>
#include <cmocka.h>

#include "common/util.h"
#include "conf/conf.h"
#include "proto/proto.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"
#include "local_client.h"
#include "proto_drv.h"

#define SMALL_MBUF 512

/* CLIENT INFO: local() leaves it to the core (PROTO_CLIENT_LIST, no text), whose filter is the
 * asker alone; the core's reply is client_line (no subscription here) in list_reply. */
static void expect_info(struct client *c, const char *want)
{
    char t[512];
    assert_int_equal(client_say(c, "CLIENT INFO", t, sizeof(t)), PROTO_CLIENT_LIST);
    assert_string_equal(t, "");
    struct proto_list_filter f;
    struct msg *rsp = msg_get(&c->e.pp);
    assert_non_null(rsp);
    assert_int_equal(redis_proto.list_filter(c->d.out[c->next - 1], &f, rsp), 0);
    assert_int_equal(f.type, PROTO_LIST_SELF);
    struct proto_client_state st = { 0 };
    struct textbuf line = { 0 };
    redis_proto.client_line(&line, &c->s, &c->cp, &st);
    assert_int_equal(redis_proto.list_reply(c->s.variant, line.data, line.len, rsp), 0);
    textbuf_deinit(&line);
    size_t n = msg_copy_out(rsp, 0, t, sizeof(t) - 1);
    t[n] = '\0';
    msg_put(&c->e.pp, rsp);
    if (strcmp(t, want) != 0) print_error("CLIENT INFO -> '%s'\n", t);
    assert_string_equal(t, want);
}

/* ---------------------------------------------------------------- HELLO's checks */

static void test_hello_checks(void **state)
{
    (void)state;
    struct client c;
    client_open(&c, NULL, 0);
    assert_int_equal(c.s.variant, REDIS_RESP2);
    /* redis 7's errors, the session unchanged */
    expect(&c, "HELLO 4", "-NOPROTO unsupported protocol version\r\n");
    expect(&c, "HELLO 1", "-NOPROTO unsupported protocol version\r\n");
    expect(&c, "HELLO -3", "-NOPROTO unsupported protocol version\r\n");
    expect(&c, "HELLO x", "-ERR Protocol version is not an integer or out of range\r\n");
    expect(&c, "HELLO 03", "-ERR Protocol version is not an integer or out of range\r\n");
    expect(&c, "HELLO 3 FOO", "-ERR Syntax error in HELLO option 'FOO'\r\n");
    expect(&c, "HELLO 3 AUTH default", "-ERR Syntax error in HELLO option 'AUTH'\r\n");
    expect(&c, "HELLO 3 setname", "-ERR Syntax error in HELLO option 'setname'\r\n");
    expect(&c, "HELLO 3 SETNAME a\x01", "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
    expect(&c, "HELLO 3 AUTH bob pw", "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    assert_int_equal(c.s.variant, REDIS_RESP2);
    assert_null(c.s.ext);
    /* accepted: the reply is the fan-out's; the protocol and the name change now */
    expect_forward(&c, "HELLO");
    assert_int_equal(c.s.variant, REDIS_RESP2);
    expect_forward(&c, "hello 3 setname app auth default anything");
    assert_int_equal(c.s.variant, REDIS_RESP3);
    assert_string_equal(redis_sess_get(&c.s, REDIS_TEXT_NAME), "app");
    expect_forward(&c, "HELLO");
    assert_int_equal(c.s.variant, REDIS_RESP3);
    expect_forward(&c, "HELLO 2");
    assert_int_equal(c.s.variant, REDIS_RESP2);
    client_close(&c);
}

static void test_hello_auth(void **state)
{
    (void)state;
    static const char noauth[] =
        "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH "
        "<user> <pass> option can be used to authenticate the client and select the RESP protocol "
        "version at the same time\r\n";
    struct client c;
    client_open(&c, "secret", 0);
    assert_false(c.s.admitted);
    expect(&c, "HELLO", noauth);
    expect(&c, "HELLO 3", noauth);
    expect(&c, "HELLO 3 SETNAME x", noauth);
    assert_null(c.s.ext);
    assert_int_equal(c.s.variant, REDIS_RESP2);
    expect(&c, "HELLO 3 AUTH default wrong", "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    expect(&c, "HELLO 3 AUTH Default secret", "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    /* the version is checked first, as redis does */
    expect(&c, "HELLO 9 AUTH default secret", "-NOPROTO unsupported protocol version\r\n");
    assert_false(c.s.admitted);
    expect(&c, "GET k", "-NOAUTH Authentication required.\r\n");
    expect_forward(&c, "HELLO 3 AUTH default secret SETNAME n");
    assert_true(c.s.admitted);
    assert_int_equal(c.s.variant, REDIS_RESP3);
    expect_forward(&c, "GET k");
    client_close(&c);
}

/* ---------------------------------------------------------------- AUTH with a username */

static void test_auth_username(void **state)
{
    (void)state;
    static const char wrongpass[] = "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
    struct client c;
    client_open(&c, "secret", 0);
    expect(&c, "AUTH default wrong", wrongpass);
    expect(&c, "AUTH someone secret", wrongpass);
    expect(&c, "AUTH wrong", "-ERR invalid password\r\n"); /* twemproxy's text for the old form */
    expect(&c, "AUTH a b c", "-ERR syntax error\r\n");
    assert_false(c.s.admitted);
    expect(&c, "AUTH default secret", "+OK\r\n");
    assert_true(c.s.admitted);
    expect(&c, "AUTH default wrong", wrongpass);
    assert_false(c.s.admitted);
    expect(&c, "AUTH secret", "+OK\r\n");
    assert_true(c.s.admitted);
    client_close(&c);

    /* no password: the default user takes any (redis' nopass), nobody else */
    client_open(&c, NULL, 0);
    expect(&c, "AUTH default anything", "+OK\r\n");
    expect(&c, "AUTH bob anything", wrongpass);
    expect(&c, "AUTH pw", "-ERR Client sent AUTH, but no password is set\r\n");
    assert_true(c.s.admitted);
    client_close(&c);
}

/* ---------------------------------------------------------------- CLIENT, ECHO, SELECT, RESET */

static void test_client_subcommands(void **state)
{
    (void)state;
    struct client c;
    client_open(&c, NULL, 3);
    expect(&c, "CLIENT GETNAME", "$-1\r\n");
    expect(&c, "CLIENT SETNAME app-1", "+OK\r\n");
    expect(&c, "client getname", "$5\r\napp-1\r\n");
    expect(&c, "CLIENT SETNAME a\x7f", "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
    expect(&c, "CLIENT GETNAME", "$5\r\napp-1\r\n");
    expect(&c, "CLIENT ID", ":42\r\n");
    expect(&c, "CLIENT SETINFO LIB-NAME redis-py", "+OK\r\n");
    expect(&c, "CLIENT SETINFO lib-ver 8.1.0", "+OK\r\n");
    expect(&c, "CLIENT SETINFO color red", "-ERR Unrecognized option 'color'\r\n");
    expect(&c, "CLIENT SETINFO LIB-NAME a\x02", "-ERR lib-name cannot contain spaces, newlines or special characters.\r\n");
    expect(&c, "CLIENT NO-EVICT on", "+OK\r\n");
    expect(&c, "CLIENT NO-TOUCH ON", "+OK\r\n");
    expect(&c, "CLIENT NO-EVICT maybe", "-ERR syntax error\r\n");
    assert_int_equal(c.s.flags, REDIS_SESS_NO_EVICT | REDIS_SESS_NO_TOUCH);
    /* CLIENT INFO: one CLIENT LIST line (no socket here: the addresses are "?") */
    expect_info(&c, "$124\r\nid=42 addr=? laddr=? fd=-1 name=app-1 age=0 idle=0 flags=eT db=3 sub=0 psub=0 ssub=0 "
                    "resp=2 lib-name=redis-py lib-ver=8.1.0\n\r\n");
    expect(&c, "CLIENT NO-TOUCH off", "+OK\r\n");
    expect(&c, "CLIENT NO-EVICT off", "+OK\r\n");
    /* arities, as redis names them; the subcommands of other connections stay refused */
    expect(&c, "CLIENT SETNAME", "-ERR wrong number of arguments for 'client|setname' command\r\n");
    expect(&c, "CLIENT GETNAME x", "-ERR wrong number of arguments for 'client|getname' command\r\n");
    expect(&c, "CLIENT ID x", "-ERR wrong number of arguments for 'client|id' command\r\n");
    expect(&c, "CLIENT INFO x", "-ERR wrong number of arguments for 'client|info' command\r\n");
    expect(&c, "CLIENT SETINFO lib-name", "-ERR wrong number of arguments for 'client|setinfo' command\r\n");
    expect(&c, "CLIENT NO-EVICT", "-ERR wrong number of arguments for 'client|no-evict' command\r\n");
    expect(&c, "CLIENT KILL ID 1", "-ERR unsupported command 'client'\r\n");
    /* an empty name clears it */
    char t[64];
    static const char clear[] = "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$0\r\n\r\n";
    assert_int_equal(client_send(&c, clear, sizeof(clear) - 1, t, sizeof(t)), PROTO_ANSWERED);
    assert_string_equal(t, "+OK\r\n");
    expect(&c, "CLIENT GETNAME", "$-1\r\n");
    assert_null(c.s.ext->text[REDIS_TEXT_NAME]);
    client_close(&c);

    client_open(&c, NULL, 0);
    expect(&c, "CLIENT SETNAME n", "+OK\r\n");
    expect_forward(&c, "HELLO 3");
    expect(&c, "CLIENT GETNAME", "$1\r\nn\r\n");
    expect_info(&c, "=110\r\ntxt:id=42 addr=? laddr=? fd=-1 name=n age=0 idle=0 flags=N db=0 sub=0 psub=0 ssub=0 "
                    "resp=3 lib-name= lib-ver=\n\r\n");
    /* RESET: RESP2 again, no name, no flags; lib-name and lib-ver stay, as in redis */
    expect(&c, "CLIENT SETINFO lib-ver 1", "+OK\r\n");
    expect(&c, "CLIENT NO-EVICT on", "+OK\r\n");
    expect(&c, "RESET", "+RESET\r\n");
    assert_int_equal(c.s.variant, REDIS_RESP2);
    assert_int_equal(c.s.flags, 0);
    expect(&c, "CLIENT GETNAME", "$-1\r\n");
    expect_forward(&c, "HELLO 3");
    expect(&c, "CLIENT GETNAME", "_\r\n");
    assert_string_equal(redis_sess_get(&c.s, REDIS_TEXT_LIB_VER), "1");
    client_close(&c);
}

/* CLIENT LIST line: local() leaves it to the core (no reply text); list_filter() takes its
 * arguments as redis 7 does (errors checked byte for byte against redis-server 7.0 by
 * tests/integration/test_client_list.py), into a filter proto_list_match() applies. */
static int list_filter(struct client *c, const char *line, struct proto_list_filter *f, char *text, size_t size)
{
    char t[256];
    assert_int_equal(client_say(c, line, t, sizeof(t)), PROTO_CLIENT_LIST);
    assert_string_equal(t, "");
    struct msg *rsp = msg_get(&c->e.pp);
    assert_non_null(rsp);
    int rc = redis_proto.list_filter(c->d.out[c->next - 1], f, rsp);
    size_t n = msg_copy_out(rsp, 0, text, size - 1);
    text[n] = '\0';
    msg_put(&c->e.pp, rsp);
    return rc;
}

static void expect_list_error(struct client *c, const char *line, const char *want)
{
    struct proto_list_filter f;
    char t[256];
    assert_int_equal(list_filter(c, line, &f, t, sizeof(t)), PROTO_ANSWERED);
    assert_string_equal(t, want);
}

static void test_client_list(void **state)
{
    (void)state;
    struct client c;
    client_open(&c, NULL, 0);
    struct proto_list_filter f;
    char t[256];
    assert_int_equal(list_filter(&c, "CLIENT LIST", &f, t, sizeof(t)), 0);
    assert_string_equal(t, "");
    assert_true(proto_list_match(&f, 7, false) && proto_list_match(&f, 7, true));
    assert_int_equal(list_filter(&c, "client list type NORMAL", &f, t, sizeof(t)), 0);
    assert_true(proto_list_match(&f, 7, false) && !proto_list_match(&f, 7, true));
    assert_int_equal(list_filter(&c, "CLIENT LIST TYPE pubsub", &f, t, sizeof(t)), 0);
    assert_true(!proto_list_match(&f, 7, false) && proto_list_match(&f, 7, true));
    static const char *const none[] = { "master", "replica", "slave" };
    for (size_t i = 0; i < 3; i++) {
        char line[64];
        snprintf(line, sizeof(line), "CLIENT LIST TYPE %s", none[i]);
        assert_int_equal(list_filter(&c, line, &f, t, sizeof(t)), 0);
        assert_true(!proto_list_match(&f, 7, false) && !proto_list_match(&f, 7, true));
    }
    /* ID: the ids named (not positive ones name none); the type stays any */
    assert_int_equal(list_filter(&c, "CLIENT LIST ID 7 0 -1 9", &f, t, sizeof(t)), 0);
    assert_true(f.by_id);
    assert_int_equal(f.nids, 2);
    assert_true(proto_list_match(&f, 7, false) && proto_list_match(&f, 9, true) && !proto_list_match(&f, 8, false));
    struct proto_list_filter copy;
    assert_int_equal(proto_list_filter_copy(&copy, &f), 0);
    proto_list_filter_free(&f);
    assert_true(proto_list_match(&copy, 9, false) && !proto_list_match(&copy, 1, false));
    proto_list_filter_free(&copy);
    assert_int_equal(list_filter(&c, "CLIENT LIST ID 0", &f, t, sizeof(t)), 0);
    assert_true(f.by_id && !proto_list_match(&f, 0, false));
    proto_list_filter_free(&f);
    /* redis 7's errors */
    expect_list_error(&c, "CLIENT LIST TYPE", "-ERR syntax error\r\n");
    expect_list_error(&c, "CLIENT LIST TYPE normal x", "-ERR syntax error\r\n");
    expect_list_error(&c, "CLIENT LIST TYPE Foo", "-ERR Unknown client type 'Foo'\r\n");
    expect_list_error(&c, "CLIENT LIST ID", "-ERR syntax error\r\n");
    expect_list_error(&c, "CLIENT LIST ID 1 abc", "-ERR Invalid client ID\r\n");
    expect_list_error(&c, "CLIENT LIST ID 1 TYPE normal", "-ERR Invalid client ID\r\n");
    expect_list_error(&c, "CLIENT LIST foo", "-ERR syntax error\r\n");
    /* the line: CLIENT INFO's renderer, with P and the counts for a subscribed client */
    struct textbuf line = { 0 };
    struct proto_client_state st = { .subscribed = true, .subs = { 2, 1, 0 } };
    redis_proto.client_line(&line, &c.s, &c.cp, &st);
    assert_false(textbuf_failed(&line));
    assert_non_null(strstr(line.data, " flags=P db=0 sub=2 psub=1 ssub=0 resp=2 "));
    assert_int_equal(line.data[line.len - 1], '\n');
    textbuf_deinit(&line);
    struct msg *rsp = msg_get(&c.e.pp);
    assert_int_equal(redis_proto.list_reply(REDIS_RESP3, NULL, 0, rsp), 0);
    size_t n = msg_copy_out(rsp, 0, t, sizeof(t) - 1);
    t[n] = '\0';
    assert_string_equal(t, "=4\r\ntxt:\r\n");
    msg_put(&c.e.pp, rsp);
    client_close(&c);
}

static void test_echo_select_reset(void **state)
{
    (void)state;
    struct client c;
    client_open(&c, "pw", 2);
    expect(&c, "ECHO hi", "-NOAUTH Authentication required.\r\n");
    expect(&c, "SELECT 2", "-NOAUTH Authentication required.\r\n");
    expect(&c, "CLIENT ID", "-NOAUTH Authentication required.\r\n");
    expect(&c, "INFO", "-NOAUTH Authentication required.\r\n");
    expect(&c, "RESET", "+RESET\r\n"); /* allowed before AUTH, as in redis */
    expect(&c, "AUTH pw", "+OK\r\n");
    expect(&c, "ECHO hi", "$2\r\nhi\r\n");
    expect(&c, "ECHO \"\"", "$2\r\n\"\"\r\n");
    expect(&c, "SELECT 2", "+OK\r\n");
    expect(&c, "SELECT 0", "-ERR SELECT 0 is not possible: this pool serves db 2 only (redis_db)\r\n");
    expect(&c, "SELECT x", "-ERR value is not an integer or out of range\r\n");
    expect(&c, "SELECT 99999999999", "-ERR value is not an integer or out of range\r\n");
    expect_forward(&c, "INFO");
    expect_forward(&c, "INFO server keyspace");
    expect_forward(&c, "TIME");
    /* RESET logs the client out where a password is required */
    expect(&c, "RESET", "+RESET\r\n");
    assert_false(c.s.admitted);
    expect(&c, "GET k", "-NOAUTH Authentication required.\r\n");
    client_close(&c);
}

/* ---------------------------------------------------------------- HELLO and INFO from every server */

/* INFO texts as redis 7 sends them (abridged), and one of an older, loading server */
static const char info_a[] =
    "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\nprocess_id:11\r\ntcp_port:7001\r\n\r\n"
    "# Clients\r\nconnected_clients:5\r\n\r\n"
    "# Memory\r\nused_memory:1000\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n\r\n"
    "# Persistence\r\nloading:0\r\nasync_loading:0\r\n\r\n"
    "# Stats\r\ntotal_connections_received:10\r\ntotal_commands_processed:100\r\n"
    "instantaneous_input_kbps:0.50\r\nkeyspace_hits:7\r\nlatest_fork_usec:300\r\n\r\n"
    "# Replication\r\nrole:master\r\n\r\n"
    "# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=1000\r\ndb2:keys=1,expires=0,avg_ttl=0\r\n";
static const char info_b[] =
    "# Server\r\nredis_version:6.2.14\r\n\r\n"
    "# Memory\r\nmaxmemory_policy:allkeys-lru\r\n\r\n"
    "# Persistence\r\nloading:1\r\n\r\n"
    "# Stats\r\ntotal_connections_received:5\r\ntotal_commands_processed:1\r\nkeyspace_hits:1\r\n"
    "latest_fork_usec:1\r\n\r\n"
    "# Keyspace\r\ndb0:keys=7,expires=3,avg_ttl=3000\r\n";
static const char info_c[] = "# Server\r\nredis_version:7.2.4\r\n\r\n# Keyspace\r\n";

/* A bulk reply (RESP2) or a verbatim one (RESP3) of text. */
static char *info_reply(const char *text, bool resp3)
{
    size_t n = strlen(text);
    char *out = malloc(n + 64);
    assert_non_null(out);
    if (resp3) sprintf(out, "=%zu\r\ntxt:%s\r\n", n + 4, text);
    else sprintf(out, "$%zu\r\n%s\r\n", n, text);
    return out;
}

/* A HELLO or INFO request fanned out over nservers servers; the replies (NULL: that server did not
 * answer, the fragment failed) parsed split at cut (or byte by byte when cut == SIZE_MAX) into
 * small mbufs; the coalesced reply compared with want (NULL: coalesce fails with want_rc). */
struct fan {
    const char *line;
    uint32_t nservers;
    const char *replies[4];
    uint8_t variant;
    long clients;
    const char *want;
    uint8_t want_type;
    int want_rc;
};

static char *fan_run(const struct fan *f, size_t cut, int *rc_out, uint8_t *type_out)
{
    struct tenv e;
    struct drv rq, rs;
    char wbuf[512], in[1024];
    const char *argv[16];
    int argc = split_words(f->line, wbuf, sizeof(wbuf), argv, 16);
    size_t len = resp_build(in, sizeof(in), argc, argv);
    drv_open(&rq, &e, SMALL_MBUF, &redis_proto, false, false);
    drv_feed(&rq, in, len, 0);
    assert_int_equal(rq.nout, 1);
    struct msg *req = rq.out[0];
    assert_true(req->cmd_flags & CMD_F_FRAG_ALL);
    uint32_t where[4] = { 3, 1, 0, 2 };
    uint64_t nlive = e.mp.nlive;
    assert_int_equal(redis_proto.fragment(req, where, f->nservers, &e.pp), 0);
    assert_int_equal(req->nfrags, f->nservers);
    assert_null(req->key_frag);
    bool hello = redis_cmds[req->cmd].local == REDIS_LOCAL_HELLO;
    for (uint32_t i = 0; i < f->nservers; i++) {
        struct msg *fr = req->frags[i];
        char *t = msg_text(fr);
        assert_string_equal(t, hello ? "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n" : "*1\r\n$4\r\nINFO\r\n");
        free(t);
        assert_ptr_equal(fr->frag_owner, req);
        assert_int_equal(fr->server_idx, where[i]);
        assert_int_equal(fr->nkeys, 0);
    }
    assert_int_equal(e.mp.nlive, nlive); /* literals: no pool chunk taken */
    drv_init(&rs, &e, &redis_proto, true, false);
    for (uint32_t i = 0; i < f->nservers; i++) {
        if (f->replies[i] == NULL) {
            req->frags[i]->err = ECONNREFUSED;
            continue;
        }
        size_t n = strlen(f->replies[i]), before = rs.nout;
        if (cut == SIZE_MAX) drv_feed(&rs, f->replies[i], n, 1);
        else drv_feed2(&rs, f->replies[i], n, cut < n ? cut : n);
        assert_false(rs.failed);
        assert_int_equal(rs.nout, before + 1);
        req->frags[i]->peer = drv_take(&rs, before);
    }
    struct proto_session s;
    memset(&s, 0, sizeof(s));
    s.id = 7;
    s.variant = f->variant;
    struct conf_pool cp;
    memset(&cp, 0, sizeof(cp));
    cp.redis = true;
    cp.listen.port = 22121;
    struct proto_view v = { .sess = &s, .cp = &cp, .pool_clients = f->clients };
    struct msg *rsp = msg_get(&e.pp);
    assert_non_null(rsp);
    *rc_out = redis_proto.coalesce(&v, req, rsp);
    *type_out = rsp->rsp_type;
    char *text = msg_text(rsp);
    msg_put(&e.pp, rsp);
    for (uint32_t i = 0; i < req->nfrags; i++) {
        if (req->frags[i]->peer != NULL) msg_put(&e.pp, req->frags[i]->peer);
        msg_put(&e.pp, req->frags[i]);
    }
    drv_deinit(&rs);
    drv_deinit(&rq);
    tenv_deinit(&e);
    return text;
}

static void fan_check(const struct fan *f)
{
    size_t longest = 0;
    for (uint32_t i = 0; i < f->nservers; i++)
        if (f->replies[i] != NULL && strlen(f->replies[i]) > longest) longest = strlen(f->replies[i]);
    for (size_t cut = 0; cut <= longest + 1; cut++) {
        int rc;
        uint8_t type;
        char *text = fan_run(f, cut == longest + 1 ? SIZE_MAX : cut, &rc, &type);
        if (rc != f->want_rc || (f->want != NULL && strcmp(text, f->want) != 0))
            print_error("%s (cut %zu): rc %d, '%s'\n", f->line, cut, rc, text);
        assert_int_equal(rc, f->want_rc);
        if (f->want != NULL) {
            assert_string_equal(text, f->want);
            assert_int_equal(type, f->want_type);
        }
        free(text);
    }
}

static const char hello2[] = "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n6.2.14\r\n"
                             "$5\r\nproto\r\n:2\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
                             "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n";
static const char hello3[] = "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n"
                             "$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
                             "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n";

static void test_hello_reply(void **state)
{
    (void)state;
    char *a2 = info_reply(info_a, false), *b3 = info_reply(info_b, true), *c2 = info_reply(info_c, false);
    char *a3 = info_reply(info_a, true), *c3 = info_reply(info_c, true);
    /* the lowest version of those that answered, whatever their protocol */
    fan_check(&(struct fan){ .line = "HELLO 2", .nservers = 3, .replies = { a2, b3, c2 }, .variant = REDIS_RESP2,
                             .want = hello2, .want_type = RSP_ARRAY });
    fan_check(&(struct fan){ .line = "HELLO 3", .nservers = 3, .replies = { c3, a3, NULL }, .variant = REDIS_RESP3,
                             .want = hello3, .want_type = RSP_MAP });
    /* a server down, another refusing (its error is not the reply while one answered) */
    fan_check(&(struct fan){ .line = "HELLO", .nservers = 3, .replies = { NULL, "-NOAUTH Authentication required.\r\n", a3 },
                             .variant = REDIS_RESP3, .want = hello3, .want_type = RSP_MAP });
    /* every server refused: the first one's words; none answered: the core's error */
    fan_check(&(struct fan){ .line = "HELLO 3", .nservers = 2,
                             .replies = { "!21\r\nLOADING still loading\r\n", "-ERR no\r\n" },
                             .variant = REDIS_RESP3, .want = "!21\r\nLOADING still loading\r\n",
                             .want_type = RSP_BLOB_ERROR });
    fan_check(&(struct fan){ .line = "HELLO 3", .nservers = 2, .replies = { NULL, NULL }, .want_rc = -EINVAL });
    /* a reply that is no INFO text is left out */
    fan_check(&(struct fan){ .line = "HELLO 3", .nservers = 2, .replies = { ":1\r\n", a3 }, .variant = REDIS_RESP3,
                             .want = hello3, .want_type = RSP_MAP });
    free(a2);
    free(b3);
    free(c2);
    free(a3);
    free(c3);
}

/* The server section the proxy writes (its own pid and uptime: the test's process, never
 * started: 0). */
static char *server_section(const char *version)
{
    char *s = malloc(512);
    assert_non_null(s);
    sprintf(s, "# Server\r\nredis_version:%s\r\nredis_mode:standalone\r\nprocess_id:%ld\r\ntcp_port:22121\r\n"
               "uptime_in_seconds:0\r\nuptime_in_days:0\r\n", version, (long)getpid());
    return s;
}

static char *wrap(const char *text, bool resp3)
{
    return info_reply(text, resp3);
}

static void test_info_merge(void **state)
{
    (void)state;
    char *a2 = info_reply(info_a, false), *b3 = info_reply(info_b, true), *c2 = info_reply(info_c, false);
    char *srv = server_section("6.2.14");
    char all[4096];
    snprintf(all, sizeof(all),
             "%s\r\n# Clients\r\nconnected_clients:12\r\n\r\n# Memory\r\nmaxmemory_policy:allkeys-lru\r\n\r\n"
             "# Persistence\r\nloading:1\r\n\r\n"
             "# Stats\r\ntotal_connections_received:15\r\ntotal_commands_processed:101\r\nkeyspace_hits:8\r\n\r\n"
             "# Keyspace\r\ndb0:keys=10,expires=4,avg_ttl=2500\r\ndb2:keys=1,expires=0,avg_ttl=0\r\n", srv);
    char *want = wrap(all, false);
    fan_check(&(struct fan){ .line = "INFO", .nservers = 3, .replies = { a2, b3, c2 }, .clients = 12,
                             .want = want, .want_type = RSP_BULK });
    free(want);
    /* the same asked for by name (any case, any order, repeated), in RESP3 */
    want = wrap(all, true);
    fan_check(&(struct fan){ .line = "INFO KEYSPACE server Clients stats memory persistence server", .nservers = 3,
                             .replies = { c2, b3, a2 }, .clients = 12, .variant = REDIS_RESP3, .want = want,
                             .want_type = RSP_VERBATIM });
    fan_check(&(struct fan){ .line = "INFO everything", .nservers = 3, .replies = { c2, b3, a2 }, .clients = 12,
                             .variant = REDIS_RESP3, .want = want, .want_type = RSP_VERBATIM });
    free(want);
    /* one section; an unknown one adds nothing; only unknown ones: an empty text, as redis */
    fan_check(&(struct fan){ .line = "INFO persistence nosuch", .nservers = 2, .replies = { a2, NULL },
                             .want = "$26\r\n# Persistence\r\nloading:0\r\n\r\n", .want_type = RSP_BULK });
    fan_check(&(struct fan){ .line = "INFO nosuch", .nservers = 1, .replies = { b3 }, .want = "$0\r\n\r\n",
                             .want_type = RSP_BULK });
    fan_check(&(struct fan){ .line = "INFO nosuch", .nservers = 1, .replies = { b3 }, .variant = REDIS_RESP3,
                             .want = "=4\r\ntxt:\r\n", .want_type = RSP_VERBATIM });
    fan_check(&(struct fan){ .line = "INFO keyspace", .nservers = 1, .replies = { c2 },
                             .want = "$12\r\n# Keyspace\r\n\r\n", .want_type = RSP_BULK });
    /* maxmemory_policy: noeviction only when every server that says one says noeviction; a
     * server without it (c) changes nothing; none: the section's title alone */
    fan_check(&(struct fan){ .line = "INFO memory", .nservers = 2, .replies = { a2, c2 },
                             .want = "$39\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n\r\n",
                             .want_type = RSP_BULK });
    fan_check(&(struct fan){ .line = "INFO memory", .nservers = 3, .replies = { a2, a2, b3 },
                             .want = "$40\r\n# Memory\r\nmaxmemory_policy:allkeys-lru\r\n\r\n",
                             .want_type = RSP_BULK });
    fan_check(&(struct fan){ .line = "INFO memory", .nservers = 1, .replies = { c2 },
                             .want = "$10\r\n# Memory\r\n\r\n", .want_type = RSP_BULK });
    /* every server down: the core's error */
    fan_check(&(struct fan){ .line = "INFO", .nservers = 2, .replies = { NULL, NULL }, .want_rc = -EINVAL });
    free(srv);
    free(a2);
    free(b3);
    free(c2);
}

/* INFO texts that are not what redis writes do no harm: no section, odd lines, huge numbers, db
 * indexes out of range, a version that is no number. */
static void test_info_odd_texts(void **state)
{
    (void)state;
    static const char odd[] =
        "redis_version:1.0.0\r\nloading:1\r\n# Server\r\nredis_version:x\r\nredis_version\r\n:\r\n#\r\n"
        "# Stats\r\ntotal_commands_processed:9223372036854775807\r\nkeyspace_hits:-1\r\nkeyspace_misses:1x\r\n"
        "# Keyspace\r\ndb99999:keys=1,expires=0,avg_ttl=0\r\ndbx:keys=1\r\ndb1:expires=1\r\n"
        "db1:keys=5,expires=x\r\ndb3:avg_ttl=1,keys=2,expires=0,keys=9\r\n\nno newline at the end";
    char *o = info_reply(odd, false), *a = info_reply(info_a, false);
    char *srv = server_section("7.0.15");
    char all[2048];
    snprintf(all, sizeof(all),
             "%s\r\n# Clients\r\nconnected_clients:0\r\n\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n\r\n"
             "# Persistence\r\nloading:0\r\n\r\n"
             "# Stats\r\ntotal_connections_received:10\r\ntotal_commands_processed:9223372036854775807\r\n"
             "keyspace_hits:6\r\n\r\n"
             "# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=1000\r\ndb2:keys=1,expires=0,avg_ttl=0\r\n"
             "db3:keys=2,expires=0,avg_ttl=0\r\n", srv);
    char *want = wrap(all, false);
    /* total_commands_processed would overflow with a's 100: the sum keeps what it had */
    fan_check(&(struct fan){ .line = "INFO", .nservers = 2, .replies = { o, a }, .want = want, .want_type = RSP_BULK });
    free(want);
    free(srv);
    free(o);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_checks),
        cmocka_unit_test(test_hello_auth),
        cmocka_unit_test(test_auth_username),
        cmocka_unit_test(test_client_subcommands),
        cmocka_unit_test(test_client_list),
        cmocka_unit_test(test_echo_select_reset),
        cmocka_unit_test(test_hello_reply),
        cmocka_unit_test(test_info_merge),
        cmocka_unit_test(test_info_odd_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
