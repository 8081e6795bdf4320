/*
 * redis_local.c - what the proxy does itself for redis (proto_ops.local, session_init,
 * session_free and server_setup, see proto.h; notes/resp3-and-handshake.md):
 *   - a rejected request gets its error (redis_reject_reply); QUIT gets +OK and closes;
 *   - with redis_auth set, a client must authenticate first (AUTH, or HELLO's AUTH): anything
 *     else gets -NOAUTH; AUTH [username] password is checked against the pool's password, with
 *     redis' replies (the only user is "default");
 *   - PING gets +PONG, or its message back as a bulk string; ECHO its message;
 *   - HELLO is checked here and changes the session (redis_info.c: its reply comes from every
 *     server's INFO); INFO is sent to every server the same way;
 *   - CLIENT SETNAME / GETNAME / ID / SETINFO / NO-EVICT / NO-TOUCH are answered from the
 *     session, a subcommand redis does not have (MAINT_NOTIFICATIONS) gets redis's error; SELECT
 *     of the pool's redis_db is +OK; RESET gives the session back its start;
 *   - CLUSTER, READONLY and READWRITE of cluster-mode clients (redis_cluster.c);
 *   - FUNCTION's and CONFIG's subcommands, ROLE, MEMORY without a key (redis_admin.c);
 *   - CLIENT LIST and CLIENT INFO: their arguments are checked here (redis_list_filter), and the
 *     core renders the asker's line (INFO) or gathers the lines of the pool's clients from every
 *     worker (LIST; feature/clientlist.c, notes/client-list.md), each by redis_client_line;
 *   - every new server connection starts with HELLO 3 (connections for RESP3 clients, with AUTH
 *     inside when redis_auth is set), AUTH (redis_auth) and SELECT (redis_db), their replies
 *     dropped by the core;
 *   - the texts of the proxy's own replies in a transaction (redis_txn_reply): redis's own where
 *     redis has one, and the proxy's errors (keys on two servers, no dedicated connection free).
 * Replies a client in RESP3 gets differ from RESP2 ones only where redis' do: nulls and the
 * verbatim text of CLIENT INFO and CLIENT LIST.
 *
 * Threads: no state of its own; a loop calls it on its clients' sessions and its msgs.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/secret.h"
#include "common/sock.h"
#include "conf/conf.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"

#define REDIS_LOCAL_REPLY_MAX 512

static bool redis_str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

void redis_session_init(struct proto_session *s, const struct conf_pool *cp, const struct conf_pool *old)
{
    if (old == NULL) { /* a new client (id, fd and t_start are the core's); after a reload it keeps them */
        s->variant = REDIS_RESP2;
        s->flags = 0;
        s->ext = NULL;
    }
    /* a client that moves to a pool with another password must AUTH again */
    s->authed = old != NULL && s->authed && redis_str_eq(old->redis_auth, cp->redis_auth);
    s->admitted = cp->redis_auth == NULL || s->authed;
}

void redis_session_free(struct proto_session *s)
{
    if (s->ext == NULL) return;
    for (int i = 0; i < REDIS_NTEXT; i++) free(s->ext->text[i]);
    free(s->ext);
    s->ext = NULL;
}

int redis_sess_set(struct proto_session *s, enum redis_sess_text which, const struct msg_key *k)
{
    char *copy = NULL;
    if (k != NULL && k->len > 0) {
        if ((copy = malloc((size_t)k->len + 1)) == NULL) return -ENOMEM;
        memcpy(copy, k->ptr, k->len);
        copy[k->len] = '\0';
    }
    if (s->ext == NULL) {
        if (copy == NULL) return 0;
        if ((s->ext = calloc(1, sizeof(*s->ext))) == NULL) {
            free(copy);
            return -ENOMEM;
        }
    }
    free(s->ext->text[which]);
    s->ext->text[which] = copy;
    return 0;
}

const char *redis_sess_get(const struct proto_session *s, enum redis_sess_text which)
{
    return s->ext != NULL && s->ext->text[which] != NULL ? s->ext->text[which] : "";
}

bool redis_valid_name(const struct msg_key *k)
{
    for (uint32_t i = 0; i < k->len; i++) {
        if (k->ptr[i] < '!' || k->ptr[i] > '~') return false;
    }
    return true;
}

bool redis_key_is(const struct msg_key *k, const char *word)
{
    size_t n = strlen(word);
    if (k->len != n) return false;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = k->ptr[i];
        if (c >= 'A' && c <= 'Z') c = (uint8_t)(c + ('a' - 'A'));
        if (c != (uint8_t)word[i]) return false;
    }
    return true;
}

int redis_answer(struct msg *rsp, const char *text, int verdict)
{
    return msg_append_copy(rsp, text, strlen(text)) < 0 ? -ENOMEM : verdict;
}

int redis_answer_named(struct msg *rsp, const char *pre, const struct msg_key *k, const char *post, bool lower)
{
    char buf[REDIS_LOCAL_REPLY_MAX];
    size_t n = redis_reply_line(buf, sizeof(buf), pre, k->ptr, k->len, post, lower);
    return msg_append_copy(rsp, buf, n) < 0 ? -ENOMEM : PROTO_ANSWERED;
}

int redis_answer_text(struct textbuf *t, struct msg *rsp)
{
    return proto_text_put(t, rsp) < 0 ? -ENOMEM : PROTO_ANSWERED;
}

/* Whether user/password are the credentials of the pool's only user, "default": its password
 * is redis_auth, and any one will do without (redis' "nopass" default user). */
static bool redis_creds_ok(const struct conf_pool *cp, const struct msg_key *user, const struct msg_key *pw)
{
    if (user != NULL && !(user->len == 7 && memcmp(user->ptr, "default", 7) == 0)) return false;
    if (cp->redis_auth == NULL) return true;
    return nc_secret_equal(pw->ptr, pw->len, cp->redis_auth, strlen(cp->redis_auth)); /* constant time */
}

static const char redis_wrongpass[] = "-WRONGPASS invalid username-password pair or user is disabled.\r\n";

/* AUTH password (twemproxy's replies), AUTH username password (redis 6's). */
static int redis_auth(struct proto_session *s, const struct conf_pool *cp, const struct msg *req,
                      struct msg *rsp)
{
    if (req->nkeys == 0)
        return redis_answer(rsp, "-ERR wrong number of arguments for 'auth' command\r\n", PROTO_ANSWERED);
    if (req->nkeys > 2) return redis_answer(rsp, "-ERR syntax error\r\n", PROTO_ANSWERED);
    const struct msg_key *user = req->nkeys == 2 ? &req->keys[0] : NULL;
    const struct msg_key *pw = &req->keys[req->nkeys - 1];
    if (cp->redis_auth == NULL && user == NULL)
        return redis_answer(rsp, "-ERR Client sent AUTH, but no password is set\r\n", PROTO_ANSWERED);
    bool ok = redis_creds_ok(cp, user, pw);
    if (cp->redis_auth != NULL) {
        s->authed = ok;
        s->admitted = ok;
    }
    if (ok) return redis_answer(rsp, "+OK\r\n", PROTO_ANSWERED);
    return redis_answer(rsp, user != NULL ? redis_wrongpass : "-ERR invalid password\r\n", PROTO_ANSWERED);
}

/* msg as a bulk string: PING's and ECHO's answer. */
static int redis_bulk_reply(const struct msg_key *k, struct msg *rsp)
{
    char head[32];
    int n = snprintf(head, sizeof(head), "$%u\r\n", k->len);
    if (msg_append_copy(rsp, head, (size_t)n) < 0 || msg_append_copy(rsp, k->ptr, k->len) < 0 ||
        msg_append_copy(rsp, "\r\n", 2) < 0)
        return -ENOMEM;
    return PROTO_ANSWERED;
}

/* PING is answered as redis does: +PONG, or the message echoed as a bulk string. */
static int redis_ping(const struct msg *req, struct msg *rsp)
{
    if (req->nkeys == 0) return redis_answer(rsp, "+PONG\r\n", PROTO_ANSWERED);
    if (req->nkeys > 1)
        return redis_answer(rsp, "-ERR wrong number of arguments for 'ping' command\r\n", PROTO_ANSWERED);
    return redis_bulk_reply(&req->keys[0], rsp);
}

static const char redis_name_error[] = "-ERR Client names cannot contain spaces, newlines or special characters.\r\n";

int redis_hello(struct proto_session *s, const struct conf_pool *cp, const struct msg *req, struct msg *rsp)
{
    uint8_t variant = s->variant;
    uint32_t i = 0;
    const struct msg_key *user = NULL, *pw = NULL, *name = NULL;
    if (req->nkeys >= 1) {
        int64_t ver;
        if (!redis_parse_int(req->keys[0].ptr, req->keys[0].len, &ver))
            return redis_answer(rsp, "-ERR Protocol version is not an integer or out of range\r\n", PROTO_ANSWERED);
        if (ver < 2 || ver > 3) return redis_answer(rsp, "-NOPROTO unsupported protocol version\r\n", PROTO_ANSWERED);
        variant = ver == 3 ? REDIS_RESP3 : REDIS_RESP2;
        i = 1;
    }
    for (; i < req->nkeys; i++) {
        uint32_t more = req->nkeys - 1 - i;
        if (redis_key_is(&req->keys[i], "auth") && more >= 2) {
            user = &req->keys[i + 1];
            pw = &req->keys[i + 2];
            i += 2;
        } else if (redis_key_is(&req->keys[i], "setname") && more >= 1) {
            name = &req->keys[++i];
            if (!redis_valid_name(name)) return redis_answer(rsp, redis_name_error, PROTO_ANSWERED);
        } else {
            return redis_answer_named(rsp, "-ERR Syntax error in HELLO option '", &req->keys[i], "'\r\n", false);
        }
    }
    if (user != NULL) {
        if (!redis_creds_ok(cp, user, pw)) return redis_answer(rsp, redis_wrongpass, PROTO_ANSWERED);
        s->authed = true;
        s->admitted = true;
    }
    if (!s->admitted)
        return redis_answer(rsp,
                            "-NOAUTH HELLO must be called with the client already authenticated, otherwise the "
                            "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
                            "the RESP protocol version at the same time\r\n",
                            PROTO_ANSWERED);
    if (name != NULL && redis_sess_set(s, REDIS_TEXT_NAME, name) < 0) return -ENOMEM;
    s->variant = variant;
    return PROTO_FORWARD; /* the reply is built from every server's INFO (redis_coalesce_all) */
}

/* SELECT: the pool's db is the only one its clients have. */
static int redis_select(const struct conf_pool *cp, const struct msg *req, struct msg *rsp)
{
    int64_t db;
    if (!redis_parse_int(req->keys[0].ptr, req->keys[0].len, &db) || db < INT32_MIN || db > INT32_MAX)
        return redis_answer(rsp, "-ERR value is not an integer or out of range\r\n", PROTO_ANSWERED);
    if (db == cp->redis_db) return redis_answer(rsp, "+OK\r\n", PROTO_ANSWERED);
    struct textbuf t = { 0 };
    textbuf_addf(&t, "-ERR SELECT %" PRId64 " is not possible: this pool serves db %d only (redis_db)\r\n",
                 db, cp->redis_db);
    return redis_answer_text(&t, rsp);
}

/* RESET, as redis: the protocol back to RESP2, no name, no NO-EVICT / NO-TOUCH, and not
 * authenticated any more where a password is required (the core ends the transaction). */
static int redis_reset(struct proto_session *s, const struct conf_pool *cp, struct msg *rsp)
{
    s->variant = REDIS_RESP2;
    s->flags = 0;
    redis_sess_set(s, REDIS_TEXT_NAME, NULL); /* freeing: cannot fail */
    s->authed = false;
    s->admitted = cp->redis_auth == NULL;
    return redis_answer(rsp, "+RESET\r\n", PROTO_ANSWERED);
}

/* One line of CLIENT LIST (CLIENT INFO's too) in redis's format, with the fields the proxy has. */
void redis_client_line(struct textbuf *t, const struct proto_session *s, const struct conf_pool *cp,
                       const struct proto_client_state *st)
{
    char addr[160], laddr[160], flags[4];
    size_t nf = 0;
    sock_addr_text(s->fd, true, addr, sizeof(addr));
    sock_addr_text(s->fd, false, laddr, sizeof(laddr));
    if (st->subscribed) flags[nf++] = 'P';
    if (s->flags & REDIS_SESS_NO_EVICT) flags[nf++] = 'e';
    if (s->flags & REDIS_SESS_NO_TOUCH) flags[nf++] = 'T';
    if (nf == 0) flags[nf++] = 'N';
    flags[nf] = '\0';
    uint64_t now = nc_usec_now();
    uint64_t age = now > s->t_start ? (now - s->t_start) / 1000000u : 0;
    textbuf_addf(t, "id=%" PRIu64 " addr=%s laddr=%s fd=%d name=%s age=%" PRIu64 " idle=0 flags=%s db=%d "
                 "sub=%" PRIu64 " psub=%" PRIu64 " ssub=%" PRIu64 " resp=%d lib-name=%s lib-ver=%s\n", s->id, addr,
                 laddr, s->fd, redis_sess_get(s, REDIS_TEXT_NAME), age, flags, cp->redis_db,
                 st->subs[PROTO_PS_CHANNEL], st->subs[PROTO_PS_PATTERN], st->subs[PROTO_PS_SHARD], s->variant + 2,
                 redis_sess_get(s, REDIS_TEXT_LIB_NAME), redis_sess_get(s, REDIS_TEXT_LIB_VER));
}

int redis_list_reply(uint8_t variant, const char *text, size_t len, struct msg *rsp)
{
    struct textbuf t = { 0 };
    resp_add_text(&t, variant, text != NULL ? text : "", len);
    return proto_text_put(&t, rsp);
}

/* CLIENT LIST's arguments, as redis 7 takes them: nothing, TYPE <type>, or ID <id> [<id> ...]
 * (an id that is not positive names no client); CLIENT INFO (its arity checked by local()):
 * the asker alone. */
int redis_list_filter(const struct msg *req, struct proto_list_filter *f, struct msg *rsp)
{
    static const struct {
        const char *name;
        uint8_t type;
    } types[] = {
        { "normal", PROTO_LIST_NORMAL }, { "pubsub", PROTO_LIST_PUBSUB }, { "master", PROTO_LIST_NONE },
        { "replica", PROTO_LIST_NONE },  { "slave", PROTO_LIST_NONE },
    };
    memset(f, 0, sizeof(*f));
    if (redis_key_is(&req->keys[0], "info")) {
        f->type = PROTO_LIST_SELF;
        return 0;
    }
    if (req->nkeys == 1) return 0;
    const struct msg_key *opt = &req->keys[1];
    if (req->nkeys == 3 && redis_key_is(opt, "type")) {
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
            if (redis_key_is(&req->keys[2], types[i].name)) {
                f->type = types[i].type;
                return 0;
            }
        }
        return redis_answer_named(rsp, "-ERR Unknown client type '", &req->keys[2], "'\r\n", false);
    }
    if (req->nkeys < 3 || !redis_key_is(opt, "id")) return redis_answer(rsp, "-ERR syntax error\r\n", PROTO_ANSWERED);
    f->by_id = true;
    if ((f->ids = malloc(sizeof(*f->ids) * (req->nkeys - 2))) == NULL) return -ENOMEM;
    for (uint32_t i = 2; i < req->nkeys; i++) {
        int64_t id;
        if (!redis_parse_int(req->keys[i].ptr, req->keys[i].len, &id)) {
            proto_list_filter_free(f);
            return redis_answer(rsp, "-ERR Invalid client ID\r\n", PROTO_ANSWERED);
        }
        if (id > 0) f->ids[f->nids++] = (uint64_t)id;
    }
    return 0;
}

/* CLIENT NO-EVICT / NO-TOUCH on|off */
static int redis_client_flag(struct proto_session *s, const struct msg_key *arg, uint8_t flag, struct msg *rsp)
{
    if (redis_key_is(arg, "on")) s->flags |= flag;
    else if (redis_key_is(arg, "off")) s->flags &= (uint8_t)~flag;
    else return redis_answer(rsp, "-ERR syntax error\r\n", PROTO_ANSWERED);
    return redis_answer(rsp, "+OK\r\n", PROTO_ANSWERED);
}

static int redis_client_setinfo(struct proto_session *s, const struct msg *req, struct msg *rsp)
{
    const struct msg_key *attr = &req->keys[1], *val = &req->keys[2];
    enum redis_sess_text which;
    if (redis_key_is(attr, "lib-name")) which = REDIS_TEXT_LIB_NAME;
    else if (redis_key_is(attr, "lib-ver")) which = REDIS_TEXT_LIB_VER;
    else return redis_answer_named(rsp, "-ERR Unrecognized option '", attr, "'\r\n", false);
    if (!redis_valid_name(val))
        return redis_answer_named(rsp, "-ERR ", attr, " cannot contain spaces, newlines or special characters.\r\n",
                                  true);
    return redis_sess_set(s, which, val) < 0 ? -ENOMEM : redis_answer(rsp, "+OK\r\n", PROTO_ANSWERED);
}

/* CLIENT subcommands redis has that concern the connections of a server (LIST, KILL, ...), which
 * the proxy's clients do not see: refused as before. */
static const char *const redis_client_refused[] = {
    "caching", "getredir", "help", "kill", "pause", "reply", "tracking", "trackinginfo", "unblock",
    "unpause",
};

#define REDIS_SUBCMD_SHOWN 128 /* redis quotes at most this much of an unknown subcommand */

/* A subcommand redis does not have either, such as CLIENT MAINT_NOTIFICATIONS (the maintenance
 * notifications of Redis Cloud / Enterprise, which node-redis 6 asks for at connect): redis's
 * own error, so that a client detects "not supported" exactly as it does with a redis-server. */
int redis_answer_unknown_sub(const struct msg_key *sub, const char *cmd, struct msg *rsp)
{
    char post[64];
    struct msg_key shown = *sub;
    if (shown.len > REDIS_SUBCMD_SHOWN) shown.len = REDIS_SUBCMD_SHOWN;
    snprintf(post, sizeof(post), "'. Try %s HELP.\r\n", cmd);
    return redis_answer_named(rsp, "-ERR unknown subcommand '", &shown, post, false);
}

/* The CLIENT subcommands a client's own connection has, answered from the session. */
static int redis_client(struct proto_session *s, const struct conf_pool *cp, const struct msg *req,
                        struct msg *rsp)
{
    static const struct {
        const char *name;
        uint32_t argc; /* CLIENT and the subcommand included */
    } subs[] = {
        { "setname", 3 }, { "getname", 2 }, { "id", 2 }, { "info", 2 },
        { "setinfo", 4 }, { "no-evict", 3 }, { "no-touch", 3 },
    };
    const struct msg_key *sub = &req->keys[0];
    uint32_t argc = req->nkeys + 1;
    if (redis_key_is(sub, "list")) return PROTO_CLIENT_LIST; /* its arguments: redis_list_filter */
    size_t i = 0;
    while (i < sizeof(subs) / sizeof(subs[0]) && !redis_key_is(sub, subs[i].name)) i++;
    if (i == sizeof(subs) / sizeof(subs[0])) {
        for (size_t j = 0; j < sizeof(redis_client_refused) / sizeof(redis_client_refused[0]); j++)
            if (redis_key_is(sub, redis_client_refused[j]))
                return redis_answer(rsp, "-ERR unsupported command 'client'\r\n", PROTO_ANSWERED);
        return redis_answer_unknown_sub(sub, "CLIENT", rsp);
    }
    if (argc != subs[i].argc)
        return redis_answer_named(rsp, "-ERR wrong number of arguments for 'client|", sub, "' command\r\n", true);
    switch (i) {
    case 0:
        if (!redis_valid_name(&req->keys[1])) return redis_answer(rsp, redis_name_error, PROTO_ANSWERED);
        return redis_sess_set(s, REDIS_TEXT_NAME, &req->keys[1]) < 0 ? -ENOMEM
                                                                      : redis_answer(rsp, "+OK\r\n", PROTO_ANSWERED);
    case 1: {
        struct textbuf t = { 0 };
        const char *name = redis_sess_get(s, REDIS_TEXT_NAME);
        if (*name == '\0') resp_add_null(&t, s->variant);
        else resp_add_bulk(&t, name, strlen(name));
        return redis_answer_text(&t, rsp);
    }
    case 2: {
        struct textbuf t = { 0 };
        textbuf_addf(&t, ":%" PRIu64 "\r\n", s->id);
        return redis_answer_text(&t, rsp);
    }
    case 3: return PROTO_CLIENT_LIST; /* the core renders the line: it knows the subscriptions */
    case 4: return redis_client_setinfo(s, req, rsp);
    case 5: return redis_client_flag(s, &req->keys[1], REDIS_SESS_NO_EVICT, rsp);
    default: return redis_client_flag(s, &req->keys[1], REDIS_SESS_NO_TOUCH, rsp);
    }
}

int redis_local(struct proto_session *s, const struct conf_pool *cp, const struct msg *req, struct msg *rsp)
{
    if (req->reject != REJECT_NONE) {
        char buf[REDIS_LOCAL_REPLY_MAX];
        size_t n = redis_reject_reply(req, buf, sizeof(buf));
        if (msg_append_copy(rsp, buf, n) < 0) return -ENOMEM;
        return req->quit ? PROTO_ANSWERED_CLOSE : PROTO_ANSWERED;
    }
    if (req->quit) return redis_answer(rsp, "+OK\r\n", PROTO_ANSWERED_CLOSE);
    if (req->cmd_flags & CMD_F_AUTH) return redis_auth(s, cp, req, rsp);
    uint8_t which = (req->cmd_flags & CMD_F_LOCAL) && req->cmd < redis_ncmds ? redis_cmds[req->cmd].local
                                                                              : REDIS_LOCAL_NONE;
    if (!s->admitted && which != REDIS_LOCAL_HELLO && which != REDIS_LOCAL_RESET)
        return redis_answer(rsp, "-NOAUTH Authentication required.\r\n", PROTO_ANSWERED);
    if (req->cmd_flags & CMD_F_LOCAL_PING) return redis_ping(req, rsp);
    switch (which) {
    case REDIS_LOCAL_CLIENT: return redis_client(s, cp, req, rsp);
    case REDIS_LOCAL_ECHO: return redis_bulk_reply(&req->keys[0], rsp);
    case REDIS_LOCAL_HELLO: return redis_hello(s, cp, req, rsp);
    case REDIS_LOCAL_RESET: return redis_reset(s, cp, rsp);
    case REDIS_LOCAL_SELECT: return redis_select(cp, req, rsp);
    case REDIS_LOCAL_SCAN:
    case REDIS_LOCAL_SCRIPT:
    case REDIS_LOCAL_FLUSH: return redis_fan_local(cp, req, rsp);
    case REDIS_LOCAL_FUNCTION:
    case REDIS_LOCAL_CONFIG:
    case REDIS_LOCAL_ROLE:
    case REDIS_LOCAL_MEMORY: return redis_admin_local(req, rsp);
    case REDIS_LOCAL_CLUSTER:
    case REDIS_LOCAL_READONLY: return redis_cluster_local(s, cp, req, rsp);
    default: return PROTO_FORWARD; /* INFO: every server's (redis_coalesce_all); the rest: routed */
    }
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
    case PROTO_TXN_BLOCK_CROSS: {
        const char *part[] = { "-ERR keys of one blocking command on two servers, '", a, "' and '", b,
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

/* One set-up request of its arguments, its reply to be dropped. */
static struct msg *redis_setup_msg(struct msg_pool *pool, const char *const *arg, int n)
{
    struct textbuf t = { 0 };
    textbuf_addf(&t, "*%d\r\n", n);
    for (int i = 0; i < n; i++) resp_add_bulk(&t, arg[i], strlen(arg[i]));
    struct msg *m = msg_get(pool);
    if (m == NULL) {
        textbuf_deinit(&t);
        return NULL;
    }
    if (proto_text_put(&t, m) < 0) {
        msg_put(pool, m);
        return NULL;
    }
    m->swallow = true;
    return m;
}

int redis_setup_check(const struct msg *req, const struct msg *rsp, bool replica)
{
    const char *want = replica ? "$5\r\nslave\r\n" : "$6\r\nmaster\r\n";
    char head[32];
    (void)req; /* ROLE is the only gate */
    size_t n = msg_copy_out(rsp, 0, head, sizeof(head) - 1);
    head[n] = '\0';
    const char *nl = strchr(head, '\n');
    bool ok = (head[0] == '*' || head[0] == '>') && nl != NULL && strncmp(nl + 1, want, strlen(want)) == 0;
    return ok ? 0 : -EREMCHG;
}

int redis_server_setup(const struct conf_pool *cp, uint8_t variant, bool replica, struct msg_pool *pool,
                       struct msg **out, uint32_t max)
{
    uint32_t n = 0;
    char db[16];
    if (variant == REDIS_RESP3 && n < max) { /* HELLO 3 [AUTH default <redis_auth>] */
        const char *arg[] = { "HELLO", "3", "AUTH", "default", cp->redis_auth };
        if ((out[n] = redis_setup_msg(pool, arg, cp->redis_auth != NULL ? 5 : 2)) == NULL) goto oom;
        n++;
    } else if (cp->redis_auth != NULL && n < max) {
        const char *arg[] = { "AUTH", cp->redis_auth };
        if ((out[n] = redis_setup_msg(pool, arg, 2)) == NULL) goto oom;
        n++;
    }
    if (cp->redis_db > 0 && n < max) {
        snprintf(db, sizeof(db), "%d", cp->redis_db);
        const char *arg[] = { "SELECT", db };
        if ((out[n] = redis_setup_msg(pool, arg, 2)) == NULL) goto oom;
        n++;
    }
    if (cp->nsentinels > 0 && n < max) { /* a master, as the sentinels said? (notes/sentinel.md) */
        const char *arg[] = { "ROLE" };
        if ((out[n] = redis_setup_msg(pool, arg, 1)) == NULL) goto oom;
        out[n++]->gate = true;
    }
    if (cp->redis_cluster && replica && n < max) { /* a cluster replica serves reads (notes/cluster.md) */
        const char *arg[] = { "READONLY" };
        if ((out[n] = redis_setup_msg(pool, arg, 1)) == NULL) goto oom;
        n++;
    }
    return (int)n;
oom:
    while (n > 0) msg_put(pool, out[--n]);
    return -ENOMEM;
}
