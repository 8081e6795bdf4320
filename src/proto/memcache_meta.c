/*
 * memcache_meta.c - memcached's meta commands (mg, ms, md, ma, me; mn is answered in
 * memcache_proto.c) in the request parser, and the parser of their replies.
 *
 * Nothing is translated: a meta request goes to its key's server as it came, and the client gets
 * that server's reply as it came. The proxy reads only what it needs to route and to keep a shared
 * server connection in step (notes/memcache-meta.md):
 *   - the key (token 1), for routing exactly as a text request's key; with a b flag it is base64,
 *     and the decoded bytes (what memcached stores) are routed (mc_b64_decode, into msg_own);
 *     a key that cannot be routed (missing, over 250 bytes, not decodable) leaves nkeys 0: any
 *     server answers memcached's own error;
 *   - ms <datalen> and the token count, to frame the data as memcached will: when memcached reads
 *     the data (key within 250 bytes, a datalen it accepts, under 20 tokens) the proxy forwards
 *     exactly datalen + 2 bytes unread; otherwise it answers memcached's error itself and never
 *     forwards the line (a misjudged frame would swallow other clients' bytes on the connection);
 *   - a q flag: the request is quiet, memcached may answer nothing, so the proxy appends "mn\r\n"
 *     (msg.tail) and reads the server's reply up to its "MN", which it cuts (msg.trim): every
 *     forwarded request still gets exactly one reply message (maybe empty for the client).
 * memcached's line is a C string: it ends at a NUL byte, and so it does here (MQ_NUL).
 *
 * Request state (ps->d bits MC_META_BIT(n), memcache.h): the flags below and the number of
 * argument tokens memcached sees (capped at 31); ps->b the ms datalen.
 *
 * Replies (parse_state.opts: MC_RSP_META, maybe MC_RSP_TERM): "VA <size> <flags>*" then size
 * bytes and "\r\n" (checked); HD, EN, NF, NS, EX, ME, OK (-o meta_response_old), ERROR,
 * CLIENT_ERROR and SERVER_ERROR with free text to the line's end; nothing else. Under MC_RSP_TERM
 * the message is that reply then an "MN" line, or the "MN" line alone (memcached suppressed the
 * reply); the MN line is cut (msg.trim). Anything else after the reply is a PARSE_ERROR: the
 * server connection is out of step. State: state = RM_*, b = VA data bytes to come, c = bytes of
 * the current line, d = RMF_*, off = phase of the data (mc_data).
 *
 * Threads: the worker owning the connection (parse_state) and the msg.
 */
#include "config.h"
#include "proto/memcache_token.h"

#include <string.h>

#define MQ_B       MC_META_BIT(0)  /* a b flag (me: token 2 is "b"): the key is base64 */
#define MQ_Q       MC_META_BIT(1)  /* a q flag: quiet */
#define MQ_NOKEY   MC_META_BIT(2)  /* the key token is over MC_KEY_MAX bytes */
#define MQ_LEN_OK  MC_META_BIT(3)  /* ms: a datalen memcached accepts, in ps->b */
#define MQ_LEN_BIG MC_META_BIT(4)  /* ms: a datalen token over MC_KEY_MAX bytes */
#define MQ_NUL     MC_META_BIT(5)  /* a NUL byte: memcached's line ended there */
#define MQ_NTOK_SHIFT 24           /* MC_META_BIT(8..12): argument tokens memcached sees */
#define MQ_NTOK_MASK ((uint64_t)31 << MQ_NTOK_SHIFT)

/* memcached keeps 24 tokens of a line, the last the unsplit rest: flags are tokens before 23 */
#define MQ_FLAG_TOKENS 23
/* memcached refuses a meta line of more tokens than this, counting the rest (the line's end) */
#define MQ_MAX_TOKENS 20

static const uint8_t MQ_TERM[] = "mn\r\n";
static const char BAD_FORMAT[] = "bad command line format";

static uint32_t meta_nargs(const struct parse_state *ps)
{
    return (uint32_t)((ps->d & MQ_NTOK_MASK) >> MQ_NTOK_SHIFT);
}

/* The key: routed later (at the line's end a b flag may have turned it into base64). */
static int meta_key(struct parse_state *ps, struct msg *m, const uint8_t *tok, size_t len, uint64_t off)
{
    if (tok == NULL) {
        ps->d |= MQ_NOKEY;
        return MC_STEP_CONT;
    }
    int rc = msg_add_key(m, tok, (uint32_t)len, off, off + len);
    return rc < 0 ? mc_fail(ps, msg_add_key_error(rc)) : MC_STEP_CONT;
}

/* Where the first NUL byte of tok is, or len (a flag is a byte or a few: no libc call for it). */
static inline size_t nul_at(const uint8_t *tok, size_t len)
{
    if (len > 8) {
        const uint8_t *nul = memchr(tok, '\0', len);
        return nul == NULL ? len : (size_t)(nul - tok);
    }
    size_t i = 0;
    while (i < len && tok[i] != '\0') i++;
    return i;
}

int mc_meta_arg(struct parse_state *ps, struct msg *m, const uint8_t *tok, size_t len, uint64_t off,
                uint8_t first)
{
    if (ps->d & MQ_NUL) return MC_STEP_CONT; /* past memcached's line end */
    if (tok != NULL) {
        size_t nul = nul_at(tok, len);
        if (nul < len) {
            ps->d |= MQ_NUL;
            len = nul;
            if (len == 0) return MC_STEP_CONT; /* no token at all */
        }
        first = tok[0];
    }
    uint32_t idx = meta_nargs(ps) + 1; /* the token's index in the line: 1 is the key */
    if (idx < 31) ps->d += (uint64_t)1 << MQ_NTOK_SHIFT;
    if (idx == 1) return meta_key(ps, m, tok, len, off);
    if (m->cmd == MC_CMD_ME) { /* me <key> [b]: only an exact "b" there */
        if (idx == 2 && tok != NULL && len == 1 && first == 'b') ps->d |= MQ_B;
        return MC_STEP_CONT;
    }
    if (m->cmd == MC_CMD_MS && idx == 2) {
        uint32_t n;
        if (tok == NULL) ps->d |= MQ_LEN_BIG;
        else if (mc_parse_strtol32(tok, len, &n)) {
            ps->d |= MQ_LEN_OK;
            ps->b = n;
        }
        return MC_STEP_CONT;
    }
    if (idx < MQ_FLAG_TOKENS) { /* a flag: its first byte names it, whatever its length */
        if (first == 'q') ps->d |= MQ_Q;
        else if (first == 'b') ps->d |= MQ_B;
    }
    return MC_STEP_CONT;
}

static void meta_reject(struct msg *m, uint8_t kind, const char *reason)
{
    m->reject = kind;
    m->reject_reason = reason;
}

/* ms: whether memcached reads the data (MC_META_DATA) or answers the line alone, in its order of
 * checks (the proxy then answers with its text: PARSE_DONE with m->reject). */
static int ms_frame(struct parse_state *ps, struct msg *m)
{
    uint32_t nargs = meta_nargs(ps);
    if (nargs == 0) meta_reject(m, REJECT_ERROR, NULL);
    else if ((ps->d & MQ_NOKEY) || nargs == 1) meta_reject(m, REJECT_CLIENT_ERROR, BAD_FORMAT);
    else if (nargs + 2 > MQ_MAX_TOKENS) meta_reject(m, REJECT_CLIENT_ERROR, "options flags too long");
    else if (ps->d & MQ_LEN_BIG) return mc_fail(ps, BAD_FORMAT); /* the one we cannot read */
    else if (!(ps->d & MQ_LEN_OK)) meta_reject(m, REJECT_CLIENT_ERROR, BAD_FORMAT);
    else return MC_META_DATA;
    return PARSE_DONE;
}

/* With a b flag, the key's decoded bytes are what memcached stores: they are routed. */
static int meta_decode_key(struct parse_state *ps, struct msg *m)
{
    struct msg_key *k = &m->keys[0];
    uint8_t out[MC_KEY_MAX / 4 * 3 + 3];
    size_t n = mc_b64_decode(k->ptr, k->len, out);
    if (n == 0) {
        m->nkeys = 0; /* memcached refuses it, on any server */
        return PARSE_DONE;
    }
    uint8_t *own = msg_own(m, n);
    if (own == NULL) return mc_fail(ps, "out of memory");
    memcpy(own, out, n);
    k->ptr = own;
    k->len = (uint32_t)n;
    return PARSE_DONE;
}

int mc_meta_eol(struct parse_state *ps, struct msg *m)
{
    int rc = PARSE_DONE;
    if (m->cmd == MC_CMD_MS) {
        rc = ms_frame(ps, m);
        if (rc == PARSE_ERROR || m->reject != REJECT_NONE) return rc;
        ps->b += 2; /* the data and its "\r\n", or whatever two bytes come */
    }
    if (m->nkeys == 1 && (ps->d & MQ_B) && meta_decode_key(ps, m) == PARSE_ERROR) return PARSE_ERROR;
    m->rsp_opts = MC_RSP_META;
    if (ps->d & MQ_Q) {
        m->tail = MQ_TERM;
        m->tail_len = sizeof(MQ_TERM) - 1;
        m->rsp_opts |= MC_RSP_TERM;
    }
    return rc;
}

/* A base64 digit's value; '=' is a pad worth 0; -1: not in the alphabet (skipped). */
static int b64_value(uint8_t c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return c == '=' ? 0 : -1;
}

size_t mc_b64_decode(const uint8_t *in, size_t len, uint8_t *out)
{
    size_t valid = 0;
    for (size_t i = 0; i < len; i++) valid += b64_value(in[i]) >= 0;
    if (valid == 0 || valid % 4 != 0) return 0;
    uint32_t group = 0, n = 0, pads = 0;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_value(in[i]);
        if (v < 0) continue;
        pads += in[i] == '=';
        group = group << 6 | (uint32_t)v;
        if (++n < 4) continue;
        out[o++] = (uint8_t)(group >> 16);
        out[o++] = (uint8_t)(group >> 8);
        out[o++] = (uint8_t)group;
        group = n = 0;
        if (pads > 0) return pads > 2 ? 0 : o - pads; /* the first group with a pad ends it */
    }
    return o;
}

/* ---- replies ---- */

enum { RM_WORD = 0, RM_VA_SIZE, RM_TEXT, RM_TERM, RM_MN_EOL, RM_DATA = MC_STATE_DATA };

#define RMF_VA (1u << 0) /* the reply is a VA: its data follows the line */

struct meta_word {
    const char *word;
    uint8_t len;
    uint8_t type; /* enum msg_rsp_type */
};

#define MW(w, type) { w, sizeof(w) - 1, type }
static const struct meta_word meta_words[] = { /* the two-byte ones first, in meta_lookup's order */
    MW("VA", RSP_MC_VA), MW("HD", RSP_MC_HD), MW("EN", RSP_MC_EN), MW("NF", RSP_MC_NF),
    MW("NS", RSP_MC_NS), MW("EX", RSP_MC_EX), MW("ME", RSP_MC_ME), MW("MN", RSP_MC_MN),
    MW("OK", RSP_MC_OK), MW("ERROR", RSP_MC_ERROR), MW("CLIENT_ERROR", RSP_MC_CLIENT_ERROR),
    MW("SERVER_ERROR", RSP_MC_SERVER_ERROR),
};
#undef MW

/* The reply is complete: the message too, or under MC_RSP_TERM its MN line follows. */
static int meta_complete(struct parse_state *ps)
{
    if (!(ps->opts & MC_RSP_TERM)) return PARSE_DONE;
    ps->state = RM_TERM;
    ps->c = 0;
    return MC_STEP_CONT;
}

/* The reply word tok[0..len): the meta words by their two bytes, the rest in the table. */
static const struct meta_word *meta_lookup(const uint8_t *tok, size_t len)
{
    if (len == 2) {
        switch (tok[0] << 8 | tok[1]) {
        case 'V' << 8 | 'A': return &meta_words[0];
        case 'H' << 8 | 'D': return &meta_words[1];
        case 'E' << 8 | 'N': return &meta_words[2];
        case 'N' << 8 | 'F': return &meta_words[3];
        case 'N' << 8 | 'S': return &meta_words[4];
        case 'E' << 8 | 'X': return &meta_words[5];
        case 'M' << 8 | 'E': return &meta_words[6];
        case 'M' << 8 | 'N': return &meta_words[7];
        default: break;
        }
    }
    for (size_t i = 8; i < sizeof(meta_words) / sizeof(meta_words[0]); i++)
        if (meta_words[i].len == len && proto_bytes_equal(meta_words[i].word, tok, len)) return &meta_words[i];
    return NULL;
}

/* The first word of a line (RM_WORD, RM_TERM). */
static int meta_word(struct parse_state *ps, struct msg *m, const uint8_t *tok, size_t len)
{
    const struct meta_word *w = meta_lookup(tok, len);
    bool mn = w != NULL && w->type == RSP_MC_MN;
    if (ps->state == RM_TERM && !mn) return mc_fail(ps, "bad reply after quiet request");
    if (w == NULL) return mc_fail(ps, "unknown reply");
    if (mn && !(ps->opts & MC_RSP_TERM)) return mc_fail(ps, "MN without a quiet request");
    if (ps->state == RM_WORD) m->rsp_type = w->type;
    ps->state = mn ? RM_MN_EOL : w->type == RSP_MC_VA ? RM_VA_SIZE : RM_TEXT;
    return MC_STEP_CONT;
}

static int meta_token(struct parse_state *ps, struct msg *m, const uint8_t *tok, size_t len)
{
    switch (ps->state) {
    case RM_VA_SIZE:
        if (!mc_parse_u64(tok, len, &ps->b)) return mc_fail(ps, "bad VA length");
        ps->d |= RMF_VA;
        ps->state = RM_TEXT; /* its flags */
        return MC_STEP_CONT;
    case RM_MN_EOL:
        return mc_fail(ps, "bad MN line");
    default:
        return meta_word(ps, m, tok, len);
    }
}

static int meta_eol(struct parse_state *ps, struct msg *m)
{
    switch (ps->state) {
    case RM_MN_EOL:
        if (ps->c > UINT8_MAX) return mc_fail(ps, "bad MN line");
        m->trim = (uint8_t)ps->c; /* the terminator's reply: not the client's */
        return PARSE_DONE;
    case RM_VA_SIZE:
        return mc_fail(ps, "bad VA line");
    case RM_TERM:
        return mc_fail(ps, "bad reply after quiet request");
    default:
        return mc_fail(ps, "empty reply line");
    }
}

static int meta_rsp_line(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                         size_t *pos)
{
    struct mc_tok t;
    if (ps->state == RM_TEXT) {
        size_t p = *pos;
        int rc;
        if (len - p >= 2 && buf[p] == '\r' && buf[p + 1] == '\n') { /* no flags (EN, HD, ...) */
            *pos = p + 2;
            rc = PARSE_DONE;
        } else {
            rc = mc_rsp_text(ps, buf, len, pos);
        }
        if (rc != PARSE_DONE) return rc;
        if (!(ps->d & RMF_VA)) return meta_complete(ps);
        ps->state = RM_DATA;
        return MC_STEP_CONT;
    }
    switch (mc_line_next(ps, buf, len, pos, true, &t)) {
    case MC_TOK_AGAIN:
        return PARSE_AGAIN;
    case MC_TOK_LONG:
        return mc_fail(ps, "reply token too long");
    case MC_TOK_WORD:
        return meta_token(ps, m, buf + t.start, t.end - t.start);
    case MC_TOK_EOL:
        return meta_eol(ps, m);
    default:
        return PARSE_ERROR;
    }
}

/* After a VA's data and its "\r\n". */
static int meta_data_done(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                          size_t *pos)
{
    (void)m;
    (void)buf;
    (void)len;
    (void)pos;
    return meta_complete(ps);
}

int mc_meta_parse_rsp(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                      size_t *consumed)
{
    return mc_run(ps, m, buf, len, consumed, meta_rsp_line, meta_data_done);
}
