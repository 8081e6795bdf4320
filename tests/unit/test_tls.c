/*
 * test_tls.c - unit tests of TLS (notes/tls.md): the pool's tls_* and server_tls_* keys (values,
 * defaults, and every structural error with its file:line message), the config check of what
 * only OpenSSL finds (a key that does not match its certificate), and the TLS transport itself:
 * a handshake in non-blocking steps over a socketpair between a pool's two sides, bytes both ways
 * through writev/read, the orderly end, a server name that does not verify, and the sessions the
 * servers' side keeps per peer id and resumes.
 *
 * Data: $NC_TEST_DATA_DIR/tls (tests/unit/data/tls: a CA, a certificate and key, another key).
 *
 * Threads: the test's own.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf/conf.h"
#include "net/transport.h"

#ifndef NC_TOP_SRCDIR
#define NC_TOP_SRCDIR "."
#endif

#define MAX_ERRS 16

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

static const char *tls_dir(void)
{
    static char dir[1024];
    const char *d = getenv("NC_TEST_DATA_DIR");
    snprintf(dir, sizeof(dir), "%s/tls", d != NULL && d[0] != '\0' ? d : NC_TOP_SRCDIR "/tests/unit/data");
    return dir;
}

/* Loads text where every "@" stands for the fixtures' directory. */
static struct conf *load(const char *text, struct errs *e)
{
    char buf[4096];
    size_t used = 0;
    const char *dir = tls_dir();
    for (const char *c = text; *c != '\0' && used + strlen(dir) + 2 < sizeof(buf); c++) {
        if (*c == '@') used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s", dir);
        else buf[used++] = *c;
    }
    buf[used] = '\0';
    return conf_load_string(buf, used, "t.yml", errs_collect, e);
}

/* Loading text fails with exactly the lines of want (NULL-terminated). */
static void expect_errors(const char *text, const char *const *want)
{
    struct errs e = { .n = 0 };
    struct conf *c = load(text, &e);
    size_t n = 0;
    while (want[n] != NULL) n++;
    for (size_t i = 0; e.n != n && i < e.n && i < MAX_ERRS; i++) print_message("  got: %s\n", e.line[i]);
    assert_null(c);
    assert_int_equal(e.n, n);
    for (size_t i = 0; i < n; i++) assert_string_equal(e.line[i], want[i]);
    errs_free(&e);
}

#define POOL "p:\n  listen: 127.0.0.1:1\n  servers: [127.0.0.1:2:1]\n"
#define CERT "  tls_cert_file: @/server.crt\n  tls_key_file: @/server.key\n"

static void test_keys_good(void **state)
{
    (void)state;
    struct errs e = { .n = 0 };
    struct conf *c = load(POOL "  tls: true\n" CERT "  tls_ca_cert_file: @/ca.crt\n"
                               "  tls_auth_clients: optional\n  tls_protocols: \"TLSv1.2 tlsv1.3\"\n"
                               "  tls_ciphers: HIGH\n  tls_ciphersuites: TLS_AES_128_GCM_SHA256\n"
                               "  server_tls: yes\n  server_tls_server_name: redis.example\n"
                               "  server_tls_verify: false\n", &e);
    assert_int_equal(e.n, 0);
    assert_non_null(c);
    const struct conf_pool *p = &c->pools[0];
    assert_true(p->tls && p->server_tls && !p->server_tls_verify);
    assert_int_equal(p->tls_auth_clients, CONF_TLS_AUTH_OPTIONAL);
    assert_int_equal(p->tls_protocols, CONF_TLS_V1_2 | CONF_TLS_V1_3);
    assert_string_equal(p->tls_ciphers, "HIGH");
    assert_string_equal(p->server_tls_server_name, "redis.example");
    assert_null(p->server_tls_ca_cert_file);
    assert_int_equal(transport_conf_check(c, errs_collect, &e), 0);
    conf_unref(c);

    c = load(POOL, &e); /* defaults */
    assert_non_null(c);
    p = &c->pools[0];
    assert_true(!p->tls && !p->server_tls && p->server_tls_verify);
    assert_int_equal(p->tls_auth_clients, CONF_TLS_AUTH_NO);
    assert_int_equal(p->tls_protocols, 0);
    assert_null(p->tls_cert_file);
    conf_unref(c);

    c = load(POOL "  tls: false\n  tls_cert_file: /nonexistent\n", &e); /* unused: accepted */
    assert_non_null(c);
    conf_unref(c);
}

static void test_keys_bad(void **state)
{
    (void)state;
    expect_errors(POOL "  tls: true\n", (const char *const[]){
        "t.yml:4: pool 'p': key 'tls_cert_file': required when tls is true",
        "t.yml:4: pool 'p': key 'tls_key_file': required when tls is true", NULL });
    expect_errors("p:\n  listen: /tmp/nc-tls.sock\n  servers: [127.0.0.1:2:1]\n  tls: true\n" CERT,
                  (const char *const[]){
        "t.yml:4: pool 'p': key 'tls': TLS on a unix-socket listener ('/tmp/nc-tls.sock') is not supported",
        NULL });
    expect_errors(POOL "  tls_auth_clients: maybe\n  tls_protocols: TLSv1.2 SSLv3\n", (const char *const[]){
        "t.yml:4: pool 'p': key 'tls_auth_clients': expected no, yes or optional, got 'maybe'",
        "t.yml:5: pool 'p': key 'tls_protocols': unknown protocol 'SSLv3' (valid: TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)",
        NULL });
    expect_errors(POOL "  tls: true\n" CERT "  tls_auth_clients: yes\n", (const char *const[]){
        "t.yml:7: pool 'p': key 'tls_ca_cert_file': required when tls_auth_clients is yes", NULL });
}

/* A missing file and half a client certificate (the message names the fixtures' directory). */
static void test_keys_files(void **state)
{
    (void)state;
    struct errs e = { .n = 0 };
    struct conf *c = load(POOL "  tls: true\n  tls_cert_file: @/missing.crt\n  tls_key_file: @/server.key\n"
                               "  server_tls: true\n  server_tls_cert_file: @/server.crt\n", &e);
    assert_null(c);
    assert_int_equal(e.n, 2);
    char want[2048];
    snprintf(want, sizeof(want), "t.yml:5: pool 'p': key 'tls_cert_file': cannot read '%s/missing.crt': %s",
             tls_dir(), strerror(ENOENT));
    assert_string_equal(e.line[0], want);
    assert_string_equal(e.line[1], "t.yml:8: pool 'p': key 'server_tls_key_file': required when "
                                   "server_tls_cert_file is set");
    errs_free(&e);
}

/* What only OpenSSL finds: reported by the config check with the key to blame. */
static void test_check_openssl(void **state)
{
    (void)state;
    struct errs e = { .n = 0 };
    struct conf *c = load(POOL "  tls: true\n  tls_cert_file: @/server.crt\n  tls_key_file: @/other.key\n"
                               "  server_tls: true\n  server_tls_ca_cert_file: @/README\n", &e);
    assert_non_null(c);
    assert_int_equal(transport_conf_check(c, errs_collect, &e), 2);
    assert_int_equal(e.n, 2);
    assert_non_null(strstr(e.line[0], "t.yml:6: pool 'p': key 'tls_key_file': "));
    assert_non_null(strstr(e.line[0], "other.key' does not match tls_cert_file"));
    assert_non_null(strstr(e.line[1], "t.yml:8: pool 'p': key 'server_tls_ca_cert_file': cannot load"));
    errs_free(&e);
    conf_unref(c);
}

/* ---- the transport over a socketpair: a is the pool's listener side, b its servers' side ---- */

struct tls_pair {
    struct conf *conf;
    const struct transport_ctx *actx, *bctx;
    struct transport a, b;
};

/* The pool's two contexts (extra: more pool keys), no connection yet. */
static void pair_contexts(struct tls_pair *tp, const char *extra)
{
    char text[1024];
    struct errs e = { .n = 0 };
    snprintf(text, sizeof(text), POOL "  tls: true\n" CERT "  server_tls: true\n"
                                      "  server_tls_ca_cert_file: @/ca.crt\n%s", extra);
    tp->conf = load(text, &e);
    assert_non_null(tp->conf);
    tp->actx = transport_ctx_for_pool(&tp->conf->pools[0], TRANSPORT_CLIENTS, 1);
    tp->bctx = transport_ctx_for_pool(&tp->conf->pools[0], TRANSPORT_SERVERS, 1);
    assert_non_null(tp->actx);
    assert_non_null(tp->bctx);
    assert_string_equal(tp->actx->ops->name, "tls");
}

/* A connection between the two sides: b connects to "localhost" known as id (NULL: none). */
static void pair_connect(struct tls_pair *tp, const char *id)
{
    int fds[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
    const struct transport_peer peer = { .name = "localhost", .id = id };
    assert_int_equal(transport_open(&tp->a, tp->actx, fds[0], NULL), 0);
    assert_int_equal(transport_open(&tp->b, tp->bctx, fds[1], &peer), 0);
    assert_true(transport_has_handshake(&tp->a));
}

static void pair_open(struct tls_pair *tp, const char *extra)
{
    pair_contexts(tp, extra);
    pair_connect(tp, NULL);
}

static void pair_close(struct tls_pair *tp)
{
    transport_close(&tp->a);
    transport_close(&tp->b);
    transport_ctx_put(tp->actx);
    transport_ctx_put(tp->bctx);
    conf_unref(tp->conf);
}

/* Runs both handshakes in steps: 0 when both are done, else the first failure. */
static int pair_handshake(struct tls_pair *tp)
{
    int ra = -EAGAIN, rb = -EAGAIN;
    for (int round = 0; round < 100 && (ra != 0 || rb != 0); round++) {
        if (rb != 0) rb = tp->b.ops->handshake(&tp->b);
        if (rb != 0 && rb != -EAGAIN) return rb;
        if (ra != 0) ra = tp->a.ops->handshake(&tp->a);
        if (ra != 0 && ra != -EAGAIN) return ra;
    }
    return ra != 0 ? ra : rb;
}

/* Reads exactly len bytes from t (the peer wrote them already). */
static void read_exactly(struct transport *t, char *buf, size_t len)
{
    size_t got = 0;
    for (int i = 0; i < 100 && got < len; i++) {
        ssize_t n = transport_read(t, buf + got, len - got);
        if (n > 0) got += (size_t)n;
        else assert_int_equal(n, -EAGAIN);
    }
    assert_int_equal(got, len);
}

static void test_transport_round_trip(void **state)
{
    (void)state;
    struct tls_pair tp;
    pair_open(&tp, "");
    assert_int_equal(pair_handshake(&tp), 0);

    struct iovec iov[3] = { { "GET ", 4 }, { "key", 3 }, { "\r\n", 2 } };
    assert_int_equal(transport_writev(&tp.b, iov, 3), 9);
    char buf[64] = { 0 };
    read_exactly(&tp.a, buf, 9);
    assert_memory_equal(buf, "GET key\r\n", 9);
    assert_false(transport_pending(&tp.a));

    assert_int_equal(transport_write(&tp.a, "+OK\r\n", 5), 5);
    read_exactly(&tp.b, buf, 5);
    assert_memory_equal(buf, "+OK\r\n", 5);

    /* nothing to read yet: wait for the socket to be readable */
    assert_int_equal(transport_read(&tp.a, buf, sizeof(buf)), -EAGAIN);
    assert_int_equal(tp.a.want, TRANSPORT_WANT_READ);

    /* b's orderly end: a reads the end of the stream */
    transport_shutdown(&tp.b);
    assert_int_equal(transport_read(&tp.a, buf, sizeof(buf)), 0);
    pair_close(&tp);
}

static void test_transport_bad_name(void **state)
{
    (void)state;
    struct tls_pair tp;
    pair_open(&tp, "  server_tls_server_name: wrong.example\n");
    int rc = pair_handshake(&tp);
    assert_int_equal(rc, -EPROTO);
    const char *why = transport_strerror(&tp.b, EPROTO);
    print_message("  why: %s\n", why);
    assert_non_null(strstr(why, "certificate verify failed"));
    pair_close(&tp);
}

/*
 * One connection of the pair's contexts toward the peer known as id: the handshake, then a reply
 * that b reads (a TLS 1.3 session ticket arrives before it), then the end. Returns whether b's
 * handshake resumed a session (a's says the same).
 */
static bool pair_round(struct tls_pair *tp, const char *id)
{
    pair_connect(tp, id);
    assert_int_equal(pair_handshake(tp), 0);
    bool resumed = transport_resumed(&tp->b);
    assert_int_equal(transport_resumed(&tp->a), resumed);
    assert_int_equal(transport_write(&tp->a, "+OK\r\n", 5), 5);
    char buf[8];
    read_exactly(&tp->b, buf, 5);
    assert_memory_equal(buf, "+OK\r\n", 5);
    transport_close(&tp->a);
    transport_close(&tp->b);
    return resumed;
}

/* The servers' side keeps a session per peer id and resumes it with the same context; another id
 * has none; a failed handshake drops its id's session. */
static void test_transport_resumption(void **state)
{
    (void)state;
    struct tls_pair tp;
    pair_contexts(&tp, "");
    assert_false(pair_round(&tp, "127.0.0.1:6379")); /* a full handshake: its session is kept */
    assert_true(pair_round(&tp, "127.0.0.1:6379"));
    assert_true(pair_round(&tp, "127.0.0.1:6379"));  /* the resumed one's ticket replaced it */
    assert_false(pair_round(&tp, "127.0.0.1:6380")); /* another server: nothing kept for it */
    assert_false(pair_round(&tp, NULL));             /* no id: nothing offered */
    assert_true(pair_round(&tp, "127.0.0.1:6380"));

    /* a's side answers b's ClientHello with bytes that are no TLS: b's handshake fails */
    pair_connect(&tp, "127.0.0.1:6379");
    assert_int_equal(write(tp.a.fd, "-ERR no TLS here\r\n", 18), 18);
    int rc = -EAGAIN;
    for (int i = 0; i < 10 && rc == -EAGAIN; i++) rc = tp.b.ops->handshake(&tp.b);
    assert_int_equal(rc, -EPROTO);
    transport_close(&tp.a);
    transport_close(&tp.b);
    assert_false(pair_round(&tp, "127.0.0.1:6379")); /* its session was dropped */
    assert_true(pair_round(&tp, "127.0.0.1:6379"));
    assert_true(pair_round(&tp, "127.0.0.1:6380"));  /* another peer's is still there */
    transport_ctx_put(tp.actx);
    transport_ctx_put(tp.bctx);
    conf_unref(tp.conf);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as the daemon: a close_notify to a closed peer is an error, not a signal */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys_good),
        cmocka_unit_test(test_keys_bad),
        cmocka_unit_test(test_keys_files),
        cmocka_unit_test(test_check_openssl),
        cmocka_unit_test(test_transport_round_trip),
        cmocka_unit_test(test_transport_bad_name),
        cmocka_unit_test(test_transport_resumption),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
