/*
 * redis_req.c - the redis request parser (proto.h parse_req): RESP arrays of bulk strings and
 * inline commands, incremental, token by token, so the core may hand it any split of the stream.
 *
 * Tokens. "*N\r\n" and "$N\r\n" are consumed whole. The data of the command name (arg 0), of a
 * key and of a numkeys count is consumed whole with its CRLF, so the pointers kept in the msg
 * (name, keys) stay valid; every other argument's data is consumed in any number of pieces, then
 * its CRLF. An inline command is one token: its whole line. So a key, a name prefix and an inline
 * line must fit in one mbuf (-m); a larger one makes the core give up on the stream (proto.h).
 *
 * What it records: m->nargs, m->name/name_len (at most REDIS_NAME_PREFIX bytes), m->cmd (an index
 * in redis_cmds[], or in the pool's table, ps->table, where it declares commands: redis_declared.h;
 * REDIS_CMD_NONE when unknown), m->cmd_flags, m->quit, and one msg_key per key
 * whose [start, end) is the key's argument group: "$3\r\nkey\r\n", and for MSET the value after it
 * too. For an inline command a group is the key token (MSET: from the key to the end of its value).
 *
 * Requests that parse but are not forwarded are PARSE_DONE with msg->reject set (cmd_flags 0, no
 * keys, quit false), once all their bytes are consumed:
 *   REJECT_UNSUPPORTED  the name is not in the command table (unknown or unsupported by twemproxy)
 *                       nor declared by the pool (its `commands:`),
 *                       or it is a command of cluster-mode clients (CLUSTER, READONLY, READWRITE)
 *                       and the pool has no client_cluster_mode (parse_state.opts);
 *   REJECT_ARITY        wrong number of arguments; MSET with a key lacking its value; a numkeys
 *                       argument (EVAL, ZUNION, ...) that is not an integer >= 1 or counts more
 *                       keys than there are arguments (so EVAL with no key is rejected).
 *
 * Requests refused as soon as the name (arg 0) or a numkeys count has been read, instead of after
 * all their arguments (so a client that declares a huge count is answered at once):
 *   - a forwardable command whose argument count means more than MSG_KEYS_MAX keys (DEL, MGET,
 *     MSET, ... with that many arguments, a numkeys over it): PARSE_ERROR "too many keys", the
 *     text the key cap gives once the keys are read;
 *   - a rejected one (unknown command, wrong arity) with more than MSG_KEYS_MAX arguments after
 *     its name: PARSE_DONE there with its reject and quit set, so the client gets the reject's
 *     reply at once and the connection is closed (its other arguments are never read).
 * A known command of the right arity whose arguments are not keys (SADD k m1 m2 ...) is read
 * whatever its count, up to the core's request size limit.
 *
 * Empty requests ("*0\r\n", "*-1\r\n", a blank inline line) are ignored as redis does: they are
 * consumed and parsing goes on; their bytes become part of the next request (redis ignores them
 * there too). More than REDIS_MAX_EMPTY such bytes in a row is a protocol error.
 *
 * Protocol errors (PARSE_ERROR, ps->error says which, in redis 7's words where redis refuses the
 * stream too): a "*N" that is not a strict integer or is above REDIS_MAX_ARGS; an argument not
 * starting with '$' (a nested array included: "expected '$', got 'X'"); a "$N" that is not a
 * strict integer in [0, REDIS_MAX_BULK]; a header line longer than REDIS_MAX_HDR; data not
 * followed by CRLF; an inline line over REDIS_MAX_INLINE bytes, with quotes redis cannot split
 * ("unbalanced quotes in request"), or holding a quote or a NUL at all (redis would unquote or cut
 * them: keys would hash differently here); more than MSG_KEYS_MAX keys ("too many keys"); out of
 * memory for keys. Where this is stricter than redis: notes/redis-proto.md.
 *
 * XREAD and XREADGROUP (REDIS_KEYS_STREAMS): their options before STREAMS are read whole (so they
 * must fit one mbuf, as keys); the keys are the first half of the arguments after STREAMS. With
 * BLOCK they are blocking commands (CMD_F_BLOCK added, msg.block_ms from BLOCK's milliseconds);
 * without a STREAMS list of keys and ids they have no key, and redis answers their error.
 *
 * Blocking commands (CMD_F_BLOCK in the table: BLPOP, ...): their timeout argument (seconds, at
 * redis_cmd.timeout_arg) is read whole when it has at most REDIS_MAX_TIMEOUT_LEN bytes and sets
 * msg.block_ms; one that is longer or not a number leaves it MSG_BLOCK_FOREVER (redis answers a
 * timeout that is not a number at once).
 *
 * ps use: state (enum rq_state); a = number of arguments; b = index of the argument being parsed;
 * c = bytes of its data still to consume; d = numkeys commands: index of the last key numkeys
 * counts (0 until known), XREAD: of the last key after STREAMS; off = RQ_START: empty-request
 * bytes so far, then the offset of the current argument's "$" in the msg; elem_start = XREAD:
 * option arguments to skip before the next option (RQ_OPT_STOP: no keys to find; RQ_OPT_BLOCK_MS:
 * the next argument is BLOCK's milliseconds); entry = the command's entry (set by rq_on_name, read
 * only for a request it did not reject); table = the pool's command table (NULL: redis_cmds[]).
 *
 * Threads: no state of its own; a worker calls it on its connections' parse_state.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "proto/redis.h"
#include "proto/redis_cmd.h"
#include "proto/redis_declared.h"

enum rq_state {
    RQ_START = 0,    /* first byte of a request (or of an ignored empty one) */
    RQ_ARG_HDR,      /* "$N\r\n" of argument b */
    RQ_ARG_WHOLE,    /* data + CRLF of a name/key/numkeys argument, all at once */
    RQ_NAME_PREFIX,  /* a name longer than REDIS_NAME_PREFIX: its first REDIS_NAME_PREFIX bytes */
    RQ_ARG_PIECE,    /* data of any other argument, in pieces */
    RQ_ARG_CRLF,     /* the CRLF after data consumed in pieces */
    RQ_KEY_WHOLE,    /* RQ_ARG_WHOLE of a key: its kind known (found once, by the header) */
};

enum rq_kind { ARG_NAME, ARG_KEY, ARG_NUMKEYS, ARG_OPTION, ARG_TIMEOUT, ARG_VALUE };

/* ps->elem_start of XREAD/XREADGROUP before STREAMS: option arguments still to skip, or this when
 * the keys will not be found (an unknown option: redis answers its own error) */
#define RQ_OPT_STOP UINT64_MAX
#define RQ_OPT_BLOCK_MS (UINT64_MAX - 1)

static int rq_error(struct parse_state *ps, const char *why)
{
    ps->error = why;
    return PARSE_ERROR;
}

static void rq_reject(struct msg *m, uint8_t why)
{
    m->reject = why;
    m->cmd_flags = 0;
    m->quit = false;
    m->nkeys = 0;
    m->block_ms = 0;
}

/* The name is known: look it up, check the arity (ps->a is the number of arguments). The
 * commands of cluster-mode clients are unknown to a pool without client_cluster_mode. A pool that
 * declares commands (ps->table, redis_declared.h) has its own entries for the built-in names it
 * declares, and the names the built-in table lacks are looked up there. ps->entry: the entry. */
static void rq_on_name(struct parse_state *ps, struct msg *m, const uint8_t *p, size_t len)
{
    m->name = p;
    m->name_len = (uint32_t)(len > REDIS_NAME_PREFIX ? REDIS_NAME_PREFIX : len);
    const struct redis_cmd *table = ps->table;
    int i = redis_cmd_lookup(p, len);
    if (i < 0 || (redis_cmds[i].local >= REDIS_LOCAL_CLUSTER_FIRST && !(ps->opts & REDIS_OPT_CLUSTER))) {
        if (table == NULL || (i = redis_declared_lookup(table, p, len)) < 0) {
            m->cmd = REDIS_CMD_NONE;
            rq_reject(m, REJECT_UNSUPPORTED);
            return;
        }
    }
    const struct redis_cmd *c = table != NULL ? &table[i] : &redis_cmds[i];
    ps->entry = c;
    m->cmd = (uint16_t)i;
    uint64_t n = ps->a;
    bool ok = c->arity > 0 ? n == (uint64_t)c->arity : n >= (uint64_t)(-c->arity);
    /* keys to the last argument, several args per key (MSET): no key without its value */
    if (ok && c->key_step > 1 && c->last_key == -1)
        ok = (n - (uint64_t)c->first_key) % (uint64_t)c->key_step == 0;
    if (!ok) {
        rq_reject(m, REJECT_ARITY);
        return;
    }
    m->cmd_flags = c->flags;
    m->quit = (c->flags & CMD_F_QUIT) != 0;
    if (c->flags & CMD_F_BLOCK) m->block_ms = MSG_BLOCK_FOREVER; /* until its timeout is read */
}

static enum rq_kind rq_kind(const struct parse_state *ps, const struct msg *m, uint64_t idx)
{
    if (idx == 0) return ARG_NAME;
    if (m->reject != REJECT_NONE) return ARG_VALUE;
    const struct redis_cmd *c = ps->entry;
    if (c->first_key > 0 && idx >= (uint64_t)c->first_key) {
        uint64_t last = c->last_key >= 0 ? (uint64_t)c->last_key : ps->a - (uint64_t)(-c->last_key);
        if (idx <= last && (idx - (uint64_t)c->first_key) % (uint64_t)c->key_step == 0)
            return ARG_KEY;
    }
    if (c->numkeys_pos == REDIS_KEYS_STREAMS) {
        if (ps->d != 0) return idx <= ps->d ? ARG_KEY : ARG_VALUE;
        return ps->elem_start == RQ_OPT_STOP ? ARG_VALUE : ARG_OPTION;
    }
    if (c->numkeys_pos > 0) {
        if (idx == (uint64_t)c->numkeys_pos) return ARG_NUMKEYS;
        if (idx > (uint64_t)c->numkeys_pos && idx <= ps->d) return ARG_KEY;
    }
    if (c->timeout_arg != 0) {
        uint64_t t = c->timeout_arg > 0 ? (uint64_t)c->timeout_arg : ps->a - (uint64_t)(-c->timeout_arg);
        if (idx == t) return ARG_TIMEOUT;
    }
    return ARG_VALUE;
}

static void rq_on_numkeys(struct parse_state *ps, struct msg *m, const uint8_t *p, size_t len)
{
    const struct redis_cmd *c = ps->entry;
    uint64_t room = ps->a - 1 - (uint64_t)c->numkeys_pos; /* args after numkeys; arity: >= 0 */
    int64_t n;
    if (len > REDIS_MAX_NUMKEYS_LEN || !redis_parse_int(p, len, &n) || n < 1 || (uint64_t)n > room) {
        rq_reject(m, REJECT_ARITY);
        return;
    }
    ps->d = (uint64_t)c->numkeys_pos + (uint64_t)n;
}

/*
 * An option of XREAD/XREADGROUP before STREAMS (argument ps->b), read as redis reads them: COUNT
 * and BLOCK take one argument, GROUP two, NOACK none; STREAMS is followed by the keys, then as
 * many ids. BLOCK makes it a blocking command (its milliseconds are its timeout). Without
 * STREAMS, with an odd count after it or an unknown option, the request has no key: it goes to
 * any server, whose reply is redis's error.
 */
static void rq_on_option(struct parse_state *ps, struct msg *m, const uint8_t *p, size_t len)
{
    static const struct { const char *word; uint8_t skip; } opts[] = {
        { "count", 1 }, { "group", 2 }, { "noack", 0 },
    };
    if (ps->elem_start == RQ_OPT_BLOCK_MS) {
        redis_parse_timeout(p, len, 1u, &m->block_ms);
        ps->elem_start = 0;
        return;
    }
    if (ps->elem_start > 0) {
        ps->elem_start--;
        return;
    }
    struct msg_key k = { .ptr = p, .len = (uint32_t)len };
    if (redis_key_is(&k, "streams")) {
        uint64_t after = ps->a - 1 - ps->b;
        if (after == 0 || after % 2 != 0) ps->elem_start = RQ_OPT_STOP;
        else ps->d = ps->b + after / 2;
        return;
    }
    if (redis_key_is(&k, "block")) { /* a blocking command: its milliseconds follow */
        m->cmd_flags |= CMD_F_BLOCK;
        m->block_ms = MSG_BLOCK_FOREVER;
        ps->elem_start = RQ_OPT_BLOCK_MS;
        return;
    }
    for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
        if (redis_key_is(&k, opts[i].word)) {
            ps->elem_start = opts[i].skip;
            return;
        }
    }
    ps->elem_start = RQ_OPT_STOP;
}

/* The number of keys the request has at fixed positions (redis_cmd.h), from its argument count. */
static uint64_t rq_fixed_keys(const struct parse_state *ps, const struct redis_cmd *c)
{
    if (c->first_key <= 0) return 0;
    uint64_t first = (uint64_t)c->first_key;
    uint64_t neg = c->last_key >= 0 ? 0 : (uint64_t)(-c->last_key);
    if (c->last_key < 0 && ps->a < neg) return 0;
    uint64_t last = c->last_key >= 0 ? (uint64_t)c->last_key : ps->a - neg;
    return last < first ? 0 : (last - first) / (uint64_t)c->key_step + 1;
}

/*
 * After the name or a numkeys argument: whether the request is refused now rather than after all
 * its arguments (see the top of this file). Returns next, PARSE_DONE (a reject answered now and
 * the connection closed) or PARSE_ERROR.
 */
static int rq_check_cap(struct parse_state *ps, struct msg *m, int next)
{
    /* the usual request: the keys at fixed places and those a numkeys counts are each at most
     * a - 1, so below the cap together */
    if (ps->a <= MSG_KEYS_MAX / 2) return next;
    if (m->reject != REJECT_NONE) {
        if (ps->a - 1 <= MSG_KEYS_MAX) return next;
        m->quit = true;
        return PARSE_DONE;
    }
    const struct redis_cmd *c = ps->entry;
    uint64_t keys = rq_fixed_keys(ps, c);
    if (c->numkeys_pos > 0 && ps->d > (uint64_t)c->numkeys_pos) keys += ps->d - (uint64_t)c->numkeys_pos;
    if (keys > MSG_KEYS_MAX) return rq_error(ps, msg_add_key_error(-E2BIG));
    return next;
}

/* A value argument ending at offset end is done: it extends its key's group (MSET). */
static void rq_on_value(const struct parse_state *ps, const struct msg *m, uint64_t idx, uint64_t end)
{
    if (m->reject != REJECT_NONE || m->nkeys == 0) return;
    const struct redis_cmd *c = ps->entry;
    if (c->key_step > 1 && idx > (uint64_t)c->first_key) m->keys[m->nkeys - 1].end = end;
}

static int rq_ignored(struct parse_state *ps, size_t n)
{
    ps->off += n;
    if (ps->off > REDIS_MAX_EMPTY) return rq_error(ps, "too many empty requests");
    return REDIS_CONT;
}

static bool rq_inline_sep(uint8_t c)
{
    /* what redis' sdssplitargs ends an unquoted argument at ('\0' is refused earlier) */
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* What redis' sdssplitargs skips between arguments: isspace() in the C locale. */
static bool rq_isspace(uint8_t c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Skips separators from i; returns the index of the next token (or end). */
static size_t rq_inline_skip(const uint8_t *buf, size_t i, size_t end)
{
    while (i < end && rq_isspace(buf[i])) i++;
    return i;
}

static size_t rq_inline_token_end(const uint8_t *buf, size_t i, size_t end)
{
    while (i < end && !rq_inline_sep(buf[i])) i++;
    return i;
}

/*
 * Whether redis finds the quotes of the inline line s[0..n) unbalanced (its sdssplitargs fails):
 * a quoted part left open, or a closing quote followed by something else than a blank. Inside
 * double quotes a backslash takes the next byte with it; inside single quotes only a quote.
 */
static bool rq_inline_unbalanced(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t q = s[i++];
        if (q != '"' && q != '\'') continue;
        for (;;) {
            if (i >= n) return true;
            uint8_t c = s[i];
            if (c == '\\' && i + 1 < n && (q == '"' || s[i + 1] == '\'')) {
                i += 2;
                continue;
            }
            i++;
            if (c == q) break;
        }
        if (i < n && !rq_isspace(s[i])) return true;
    }
    return false;
}

/* Why the inline line buf[p..end) (before its LF) is refused, or NULL: NUL bytes and quotes are
 * not supported; quotes redis cannot split get redis's own error. */
static const char *rq_inline_refused(const uint8_t *buf, size_t p, size_t end)
{
    if (memchr(buf + p, '\0', end - p) != NULL) return "quotes and NUL are not supported in inline requests";
    if (memchr(buf + p, '"', end - p) == NULL && memchr(buf + p, '\'', end - p) == NULL) return NULL;
    size_t text = end > p && buf[end - 1] == '\r' ? end - 1 - p : end - p; /* redis splits the
                                                                           * line without its CR */
    if (rq_inline_unbalanced(buf + p, text)) return "unbalanced quotes in request";
    return "quotes and NUL are not supported in inline requests";
}

/* An inline command: one line, its arguments separated by blanks. */
static int rq_inline(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *pp)
{
    size_t p = *pp, avail = len - p;
    const uint8_t *nl = memchr(buf + p, '\n', avail < REDIS_MAX_INLINE ? avail : REDIS_MAX_INLINE);
    if (nl == NULL) {
        if (avail >= REDIS_MAX_INLINE) return rq_error(ps, "too big inline request");
        return PARSE_AGAIN;
    }
    size_t end = (size_t)(nl - buf);
    const char *refused = rq_inline_refused(buf, p, end);
    if (refused != NULL) return rq_error(ps, refused);

    uint64_t ntok = 0;
    for (size_t i = rq_inline_skip(buf, p, end); i < end; i = rq_inline_skip(buf, i, end)) {
        ntok++;
        i = rq_inline_token_end(buf, i, end);
    }
    *pp = end + 1;
    if (ntok == 0) return rq_ignored(ps, end + 1 - p);

    ps->a = ntok;
    ps->d = 0;
    m->nargs = ntok;
    uint64_t base = m->len;
    ps->b = 0;
    for (size_t i = rq_inline_skip(buf, p, end); i < end; i = rq_inline_skip(buf, i, end)) {
        size_t s = i;
        i = rq_inline_token_end(buf, i, end);
        switch (rq_kind(ps, m, ps->b)) {
        case ARG_NAME:
            rq_on_name(ps, m, buf + s, i - s);
            break;
        case ARG_KEY: {
            int rc = msg_add_key(m, buf + s, (uint32_t)(i - s), base + s, base + i);
            if (rc < 0) return rq_error(ps, msg_add_key_error(rc));
            break;
        }
        case ARG_NUMKEYS:
            rq_on_numkeys(ps, m, buf + s, i - s);
            break;
        case ARG_OPTION:
            rq_on_option(ps, m, buf + s, i - s);
            break;
        case ARG_TIMEOUT:
            redis_parse_timeout(buf + s, i - s, 1000u, &m->block_ms);
            break;
        case ARG_VALUE:
            rq_on_value(ps, m, ps->b, base + i);
            break;
        }
        ps->b++;
    }
    return PARSE_DONE;
}

static int rq_start(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                    size_t *pp)
{
    size_t p = *pp;
    if (p == len) return PARSE_AGAIN;
    if (buf[p] != '*') return rq_inline(ps, m, buf, len, pp);

    int64_t nargs;
    long n = redis_header_fast(buf + p, len - p, &nargs);
    if (n < 0) {
        n = redis_line(buf + p, len - p, REDIS_MAX_HDR);
        if (n == REDIS_LINE_AGAIN) return PARSE_AGAIN;
        if (n == REDIS_LINE_BAD || !redis_parse_int(buf + p + 1, (size_t)n - 1, &nargs))
            return rq_error(ps, "invalid multibulk length");
    }
    if (nargs > REDIS_MAX_ARGS) return rq_error(ps, "invalid multibulk length");
    *pp = p + (size_t)n + 2;
    if (nargs <= 0) return rq_ignored(ps, (size_t)n + 2);
    ps->a = (uint64_t)nargs;
    ps->b = 0;
    ps->d = 0;
    m->nargs = (uint64_t)nargs;
    ps->state = RQ_ARG_HDR;
    return REDIS_CONT;
}

/* What redis answers for an argument that does not start with '$': "expected '$', got 'X'", for
 * every byte X, built by the compiler (const, any thread). redis shows a CR or LF as a space; a NUL
 * it never reaches (its line search stops there) is one here too. */
#define RQ_GOT_BYTE(x) ((x) == '\r' || (x) == '\n' || (x) == 0 ? ' ' : (char)(x))
#define RQ_GOT(x) { 'e', 'x', 'p', 'e', 'c', 't', 'e', 'd', ' ', '\'', '$', '\'', ',', ' ', 'g', 'o', \
                    't', ' ', '\'', RQ_GOT_BYTE(x), '\'', '\0' }
#define RQ_GOT4(x) RQ_GOT(x), RQ_GOT((x) + 1), RQ_GOT((x) + 2), RQ_GOT((x) + 3)
#define RQ_GOT16(x) RQ_GOT4(x), RQ_GOT4((x) + 4), RQ_GOT4((x) + 8), RQ_GOT4((x) + 12)
#define RQ_GOT64(x) RQ_GOT16(x), RQ_GOT16((x) + 16), RQ_GOT16((x) + 32), RQ_GOT16((x) + 48)
static const char rq_expected_dollar[256][22] = {
    RQ_GOT64(0), RQ_GOT64(64), RQ_GOT64(128), RQ_GOT64(192),
};

static int rq_arg_hdr(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                      size_t *pp)
{
    size_t p = *pp;
    if (p == len) return PARSE_AGAIN;
    if (buf[p] != '$') return rq_error(ps, rq_expected_dollar[buf[p]]);
    int64_t blen;
    long n = redis_header_fast(buf + p, len - p, &blen);
    if (n < 0) {
        n = redis_line(buf + p, len - p, REDIS_MAX_HDR);
        if (n == REDIS_LINE_AGAIN) return PARSE_AGAIN;
        if (n == REDIS_LINE_BAD || !redis_parse_int(buf + p + 1, (size_t)n - 1, &blen) || blen < 0)
            return rq_error(ps, "invalid bulk length");
    }
    if (blen > REDIS_MAX_BULK) return rq_error(ps, "invalid bulk length");
    ps->off = m->len + p;
    ps->c = (uint64_t)blen;
    *pp = p + (size_t)n + 2;
    switch (rq_kind(ps, m, ps->b)) {
    case ARG_NAME:
        ps->state = blen > REDIS_NAME_PREFIX ? RQ_NAME_PREFIX : RQ_ARG_WHOLE;
        break;
    case ARG_KEY:
        ps->state = RQ_KEY_WHOLE;
        break;
    case ARG_OPTION:
        ps->state = RQ_ARG_WHOLE;
        break;
    case ARG_TIMEOUT: /* a longer one is not a timeout we read: it stays MSG_BLOCK_FOREVER */
        ps->state = blen > REDIS_MAX_TIMEOUT_LEN ? RQ_ARG_PIECE : RQ_ARG_WHOLE;
        break;
    case ARG_NUMKEYS:
        if (blen > REDIS_MAX_NUMKEYS_LEN) {
            rq_reject(m, REJECT_ARITY);
            ps->state = RQ_ARG_PIECE;
            return rq_check_cap(ps, m, REDIS_CONT);
        }
        ps->state = RQ_ARG_WHOLE;
        break;
    case ARG_VALUE:
        ps->state = RQ_ARG_PIECE;
        break;
    }
    return REDIS_CONT;
}

/* Argument b ended at offset end (after its CRLF). */
static int rq_arg_done(struct parse_state *ps, struct msg *m, bool value, uint64_t end)
{
    if (value) rq_on_value(ps, m, ps->b, end);
    ps->b++;
    if (ps->b < ps->a) {
        ps->state = RQ_ARG_HDR;
        return REDIS_CONT;
    }
    return PARSE_DONE;
}

/* The argument's data and CRLF, all there at once; kind: what the argument is (rq_kind). */
static inline int rq_arg_whole(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                               size_t *pp, enum rq_kind kind)
{
    size_t p = *pp;
    uint64_t dlen = ps->c;
    if (len - p < dlen + 2) return PARSE_AGAIN;
    if (redis_crlf(buf, len, p + (size_t)dlen) < 0) return rq_error(ps, "expected CRLF after bulk data");
    const uint8_t *data = buf + p;
    uint64_t end = m->len + p + dlen + 2;
    bool check = false;
    switch (kind) {
    case ARG_NAME:
        rq_on_name(ps, m, data, (size_t)dlen);
        check = true;
        break;
    case ARG_KEY: {
        int rc = msg_add_key(m, data, (uint32_t)dlen, ps->off, end);
        if (rc < 0) return rq_error(ps, msg_add_key_error(rc));
        break;
    }
    case ARG_NUMKEYS:
        rq_on_numkeys(ps, m, data, (size_t)dlen);
        check = true;
        break;
    case ARG_OPTION:
        rq_on_option(ps, m, data, (size_t)dlen);
        break;
    case ARG_TIMEOUT:
        redis_parse_timeout(data, (size_t)dlen, 1000u, &m->block_ms);
        break;
    case ARG_VALUE: /* not consumed whole */
        break;
    }
    *pp = p + (size_t)dlen + 2;
    if (check && ps->b + 1 < ps->a) {
        int rc = rq_check_cap(ps, m, REDIS_CONT);
        if (rc != REDIS_CONT) return rc;
    }
    return rq_arg_done(ps, m, false, end);
}

static int rq_name_prefix(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                          size_t *pp)
{
    size_t p = *pp;
    if (len - p < REDIS_NAME_PREFIX) return PARSE_AGAIN;
    rq_on_name(ps, m, buf + p, (size_t)ps->c); /* too long for any command: rejected */
    *pp = p + REDIS_NAME_PREFIX;
    ps->c -= REDIS_NAME_PREFIX;
    ps->state = RQ_ARG_PIECE;
    return rq_check_cap(ps, m, REDIS_CONT);
}

static int rq_arg_piece(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                        size_t *pp)
{
    if (!redis_take(&ps->c, len, pp)) return PARSE_AGAIN;
    ps->state = RQ_ARG_CRLF;
    return REDIS_CONT;
}

static int rq_arg_crlf(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                       size_t *pp)
{
    int crlf = redis_crlf(buf, len, *pp);
    if (crlf <= 0) return crlf == 0 ? PARSE_AGAIN : rq_error(ps, "expected CRLF after bulk data");
    *pp += 2;
    return rq_arg_done(ps, m, true, m->len + *pp);
}

/* The steps in a switch rather than a table of functions: the compiler inlines them into one loop
 * (every request runs 5 or more). */
int redis_parse_req(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                    size_t *consumed)
{
    size_t p = 0;
    int rc;
    do {
        switch (ps->state) {
        case RQ_START: rc = rq_start(ps, m, buf, len, &p); break;
        case RQ_ARG_HDR: rc = rq_arg_hdr(ps, m, buf, len, &p); break;
        case RQ_ARG_WHOLE: rc = rq_arg_whole(ps, m, buf, len, &p, rq_kind(ps, m, ps->b)); break;
        case RQ_KEY_WHOLE: rc = rq_arg_whole(ps, m, buf, len, &p, ARG_KEY); break;
        case RQ_NAME_PREFIX: rc = rq_name_prefix(ps, m, buf, len, &p); break;
        case RQ_ARG_PIECE: rc = rq_arg_piece(ps, m, buf, len, &p); break;
        case RQ_ARG_CRLF: rc = rq_arg_crlf(ps, m, buf, len, &p); break;
        default: rc = rq_error(ps, "bad parser state"); break;
        }
    } while (rc == REDIS_CONT);
    *consumed = p; /* the contract: set on every return */
    return rc;
}
