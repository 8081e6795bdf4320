/*
 * redis_local.c - what the proxy does itself for redis (proto_ops.local, session_init and
 * server_setup, see proto.h):
 *   - a rejected request gets its error (redis_reject_reply); QUIT gets +OK and closes;
 *   - with redis_auth set, a client must AUTH first: anything else gets -NOAUTH; AUTH is checked
 *     against the pool's password, with redis' replies;
 *   - PING gets +PONG, or its message back as a bulk string;
 *   - every new server connection starts with AUTH (redis_auth) and SELECT (redis_db), their
 *     replies dropped by the core.
 *
 * Threads: no state of its own; a loop calls it on its clients' sessions and its msgs.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conf/conf.h"
#include "proto/redis.h"

#define REDIS_LOCAL_REPLY_MAX 512

static bool redis_str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

void redis_session_init(struct proto_session *s, const struct conf_pool *cp, const struct conf_pool *old)
{
    /* a client that moves to a pool with another password must AUTH again */
    s->authed = old != NULL && s->authed && redis_str_eq(old->redis_auth, cp->redis_auth);
    s->admitted = cp->redis_auth == NULL || s->authed;
}

static int redis_answer(struct msg *rsp, const char *text, int verdict)
{
    return msg_append_literal(rsp, text, strlen(text)) < 0 ? -ENOMEM : verdict;
}

static int redis_auth(struct proto_session *s, const struct conf_pool *cp, const struct msg *req,
                      struct msg *rsp)
{
    if (cp->redis_auth == NULL)
        return redis_answer(rsp, "-ERR Client sent AUTH, but no password is set\r\n", PROTO_ANSWERED);
    if (req->nkeys == 0)
        return redis_answer(rsp, "-ERR wrong number of arguments for 'auth' command\r\n", PROTO_ANSWERED);
    const struct msg_key *pw = &req->keys[req->nkeys - 1];
    size_t len = strlen(cp->redis_auth);
    s->authed = pw->len == len && memcmp(pw->ptr, cp->redis_auth, len) == 0;
    s->admitted = s->authed;
    return redis_answer(rsp, s->authed ? "+OK\r\n" : "-ERR invalid password\r\n", PROTO_ANSWERED);
}

/* PING is answered as redis does: +PONG, or the message echoed as a bulk string. */
static int redis_ping(const struct msg *req, struct msg *rsp)
{
    if (req->nkeys == 0) return redis_answer(rsp, "+PONG\r\n", PROTO_ANSWERED);
    if (req->nkeys > 1)
        return redis_answer(rsp, "-ERR wrong number of arguments for 'ping' command\r\n", PROTO_ANSWERED);
    char head[32];
    const struct msg_key *k = &req->keys[0];
    int n = snprintf(head, sizeof(head), "$%u\r\n", k->len);
    if (msg_append_literal(rsp, head, (size_t)n) < 0 || msg_append_literal(rsp, k->ptr, k->len) < 0 ||
        msg_append_literal(rsp, "\r\n", 2) < 0)
        return -ENOMEM;
    return PROTO_ANSWERED;
}

int redis_local(struct proto_session *s, const struct conf_pool *cp, const struct msg *req, struct msg *rsp)
{
    if (req->reject != REJECT_NONE) {
        char buf[REDIS_LOCAL_REPLY_MAX];
        size_t n = redis_reject_reply(req, buf, sizeof(buf));
        if (msg_append_literal(rsp, buf, n) < 0) return -ENOMEM;
        return req->quit ? PROTO_ANSWERED_CLOSE : PROTO_ANSWERED;
    }
    if (req->quit) return redis_answer(rsp, "+OK\r\n", PROTO_ANSWERED_CLOSE);
    if (req->cmd_flags & CMD_F_AUTH) return redis_auth(s, cp, req, rsp);
    if (!s->admitted) return redis_answer(rsp, "-NOAUTH Authentication required.\r\n", PROTO_ANSWERED);
    if (req->cmd_flags & CMD_F_LOCAL_PING) return redis_ping(req, rsp);
    return PROTO_FORWARD;
}

/* One set-up request: "*2 <verb> <arg>", its reply to be dropped. */
static struct msg *redis_setup_msg(struct msg_pool *pool, const char *verb, const char *arg)
{
    char buf[REDIS_LOCAL_REPLY_MAX];
    int n = snprintf(buf, sizeof(buf), "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(verb), verb,
                     strlen(arg), arg);
    if (n < 0 || (size_t)n >= sizeof(buf)) return NULL;
    struct msg *m = msg_get(pool);
    if (m == NULL) return NULL;
    if (msg_append_literal(m, buf, (size_t)n) < 0) {
        msg_put(pool, m);
        return NULL;
    }
    m->swallow = true;
    return m;
}

int redis_server_setup(const struct conf_pool *cp, struct msg_pool *pool, struct msg **out, uint32_t max)
{
    uint32_t n = 0;
    char db[16];
    if (cp->redis_auth != NULL && n < max) {
        if ((out[n] = redis_setup_msg(pool, "AUTH", cp->redis_auth)) == NULL) goto oom;
        n++;
    }
    if (cp->redis_db > 0 && n < max) {
        snprintf(db, sizeof(db), "%d", cp->redis_db);
        if ((out[n] = redis_setup_msg(pool, "SELECT", db)) == NULL) goto oom;
        n++;
    }
    return (int)n;
oom:
    while (n > 0) msg_put(pool, out[--n]);
    return -ENOMEM;
}
