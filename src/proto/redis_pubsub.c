/*
 * redis_pubsub.c - redis's side of Pub/Sub subscriptions (proto.h struct proto_pubsub, used by
 * feature/pubsub.c): what a message read on a subscribed server connection is (a confirmation of
 * (p|s)(un)subscribe, a message, pmessage or smessage, an error), the confirmations the proxy writes
 * to its client (RESP2 arrays, RESP3 pushes), the (un)subscribe requests it sends to a server, and
 * the replies of RESP2's subscribed mode (PING's ["pong", msg], redis 7's refusal of the other
 * commands). The design: notes/pubsub.md.
 *
 * Threads: no state of its own; any worker.
 */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"

/* The names of the kinds, subscribe and unsubscribe, as redis spells them in its replies. */
static const char *const ps_confirm_names[PROTO_PS_KINDS][2] = {
    [PROTO_PS_CHANNEL] = { "subscribe", "unsubscribe" },
    [PROTO_PS_PATTERN] = { "psubscribe", "punsubscribe" },
    [PROTO_PS_SHARD] = { "ssubscribe", "sunsubscribe" },
};
static const char *const ps_request_names[PROTO_PS_KINDS][2] = {
    [PROTO_PS_CHANNEL] = { "SUBSCRIBE", "UNSUBSCRIBE" },
    [PROTO_PS_PATTERN] = { "PSUBSCRIBE", "PUNSUBSCRIBE" },
    [PROTO_PS_SHARD] = { "SSUBSCRIBE", "SUNSUBSCRIBE" },
};
static const char *const ps_message_names[PROTO_PS_KINDS] = {
    [PROTO_PS_CHANNEL] = "message",
    [PROTO_PS_PATTERN] = "pmessage",
    [PROTO_PS_SHARD] = "smessage",
};

/* The bulk string element e of m: its data's offset and length. False when it is not one. */
static bool ps_bulk(const struct msg *m, const struct msg_elem *e, uint64_t *start, uint64_t *len)
{
    uint8_t hdr[24];
    size_t n = msg_copy_out(m, e->start, hdr, NC_MIN(sizeof(hdr), (size_t)(e->end - e->start)));
    if (n < 4 || hdr[0] != '$') return false;
    long line = redis_line(hdr, n, n);
    int64_t v;
    if (line < 2 || !redis_parse_int(hdr + 1, (size_t)line - 1, &v) || v < 0) return false;
    *start = e->start + (uint64_t)line + 2;
    *len = (uint64_t)v;
    return *start + *len + 2 == e->end;
}

/* Whether the bulk element e of m is word. */
static bool ps_word(const struct msg *m, const struct msg_elem *e, const char *word)
{
    uint64_t start, len;
    char buf[16];
    size_t wl = strlen(word);
    if (!ps_bulk(m, e, &start, &len) || len != wl || wl > sizeof(buf)) return false;
    return msg_copy_out(m, start, buf, wl) == wl && memcmp(buf, word, wl) == 0;
}

static void redis_ps_classify(const struct msg *m, struct proto_ps_msg *out)
{
    memset(out, 0, sizeof(*out));
    if (m->rsp_type == RSP_ERROR || m->rsp_type == RSP_BLOB_ERROR) {
        out->what = PROTO_PS_ERROR;
        return;
    }
    if ((m->rsp_type != RSP_ARRAY && m->rsp_type != RSP_PUSH) || m->nelems < 3) return;
    for (uint8_t k = 0; k < PROTO_PS_KINDS; k++) {
        for (int u = 0; u < 2; u++) {
            if (m->nelems == 3 && ps_word(m, &m->elems[0], ps_confirm_names[k][u])) {
                out->what = PROTO_PS_CONFIRM;
                out->kind = k;
                return;
            }
        }
        /* message channel data; pmessage pattern channel data; smessage channel data */
        if (m->nelems == (k == PROTO_PS_PATTERN ? 4u : 3u) && ps_word(m, &m->elems[0], ps_message_names[k]) &&
            ps_bulk(m, &m->elems[1], &out->name_start, &out->name_len)) {
            out->what = PROTO_PS_MESSAGE;
            out->kind = k;
            return;
        }
    }
}

static void redis_ps_confirm(struct textbuf *t, uint8_t variant, uint8_t kind, bool unsub, const uint8_t *name,
                             size_t len, int64_t count)
{
    const char *what = ps_confirm_names[kind][unsub];
    textbuf_adds(t, variant == 1 ? ">3\r\n" : "*3\r\n");
    resp_add_bulk(t, what, strlen(what));
    if (name != NULL) resp_add_bulk(t, name, len);
    else resp_add_null(t, variant);
    textbuf_addf(t, ":%lld\r\n", (long long)count);
}

static void redis_ps_request(struct textbuf *t, uint8_t kind, bool unsub, uint32_t n)
{
    const char *what = ps_request_names[kind][unsub];
    textbuf_addf(t, "*%u\r\n", n + 1);
    resp_add_bulk(t, what, strlen(what));
}

static void redis_ps_arg(struct textbuf *t, const uint8_t *name, size_t len)
{
    resp_add_bulk(t, name, len);
}

/* redis 7 names a command with subcommands by both ("client|setname"): those of the table. */
static bool ps_has_subcommand(const struct msg *req)
{
    static const char *const parents[] = { "client", "command", "script", "xgroup", "xinfo" };
    for (size_t i = 0; i < NC_ARRAY_LEN(parents); i++) {
        size_t n = strlen(parents[i]);
        if (req->name_len == n && strncasecmp((const char *)req->name, parents[i], n) == 0) return true;
    }
    return false;
}

static size_t redis_ps_subscribed_reply(const struct msg *req, uint8_t variant, char *buf, size_t size)
{
    if (variant == 1) return 0; /* RESP3: any command, its replies between the pushes */
    if (req->cmd_flags & (CMD_F_PUBSUB | CMD_F_QUIT | CMD_F_RESET)) return 0;
    if (req->cmd_flags & CMD_F_LOCAL_PING) { /* ["pong", msg] (the message is PING's one "key") */
        struct textbuf t = { 0 };
        textbuf_adds(&t, "*2\r\n$4\r\npong\r\n");
        if (req->nkeys > 0) resp_add_bulk(&t, req->keys[0].ptr, req->keys[0].len);
        else textbuf_adds(&t, "$0\r\n\r\n");
        size_t n = t.failed || t.len > size ? 0 : t.len;
        if (n > 0) memcpy(buf, t.data, n);
        textbuf_deinit(&t);
        return n;
    }
    /* the command's name, with its subcommand (the first "key" of the proxy's own, else the
     * argument after the name) for those redis names so */
    char name[REDIS_CMD_NAME_MAX + 64];
    size_t nl = NC_MIN((size_t)req->name_len, (size_t)REDIS_CMD_NAME_MAX);
    memcpy(name, req->name, nl);
    if (ps_has_subcommand(req) && req->nkeys > 0 && (req->cmd_flags & CMD_F_LOCAL)) {
        size_t sl = NC_MIN((size_t)req->keys[0].len, (size_t)63);
        name[nl++] = '|';
        memcpy(name + nl, req->keys[0].ptr, sl);
        nl += sl;
    }
    return redis_reply_line(buf, size, "-ERR Can't execute '", (const uint8_t *)name, nl,
                            "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this "
                            "context\r\n",
                            true);
}

const struct proto_pubsub redis_pubsub = {
    .classify = redis_ps_classify,
    .confirm = redis_ps_confirm,
    .request = redis_ps_request,
    .arg = redis_ps_arg,
    .subscribed_reply = redis_ps_subscribed_reply,
    .message_type = { '*', '>' },
};
