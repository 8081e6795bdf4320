/*
 * local_client.c - a redis client for the unit tests of proto_ops.local (see local_client.h).
 *
 * Threads: the test's only.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/clock.h"
#include "local_client.h"

#define LOCAL_CLIENT_MBUF 16384

void client_open(struct client *c, const char *auth, int db)
{
    memset(c, 0, sizeof(*c));
    drv_open(&c->d, &c->e, LOCAL_CLIENT_MBUF, &redis_proto, false, false);
    c->cp.redis = true;
    c->cp.redis_auth = (char *)auth;
    c->cp.redis_db = db;
    c->s.id = 42;
    c->s.fd = -1;
    c->s.t_start = nc_usec_now();
    redis_proto.session_init(&c->s, &c->cp, NULL);
}

void client_close(struct client *c)
{
    redis_proto.session_free(&c->s);
    drv_close(&c->d);
}

int client_send(struct client *c, const char *in, size_t len, char *text, size_t size)
{
    drv_feed(&c->d, in, len, 0);
    assert_false(c->d.failed);
    assert_int_equal(c->d.nout, c->next + 1);
    struct msg *rsp = msg_get(&c->e.pp);
    assert_non_null(rsp);
    int rc = redis_proto.local(&c->s, &c->cp, c->d.out[c->next++], rsp);
    size_t n = msg_copy_out(rsp, 0, text, size - 1);
    text[n] = '\0';
    msg_put(&c->e.pp, rsp);
    return rc;
}

int client_say(struct client *c, const char *line, char *text, size_t size)
{
    char wbuf[1024], in[2048];
    const char *argv[32];
    int argc = split_words(line, wbuf, sizeof(wbuf), argv, 32);
    size_t len = resp_build(in, sizeof(in), argc, argv);
    return client_send(c, in, len, text, size);
}

void expect(struct client *c, const char *line, const char *want)
{
    char t[1024];
    int rc = client_say(c, line, t, sizeof(t));
    if (strcmp(t, want) != 0) print_error("'%s' -> '%s'\n", line, t);
    assert_int_equal(rc, PROTO_ANSWERED);
    assert_string_equal(t, want);
}

void expect_forward(struct client *c, const char *line)
{
    char t[256];
    assert_int_equal(client_say(c, line, t, sizeof(t)), PROTO_FORWARD);
    assert_string_equal(t, "");
}
