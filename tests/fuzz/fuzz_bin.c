/*
 * fuzz_bin.c - the checks of memcached binary-protocol messages in the fuzz feeds (fuzz_feed.h:
 * fz_check_bin_req, fz_check_bin_rsp), against a reading of the protocol written here from
 * memcached's rules as memcache_bin_req.c's and memcache_bin_rsp.c's comments state them, not
 * from their code or their opcode table:
 *   - a request is a 24-byte header (magic 0x80) then extras, key and value; the proxy's verdict
 *     on the header (forwarded; refused and the connection kept, the body passed over; refused
 *     and closed, the body never read; bad magic: closed without a reply) is the reference's;
 *   - its name is the opcode's (static text, never bytes of the message), its key (at most one,
 *     at most 250 bytes) the header's key bytes, the first message of a connection goes through
 *     local() (CMD_F_LOCAL), a refusal's reply is a binary packet with the request's opcode and
 *     opaque, a quiet keyed request carries a NOOP request as its tail and parses again as itself
 *     then that NOOP;
 *   - a reply message is whole packets (magic 0x81): one, or a stat sequence up to its first
 *     packet that is not a keyed success, or under MC_RSP_TERM every packet up to the NOOP's
 *     reply, which is cut (trim 24) and is a bare NOOP reply; its integer is its first status.
 *
 * Threads: the fuzzer's only.
 */
#include "config.h"

#include <string.h>

#include "fuzz_feed.h"
#include "proto/memcache_bin.h"

/* The largest body the proxy reads (memcache_bin_req.c: 1 GiB less room for the header, the
 * NOOP and some to spare). */
#define FZB_BODY_MAX (((uint32_t)1 << 30) - 4096)

enum fzb_shape {
    FZB_UNKNOWN = 0, /* not served: refused, the body passed over */
    FZB_KEY,         /* `ext` extras, a key, no value */
    FZB_KEY_VALUE,   /* `ext` extras, a key, any value */
    FZB_BARE,        /* nothing */
    FZB_FLUSH,       /* 0 or 4 extras, nothing else */
    FZB_STAT,        /* no extras, no value; a key is refused (the connection kept) */
};

struct fzb_op {
    const char *name;
    uint8_t shape, ext;
    bool quiet;      /* memcached may answer nothing */
};

#define Q true
static const struct fzb_op fzb_ops[256] = {
    [0x00] = { "get", FZB_KEY, 0, 0 },       [0x09] = { "getq", FZB_KEY, 0, Q },
    [0x0c] = { "getk", FZB_KEY, 0, 0 },      [0x0d] = { "getkq", FZB_KEY, 0, Q },
    [0x01] = { "set", FZB_KEY_VALUE, 8, 0 }, [0x11] = { "setq", FZB_KEY_VALUE, 8, Q },
    [0x02] = { "add", FZB_KEY_VALUE, 8, 0 }, [0x12] = { "addq", FZB_KEY_VALUE, 8, Q },
    [0x03] = { "replace", FZB_KEY_VALUE, 8, 0 }, [0x13] = { "replaceq", FZB_KEY_VALUE, 8, Q },
    [0x04] = { "delete", FZB_KEY, 0, 0 },    [0x14] = { "deleteq", FZB_KEY, 0, Q },
    [0x05] = { "incr", FZB_KEY, 20, 0 },     [0x15] = { "incrq", FZB_KEY, 20, Q },
    [0x06] = { "decr", FZB_KEY, 20, 0 },     [0x16] = { "decrq", FZB_KEY, 20, Q },
    [0x0e] = { "append", FZB_KEY_VALUE, 0, 0 }, [0x19] = { "appendq", FZB_KEY_VALUE, 0, Q },
    [0x0f] = { "prepend", FZB_KEY_VALUE, 0, 0 }, [0x1a] = { "prependq", FZB_KEY_VALUE, 0, Q },
    [0x1c] = { "touch", FZB_KEY, 4, 0 },     [0x1d] = { "gat", FZB_KEY, 4, 0 },
    [0x1e] = { "gatq", FZB_KEY, 4, Q },      [0x23] = { "gatk", FZB_KEY, 4, 0 },
    [0x24] = { "gatkq", FZB_KEY, 4, Q },
    [0x07] = { "quit", FZB_BARE, 0, 0 },     [0x17] = { "quitq", FZB_BARE, 0, 0 },
    [0x0a] = { "noop", FZB_BARE, 0, 0 },     [0x0b] = { "version", FZB_BARE, 0, 0 },
    [0x08] = { "flush", FZB_FLUSH, 0, 0 },   [0x18] = { "flushq", FZB_FLUSH, 0, 0 },
    [0x10] = { "stat", FZB_STAT, 0, 0 },
};
#undef Q

static const char FZB_UNKNOWN_TXT[] = "Unknown command";
static const char FZB_EINVAL_TXT[] = "Invalid arguments";
static const char FZB_TOO_LARGE_TXT[] = "Too large.";
static const char FZB_STATS_ARG_TXT[] = "stats with arguments is not supported by the proxy (only stats)";

static uint32_t fzb_u16(const uint8_t *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

static uint32_t fzb_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Whether a request of op's shape may have these parts. */
static bool fzb_shape_ok(const struct fzb_op *op, uint32_t ext, uint32_t key, uint32_t value)
{
    switch (op->shape) {
    case FZB_KEY: return ext == op->ext && key > 0 && value == 0;
    case FZB_KEY_VALUE: return ext == op->ext && key > 0;
    case FZB_BARE: return ext == 0 && key == 0 && value == 0;
    case FZB_FLUSH: return (ext == 0 || ext == 4) && key == 0 && value == 0;
    case FZB_STAT: return ext == 0 && value == 0;
    default: return true;
    }
}

/* The reference's verdict on request header h: NULL (served), or the refusal's text, with *close
 * set when the connection closes (its body is then never read). */
static const char *fzb_verdict(const uint8_t *h, bool *close)
{
    const struct fzb_op *op = &fzb_ops[h[1]];
    uint32_t key = fzb_u16(h + 2), ext = h[4], body = fzb_u32(h + 8);
    *close = true;
    if (key + ext > body) return FZB_UNKNOWN_TXT;
    if (key > MC_KEY_MAX || !fzb_shape_ok(op, ext, key, body - key - ext)) return FZB_EINVAL_TXT;
    if (body > FZB_BODY_MAX) return FZB_TOO_LARGE_TXT;
    *close = false;
    if (op->shape == FZB_UNKNOWN) return FZB_UNKNOWN_TXT;
    if (op->shape == FZB_STAT && key > 0) return FZB_STATS_ARG_TXT;
    return NULL;
}

static uint32_t fzb_status(const char *why)
{
    if (strcmp(why, FZB_EINVAL_TXT) == 0) return 0x0004;
    if (strcmp(why, FZB_TOO_LARGE_TXT) == 0) return 0x0003;
    if (strcmp(why, FZB_STATS_ARG_TXT) == 0) return 0x0083;
    return 0x0081;
}

/* A refusal (h: the request's header): the reason, and its reply: one packet with the request's
 * opcode and opaque, the status of the reason, the reason as its body. */
static void fzb_check_reject(const struct fz_feed *f, const struct msg *m, const uint8_t *h,
                             const char *why)
{
    FZ_CHECK(m->reject != REJECT_NONE && m->reject_reason != NULL && strcmp(m->reject_reason, why) == 0);
    FZ_CHECK(!m->noreply && m->tail_len == 0);
    char buf[256];
    size_t n = f->ops->reject_reply(m, buf, sizeof(buf));
    const uint8_t *r = (const uint8_t *)buf;
    size_t body = strlen(why);
    FZ_CHECK(n == MC_BIN_HDR_LEN + body && memcmp(buf + MC_BIN_HDR_LEN, why, body) == 0);
    FZ_CHECK(r[0] == MC_BIN_RSP_MAGIC && r[1] == h[1] && fzb_u16(r + 2) == 0 && r[4] == 0 && r[5] == 0);
    FZ_CHECK(fzb_u16(r + 6) == fzb_status(why) && fzb_u32(r + 8) == n - MC_BIN_HDR_LEN);
    FZ_CHECK(memcmp(r + 12, h + 12, 4) == 0);
    static const uint8_t zero[8] = { 0 };
    FZ_CHECK(memcmp(r + 16, zero, 8) == 0); /* cas */
}

/* The key: the header's key bytes, inside the msg where they were read. */
static void fzb_check_key(const struct msg *m, const uint8_t *h)
{
    uint32_t klen = fzb_u16(h + 2), start = MC_BIN_HDR_LEN + h[4];
    const struct msg_key *k = &m->keys[0];
    uint64_t off;
    FZ_CHECK(m->nkeys == 1 && k->len == klen && klen <= MC_KEY_MAX);
    FZ_CHECK(k->start == start && k->end == start + klen);
    FZ_CHECK(fz_offset_in(m, k->ptr, k->len, &off) && off == k->start);
}

/* A quiet request with its NOOP, parsed again from a fresh connection: the request (the
 * connection's first, so CMD_F_LOCAL), then the NOOP, which the proxy answers itself. */
static void fzb_check_tail(const struct fz_feed *f, const struct msg *m)
{
    struct msg *out[2];
    fz_reparse_tail(f, m, out);
    FZ_CHECK((out[0]->cmd_flags & CMD_F_LOCAL) && out[0]->nkeys == 1);
    FZ_CHECK(out[1]->cmd == MC_CMD_BINARY && out[1]->len == MC_BIN_HDR_LEN && out[1]->tail_len == 0);
    FZ_CHECK(out[1]->cmd_flags == CMD_F_LOCAL && out[1]->reject == REJECT_NONE && !out[1]->quit);
    FZ_CHECK(out[1]->name_len == 4 && memcmp(out[1]->name, "noop", 4) == 0);
    msg_put(f->re.pp, out[0]);
    msg_put(f->re.pp, out[1]);
}

/* A request the reference serves: forwarded with a binary reply, or quit / quitq. */
static void fzb_check_served(const struct fz_feed *f, const struct msg *m, const uint8_t *h)
{
    static const uint8_t noop[MC_BIN_HDR_LEN] = { MC_BIN_REQ_MAGIC, 0x0a };
    const struct fzb_op *op = &fzb_ops[h[1]];
    FZ_CHECK(m->reject == REJECT_NONE && (m->rsp_opts & MC_RSP_BIN));
    FZ_CHECK(m->len - m->tail_len == MC_BIN_HDR_LEN + (uint64_t)fzb_u32(h + 8));
    bool quit = h[1] == 0x07 || h[1] == 0x17;
    FZ_CHECK(m->quit == quit && m->noreply == (h[1] == 0x17));
    FZ_CHECK(!quit || (m->cmd_flags & CMD_F_QUIT));
    if (op->shape == FZB_KEY || op->shape == FZB_KEY_VALUE) fzb_check_key(m, h);
    else FZ_CHECK(m->nkeys == 0);
    /* a keyless request is answered by the proxy, or goes to any server, or to all */
    FZ_CHECK(m->nkeys == 1 || (m->cmd_flags & (CMD_F_LOCAL_MASK | CMD_F_ANY_SERVER | CMD_F_FRAG_ALL)));
    FZ_CHECK(m->rsp_opts == (op->quiet ? (MC_RSP_BIN | MC_RSP_TERM) : MC_RSP_BIN));
    if (!op->quiet) {
        FZ_CHECK(m->tail_len == 0);
        return;
    }
    FZ_CHECK(m->tail_len == MC_BIN_HDR_LEN && memcmp(m->tail, noop, MC_BIN_HDR_LEN) == 0);
    if (!f->nested) fzb_check_tail(f, m);
}

void fz_check_bin_req(const struct fz_feed *f, const struct msg *m, const uint8_t *b)
{
    FZ_CHECK(m->rsp_type == RSP_NONE && m->nelems == 0 && m->trim == 0 && m->nkeys <= 1);
    bool first = f->nmsgs == 0; /* the connection's first message picked the binary protocol */
    if (b[0] != MC_BIN_REQ_MAGIC) { /* closed, no reply, as memcached */
        FZ_CHECK(!first && m->len == 1 && m->reject != REJECT_NONE && m->quit && m->noreply);
        FZ_CHECK(m->nkeys == 0 && m->cmd_flags == 0 && m->tail_len == 0);
        return;
    }
    FZ_CHECK(m->len >= MC_BIN_HDR_LEN);
    const struct fzb_op *op = &fzb_ops[b[1]];
    const char *name = op->name != NULL ? op->name : "unknown";
    uint64_t off;
    FZ_CHECK(m->name != NULL && m->name_len == strlen(name) && memcmp(m->name, name, m->name_len) == 0);
    FZ_CHECK(!fz_offset_in(m, m->name, m->name_len, &off)); /* static: no byte of the message */
    FZ_CHECK(!first || (m->cmd_flags & CMD_F_LOCAL));
    bool close;
    const char *why = fzb_verdict(b, &close);
    if (why == NULL) {
        fzb_check_served(f, m, b);
        return;
    }
    fzb_check_reject(f, m, b, why);
    FZ_CHECK(m->quit == close && m->nkeys == 0);
    FZ_CHECK(m->cmd_flags == (first ? CMD_F_LOCAL : 0u));
    /* closed: the header alone; kept: the body passed over */
    FZ_CHECK(m->len == MC_BIN_HDR_LEN + (close ? 0 : (uint64_t)fzb_u32(b + 8)));
}

void fz_check_bin_rsp(const struct fz_feed *f, const struct msg *m, const uint8_t *b)
{
    bool term = (f->opts & MC_RSP_TERM) != 0;
    FZ_CHECK(m->rsp_type == RSP_MC_BIN && m->nkeys == 0 && m->nelems == 0 && !m->rsp_fatal);
    FZ_CHECK(m->tail_len == 0 && m->trim == (term ? MC_BIN_HDR_LEN : 0));
    FZ_CHECK(term || m->len > 0);
    int64_t first_status = -1;
    for (uint64_t at = 0; at < m->len;) {
        const uint8_t *h = b + at;
        FZ_CHECK(m->len - at >= MC_BIN_HDR_LEN && h[0] == MC_BIN_RSP_MAGIC);
        uint64_t end = at + MC_BIN_HDR_LEN + fzb_u32(h + 8);
        FZ_CHECK(end <= m->len);
        if (first_status < 0) first_status = fzb_u16(h + 6);
        bool more = h[1] == 0x10 && fzb_u16(h + 2) != 0 && fzb_u16(h + 6) == 0; /* a stat */
        if (term) FZ_CHECK(h[1] != 0x0a); /* the NOOP's reply ends the message */
        else FZ_CHECK(more == (end < m->len));
        at = end;
    }
    if (term) { /* what was cut: the reply to the proxy's NOOP, a bare header */
        const uint8_t *t = f->stream + f->cur_start + m->len;
        FZ_CHECK(t[0] == MC_BIN_RSP_MAGIC && t[1] == 0x0a && fzb_u32(t + 8) == 0);
        if (m->len == 0) first_status = fzb_u16(t + 6);
    }
    FZ_CHECK(m->integer == first_status);
}
