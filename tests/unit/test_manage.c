/*
 * test_manage.c - unit tests of the manage port's commands and HTTP side, without sockets: help,
 * status (JSON, fresh), status workers, status latency, find_key/find_keys against the routing
 * table, the unknown pool error, usage and unknown-command errors, slowlog get/len/reset and its
 * line format, HTTP request lines and responses (/healthz too); who may run the restricted commands (trusted
 * networks, auth) and the password file.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "json_check.h"
#include "manage/manage_auth.h"
#include "manage/manage_cmd.h"
#include "manage/manage_http.h"
#include "manage_fixture.h"

/* runs a line and checks its reply: equal to want (when want is not NULL) */
static void expect(struct mfix *m, const char *line, enum manage_rc rc, const char *want)
{
    char *r = mfix_run(m, line, rc);
    if (want != NULL) assert_string_equal(r, want);
    free(r);
}

static void test_help(void **state)
{
    struct mfix *m = *state;
    char *s = mfix_run(m, "help", MANAGE_OK);
    assert_true(strncmp(s, "*****\r\n", 7) == 0);
    assert_non_null(strstr(s, "\r\n*****\r\n"));
    for (const char *w = "status\0status workers\0status latency\0GET /latency\0find_key\0find_keys\0"
                         "slowlog get\0slowlog len\0slowlog reset\0quit\0";
         *w; w += strlen(w) + 1)
        assert_non_null(strstr(s, w));
    free(s);
    s = mfix_run(m, "HELP", MANAGE_OK); /* commands are case-insensitive */
    assert_true(strncmp(s, "*****", 5) == 0);
    free(s);
}

static void test_status_is_fresh_json(void **state)
{
    struct mfix *m = *state;
    STATS_SERVER_ADD(sfix_sb(&m->f, 2, "alpha", 0), requests, 5); /* after the cached snapshot */
    char *s = mfix_run(m, "status", MANAGE_OK);
    size_t len = strlen(s);
    assert_true(len > 2 && strcmp(s + len - 2, "\r\n") == 0);
    struct jv *v = jv_parse(s, len);
    assert_non_null(v);
    assert_int_equal(jv_path(v, "alpha", "s1", "requests", NULL)->i, 5);
    jv_free(v);
    free(s);

    /* the cached snapshot (what a silent client gets) moves only on the -i tick */
    textbuf_reset(&m->out);
    manage_render_status(&m->ctx, &m->out, false);
    v = jv_parse(m->out.data, m->out.len);
    assert_int_equal(jv_path(v, "alpha", "s1", "requests", NULL)->i, 0);
    jv_free(v);
    manage_ctx_refresh(&m->ctx);
    textbuf_reset(&m->out);
    manage_render_status(&m->ctx, &m->out, false);
    v = jv_parse(m->out.data, m->out.len);
    assert_int_equal(jv_path(v, "alpha", "s1", "requests", NULL)->i, 5);
    jv_free(v);
}

static void test_status_workers(void **state)
{
    struct mfix *m = *state;
    for (size_t i = 0; i < 3; i++) STATS_SERVER_ADD(sfix_sb(&m->f, i, "alpha", 2), responses, (int64_t)(i + 1));
    char *s = mfix_run(m, "status   workers", MANAGE_OK);
    struct jv *v = jv_parse(s, strlen(s));
    assert_non_null(v);
    const struct jv *ws = jv_get(v, "workers");
    assert_int_equal(ws->type, JV_ARRAY);
    assert_int_equal(ws->n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(jv_get(ws->vals[i], "worker")->i, (int64_t)i);
        assert_int_equal(jv_path(ws->vals[i], "alpha", "s3", "responses", NULL)->i, (int64_t)(i + 1));
    }
    jv_free(v);
    free(s);
}

static void test_status_latency(void **state)
{
    struct mfix *m = *state;
    stats_hist_record(&sfix_sb(&m->f, 1, "alpha", 1)->server_latency, 700); /* fresh, not cached */
    char *s = mfix_run(m, "STATUS latency", MANAGE_OK);
    size_t len = strlen(s);
    assert_true(len > 2 && strcmp(s + len - 2, "\r\n") == 0);
    struct jv *v = jv_parse(s, len);
    assert_non_null(v);
    assert_string_equal(jv_get(v, "service")->s, "nutcrackers");
    const struct jv *c = jv_path(v, STATS_LATENCY_KEY, "alpha", STATS_LATENCY_SERVERS_KEY, "s2",
                                 "server_latency", "count", NULL);
    assert_non_null(c);
    assert_int_equal(c->i, 1);
    assert_non_null(jv_path(v, STATS_LATENCY_KEY, "alpha", "request_latency", "buckets", "+inf", NULL));
    jv_free(v);
    free(s);
    expect(m, "status latency now", MANAGE_ERROR, NULL);
}

static void test_find_key(void **state)
{
    struct mfix *m = *state;
    struct pool_shared *p = &m->f.rt->pools[sfix_pool(&m->f, "alpha")];
    char line[128], want[128];
    for (int i = 0; i < 50; i++) {
        char key[32];
        snprintf(key, sizeof(key), "key:%d", i);
        uint32_t s = pool_route(p, (const uint8_t *)key, strlen(key));
        snprintf(line, sizeof(line), "find_key alpha %s", key);
        snprintf(want, sizeof(want), "%s %s\r\n", p->cp->servers[s].pname, p->cp->servers[s].stats_name);
        char *r = mfix_run(m, line, MANAGE_OK);
        assert_string_equal(r, want);
        free(r);
    }
    char *r = mfix_run(m, "find_key alpha foo", MANAGE_OK);
    assert_true(strncmp(r, "127.0.0.1:63", 12) == 0); /* host:port:weight name */
    free(r);
    r = mfix_run(m, "find_keys alpha a b c", MANAGE_OK);
    int lines = 0;
    for (char *q = r; (q = strstr(q, "\r\n")) != NULL; q += 2) lines++;
    assert_int_equal(lines, 3);
    free(r);
    expect(m, "find_key nope foo", MANAGE_ERROR, "ERR: pool doesn't exist!\r\n");
    expect(m, "find_keys nope a b", MANAGE_ERROR, "ERR: pool doesn't exist!\r\n");
    expect(m, "find_key alpha", MANAGE_ERROR, "ERR: usage: find_key <pool> <key>\r\n");
    expect(m, "find_key alpha a b", MANAGE_ERROR, NULL);
}

static void test_errors(void **state)
{
    struct mfix *m = *state;
    expect(m, "flushall", MANAGE_ERROR, "ERR: unknown command, try 'help'\r\n");
    /* the garbage is not echoed */
    expect(m, "\x01\xff garbage \x7f", MANAGE_ERROR, "ERR: unknown command, try 'help'\r\n");
    char *r = mfix_run(m, "status nope", MANAGE_ERROR);
    assert_non_null(strstr(r, "'status'"));
    assert_non_null(strstr(r, "'status workers'"));
    assert_non_null(strstr(r, "'status latency'"));
    free(r);
    r = mfix_run(m, "slowlog", MANAGE_ERROR);
    assert_non_null(strstr(r, "'slowlog get [n]'"));
    free(r);
    expect(m, "   ", MANAGE_OK, "");
    expect(m, "quit", MANAGE_QUIT, NULL);
}

static void slow(struct stats_worker *b, const char *pool, const char *server, uint64_t start, uint64_t dur,
                 const char *cmd, const char *key)
{
    struct stats_slow_req r = {
        .duration_usec = dur, .pool = pool, .server = server,
        .cmd = (const uint8_t *)cmd, .cmd_len = strlen(cmd),
        .key = (const uint8_t *)key, .key_len = key ? strlen(key) : 0,
    };
    stats_slowlog_record(&b->slowlog, &r, start + dur);
}

static void test_slowlog(void **state)
{
    struct mfix *m = *state;
    const char *alpha = sfix_pb(&m->f, 0, "alpha")->name;
    const char *weird = sfix_pb(&m->f, 2, "we\"ird\\pool\tname \xc3\xa9")->name;
    expect(m, "slowlog len", MANAGE_OK, "0\r\n");
    expect(m, "slowlog get", MANAGE_OK, "END\r\n");
    slow(m->f.blocks[0], alpha, sfix_sb(&m->f, 0, "alpha", 1)->name, 1700000000000000, 250000, "get", "user:1");
    slow(m->f.blocks[2], weird, STATS_SLOW_MANY, 1700000001000000, 1500, "mget", "a\"b");
    slow(m->f.blocks[1], alpha, STATS_SLOW_NONE, 1700000000500000, 20000, "ping", NULL);
    expect(m, "slowlog len", MANAGE_OK, "3\r\n");
    expect(m, "slowlog get", MANAGE_OK,
        "1) id=1 worker=2 time=1700000001.000000 duration_us=1500 pool=\"we\\\"ird\\\\pool\\x09name \\xc3\\xa9\" "
        "server=\"*\" command=\"mget\" key=\"a\\\"b\" key_len=3\r\n"
        "2) id=1 worker=1 time=1700000000.500000 duration_us=20000 pool=\"alpha\" server=\"-\" command=\"ping\"\r\n"
        "3) id=1 worker=0 time=1700000000.000000 duration_us=250000 pool=\"alpha\" server=\"s2\" "
        "command=\"get\" key=\"user:1\" key_len=6\r\n"
        "END\r\n");
    char *r = mfix_run(m, "slowlog get 1", MANAGE_OK);
    assert_non_null(strstr(r, "1) id=1 worker=2 "));
    assert_null(strstr(r, "2) "));
    free(r);
    r = mfix_run(m, "SLOWLOG GET 100000", MANAGE_OK);
    assert_non_null(strstr(r, "3) "));
    free(r);
    expect(m, "slowlog get 0", MANAGE_ERROR, "ERR: usage: slowlog get [n]\r\n");
    expect(m, "slowlog get -1", MANAGE_ERROR, NULL);
    expect(m, "slowlog get x", MANAGE_ERROR, NULL);
    expect(m, "slowlog reset", MANAGE_OK, "OK\r\n");
    expect(m, "slowlog len", MANAGE_OK, "0\r\n");
}

static void test_http_request_line(void **state)
{
    (void)state;
    struct manage_http_req req;
#define LINE(s) s, strlen(s)
    assert_true(manage_http_request_line(LINE("GET /metrics HTTP/1.1"), &req));
    assert_string_equal(req.method, "GET");
    assert_string_equal(req.path, "/metrics");
    assert_true(manage_http_request_line(LINE("HEAD /?x=1&y HTTP/1.0"), &req));
    assert_string_equal(req.method, "HEAD");
    assert_string_equal(req.path, "/");
    assert_true(manage_http_request_line(LINE("POST / HTTP/1.1"), &req));
    assert_false(manage_http_request_line(LINE("GET / HTTP/2"), &req));
    assert_false(manage_http_request_line(LINE("GET /"), &req));
    assert_false(manage_http_request_line(LINE("get / HTTP/1.1"), &req));
    assert_false(manage_http_request_line(LINE("status"), &req));
    assert_false(manage_http_request_line(LINE(" / HTTP/1.1"), &req));
    assert_false(manage_http_request_line(LINE("GET  HTTP/1.1"), &req));
#undef LINE
}

/* status code, and the body after the headers (checks Content-Length) */
static int http(struct mfix *m, const char *line, const char **body)
{
    struct manage_http_req req;
    assert_true(manage_http_request_line(line, strlen(line), &req));
    textbuf_reset(&m->out);
    manage_http_respond(&m->ctx, &req, &m->out);
    textbuf_addc(&m->out, '\0');
    int status = 0;
    assert_int_equal(sscanf(m->out.data, "HTTP/1.1 %d ", &status), 1);
    const char *cl = strstr(m->out.data, "\r\nContent-Length: ");
    assert_non_null(cl);
    size_t length = strtoul(cl + 18, NULL, 10);
    const char *b = strstr(m->out.data, "\r\n\r\n");
    assert_non_null(b);
    b += 4;
    if (strncmp(line, "HEAD", 4) == 0) assert_int_equal(strlen(b), 0);
    else assert_int_equal(strlen(b), length);
    *body = b;
    return status;
}

static void test_http_responses(void **state)
{
    struct mfix *m = *state;
    const char *body;
    assert_int_equal(http(m, "GET / HTTP/1.1", &body), 200);
    assert_non_null(strstr(m->out.data, "Content-Type: application/json\r\n"));
    struct jv *v = jv_parse(body, strlen(body));
    assert_non_null(v);
    assert_string_equal(jv_get(v, "service")->s, "nutcrackers");
    jv_free(v);
    assert_int_equal(http(m, "GET /latency HTTP/1.1", &body), 200);
    assert_non_null(strstr(m->out.data, "Content-Type: application/json\r\n"));
    v = jv_parse(body, strlen(body));
    assert_non_null(v);
    assert_non_null(jv_path(v, STATS_LATENCY_KEY, "alpha", "request_latency", "count", NULL));
    jv_free(v);
    assert_int_equal(http(m, "HEAD /latency HTTP/1.1", &body), 200);
    assert_int_equal(http(m, "GET /metrics HTTP/1.1", &body), 200);
    assert_non_null(strstr(m->out.data, "Content-Type: text/plain; version=0.0.4"));
    assert_non_null(strstr(body, "# TYPE nutcrackers_server_requests_total counter\n"));
    assert_int_equal(http(m, "HEAD /metrics HTTP/1.1", &body), 200);
    assert_int_equal(http(m, "GET /nope HTTP/1.1", &body), 404);
    assert_string_equal(body, "Not Found\n");
    /* the answer to HEAD has no body, whatever its status (http() checks) */
    assert_int_equal(http(m, "HEAD /nope HTTP/1.1", &body), 404);
    struct manage_http_req head;
    assert_true(manage_http_request_line("HEAD / HTTP/1.1", 15, &head));
    textbuf_reset(&m->out);
    manage_http_error(&head, &m->out, 431, "Request Header Fields Too Large");
    textbuf_addc(&m->out, '\0');
    assert_non_null(strstr(m->out.data, "Content-Length: 32\r\n"));
    assert_int_equal(strlen(strstr(m->out.data, "\r\n\r\n")), 4);
    textbuf_reset(&m->out);
    manage_http_error(NULL, &m->out, 431, "Request Header Fields Too Large");
    textbuf_addc(&m->out, '\0');
    assert_string_equal(strstr(m->out.data, "\r\n\r\n"), "\r\n\r\nRequest Header Fields Too Large\n");
    /* a target with a byte that is not visible ASCII: 400, not the path before a NUL */
    static const char nul[] = "GET /metrics\0x HTTP/1.1";
    assert_true(manage_http_request_line(nul, sizeof(nul) - 1, &head));
    assert_true(head.bad);
    textbuf_reset(&m->out);
    manage_http_respond(&m->ctx, &head, &m->out);
    assert_true(m->out.len > 24 && strncmp(m->out.data, "HTTP/1.1 400 Bad Request\r\n", 26) == 0);
    assert_int_equal(http(m, "GET /\xc3\xa9 HTTP/1.1", &body), 400);
    assert_int_equal(http(m, "POST /\x7f HTTP/1.1", &body), 400);
    assert_int_equal(http(m, "GET /metrics?a=%00&b=~ HTTP/1.1", &body), 200);
    assert_int_equal(http(m, "POST / HTTP/1.1", &body), 405);
    assert_non_null(strstr(m->out.data, "Allow: GET, HEAD\r\n"));
    assert_int_equal(http(m, "DELETE /metrics HTTP/1.0", &body), 405);
}

/* GET /healthz: 200 while every pool has a live server; 503 naming a pool whose servers are all
 * ejected or all failing (server_failure_limit failures in a row, default 2). */
static void test_http_healthz(void **state)
{
    struct mfix *m = *state;
    const char *body;
    assert_int_equal(http(m, "GET /healthz HTTP/1.1", &body), 200);
    assert_non_null(strstr(m->out.data, "Content-Type: text/plain; charset=utf-8\r\n"));
    assert_string_equal(body, "ok: every pool (2) has a live server\n");
    struct pool_shared *alpha = &m->f.rt->pools[sfix_pool(&m->f, "alpha")];
    atomic_store(&alpha->health[0].ejected_until, 1);
    atomic_store(&alpha->health[1].failures, 2);
    assert_int_equal(http(m, "GET /healthz HTTP/1.1", &body), 200); /* s3 is live */
    atomic_store(&alpha->health[2].failures, 1);
    assert_int_equal(http(m, "GET /healthz HTTP/1.1", &body), 200); /* one failure is not enough */
    atomic_store(&alpha->health[2].failures, 5);
    assert_int_equal(http(m, "GET /healthz HTTP/1.1", &body), 503);
    assert_string_equal(body, "pool alpha: no live server (3 servers: 1 ejected, 2 failing)\n");
    assert_int_equal(http(m, "HEAD /healthz HTTP/1.1", &body), 503);
    atomic_store(&alpha->health[1].failures, 0); /* a good reply */
    assert_int_equal(http(m, "GET /healthz HTTP/1.1", &body), 200);
}

/* Restricted commands: refused to an untrusted session (the error says why), allowed after auth;
 * the open commands stay open. */
static void test_restricted(void **state)
{
    struct mfix *m = *state;
    struct manage_auth auth;
    mfix_untrusted(m, &auth);
    char *r = mfix_run(m, "slowlog get", MANAGE_ERROR);
    assert_string_equal(r, "ERR: 'slowlog get' is refused: it needs a trusted client (a unix socket, or an "
                           "address in --manage-trust: none), and no manage password is set "
                           "(--manage-auth-file)\r\n");
    free(r);
    expect(m, "auth secret", MANAGE_ERROR, "ERR: no manage password is set (--manage-auth-file)\r\n");
    memcpy(auth.pw.text, "secret", 7);
    auth.pw.len = 6;
    r = mfix_run(m, "reload", MANAGE_ERROR);
    assert_non_null(strstr(r, "ERR: 'reload' is refused: "));
    assert_non_null(strstr(r, " or 'auth <password>' first\r\n"));
    free(r);
    expect(m, "slowlog reset", MANAGE_ERROR, NULL);
    expect(m, "slowlog len", MANAGE_OK, "0\r\n");
    r = mfix_run(m, "status", MANAGE_OK);
    free(r);
    expect(m, "auth secre", MANAGE_ERROR, "ERR: invalid password\r\n");
    expect(m, "auth secrets", MANAGE_ERROR, "ERR: invalid password\r\n");
    expect(m, "auth", MANAGE_ERROR, "ERR: usage: auth <password>\r\n");
    expect(m, "slowlog get", MANAGE_ERROR, NULL);
    expect(m, "AUTH secret", MANAGE_OK, "OK\r\n");
    expect(m, "slowlog get", MANAGE_OK, "END\r\n");
    expect(m, "slowlog reset", MANAGE_OK, "OK\r\n");
    expect(m, "auth wrong", MANAGE_ERROR, "ERR: invalid password\r\n"); /* a wrong one undoes it */
    expect(m, "slowlog get", MANAGE_ERROR, NULL);
    r = mfix_run(m, "help", MANAGE_OK);
    assert_non_null(strstr(r, "auth <password>"));
    assert_non_null(strstr(r, "* the n (default 10)"));
    assert_non_null(strstr(r, "--manage-trust"));
    free(r);
    m->ctx.auth = NULL;
}

static struct sockaddr_storage addr_of(const char *ip)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *in = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) in->sin_family = AF_INET;
    else if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) in6->sin6_family = AF_INET6;
    else fail_msg("bad address %s", ip);
    return ss;
}

static bool trusted(const struct manage_auth *a, const char *ip)
{
    struct sockaddr_storage ss = addr_of(ip);
    return manage_auth_trusted(a, (struct sockaddr *)&ss, sizeof(ss));
}

static void test_trusted_networks(void **state)
{
    (void)state;
    struct manage_auth a;
    memset(&a, 0, sizeof(a));
    char err[256];
    assert_int_equal(manage_auth_set_trust(&a, MANAGE_TRUST_DEFAULT, err, sizeof(err)), 0);
    assert_true(trusted(&a, "127.0.0.1"));
    assert_true(trusted(&a, "127.3.4.5"));
    assert_true(trusted(&a, "::1"));
    assert_true(trusted(&a, "::ffff:127.0.0.1")); /* a dual-stack listener's IPv4 client */
    assert_false(trusted(&a, "128.0.0.1"));
    assert_false(trusted(&a, "10.0.0.1"));
    assert_false(trusted(&a, "::2"));
    assert_false(trusted(&a, "::ffff:10.0.0.1"));
    struct sockaddr un = { .sa_family = AF_UNIX };
    assert_true(manage_auth_trusted(&a, &un, sizeof(un)));
    assert_int_equal(manage_auth_set_trust(&a, "10.1.0.0/17,fd00::/8,192.168.1.7", err, sizeof(err)), 0);
    assert_true(trusted(&a, "10.1.127.255"));
    assert_false(trusted(&a, "10.1.128.0"));
    assert_true(trusted(&a, "fdab::1"));
    assert_false(trusted(&a, "fe00::1"));
    assert_true(trusted(&a, "192.168.1.7"));
    assert_false(trusted(&a, "192.168.1.8"));
    assert_false(trusted(&a, "127.0.0.1"));
    assert_int_equal(manage_auth_set_trust(&a, "none", err, sizeof(err)), 0);
    assert_false(trusted(&a, "127.0.0.1"));
    assert_true(manage_auth_trusted(&a, &un, sizeof(un)));
    assert_int_equal(manage_auth_set_trust(&a, "0.0.0.0/0", err, sizeof(err)), 0);
    assert_true(trusted(&a, "8.8.8.8"));
    assert_false(trusted(&a, "::1"));
    const char *bad[] = { "", "127.0.0.1,", "localhost", "10.0.0.0/33", "::1/129", "10.0.0.0/", "10.0.0.0/x",
                          "1.2.3.4/-1", "none,127.0.0.1" };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (manage_auth_set_trust(&a, bad[i], err, sizeof(err)) != -EINVAL) fail_msg("'%s' accepted", bad[i]);
        assert_true(err[0] != '\0');
    }
}

static void write_file(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
}

static void test_password_file(void **state)
{
    (void)state;
    struct manage_auth a;
    memset(&a, 0, sizeof(a));
    char err[256], path[] = "/tmp/nc-test-auth-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    bool loose = true;
    write_file(path, "s3cr3t\r\nignored\n", 16);
    assert_int_equal(manage_password_read(&a.pw, path, &loose, err, sizeof(err)), 0);
    assert_false(loose); /* mkstemp makes it 0600 */
    assert_true(manage_auth_check(&a, "s3cr3t", 6));
    assert_false(manage_auth_check(&a, "s3cr3", 5));
    assert_false(manage_auth_check(&a, "s3cr3tt", 7));
    write_file(path, "nonl", 4);
    assert_int_equal(manage_password_read(&a.pw, path, &loose, err, sizeof(err)), 0);
    assert_true(manage_auth_check(&a, "nonl", 4));
    chmod(path, 0644);
    assert_int_equal(manage_password_read(&a.pw, path, &loose, err, sizeof(err)), 0);
    assert_true(loose);
    /* an invalid or missing file keeps the password read before (a reload's rule) */
    write_file(path, "\nx\n", 3);
    assert_int_equal(manage_password_read(&a.pw, path, &loose, err, sizeof(err)), -EINVAL);
    assert_false(manage_auth_check(&a, "", 0));
    assert_true(manage_auth_check(&a, "nonl", 4));
    write_file(path, "two words\n", 10);
    assert_int_equal(manage_password_read(&a.pw, path, &loose, err, sizeof(err)), -EINVAL);
    assert_null(strstr(err, "two"));
    assert_true(manage_auth_check(&a, "nonl", 4));
    unlink(path);
    assert_int_equal(manage_password_read(&a.pw, path, &loose, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, path));
    assert_true(manage_auth_check(&a, "nonl", 4));
    manage_password_wipe(&a.pw);
    assert_false(manage_auth_check(&a, "nonl", 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_help, mfix_setup, mfix_teardown),
        cmocka_unit_test_setup_teardown(test_status_is_fresh_json, mfix_setup, mfix_teardown),
        cmocka_unit_test_setup_teardown(test_status_workers, mfix_setup, mfix_teardown),
        cmocka_unit_test_setup_teardown(test_status_latency, mfix_setup, mfix_teardown),
        cmocka_unit_test_setup_teardown(test_find_key, mfix_setup, mfix_teardown),
        cmocka_unit_test_setup_teardown(test_errors, mfix_setup, mfix_teardown),
        cmocka_unit_test_setup_teardown(test_slowlog, mfix_setup, mfix_teardown),
        cmocka_unit_test_setup_teardown(test_restricted, mfix_setup, mfix_teardown),
        cmocka_unit_test(test_trusted_networks),
        cmocka_unit_test(test_password_file),
        cmocka_unit_test(test_http_request_line),
        cmocka_unit_test_setup_teardown(test_http_responses, mfix_setup, mfix_teardown),
        cmocka_unit_test_setup_teardown(test_http_healthz, mfix_setup, mfix_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
