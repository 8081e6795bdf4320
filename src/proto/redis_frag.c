/*
 * redis_frag.c - multi-key redis commands (proto.h fragment/coalesce): MGET, DEL, UNLINK, TOUCH,
 * EXISTS (step 1) and MSET (step 2, key and value) split into one sub-request per server, and the
 * client's reply rebuilt from the sub-requests' replies (twemproxy-behaviour.md 1.8).
 *
 * A fragment is a header "*<nargs>\r\n$<len>\r\n<name>\r\n" (the table's lowercase name; written in
 * the fragment's own chunk, msg_append_copy) followed by the key groups the parser recorded,
 * sliced out of the client's request (no copy). The split's arrays are the request's kept ones
 * (msg_frags_array, msg_key_frag_array): no malloc per request once the pool is warm.
 * Inline requests have no "$len" framing to slice, so their groups are rebuilt as small literals.
 *
 * Coalesce: MGET -> "*<nkeys>\r\n" and each key's element, sliced from the reply of the fragment
 * that got the key, in the client's key order (the replies must have been parsed with
 * want_elems); DEL/UNLINK/TOUCH/EXISTS -> ":<sum>\r\n"; MSET -> "+OK\r\n" when every fragment
 * said +OK. A reply of another type (or an MGET array with the wrong count) is -EINVAL, so the
 * client gets twemproxy's "-ERR Invalid argument". RESP3 replies (a server connection after
 * HELLO 3) coalesce the same way: an MGET element may be any type ("_" nulls instead of "$-1"),
 * sliced as it came, with any attribute before it; an attribute before a fragment's whole reply
 * is left out (the reply is rebuilt).
 *
 * Error replies: when a fragment's reply is a redis error (-OOM, -READONLY, -NOAUTH, -LOADING,
 * -WRONGTYPE, ..., or a RESP3 !blob error), the whole command's reply is that error (the first
 * one in fragment order),
 * not twemproxy's "-ERR Invalid argument": the client still gets one error and no partial result,
 * as in twemproxy, but with redis' own words, the reply a single redis would have given.
 *
 * HELLO and INFO (CMD_F_FRAG_ALL: one fragment per server, not per key) are redis_info.c's; the
 * other commands sent to every server (KEYS, SCAN, SCRIPT, ...) and XREAD's keys on several
 * servers (CMD_F_FRAG_ONE) are redis_fanout.c's.
 *
 * Threads: the worker that owns the request, its fragments and their replies.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"

/* server -> fragment, for one fragment() call: open addressing, frag UINT32_MAX = empty */
struct frag_slot {
    uint32_t server;
    uint32_t frag;
};

/* Per-call scratch arrays up to this many entries live on the stack (no malloc per request). */
#define FRAG_STACK_SLOTS 128
#define FRAG_STACK_FRAGS 64

/* Writes v in decimal at out (room for 20 digits); returns the number of digits. */
static size_t frag_put_u64(char *out, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

/* Numbers the distinct servers in order of first use: key i goes to fragment key_frag[i]. */
static int frag_map(const uint32_t *server_of_key, uint32_t nkeys, uint32_t *key_frag,
                    uint32_t *nfrags)
{
    size_t cap = 8;
    while (cap < (size_t)nkeys * 2) cap <<= 1;
    struct frag_slot stack_slots[FRAG_STACK_SLOTS];
    struct frag_slot *slots = cap <= FRAG_STACK_SLOTS ? stack_slots : malloc(cap * sizeof(*slots));
    if (slots == NULL) return -ENOMEM;
    for (size_t i = 0; i < cap; i++) slots[i].frag = UINT32_MAX;
    uint32_t n = 0;
    for (uint32_t i = 0; i < nkeys; i++) {
        uint32_t s = server_of_key[i];
        size_t h = (size_t)(s * 2654435761u) & (cap - 1);
        while (slots[h].frag != UINT32_MAX && slots[h].server != s) h = (h + 1) & (cap - 1);
        if (slots[h].frag == UINT32_MAX) slots[h] = (struct frag_slot){ .server = s, .frag = n++ };
        key_frag[i] = slots[h].frag;
    }
    if (slots != stack_slots) free(slots);
    *nfrags = n;
    return 0;
}

/* A key group of a RESP request starts "$<digits>\r\n"; an inline line holds no LF at all. */
static bool frag_group_is_resp(const struct msg *req, const struct msg_key *k)
{
    uint8_t head[12];
    uint64_t glen = k->end - k->start;
    size_t n = msg_copy_out(req, k->start, head, glen < sizeof(head) ? (size_t)glen : sizeof(head));
    return n > 0 && head[0] == '$' && memchr(head, '\n', n) != NULL;
}

static size_t frag_put_bulk(uint8_t *out, const uint8_t *data, size_t len)
{
    int n = sprintf((char *)out, "$%zu\r\n", len);
    memcpy(out + n, data, len);
    memcpy(out + n + len, "\r\n", 2);
    return (size_t)n + len + 2;
}

/* An inline key group (the key token; MSET: key, blanks, value) as RESP bulks, one literal. */
static int frag_inline_group(struct msg *frag, const struct msg *req, const struct msg_key *k,
                             bool with_value)
{
    size_t glen = (size_t)(k->end - k->start); /* within one inline line: small */
    uint8_t *raw = malloc(glen * 2 + 64);
    if (raw == NULL) return -ENOMEM;
    uint8_t *out = raw + glen;
    size_t n = frag_put_bulk(out, k->ptr, k->len);
    if (with_value) {
        msg_copy_out(req, k->start, raw, glen);
        size_t v = k->len;
        while (v < glen && (raw[v] == ' ' || raw[v] == '\t' || raw[v] == '\r' || raw[v] == '\v' ||
                            raw[v] == '\f'))
            v++;
        n += frag_put_bulk(out + n, raw + v, glen - v);
    }
    int rc = msg_append_literal(frag, out, n);
    free(raw);
    return rc;
}

int redis_frag_add_group(struct msg *frag, const struct msg *req, const struct msg_key *k,
                          bool with_value)
{
    uint64_t start = frag->len;
    int rc = frag_group_is_resp(req, k) ? msg_append_slice(frag, req, k->start, k->end)
                                        : frag_inline_group(frag, req, k, with_value);
    if (rc < 0) return rc;
    return msg_add_key(frag, k->ptr, k->len, start, frag->len);
}

/* "*<nargs>\r\n$<len>\r\n<name>\r\n" */
int redis_frag_header(struct msg *frag, const char *name, uint64_t nargs)
{
    char hdr[64];
    size_t len = strlen(name), n = 0;
    if (len > sizeof(hdr) - 32) return -EINVAL;
    hdr[n++] = '*';
    n += frag_put_u64(hdr + n, nargs);
    memcpy(hdr + n, "\r\n$", 3);
    n += 3;
    n += frag_put_u64(hdr + n, len);
    memcpy(hdr + n, "\r\n", 2);
    n += 2;
    memcpy(hdr + n, name, len);
    n += len;
    memcpy(hdr + n, "\r\n", 2);
    n += 2;
    return msg_append_copy(frag, hdr, n);
}

int redis_fragment(struct msg *req, const uint32_t *server_of_key, uint32_t n, struct msg_pool *pool)
{
    if (req->cmd_flags & (CMD_F_FRAG_ALL | CMD_F_FRAG_ONE)) {
        /* (a FRAG_ONE command may be a pool's declared one: msg->cmd past redis_cmds[]) */
        if (!(req->cmd_flags & CMD_F_FRAG_ONE) && redis_cmds[req->cmd].fan == REDIS_FAN_INFO)
            return redis_fragment_all(req, server_of_key, n, pool);
        return redis_fragment_fan(req, server_of_key, n, pool);
    }
    NC_ASSERT(req->nkeys >= 2 && n == req->nkeys && req->cmd < redis_ncmds && (req->cmd_flags & CMD_F_FRAG_MASK));
    uint32_t nkeys = req->nkeys, nfrags = 0;
    bool mset = (req->cmd_flags & CMD_F_FRAG_MSET) != 0;
    const char *name = redis_cmds[req->cmd].name;
    struct msg **frags = NULL;
    uint32_t stack_count[FRAG_STACK_FRAGS];
    uint32_t *count = NULL;

    /* (both arrays are kept with req across reuses: msg_put does not free them) */
    uint32_t *key_frag = msg_key_frag_array(req, nkeys);
    if (key_frag == NULL) return -ENOMEM;
    int rc = frag_map(server_of_key, nkeys, key_frag, &nfrags);
    if (rc < 0) return rc;
    rc = -ENOMEM;
    frags = msg_frags_array(req, nfrags);
    count = nfrags <= FRAG_STACK_FRAGS ? stack_count : malloc(nfrags * sizeof(*count));
    if (frags == NULL || count == NULL) goto fail;
    memset(count, 0, nfrags * sizeof(*count));
    for (uint32_t i = 0; i < nkeys; i++) count[key_frag[i]]++;

    for (uint32_t f = 0; f < nfrags; f++) {
        struct msg *fr = proto_frag_new(req, 0, pool); /* its server: its keys' (below) */
        if (fr == NULL) {
            rc = -ENOMEM; /* (rc holds the last header's 0 after the first fragment) */
            goto fail;
        }
        frags[f] = fr;
        fr->nargs = 1 + (uint64_t)count[f] * (mset ? 2 : 1);
        rc = redis_frag_header(fr, name, fr->nargs);
        if (rc < 0) goto fail;
    }
    for (uint32_t i = 0; i < nkeys; i++) {
        struct msg *fr = frags[key_frag[i]];
        fr->server_idx = server_of_key[i];
        rc = redis_frag_add_group(fr, req, &req->keys[i], mset);
        if (rc < 0) goto fail;
    }

    if (count != stack_count) free(count);
    req->frags = frags;
    req->nfrags = nfrags;
    req->nfrags_done = 0;
    req->key_frag = key_frag;
    return 0;

fail:
    for (uint32_t f = 0; frags != NULL && f < nfrags; f++)
        if (frags[f] != NULL) msg_put(pool, frags[f]);
    if (count != stack_count) free(count);
    return rc;
}

static int coalesce_literal(struct msg *rsp, uint8_t type, const char *text, size_t n)
{
    rsp->rsp_type = type;
    return msg_append_copy(rsp, text, n);
}

static int coalesce_mget(struct msg *req, struct msg *rsp)
{
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r->rsp_type != RSP_ARRAY || r->nelems != req->frags[f]->nkeys) return -EINVAL;
    }
    uint32_t stack_next[FRAG_STACK_FRAGS];
    uint32_t *next = req->nfrags <= FRAG_STACK_FRAGS ? stack_next : malloc(req->nfrags * sizeof(*next));
    if (next == NULL) return -ENOMEM;
    memset(next, 0, req->nfrags * sizeof(*next));
    char hdr[24];
    size_t n = 0;
    hdr[n++] = '*';
    n += frag_put_u64(hdr + n, req->nkeys);
    memcpy(hdr + n, "\r\n", 2);
    n += 2;
    int rc = coalesce_literal(rsp, RSP_ARRAY, hdr, n);
    for (uint32_t i = 0; rc == 0 && i < req->nkeys; i++) {
        uint32_t f = req->key_frag[i];
        const struct msg *r = req->frags[f]->peer;
        const struct msg_elem *e = &r->elems[next[f]++];
        rc = msg_append_slice(rsp, r, e->start, e->end);
    }
    if (next != stack_next) free(next);
    return rc;
}

int redis_coalesce_sum(struct msg *req, struct msg *rsp)
{
    int64_t sum = 0;
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r->rsp_type != RSP_INTEGER || __builtin_add_overflow(sum, r->integer, &sum))
            return -EINVAL;
    }
    char out[32];
    int n = snprintf(out, sizeof(out), ":%" PRId64 "\r\n", sum);
    rsp->integer = sum;
    return coalesce_literal(rsp, RSP_INTEGER, out, (size_t)n);
}

/* r is "+OK\r\n", maybe after an attribute (RESP3): then the status is the reply's last line,
 * right after the LF that ends the attribute (a status line holds no LF). */
bool redis_reply_is_ok(const struct msg *r)
{
    static const char ok[] = "+OK\r\n";
    char got[sizeof(ok)];
    size_t n = r->len > sizeof(ok) - 1 ? sizeof(ok) : sizeof(ok) - 1;
    if (r->rsp_type != RSP_STATUS || r->len < n || msg_copy_out(r, r->len - n, got, n) != n)
        return false;
    return memcmp(got + n - (sizeof(ok) - 1), ok, sizeof(ok) - 1) == 0 &&
           (n == sizeof(ok) - 1 || got[0] == '\n');
}

static int coalesce_mset(struct msg *req, struct msg *rsp)
{
    for (uint32_t f = 0; f < req->nfrags; f++)
        if (!redis_reply_is_ok(req->frags[f]->peer)) return -EINVAL;
    return coalesce_literal(rsp, RSP_STATUS, "+OK\r\n", 5);
}

int redis_coalesce(const struct proto_view *v, struct msg *req, struct msg *rsp)
{
    if (req->cmd_flags & (CMD_F_FRAG_ALL | CMD_F_FRAG_ONE)) {
        if (!(req->cmd_flags & CMD_F_FRAG_ONE) && redis_cmds[req->cmd].fan == REDIS_FAN_INFO)
            return redis_coalesce_all(v, req, rsp);
        return redis_coalesce_fan(v, req, rsp);
    }
    const struct msg *err = NULL;
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r == NULL) return -EINVAL;
        if ((r->rsp_type == RSP_ERROR || r->rsp_type == RSP_BLOB_ERROR) && err == NULL) err = r;
    }
    if (err != NULL) {
        rsp->rsp_type = err->rsp_type;
        return msg_append_slice(rsp, err, 0, err->len);
    }
    switch (req->cmd_flags & (CMD_F_FRAG_MGET | CMD_F_FRAG_SUM | CMD_F_FRAG_MSET)) {
    case CMD_F_FRAG_MGET: return coalesce_mget(req, rsp);
    case CMD_F_FRAG_SUM:  return redis_coalesce_sum(req, rsp);
    case CMD_F_FRAG_MSET: return coalesce_mset(req, rsp);
    default:              return -EINVAL;
    }
}
