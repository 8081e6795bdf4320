/*
 * redis_fanout.c - the redis commands that concern every server of a pool (CMD_F_FRAG_ALL, the
 * command table's `fan`), and the keys of XREAD on several servers (CMD_F_FRAG_ONE);
 * notes/fan-out.md has the decisions.
 *
 * - KEYS, DBSIZE, RANDOMKEY, SCRIPT LOAD/EXISTS/FLUSH, FLUSHDB, FLUSHALL: the client's request as
 *   it came, to every server; the reply: KEYS the arrays joined, DBSIZE the sum, RANDOMKEY one of
 *   the keys the servers sent (a server with no key sends a null: another server's key is taken),
 *   SCRIPT LOAD the sha (the same from each), SCRIPT EXISTS 1 only where every server has the
 *   script, SCRIPT FLUSH / FLUSHDB / FLUSHALL +OK when every server said +OK. A server's error
 *   is the reply (the first in server order), as for the multi-key commands.
 * - SCAN: one server at a time, in the config's order; the client's cursor names the server (its
 *   bits 48..62) and that server's cursor (bits 0..47). The fragment is the client's SCAN with
 *   the server's cursor; the reply's cursor is the next one: the same server while it has more,
 *   else the next server's start, else 0. An ejected server is passed over (its keys are not
 *   served while it is out).
 * - PUBSUB: to every server. CHANNELS and SHARDCHANNELS: the arrays joined (a channel lives on the
 *   server its name hashes to, so no name comes twice through the proxy); NUMSUB and SHARDNUMSUB:
 *   each channel's counts summed (the other servers say 0); NUMPAT: the largest count (a pattern
 *   subscribed through the proxy is on every server); HELP: the first server's.
 * - FUNCTION and CONFIG (redis_admin.c decides): to every server, or to the first live one only.
 * - local()'s part: SCAN's cursor check (redis' "-ERR invalid cursor"), SCRIPT's subcommands,
 *   FLUSHDB/FLUSHALL refused unless the pool's redis_flush allows them.
 *
 * Threads: no state; the worker that owns the request, its fragments and their replies.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"

#define SCAN_SERVER_SHIFT 48
#define SCAN_CURSOR_MASK ((UINT64_C(1) << SCAN_SERVER_SHIFT) - 1)
#define SCAN_SERVERS_MAX (UINT64_C(1) << 15) /* the cursor stays below 2^63 (signed parsers) */

/* A cursor: decimal digits only, fitting 64 bits (redis takes an unsigned 64-bit number). */
static bool fan_parse_u64(const uint8_t *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 20) return false;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(p[i] - '0'), &v))
            return false;
    }
    *out = v;
    return true;
}

/* "-ERR <pre><WORD><post>": word of the request in capitals (cut to fit, control bytes blanked). */
static int fan_refuse(struct msg *rsp, const char *pre, const uint8_t *word, size_t n, const char *post)
{
    char w[32];
    size_t len = redis_reply_line(w, sizeof(w) - 1, "", word, n, "", false);
    for (size_t i = 0; i < len; i++)
        if (w[i] >= 'a' && w[i] <= 'z') w[i] = (char)(w[i] - ('a' - 'A'));
    w[len] = '\0';
    struct textbuf t = { 0 };
    textbuf_addf(&t, "-ERR %s%s%s\r\n", pre, w, post);
    return proto_text_put(&t, rsp) < 0 ? -ENOMEM : PROTO_ANSWERED;
}

static int fan_answer(struct msg *rsp, const char *text)
{
    return msg_append_copy(rsp, text, strlen(text)) < 0 ? -ENOMEM : PROTO_ANSWERED;
}

int redis_fan_local(const struct conf_pool *cp, const struct msg *req, struct msg *rsp)
{
    uint8_t which = redis_cmds[req->cmd].local;
    if (which == REDIS_LOCAL_SCAN) {
        uint64_t cur;
        const struct msg_key *k = &req->keys[0];
        if (!fan_parse_u64(k->ptr, k->len, &cur) || (cur >> SCAN_SERVER_SHIFT) >= cp->nservers ||
            (cur >> SCAN_SERVER_SHIFT) >= SCAN_SERVERS_MAX)
            return fan_answer(rsp, "-ERR invalid cursor\r\n");
        return PROTO_FORWARD;
    }
    if (which == REDIS_LOCAL_SCRIPT) {
        const struct msg_key *k = &req->keys[0];
        if (redis_key_is(k, "load") || redis_key_is(k, "exists") || redis_key_is(k, "flush"))
            return PROTO_FORWARD;
        return fan_refuse(rsp, "SCRIPT ", k->ptr, k->len,
                          " is not supported by the proxy (SCRIPT LOAD, EXISTS and FLUSH go to every server)");
    }
    /* REDIS_LOCAL_FLUSH */
    if (cp->redis_flush) return PROTO_FORWARD;
    return fan_refuse(rsp, "", req->name, req->name_len,
                      " is disabled on this pool (set redis_flush: true to send it to every server)");
}

/* SCAN's one fragment: the first live server from the cursor's (its cursor, or 0 when the
 * cursor's server is out), none past the last. */
static int fan_fragment_scan(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool,
                             struct msg **frags)
{
    uint64_t cur = 0;
    if (!fan_parse_u64(req->keys[0].ptr, req->keys[0].len, &cur)) return -EINVAL; /* local() checked */
    uint64_t s = cur >> SCAN_SERVER_SHIFT, sc = cur & SCAN_CURSOR_MASK;
    uint32_t i = 0;
    while (i < n && where[i] < s) i++;
    if (i == n) return 0;
    if (where[i] != s) sc = 0;
    struct msg *fr = proto_frag_new(req, where[i], pool);
    if (fr == NULL) return -ENOMEM;
    char num[24];
    int len = snprintf(num, sizeof(num), "%" PRIu64, sc);
    int rc = redis_frag_header(fr, "scan", req->nargs);
    if (rc == 0) {
        struct textbuf t = { 0 };
        resp_add_bulk(&t, num, (size_t)len);
        rc = proto_text_put(&t, fr);
    }
    for (uint32_t k = 1; rc == 0 && k < req->nkeys; k++) rc = redis_frag_add_group(fr, req, &req->keys[k], false);
    if (rc < 0) {
        msg_put(pool, fr);
        return rc;
    }
    frags[0] = fr;
    return 1;
}

int redis_fragment_fan(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool)
{
    struct msg **frags = calloc(n ? n : 1, sizeof(*frags));
    if (frags == NULL) return -ENOMEM;
    int made = 0;
    if (req->cmd_flags & CMD_F_FRAG_ONE) {
        made = 0; /* keys on several servers: coalesce answers the error */
    } else if (redis_cmds[req->cmd].fan == REDIS_FAN_SCAN) {
        made = fan_fragment_scan(req, where, n, pool, frags);
    } else {
        uint32_t to = redis_admin_first_only(req) && n > 0 ? 1 : n; /* CONFIG GET, FUNCTION LIST, ... */
        for (uint32_t i = 0; i < to; i++, made++) {
            struct msg *fr = proto_frag_new(req, where[i], pool);
            if (fr == NULL || msg_append_slice(fr, req, 0, req->len) < 0) {
                if (fr != NULL) msg_put(pool, fr);
                made = -ENOMEM;
                break;
            }
            frags[i] = fr;
        }
    }
    if (made < 0) {
        for (uint32_t i = 0; i < n; i++)
            if (frags[i] != NULL) msg_put(pool, frags[i]);
        free(frags);
        return made;
    }
    req->frags = frags;
    req->nfrags = (uint32_t)made;
    req->nfrags_done = 0;
    req->key_frag = NULL;
    return 0;
}

static bool fan_is_error(const struct msg *r)
{
    return r->rsp_type == RSP_ERROR || r->rsp_type == RSP_BLOB_ERROR;
}

static int fan_slice(struct msg *rsp, const struct msg *r)
{
    rsp->rsp_type = r->rsp_type;
    return msg_append_slice(rsp, r, 0, r->len);
}

static int fan_text(struct msg *rsp, uint8_t type, const char *text)
{
    rsp->rsp_type = type;
    return msg_append_copy(rsp, text, strlen(text));
}

/* The integer of a reply element ":<n>\r\n" (RESP3 servers send the same). */
static bool fan_elem_int(const struct msg *r, const struct msg_elem *e, int64_t *out)
{
    uint8_t buf[REDIS_MAX_HDR];
    size_t got = msg_copy_out(r, e->start, buf, e->end - e->start < sizeof(buf) ? (size_t)(e->end - e->start) : sizeof(buf));
    long eol = redis_line(buf, got, sizeof(buf));
    return eol >= 2 && buf[0] == ':' && redis_parse_int(buf + 1, (size_t)eol - 1, out);
}

/* The bulk string of a reply element "$<n>\r\n<text>\r\n", for short ones (SCAN's cursor). */
static bool fan_elem_u64(const struct msg *r, const struct msg_elem *e, uint64_t *out)
{
    uint8_t buf[48];
    uint64_t len = e->end - e->start;
    if (len > sizeof(buf)) return false;
    size_t got = msg_copy_out(r, e->start, buf, (size_t)len);
    long eol = redis_line(buf, got, sizeof(buf));
    int64_t n;
    if (eol < 2 || buf[0] != '$' || !redis_parse_int(buf + 1, (size_t)eol - 1, &n) || n < 0 ||
        (uint64_t)eol + 4 + (uint64_t)n != got)
        return false;
    return fan_parse_u64(buf + eol + 2, (size_t)n, out);
}

/* KEYS: the arrays joined. Their elements are not recorded (a reply of millions of keys would
 * cost an element each): each array's count is read from its header, its elements sliced whole. */
static int fan_coalesce_keys(struct msg *req, struct msg *rsp)
{
    uint64_t total = 0;
    uint64_t stack_skip[16], *skip = req->nfrags <= 16 ? stack_skip : malloc(req->nfrags * sizeof(*skip));
    if (skip == NULL) return -ENOMEM;
    int rc = 0;
    for (uint32_t f = 0; rc == 0 && f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        uint8_t head[REDIS_MAX_HDR];
        size_t got = msg_copy_out(r, 0, head, sizeof(head));
        long eol = redis_line(head, got, sizeof(head));
        int64_t n;
        if ((r->rsp_type != RSP_ARRAY && r->rsp_type != RSP_SET) || eol < 2 || (head[0] != '*' && head[0] != '~') ||
            !redis_parse_int(head + 1, (size_t)eol - 1, &n) || n < 0)
            rc = -EINVAL;
        else {
            total += (uint64_t)n;
            skip[f] = (uint64_t)eol + 2;
        }
    }
    if (rc == 0) {
        struct textbuf t = { 0 };
        textbuf_addf(&t, "*%" PRIu64 "\r\n", total);
        rsp->rsp_type = RSP_ARRAY;
        rc = proto_text_put(&t, rsp);
    }
    for (uint32_t f = 0; rc == 0 && f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (skip[f] < r->len) rc = msg_append_slice(rsp, r, skip[f], r->len);
    }
    if (skip != stack_skip) free(skip);
    return rc;
}

/* One of the keys the servers sent (a null from a server without keys is passed over). */
static int fan_coalesce_randomkey(struct msg *req, struct msg *rsp)
{
    uint32_t nkeys = 0;
    const struct msg *answered = NULL, *err = NULL;
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r == NULL) continue;
        if (fan_is_error(r)) {
            if (err == NULL) err = r;
            continue;
        }
        if (answered == NULL) answered = r;
        if (r->rsp_type == RSP_BULK) nkeys++;
    }
    if (nkeys == 0) return fan_slice(rsp, answered != NULL ? answered : err);
    uint32_t pick = (uint32_t)((req->id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) % nkeys;
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r != NULL && r->rsp_type == RSP_BULK && pick-- == 0) return fan_slice(rsp, r);
    }
    return -EINVAL;
}

/* SCRIPT EXISTS: element i is 1 only when every server has script i. */
static int fan_coalesce_exists(struct msg *req, struct msg *rsp)
{
    uint32_t n = req->frags[0]->peer->nelems;
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r->rsp_type != RSP_ARRAY || r->nelems != n) return -EINVAL;
    }
    struct textbuf t = { 0 };
    textbuf_addf(&t, "*%" PRIu32 "\r\n", n);
    for (uint32_t i = 0; i < n; i++) {
        int64_t all = 1, v;
        for (uint32_t f = 0; f < req->nfrags; f++) {
            const struct msg *r = req->frags[f]->peer;
            if (!fan_elem_int(r, &r->elems[i], &v)) {
                textbuf_deinit(&t);
                return -EINVAL;
            }
            if (v == 0) all = 0;
        }
        textbuf_addf(&t, ":%" PRId64 "\r\n", all);
    }
    rsp->rsp_type = RSP_ARRAY;
    return proto_text_put(&t, rsp);
}

static int fan_coalesce_ok(struct msg *req, struct msg *rsp)
{
    for (uint32_t f = 0; f < req->nfrags; f++)
        if (!redis_reply_is_ok(req->frags[f]->peer)) return -EINVAL;
    return fan_text(rsp, RSP_STATUS, "+OK\r\n");
}

static int fan_coalesce_script(struct msg *req, struct msg *rsp)
{
    const struct msg_key *sub = &req->keys[0];
    if (redis_key_is(sub, "exists")) return fan_coalesce_exists(req, rsp);
    if (redis_key_is(sub, "flush")) return fan_coalesce_ok(req, rsp);
    /* LOAD: the same sha from every server */
    for (uint32_t f = 0; f < req->nfrags; f++)
        if (req->frags[f]->peer->rsp_type != RSP_BULK) return -EINVAL;
    return fan_slice(rsp, req->frags[0]->peer);
}

/* PUBSUB NUMSUB / SHARDNUMSUB: [channel, count, ...] with each count summed over the servers. */
static int fan_coalesce_numsub(struct msg *req, struct msg *rsp)
{
    const struct msg *r0 = req->frags[0]->peer;
    uint32_t n = r0->nelems;
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if ((r->rsp_type != RSP_ARRAY && r->rsp_type != RSP_MAP) || r->nelems != n || n % 2 != 0) return -EINVAL;
    }
    struct textbuf t = { 0 };
    textbuf_addf(&t, "*%" PRIu32 "\r\n", n);
    int rc = 0;
    for (uint32_t i = 0; rc == 0 && i < n; i += 2) {
        int64_t sum = 0, v;
        for (uint32_t f = 0; rc == 0 && f < req->nfrags; f++) {
            const struct msg *r = req->frags[f]->peer;
            if (!fan_elem_int(r, &r->elems[i + 1], &v) || __builtin_add_overflow(sum, v, &sum)) rc = -EINVAL;
        }
        if (rc < 0) break;
        rc = proto_text_put(&t, rsp); /* the text so far, then the channel's name as the server sent it */
        if (rc == 0) rc = msg_append_slice(rsp, r0, r0->elems[i].start, r0->elems[i].end);
        textbuf_addf(&t, ":%" PRId64 "\r\n", sum);
    }
    if (rc == 0) rc = proto_text_put(&t, rsp);
    else textbuf_deinit(&t);
    rsp->rsp_type = RSP_ARRAY;
    return rc;
}

/* PUBSUB NUMPAT: the largest count. */
static int fan_coalesce_max(struct msg *req, struct msg *rsp)
{
    int64_t max = 0;
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r->rsp_type != RSP_INTEGER) return -EINVAL;
        if (f == 0 || r->integer > max) max = r->integer;
    }
    struct textbuf t = { 0 };
    textbuf_addf(&t, ":%" PRId64 "\r\n", max);
    rsp->rsp_type = RSP_INTEGER;
    rsp->integer = max;
    return proto_text_put(&t, rsp);
}

static int fan_coalesce_pubsub(struct msg *req, struct msg *rsp)
{
    const struct msg_key *sub = &req->keys[0];
    if (redis_key_is(sub, "channels") || redis_key_is(sub, "shardchannels")) return fan_coalesce_keys(req, rsp);
    if (redis_key_is(sub, "numsub") || redis_key_is(sub, "shardnumsub")) return fan_coalesce_numsub(req, rsp);
    if (redis_key_is(sub, "numpat")) return fan_coalesce_max(req, rsp);
    return fan_slice(rsp, req->frags[0]->peer); /* HELP: the same text from every server */
}

static int fan_coalesce_scan(const struct proto_view *v, struct msg *req, struct msg *rsp)
{
    if (req->nfrags == 0) return fan_text(rsp, RSP_ARRAY, "*2\r\n$1\r\n0\r\n*0\r\n");
    const struct msg *r = req->frags[0]->peer;
    uint64_t next;
    if (r->rsp_type != RSP_ARRAY || r->nelems != 2 || !fan_elem_u64(r, &r->elems[0], &next)) return -EINVAL;
    uint64_t s = req->frags[0]->server_idx;
    if (next > SCAN_CURSOR_MASK)
        return fan_text(rsp, RSP_ERROR, "-ERR a server's SCAN cursor does not fit the proxy's cursor "
                                        "(48 bits)\r\n");
    if (next != 0) next |= s << SCAN_SERVER_SHIFT;
    else if (s + 1 < v->cp->nservers && s + 1 < SCAN_SERVERS_MAX) next = (s + 1) << SCAN_SERVER_SHIFT;
    char num[24];
    int len = snprintf(num, sizeof(num), "%" PRIu64, next);
    struct textbuf t = { 0 };
    textbuf_adds(&t, "*2\r\n");
    resp_add_bulk(&t, num, (size_t)len);
    rsp->rsp_type = RSP_ARRAY;
    int rc = proto_text_put(&t, rsp);
    return rc < 0 ? rc : msg_append_slice(rsp, r, r->elems[1].start, r->elems[1].end);
}

int redis_coalesce_fan(const struct proto_view *v, struct msg *req, struct msg *rsp)
{
    if (req->cmd_flags & CMD_F_FRAG_ONE) {
        struct textbuf t = { 0 };
        char name[32];
        size_t n = redis_reply_line(name, sizeof(name) - 1, "", req->name, req->name_len, "", true);
        name[n] = '\0';
        textbuf_addf(&t, "-ERR the keys of '%s' are on more than one server (hash tags keep them on one)\r\n",
                     name);
        rsp->rsp_type = RSP_ERROR;
        return proto_text_put(&t, rsp);
    }
    uint8_t fan = redis_cmds[req->cmd].fan;
    if (fan == REDIS_FAN_RANDOMKEY) return fan_coalesce_randomkey(req, rsp);
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r == NULL) return -EINVAL;
        if (fan_is_error(r)) return fan_slice(rsp, r);
    }
    switch (fan) {
    case REDIS_FAN_SUM: return redis_coalesce_sum(req, rsp);
    case REDIS_FAN_KEYS: return fan_coalesce_keys(req, rsp);
    case REDIS_FAN_SCRIPT: return fan_coalesce_script(req, rsp);
    case REDIS_FAN_OK: return fan_coalesce_ok(req, rsp);
    case REDIS_FAN_SCAN: return fan_coalesce_scan(v, req, rsp);
    case REDIS_FAN_PUBSUB: return fan_coalesce_pubsub(req, rsp);
    case REDIS_FAN_FUNCTION:
    case REDIS_FAN_FIRST: return redis_coalesce_admin(req, rsp);
    default: return -EINVAL;
    }
}
