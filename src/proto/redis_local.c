/*
 * redis_local.c - what the proxy does itself for redis (proto_ops.local, session_init and
 * server_setup, see proto.h):
 *   - a rejected request gets its error (redis_reject_reply); QUIT gets +OK and closes;
 *   - with redis_auth set, a client must AUTH first: anything else gets -NOAUTH; AUTH is checked
 *     against the pool's password, with redis' replies;
 *   - PING gets +PONG, or its message back as a bulk string;
 *   - every new server connection starts with AUTH (redis_auth) and SELECT (redis_db), their
 *     replies dropped by the core;
 *   - the texts of the proxy's own replies in a transaction (redis_txn_reply): redis's own where
 *     redis has one, and the proxy's errors (keys on two servers, no dedicated connection free).
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

/* An error line of the pieces part[0..n): the odd ones are names from the config, in which a
 * control byte (which would end or split the line) becomes a space. Cut to fit, it still ends in
 * CRLF. Returns its length. */
static size_t redis_txn_line(char *buf, size_t size, const char *const *part, size_t n)
{
    size_t len = 0;
    if (size < 2) return 0;
    for (size_t i = 0; i < n; i++) {
        for (const char *p = part[i] != NULL ? part[i] : ""; *p != '\0' && len < size - 2; p++) {
            unsigned char ch = (unsigned char)*p;
            buf[len++] = (i % 2 == 1 && (ch < 0x20 || ch == 0x7f)) ? ' ' : (char)ch;
        }
    }
    buf[len++] = '\r';
    buf[len++] = '\n';
    return len;
}

size_t redis_txn_reply(enum proto_txn_reply what, const char *a, const char *b, char *buf, size_t size)
{
    static const char *const fixed[] = {
        [PROTO_TXN_OK] = "+OK\r\n",
        [PROTO_TXN_QUEUED] = "+QUEUED\r\n",
        [PROTO_TXN_NESTED] = "-ERR MULTI calls can not be nested\r\n",
        [PROTO_TXN_EXEC_WITHOUT] = "-ERR EXEC without MULTI\r\n",
        [PROTO_TXN_DISCARD_WITHOUT] = "-ERR DISCARD without MULTI\r\n",
        [PROTO_TXN_WATCH_INSIDE] = "-ERR WATCH inside MULTI is not allowed\r\n",
        [PROTO_TXN_NOT_ALLOWED] = "-ERR Command not allowed inside a transaction\r\n",
        [PROTO_TXN_EXECABORT] = "-EXECABORT Transaction discarded because of previous errors.\r\n",
    };
    switch (what) {
    case PROTO_TXN_CROSS: {
        const char *part[] = { "-ERR keys of one transaction on two servers, '", a, "' and '", b,
                               "' (hash tags keep them on one)" };
        return redis_txn_line(buf, size, part, 5);
    }
    case PROTO_TXN_BUSY: {
        const char *part[] = { "-ERR no dedicated connection free to server '", a,
                               "' (dedicated_connections: ", b, ")" };
        return redis_txn_line(buf, size, part, 5);
    }
    case PROTO_TXN_TOO_LARGE: {
        const char *part[] = { "-ERR transaction too large (more than ", a, " bytes queued)" };
        return redis_txn_line(buf, size, part, 3);
    }
    default:
        break;
    }
    const char *text = (size_t)what < sizeof(fixed) / sizeof(fixed[0]) ? fixed[what] : NULL;
    if (text == NULL) text = "-ERR transaction error\r\n";
    size_t n = strlen(text);
    if (n > size) return 0;
    memcpy(buf, text, n);
    return n;
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
