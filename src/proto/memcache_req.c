/*
 * memcache_req.c - incremental parser of memcached ASCII requests (proto.h parse_req).
 *
 * A request is a command line, then for storage commands a data block of <bytes> bytes and "\r\n".
 * The line is consumed token by token (the verb, each key, each number, whole), so m->name and the
 * keys point at consumed bytes; a get line of any length works one key at a time. Data blocks are
 * consumed in whatever pieces arrive. A line ends at "\r\n" or at a bare "\n", as in memcached.
 * See notes/memcache.md for the decisions.
 *
 * Outcomes:
 *   - a well-formed request: PARSE_DONE with cmd, keys, noreply, quit filled;
 *   - a bad request after which the stream is still in sync: PARSE_DONE with m->reject set, after
 *     consuming the whole line and, when <bytes> was readable, the data block too (unknown verb:
 *     REJECT_ERROR; key over 250 bytes, bad or missing or extra fields: REJECT_CLIENT_ERROR with
 *     memcached's own texts; stats with an argument: REJECT_CLIENT_ERROR saying so; verbosity:
 *     REJECT_CLIENT_ERROR "unsupported command"). A command with a noreply slot (storage, cas, incr, decr, delete,
 *     touch, flush_all, verbosity) first has its argument tokens counted, as memcached does: a
 *     wrong count is REJECT_ERROR ("ERROR"), whatever the tokens, and no data block is read (the
 *     next line is the next request, as for memcached). A rejected request has no keys. It has
 *     noreply set exactly when memcached would send nothing for it: a REJECT_CLIENT_ERROR of a
 *     command with a noreply slot whose last token is "noreply"; the core then answers nothing
 *     (notes/memcache.md has the measured table). An unsupported command (verbosity)
 *     rejected with noreply also has quit set: the core closes the connection after the earlier
 *     replies, without a reply;
 *   - a meta command (mg, ms, md, ma, me: slot 'M'): its tokens go to memcache_meta.c, which
 *     fills the key, and for ms says whether its data follows (forwarded unread, RQF_RAW) or the
 *     proxy answers the line (a reject); mn is CMD_F_LOCAL (memcache_proto.c answers it);
 *   - a connection whose first byte is 0x80 speaks the binary protocol from then on
 *     (parse_state.mode): its requests go to memcache_bin_req.c; on a text connection 0x80 is a
 *     byte like any other (an unknown verb: ERROR, as memcached);
 *   - a stream that cannot be followed (bad <bytes> in a line of the right token count, or a
 *     missing one where there is no count rule (ms), data not followed by "\r\n", a line longer
 *     than MC_LINE_MAX bytes before its "\n" other than get/gets after at most MC_LEAD_MAX spaces,
 *     more than MSG_KEYS_MAX keys, out of memory): PARSE_ERROR.
 *
 * State (struct parse_state): state = RQ_*, a = index of the next argument slot of the command,
 * b = data bytes still to come, c = bytes of the current line consumed so far, d = RQF_* flags
 * and, from bit RQ_NARGS_SHIFT, the number of argument tokens (capped at RQ_NARGS_CAP), a meta
 * command's own bits (MC_META_BIT) and, from RQ_LONG_SHIFT, the first byte of a too-long token,
 * off = phase of the data block (mc_data).
 *
 * Threads: the worker owning the connection (parse_state) and the msg.
 */
#include "config.h"
#include "proto/memcache_bin.h"
#include "proto/memcache_token.h"

#include <string.h>

#include "common/log.h"
#include "common/util.h"

enum { RQ_VERB = 0, RQ_ARGS, RQ_DATA = MC_STATE_DATA };

#define RQF_SKIP     (1u << 0)  /* dropping the rest of a too-long token */
#define RQF_NOREPLY  (1u << 1)  /* "noreply" seen */
#define RQF_GOT_KEY  (1u << 2)  /* a 'K' slot has at least one key */
#define RQF_HAVE_LEN (1u << 3)  /* <bytes> read: a data block follows the line */
#define RQF_LONG_OK  (1u << 4)  /* get/gets within MC_LEAD_MAX bytes of the line start: no limit */
#define RQF_LAST_NR  (1u << 5)  /* the last argument token so far is "noreply" */
#define RQF_BAD_LEN  (1u << 6)  /* <bytes> unreadable: decided at the line end (count first) */
#define RQF_RAW      (1u << 7)  /* in the data of an ms, forwarded unread (ps->b bytes to come) */

/* argument tokens counted in ps->d's top byte (so reading it needs no mask); more than any
 * command's slots, so "too many" stays visible */
#define RQ_NARGS_SHIFT 56
#define RQ_NARGS_CAP   15u
/* the first byte of the too-long token being skipped (a meta flag counts by it) */
#define RQ_LONG_SHIFT 32
#define RQ_LONG_MASK  ((uint64_t)0xff << RQ_LONG_SHIFT)

/* memcached drops its connection when a line has more than MC_LINE_MAX bytes before its "\n"
 * unless it starts with "get " or "gets " after at most this many spaces (try_read_command_ascii).
 * Forwarded, such a line would reset the server connection every client shares. */
#define MC_LEAD_MAX 100

static const char BAD_FORMAT[] = "bad command line format";
/* memcached reads a command line as a C string: after a NUL byte it would read the rest of the
 * line (and a data block) as further commands, with replies the client's request did not ask
 * for. Such a line is never forwarded (the meta commands follow memcached's reading instead). */
static const char NUL_IN_LINE[] = "NUL byte in a command line";
static const char DELETE_USAGE[] = "bad command line format.  Usage: delete <key> [noreply]";
static const char STATS_ARGS[] = "stats with arguments is not supported by the proxy (only stats)";

static void reject(struct msg *m, uint8_t kind, const char *reason)
{
    if (m->reject != REJECT_NONE) return; /* the first reason wins */
    m->reject = kind;
    m->reject_reason = reason;
}

static bool token_is(const uint8_t *tok, size_t len, const char *word)
{
    return tok != NULL && len == strlen(word) && memcmp(tok, word, len) == 0;
}

/* off: the verb's offset in the msg, which starts at the line's first byte */
static int on_verb(struct parse_state *ps, struct msg *m, const uint8_t *tok, size_t len,
                   uint64_t off)
{
    enum mc_cmd_id id = tok == NULL ? MC_CMD_UNKNOWN : mc_cmd_lookup(tok, len);
    if ((id == MC_CMD_GET || id == MC_CMD_GETS) && off <= MC_LEAD_MAX) ps->d |= RQF_LONG_OK;
    m->cmd = (uint16_t)id;
    m->cmd_flags = mc_cmds[id].flags;
    m->name = tok;
    m->name_len = tok == NULL ? 0 : (uint32_t)len;
    if (id == MC_CMD_UNKNOWN)
        reject(m, REJECT_ERROR, NULL);
    else if (mc_cmds[id].unsupported)
        reject(m, REJECT_CLIENT_ERROR, "unsupported command");
    ps->state = RQ_ARGS;
    ps->a = 0;
    return MC_STEP_CONT;
}

/* Counts one more argument token in ps->d, and whether it is "noreply" (the last one so far). */
static inline void count_arg(struct parse_state *ps, const uint8_t *tok, size_t len)
{
    uint64_t nargs = ps->d >> RQ_NARGS_SHIFT;
    if (nargs < RQ_NARGS_CAP) nargs++;
    ps->d = (ps->d & (((uint64_t)1 << RQ_NARGS_SHIFT) - 1)) | (nargs << RQ_NARGS_SHIFT);
    if (token_is(tok, len, "noreply")) ps->d |= RQF_LAST_NR;
    else ps->d &= ~(uint64_t)RQF_LAST_NR;
}

/* An argument token's end: a bad one rejects the request (why), and the next token takes the
 * next slot (slot '\0': there is none). */
static inline int arg_done(struct parse_state *ps, struct msg *m, char slot, bool ok, const char *why)
{
    if (!ok) reject(m, REJECT_CLIENT_ERROR, why);
    if (slot != '\0') ps->a++;
    return MC_STEP_CONT;
}

/* An argument token in a number's slot (f, e, E, b, c, v); tok is NULL when it was longer than
 * MC_KEY_MAX. */
static inline int on_number_arg(struct parse_state *ps, struct msg *m, char slot, const uint8_t *tok,
                                size_t len)
{
    const char *why = BAD_FORMAT;
    bool ok = tok != NULL;
    uint64_t u64;
    uint32_t u32;
    int32_t i32;

    switch (slot) {
    case 'f':
        ok = ok && mc_parse_u32(tok, len, &u32);
        break;
    case 'E':
        why = "invalid exptime argument";
        /* fall through */
    case 'e':
        ok = ok && mc_parse_i32(tok, len, &i32);
        break;
    case 'b':
        if (ok && mc_parse_i32(tok, len, &i32) && i32 >= 0 && i32 <= INT32_MAX - 2) {
            ps->b = (uint64_t)i32;
            ps->d |= RQF_HAVE_LEN;
        } else {
            ps->d |= RQF_BAD_LEN; /* fatal unless the token count makes the line an ERROR */
            ok = true;
        }
        break;
    case 'v':
        why = "invalid numeric delta argument";
        /* fall through */
    case 'c':
        ok = ok && mc_parse_u64(tok, len, &u64);
        break;
    default:
        NC_NOT_REACHED();
        break;
    }
    return arg_done(ps, m, slot, ok, why);
}

/* An argument token in an optional slot (z, n, N, o: delete's "0", a "noreply"); tok is NULL when
 * it was longer than MC_KEY_MAX. */
static inline int on_optional_arg(struct parse_state *ps, struct msg *m, char slot, const uint8_t *tok,
                                  size_t len)
{
    const char *why = BAD_FORMAT;
    bool ok = tok != NULL;

    switch (slot) {
    case 'z':
        if (token_is(tok, len, "noreply")) {
            ps->d |= RQF_NOREPLY;
            ps->a += 2; /* no "0" and no other "noreply" */
            return MC_STEP_CONT;
        }
        why = DELETE_USAGE;
        ok = token_is(tok, len, "0");
        break;
    case 'n':
        ok = true; /* memcached ignores a last token that is not "noreply" */
        if (token_is(tok, len, "noreply")) ps->d |= RQF_NOREPLY;
        else ps->d &= ~(uint64_t)RQF_NOREPLY; /* only the last token counts (flush_all noreply 5) */
        break;
    case 'N':
        why = DELETE_USAGE;
        ok = token_is(tok, len, "noreply");
        if (ok) ps->d |= RQF_NOREPLY;
        break;
    case 'o': /* flush_all noreply: the last token may be the optional one */
        if (token_is(tok, len, "noreply")) ps->d |= RQF_NOREPLY;
        break;
    default:
        NC_NOT_REACHED();
        break;
    }
    return arg_done(ps, m, slot, ok, why);
}

/* One argument token; tok is NULL when it was longer than MC_KEY_MAX (its bytes are gone). */
static int on_arg(struct parse_state *ps, struct msg *m, const uint8_t *tok, size_t len,
                  uint64_t off)
{
    char slot = mc_cmds[m->cmd].args[ps->a];
    const char *why = BAD_FORMAT;
    bool ok = tok != NULL;

    count_arg(ps, tok, len);
    if (slot != 'M' && tok != NULL && memchr(tok, '\0', len) != NULL) return mc_fail(ps, NUL_IN_LINE);
    switch (slot) {
    case 'M':
        return mc_meta_arg(ps, m, tok, len, off, (uint8_t)((ps->d & RQ_LONG_MASK) >> RQ_LONG_SHIFT));
    case '\0': /* one token too many (delete: after "noreply" in the place of its "0") */
        if (m->cmd == MC_CMD_DELETE) why = DELETE_USAGE;
        if (m->cmd == MC_CMD_STATS) why = STATS_ARGS;
        ok = false;
        break;
    case '*':
        return MC_STEP_CONT;
    case 'k':
    case 'K':
        if (ok && m->reject == REJECT_NONE) {
            int rc = msg_add_key(m, tok, (uint32_t)len, off, off + len);
            if (rc < 0) return mc_fail(ps, msg_add_key_error(rc));
        }
        if (slot == 'K') {
            ps->d |= RQF_GOT_KEY;
            if (!ok) reject(m, REJECT_CLIENT_ERROR, why);
            return MC_STEP_CONT;
        }
        break;
    case 'f':
    case 'e':
    case 'E':
    case 'b':
    case 'c':
    case 'v':
        return on_number_arg(ps, m, slot, tok, len);
    case 'x':
        break;
    default:
        return on_optional_arg(ps, m, slot, tok, len);
    }
    return arg_done(ps, m, slot, ok, why);
}

/* Whether the command has a noreply slot: memcached counts its tokens before anything else. (One
 * pass over a few bytes, no libc call: it runs for every request.) */
static bool has_noreply_slot(const char *args)
{
    for (; *args != '\0'; args++)
        if (*args == 'n' || *args == 'N') return true;
    return false;
}

/* Whether the number of argument tokens is one memcached accepts for the command: at least its
 * mandatory slots, at most all its slots. */
static bool count_ok(const struct parse_state *ps, const char *args)
{
    uint64_t nargs = ps->d >> RQ_NARGS_SHIFT, min = 0, max = strlen(args);
    for (const char *s = args; *s != '\0'; s++)
        if (*s != 'z' && *s != 'n' && *s != 'N' && *s != 'o') min++;
    return nargs >= min && nargs <= max;
}

/*
 * Whether memcached sends nothing for this rejected request. Its commands with a noreply slot
 * check the number of tokens first (a wrong count is "ERROR" whatever the last token: on_eol),
 * then take a last token "noreply" as noreply before any other check, and a suppressed error is
 * not sent.
 */
static bool reject_is_silent(const struct parse_state *ps, const struct msg *m)
{
    const char *args = mc_cmds[m->cmd].args;
    return m->reject == REJECT_CLIENT_ERROR && has_noreply_slot(args) && (ps->d & RQF_LAST_NR) &&
           count_ok(ps, args);
}

static int finish(struct parse_state *ps, struct msg *m)
{
    bool ok = m->reject == REJECT_NONE;
    m->noreply = ok ? (ps->d & RQF_NOREPLY) != 0 : reject_is_silent(ps, m);
    /* verbosity ... noreply: memcached would carry it out and say nothing. Doing nothing
     * silently would let the client believe it was done, and an error it will not read would be
     * taken for its next reply: its connection is closed instead (as twemproxy does). */
    m->quit = ok ? (m->cmd_flags & CMD_F_QUIT) != 0 : m->noreply && mc_cmds[m->cmd].unsupported;
    if (!ok) m->nkeys = 0;
    return PARSE_DONE;
}

/* A meta command's line end (memcache_meta.c): ms data is forwarded unread (RQF_RAW). */
static int meta_eol(struct parse_state *ps, struct msg *m)
{
    int rc = mc_meta_eol(ps, m);
    if (rc == MC_META_DATA) {
        ps->d |= RQF_RAW;
        return MC_STEP_CONT;
    }
    return rc == PARSE_DONE ? finish(ps, m) : rc;
}

static int on_eol(struct parse_state *ps, struct msg *m)
{
    if (ps->state == RQ_VERB) { /* an empty line: memcached says ERROR */
        on_verb(ps, m, NULL, 0, 0);
        return finish(ps, m);
    }
    const char *args = mc_cmds[m->cmd].args;
    bool no_args = (ps->d >> RQ_NARGS_SHIFT) == 0;
    if ((has_noreply_slot(args) && !count_ok(ps, args)) || (no_args && strchr(args, 'K') != NULL)) {
        /* memcached's first check (get/gets/gat/gats: at least one argument): "ERROR", and the
         * line is all (a data block the client may send after it is read as commands, by
         * memcached as here) */
        m->reject = REJECT_ERROR;
        m->reject_reason = NULL;
        return finish(ps, m);
    }
    const char *rest = args + ps->a;
    if (*rest == 'M') return meta_eol(ps, m);
    bool missing = *rest != '\0' && *rest != '*' && *rest != 'z' && *rest != 'n' && *rest != 'N' &&
                   *rest != 'o' && !(*rest == 'K' && (ps->d & RQF_GOT_KEY));
    if (missing) {
        if (strchr(rest, 'b') != NULL) return mc_fail(ps, BAD_FORMAT); /* data length unknown */
        reject(m, REJECT_CLIENT_ERROR, BAD_FORMAT);
    }
    if (ps->d & RQF_BAD_LEN) return mc_fail(ps, BAD_FORMAT);
    if (!(ps->d & RQF_HAVE_LEN)) return finish(ps, m);
    ps->state = RQ_DATA;
    return MC_STEP_CONT;
}

static int on_token(struct parse_state *ps, struct msg *m, const uint8_t *tok, size_t len,
                    uint64_t off)
{
    if (len > MC_KEY_MAX) { /* same outcome whether it arrived whole or not (skip_step) */
        if (tok != NULL) ps->d = (ps->d & ~RQ_LONG_MASK) | ((uint64_t)tok[0] << RQ_LONG_SHIFT);
        tok = NULL;
    }
    if (ps->state == RQ_VERB) return on_verb(ps, m, tok, len, off);
    return on_arg(ps, m, tok, len, off);
}

/* Bytes the parser passes over: the rest of a too-long token (RQF_SKIP), or the data of an ms
 * (RQF_RAW: memcached reads exactly that many bytes, whatever they are, and judges them). */
static int skip_step(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *pos)
{
    size_t p = *pos;
    if (ps->d & RQF_RAW) {
        size_t n = (size_t)(ps->b < len - p ? ps->b : len - p);
        *pos = p + n;
        ps->b -= n;
        if (ps->b > 0) return PARSE_AGAIN;
        ps->d &= ~(uint64_t)RQF_RAW;
        return finish(ps, m);
    }
    size_t end;
    bool done = mc_tok_skip(buf, p, len, &end);
    ps->c += end - p;
    *pos = end;
    if (!(ps->d & RQF_LONG_OK) && ps->c + (done ? 0 : len - end) > MC_LINE_MAX)
        return mc_fail(ps, "line too long");
    if (!done) return PARSE_AGAIN;
    ps->d &= ~(uint64_t)RQF_SKIP;
    return on_token(ps, m, NULL, MC_KEY_MAX + 1, 0);
}

/* One step on the command line: a token, the line end, or the end of the bytes. */
static int step_line(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *pos)
{
    bool limited = !(ps->d & RQF_LONG_OK);
    struct mc_tok t;

    if (ps->d & (RQF_SKIP | RQF_RAW)) return skip_step(ps, m, buf, len, pos);

    switch (mc_line_next(ps, buf, len, pos, limited, &t)) {
    case MC_TOK_AGAIN:
        return PARSE_AGAIN;
    case MC_TOK_LONG:
        ps->d = (ps->d & ~RQ_LONG_MASK) | RQF_SKIP | ((uint64_t)buf[t.start] << RQ_LONG_SHIFT);
        return MC_STEP_CONT;
    case MC_TOK_WORD:
        return on_token(ps, m, buf + t.start, t.end - t.start, m->len + t.start);
    case MC_TOK_EOL:
        return on_eol(ps, m);
    default:
        return PARSE_ERROR;
    }
}

/* After the data block (mc_run). */
static int data_done(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *pos)
{
    return finish(ps, m);
}

/* A connection's first bytes: its first byte picks the protocol for good (as memcached's
 * "-B auto"). */
__attribute__((noinline, cold)) static int first_request(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                         size_t *consumed)
{
    if (ps->mode == 0) {
        if (len == 0) {
            *consumed = 0;
            return PARSE_AGAIN;
        }
        ps->mode = buf[0] == MC_BIN_REQ_MAGIC ? MC_MODE_BIN_FIRST : MC_MODE_TEXT;
    }
    if (ps->mode == MC_MODE_TEXT) return mc_run(ps, m, buf, len, consumed, step_line, data_done);
    return mc_bin_parse_req(ps, m, buf, len, consumed);
}

int mc_parse_req(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                 size_t *consumed)
{
    if (nc_likely(ps->mode == MC_MODE_TEXT)) return mc_run(ps, m, buf, len, consumed, step_line, data_done);
    return first_request(ps, m, buf, len, consumed);
}
