/*
 * memcache_rsp.c - incremental parser of memcached ASCII replies (proto.h parse_rsp).
 *
 * Replies: "VALUE <key> <flags> <bytes> [<cas>]\r\n<data>\r\n" blocks then "END\r\n" (RSP_MC_END;
 * the data is consumed in pieces, each block is recorded as an element when ps->want_elems),
 * "STAT <name> <value>\r\n" lines then "END\r\n" (stats: RSP_MC_END, the lines as text),
 * STORED, NOT_STORED, EXISTS, NOT_FOUND, DELETED, TOUCHED, OK, a number (incr/decr), and the lines
 * with free text: VERSION, ERROR, CLIENT_ERROR, SERVER_ERROR. The reply of a meta command or of a
 * binary request (its parse_state.opts set) has a parser of its own (memcache_meta.c,
 * memcache_bin_rsp.c). Anything else, a status word with
 * extra tokens, a line over MC_LINE_MAX bytes or a data block not followed by "\r\n" is a
 * PARSE_ERROR (the server connection is out of sync). No memcached reply is rsp_fatal: its
 * SERVER_ERRORs ("out of memory storing object", "object too large for cache", ...) are about one
 * request, not about the server.
 *
 * State (struct parse_state): state = RS_*, a = next field of a VALUE line, b = data bytes still
 * to come, c = bytes of the current line consumed so far, d = RSF_* flags, elem_start = offset of
 * the VALUE block being read, off = phase of a data block (mc_data).
 *
 * Threads: the worker owning the connection (parse_state) and the msg.
 */
#include "config.h"
#include "proto/memcache_bin.h"
#include "proto/memcache_token.h"

#include <string.h>

#include "common/util.h"

enum { RS_WORD = 0, RS_VALUE, RS_EOL, RS_TEXT, RS_STAT, RS_DATA = MC_STATE_DATA };

#define RSF_IN_VALUES (1u << 0)  /* after a VALUE block: only VALUE or END may follow */
#define RSF_IN_STATS  (1u << 1)  /* after a STAT line: only STAT or END may follow */

struct mc_rsp_word {
    const char *word;
    uint8_t len;     /* strlen(word) */
    uint8_t type;    /* enum msg_rsp_type */
    uint8_t next;    /* RS_EOL (nothing after the word), RS_TEXT (free text), RS_VALUE or RS_STAT
                      * (free text, then more lines) */
};

#define MC_WORD(w, type, next) { w, sizeof(w) - 1, type, next }
static const struct mc_rsp_word mc_rsp_words[] = {
    MC_WORD("VALUE", RSP_MC_END, RS_VALUE),
    MC_WORD("END", RSP_MC_END, RS_EOL),
    MC_WORD("STORED", RSP_MC_STORED, RS_EOL),
    MC_WORD("NOT_STORED", RSP_MC_NOT_STORED, RS_EOL),
    MC_WORD("EXISTS", RSP_MC_EXISTS, RS_EOL),
    MC_WORD("NOT_FOUND", RSP_MC_NOT_FOUND, RS_EOL),
    MC_WORD("DELETED", RSP_MC_DELETED, RS_EOL),
    MC_WORD("TOUCHED", RSP_MC_TOUCHED, RS_EOL),
    MC_WORD("OK", RSP_MC_OK, RS_EOL),
    MC_WORD("VERSION", RSP_MC_VERSION, RS_TEXT),
    MC_WORD("ERROR", RSP_MC_ERROR, RS_TEXT),
    MC_WORD("CLIENT_ERROR", RSP_MC_CLIENT_ERROR, RS_TEXT),
    MC_WORD("SERVER_ERROR", RSP_MC_SERVER_ERROR, RS_TEXT),
    MC_WORD("STAT", RSP_MC_END, RS_STAT), /* last: only stats, which is rare, looks this far */
};
#undef MC_WORD

static int on_word(struct parse_state *ps, struct msg *m, const uint8_t *tok, size_t len,
                   uint64_t off)
{
    const struct mc_rsp_word *w = NULL;
    for (size_t i = 0; i < NC_ARRAY_LEN(mc_rsp_words); i++) {
        if (mc_rsp_words[i].len == len && proto_bytes_equal(mc_rsp_words[i].word, tok, len)) {
            w = &mc_rsp_words[i];
            break;
        }
    }
    if ((ps->d & RSF_IN_VALUES) && (w == NULL || w->type != RSP_MC_END || w->next == RS_STAT))
        return mc_fail(ps, "bad reply after VALUE");
    if ((ps->d & RSF_IN_STATS) && (w == NULL || w->type != RSP_MC_END || w->next == RS_VALUE))
        return mc_fail(ps, "bad reply after STAT");
    if (w == NULL) {
        uint64_t v;
        if (!mc_parse_u64(tok, len, &v)) return mc_fail(ps, "unknown reply");
        m->rsp_type = RSP_MC_NUMBER;
        m->integer = (int64_t)v;
        ps->state = RS_EOL;
        return MC_STEP_CONT;
    }
    m->rsp_type = w->type;
    ps->state = w->next;
    ps->a = 0;
    ps->elem_start = off;
    return MC_STEP_CONT;
}

static int on_value_field(struct parse_state *ps, struct msg *m, const uint8_t *tok, size_t len)
{
    uint32_t flags;
    uint64_t v;
    switch (ps->a++) {
    case 0:
        if (ps->want_elems && msg_add_elem(m, ps->elem_start, 0, tok, (uint32_t)len) < 0)
            return mc_fail(ps, "out of memory");
        return MC_STEP_CONT;
    case 1:
        return mc_parse_u32(tok, len, &flags) ? MC_STEP_CONT : mc_fail(ps, "bad VALUE flags");
    case 2:
        if (!mc_parse_u64(tok, len, &v)) return mc_fail(ps, "bad VALUE length");
        ps->b = v;
        return MC_STEP_CONT;
    case 3:
        return mc_parse_u64(tok, len, &v) ? MC_STEP_CONT : mc_fail(ps, "bad VALUE cas");
    default:
        return mc_fail(ps, "bad VALUE line");
    }
}

static int on_eol(struct parse_state *ps)
{
    switch (ps->state) {
    case RS_WORD:
        return mc_fail(ps, "empty reply line");
    case RS_VALUE:
        if (ps->a < 3) return mc_fail(ps, "bad VALUE line");
        ps->state = RS_DATA;
        return MC_STEP_CONT;
    default: /* RS_EOL */
        return PARSE_DONE;
    }
}

int mc_rsp_text(struct parse_state *ps, const uint8_t *buf, size_t len, size_t *pos)
{
    size_t p = *pos;
    const uint8_t *nl = memchr(buf + p, '\n', len - p);
    size_t end = nl == NULL ? len : (size_t)(nl - buf);
    if (ps->c + (end - p) > MC_LINE_MAX) return mc_fail(ps, "line too long");
    ps->c += end - p;
    *pos = nl == NULL ? len : end + 1;
    return nl == NULL ? PARSE_AGAIN : PARSE_DONE;
}

static int step_line(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *pos)
{
    struct mc_tok t;

    if (ps->state == RS_TEXT || ps->state == RS_STAT) {
        int rc = mc_rsp_text(ps, buf, len, pos);
        if (rc != PARSE_DONE || ps->state == RS_TEXT) return rc;
        ps->state = RS_WORD; /* a STAT line: more follow, then END */
        ps->d |= RSF_IN_STATS;
        ps->c = 0;
        return MC_STEP_CONT;
    }

    switch (mc_line_next(ps, buf, len, pos, true, &t)) {
    case MC_TOK_AGAIN:
        return PARSE_AGAIN;
    case MC_TOK_LONG:
        return mc_fail(ps, "reply token too long");
    case MC_TOK_WORD:
        if (t.end - t.start > MC_KEY_MAX) return mc_fail(ps, "reply token too long");
        if (ps->state == RS_WORD)
            return on_word(ps, m, buf + t.start, t.end - t.start, m->len + t.start);
        if (ps->state == RS_VALUE) return on_value_field(ps, m, buf + t.start, t.end - t.start);
        return mc_fail(ps, "unexpected token in reply");
    case MC_TOK_EOL:
        return on_eol(ps);
    default:
        return PARSE_ERROR;
    }
}

/* After a VALUE block's data: its element ends here; VALUE or END follows. */
static int data_done(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *pos)
{
    if (ps->want_elems) m->elems[m->nelems - 1].end = m->len + *pos;
    ps->state = RS_WORD;
    ps->d |= RSF_IN_VALUES;
    ps->c = 0;
    return MC_STEP_CONT;
}

int mc_parse_rsp(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                 size_t *consumed)
{
    /* the reply of a meta or binary request (its request's rsp_opts): a parser of its own */
    if (nc_unlikely(ps->opts != 0)) {
        if (ps->opts & MC_RSP_BIN) return mc_bin_parse_rsp(ps, m, buf, len, consumed);
        return mc_meta_parse_rsp(ps, m, buf, len, consumed);
    }
    return mc_run(ps, m, buf, len, consumed, step_line, data_done);
}
