/*
 * memcache_bin_req.c - incremental parser of memcached binary-protocol requests (the parse_req of
 * a connection whose first byte was 0x80, memcache_req.c), and the opcode table.
 *
 * A request is a 24-byte header, then extras, key and value (body length = their sum). The header
 * is taken whole, the extras and the value in whatever pieces arrive, the key whole (at most 250
 * bytes), so it points into consumed bytes. The header is checked in memcached's order:
 *   - magic not 0x80: the connection is closed, no reply (memcached does the same);
 *   - a body shorter than key + extras: "Unknown command", then closed;
 *   - a key over 250 bytes, or a request of the wrong shape for its opcode (mc_bin_ops: get with
 *     extras, a set without its 8 extras, a key where there must be none, ...): "Invalid
 *     arguments", then closed. memcached leaves the extra bytes of some of these unread and reads
 *     them as the next request, which on a shared server connection would desynchronise every
 *     client: the proxy never forwards them;
 *   - a body over MC_BIN_BODY_MAX: "Too large.", then closed;
 *   - an opcode the proxy does not serve (SASL, verbosity, range operations, anything unknown):
 *     "Unknown command", its body passed over, the connection kept;
 *   - a stat with a key (a group of per-server statistics that do not add up): refused, kept.
 * Those are PARSE_DONE with msg.reject set (and quit where the connection closes), answered by
 * mc_bin_local. A served request is PARSE_DONE with cmd MC_CMD_BINARY, the opcode's flags, its
 * key, and rsp_opts MC_RSP_BIN; a quiet keyed one also gets a NOOP request as its tail and
 * MC_RSP_TERM: memcached may answer nothing to it, so the NOOP's reply ends its reply message.
 *
 * State: state = RB_*, a = extras bytes to come, b = value bytes to come, c = key length.
 *
 * Threads: the worker owning the connection (parse_state) and the msg.
 */
#include "config.h"
#include "proto/memcache_bin.h"

#include <string.h>

#include "common/util.h"

enum { RB_HDR = MC_BIN_STATE_FIRST, RB_EXTRAS, RB_KEY, RB_VALUE };

/* The largest body the proxy reads (the core refuses a request over 1 GiB with its header, the
 * NOOP it may append, and room to spare). */
#define MC_BIN_BODY_MAX (((uint32_t)1 << 30) - 4096)

const char MC_BIN_TXT_UNKNOWN[] = "Unknown command";
const char MC_BIN_TXT_EINVAL[] = "Invalid arguments";
const char MC_BIN_TXT_STATS_ARG[] = "stats with arguments is not supported by the proxy (only stats)";
const char MC_BIN_TXT_TOO_LARGE[] = "Too large.";

const uint8_t MC_BIN_NOOP_REQ[MC_BIN_HDR_LEN] = { MC_BIN_REQ_MAGIC, MC_BIN_OP_NOOP };

#define W CMD_F_WRITE
#define OP(code, n, sh, q, f) [code] = { .name = n, .shape = MC_BIN_##sh, .quiet = q, .flags = f }
const struct mc_bin_op mc_bin_ops[256] = {
    OP(0x00, "get", GET, false, 0),        OP(0x09, "getq", GET, true, 0),
    OP(0x0c, "getk", GET, false, 0),       OP(0x0d, "getkq", GET, true, 0),
    OP(0x01, "set", STORE, false, W),      OP(0x11, "setq", STORE, true, W),
    OP(0x02, "add", STORE, false, W),      OP(0x12, "addq", STORE, true, W),
    OP(0x03, "replace", STORE, false, W),  OP(0x13, "replaceq", STORE, true, W),
    OP(0x04, "delete", DELETE, false, W),  OP(0x14, "deleteq", DELETE, true, W),
    OP(0x05, "incr", ARITH, false, W),     OP(0x15, "incrq", ARITH, true, W),
    OP(0x06, "decr", ARITH, false, W),     OP(0x16, "decrq", ARITH, true, W),
    OP(0x0e, "append", CONCAT, false, W),  OP(0x19, "appendq", CONCAT, true, W),
    OP(0x0f, "prepend", CONCAT, false, W), OP(0x1a, "prependq", CONCAT, true, W),
    OP(0x1c, "touch", TOUCH, false, W),
    OP(0x1d, "gat", TOUCH, false, W),      OP(0x1e, "gatq", TOUCH, true, W),
    OP(0x23, "gatk", TOUCH, false, W),     OP(0x24, "gatkq", TOUCH, true, W),
    OP(0x0a, "noop", BARE, false, CMD_F_LOCAL),
    OP(0x07, "quit", BARE, false, CMD_F_QUIT),
    OP(0x17, "quitq", BARE, false, CMD_F_QUIT),
    OP(0x0b, "version", BARE, false, CMD_F_ANY_SERVER),
    OP(0x08, "flush", FLUSH, false, CMD_F_FRAG_ALL | W),
    OP(0x18, "flushq", FLUSH, false, CMD_F_FRAG_ALL | W),
    OP(0x10, "stat", STAT, false, CMD_F_FRAG_ALL | CMD_F_FRAG_PARTIAL),
};
#undef OP
#undef W

static void reject(struct msg *m, const char *why, bool close)
{
    m->reject = why == MC_BIN_TXT_UNKNOWN ? REJECT_ERROR : REJECT_CLIENT_ERROR;
    m->reject_reason = why;
    m->quit = close;
    m->cmd_flags = 0;
}

/* Whether the parts of a request (extras, key, value lengths) fit its opcode's shape. */
static bool shape_ok(uint8_t shape, uint32_t ext, uint32_t key, uint32_t value)
{
    switch (shape) {
    case MC_BIN_GET:
    case MC_BIN_DELETE: return ext == 0 && key > 0 && value == 0;
    case MC_BIN_STORE: return ext == 8 && key > 0;
    case MC_BIN_ARITH: return ext == 20 && key > 0 && value == 0;
    case MC_BIN_CONCAT: return ext == 0 && key > 0;
    case MC_BIN_TOUCH: return ext == 4 && key > 0 && value == 0;
    case MC_BIN_BARE: return ext == 0 && key == 0 && value == 0;
    case MC_BIN_FLUSH: return (ext == 0 || ext == 4) && key == 0 && value == 0;
    case MC_BIN_STAT: return ext == 0 && value == 0;
    default: return true; /* unknown: passed over whatever it holds */
    }
}

/* The request is complete. A connection's first one goes through local(), which makes the
 * client's session binary (its later requests then see the variant). */
static int done(struct parse_state *ps, struct msg *m)
{
    if (ps->mode == MC_MODE_BIN_FIRST) {
        m->cmd_flags |= CMD_F_LOCAL;
        ps->mode = MC_MODE_BINARY;
    }
    return PARSE_DONE;
}

/* The header h (24 bytes, consumed): checks it and sets up the parts to come. */
static int on_header(struct parse_state *ps, struct msg *m, const uint8_t *h)
{
    const struct mc_bin_op *op = &mc_bin_ops[h[MC_BIN_OFF_OPCODE]];
    uint32_t key = mc_bin_u16(h + MC_BIN_OFF_KEYLEN), ext = h[MC_BIN_OFF_EXTLEN];
    uint32_t body = mc_bin_u32(h + MC_BIN_OFF_BODY);
    m->cmd = MC_CMD_BINARY;
    m->cmd_flags = op->flags;
    m->name = (const uint8_t *)(op->name != NULL ? op->name : "unknown");
    m->name_len = (uint32_t)strlen((const char *)m->name);
    m->rsp_opts = MC_RSP_BIN;
    if (body < key + ext) reject(m, MC_BIN_TXT_UNKNOWN, true);
    else if (key > MC_KEY_MAX || !shape_ok(op->shape, ext, key, body - key - ext))
        reject(m, MC_BIN_TXT_EINVAL, true);
    else if (body > MC_BIN_BODY_MAX) reject(m, MC_BIN_TXT_TOO_LARGE, true);
    if (m->quit) return done(ps, m); /* closed: the body is never read */
    if (op->shape == MC_BIN_UNKNOWN || (op->shape == MC_BIN_STAT && key > 0)) {
        reject(m, op->shape == MC_BIN_STAT ? MC_BIN_TXT_STATS_ARG : MC_BIN_TXT_UNKNOWN, false);
        ps->b = body; /* passed over, the connection kept */
        ps->state = RB_VALUE;
        return MC_STEP_CONT;
    }
    if (op->flags & CMD_F_QUIT) {
        m->quit = true;
        m->noreply = h[MC_BIN_OFF_OPCODE] == MC_BIN_OP_QUITQ; /* closed without a reply */
    }
    if (op->quiet) {
        m->tail = MC_BIN_NOOP_REQ;
        m->tail_len = MC_BIN_HDR_LEN;
        m->rsp_opts |= MC_RSP_TERM;
    }
    ps->a = ext;
    ps->c = key;
    ps->b = body - key - ext;
    ps->state = RB_EXTRAS;
    return MC_STEP_CONT;
}

/* Passes over up to *want bytes (extras, a value): true once all are consumed. */
static bool pass_over(uint64_t *want, size_t len, size_t *pos)
{
    size_t n = (size_t)(*want < len - *pos ? *want : len - *pos);
    *pos += n;
    *want -= n;
    return *want == 0;
}

static int step(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len, size_t *pos)
{
    switch (ps->state) {
    case RB_HDR:
        if (*pos < len && buf[*pos] != MC_BIN_REQ_MAGIC) { /* as memcached: closed, no reply */
            m->cmd = MC_CMD_BINARY;
            m->reject = REJECT_ERROR;
            m->quit = m->noreply = true;
            *pos += 1;
            return done(ps, m);
        }
        if (len - *pos < MC_BIN_HDR_LEN) return PARSE_AGAIN;
        *pos += MC_BIN_HDR_LEN;
        return on_header(ps, m, buf + *pos - MC_BIN_HDR_LEN);
    case RB_EXTRAS:
        if (!pass_over(&ps->a, len, pos)) return PARSE_AGAIN;
        ps->state = RB_KEY;
        return MC_STEP_CONT;
    case RB_KEY:
        if (len - *pos < ps->c) return PARSE_AGAIN;
        if (ps->c > 0) {
            uint64_t off = m->len + *pos;
            int rc = msg_add_key(m, buf + *pos, (uint32_t)ps->c, off, off + ps->c);
            if (rc < 0) return mc_fail(ps, msg_add_key_error(rc));
            *pos += ps->c;
        }
        ps->state = RB_VALUE;
        return MC_STEP_CONT;
    default: /* RB_VALUE */
        if (!pass_over(&ps->b, len, pos)) return PARSE_AGAIN;
        return done(ps, m);
    }
}

int mc_bin_parse_req(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *consumed)
{
    size_t pos = 0;
    int rc = MC_STEP_CONT;
    if (ps->state < MC_BIN_STATE_FIRST) ps->state = RB_HDR; /* a new message (reset to 0) */
    while (rc == MC_STEP_CONT) rc = step(ps, m, buf, len, &pos);
    *consumed = pos;
    return rc;
}
