/*
 * memcache.h - internals shared by the memcached protocol files (memcache_*.c): the text protocol's
 * command table, the line tokenizer, number parsing, the meta commands' and the stats sums' entry
 * points, and those gathered into memcache_proto (memcache_bin.h adds the binary protocol's).
 * Nothing outside src/proto/ includes this; the core uses only proto.h.
 *
 * Threads: pure functions and const tables; any thread (each parse_state belongs to one conn).
 */
#ifndef NC_MEMCACHE_H
#define NC_MEMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg/msg.h"
#include "proto/proto.h"

#define MC_KEY_MAX  250    /* longest key memcached accepts */
#define MC_LINE_MAX 2048   /* longest command line (bytes before "\n") except get/gets */

/*
 * Argument slots of a command line, one char each, in order (struct mc_cmd.args):
 *   k  one key                 K  one or more keys (last slot)
 *   f  flags (u32)             e  exptime (i32)         E  exptime, error "invalid exptime argument"
 *   b  data length (0..INT32_MAX-2): a data block follows the line; a bad one is a PARSE_ERROR
 *   c  cas unique (u64)        v  incr/decr delta (u64), error "invalid numeric delta argument"
 *   z  delete's optional "0"
 *   n  optional last token: "noreply" makes the request noreply, any other token is ignored
 *      (memcached's rule: `set k 0 0 5 foo` is a plain set)
 *   N  optional "noreply", nothing else (delete after its "0")
 *   x  any one token           *  any number of tokens (last slot)
 *   o  any one token, optional (before "n" only)
 *   M  a meta command's tokens: memcache_meta.c reads them (key, ms <datalen>, b and q flags) and
 *      memcached judges them (the request is forwarded as it came)
 * Optional slots (z, n, N, o) come last. A command with an "n" or "N" slot takes memcached's
 * token-count rule: with fewer argument tokens than its other slots or more than all its slots it
 * is "ERROR", whatever they are, and no data block is read (memcache_req.c). Within that count it
 * takes memcached's noreply rules for its rejects too: the last token "noreply", and memcached
 * sends nothing.
 */
#define MC_CMD_TABLE(X)                                                             \
    X(UNKNOWN,   "",          "*",      0, false)                                   \
    /* any binary-protocol request (memcache_bin.h: its flags come from its opcode) */   \
    X(BINARY,    "",          "",       0, false)                                   \
    X(GET,       "get",       "K",      CMD_F_FRAG_MCGET, false)                    \
    X(GETS,      "gets",      "K",      CMD_F_FRAG_MCGET, false)                    \
    /* meta commands (memcache_meta.c): forwarded by key as they came; mn answered here.  \
     * (mg and ms early: the verb lookup walks the table) */                         \
    X(MG,        "mg",        "M",      0, false)                                   \
    X(MS,        "ms",        "M",      CMD_F_WRITE, false)                         \
    X(GAT,       "gat",       "EK",     CMD_F_FRAG_MCGET | CMD_F_WRITE, false)      \
    X(GATS,      "gats",      "EK",     CMD_F_FRAG_MCGET | CMD_F_WRITE, false)      \
    X(SET,       "set",       "kfebn",  CMD_F_WRITE, false)                         \
    X(ADD,       "add",       "kfebn",  CMD_F_WRITE, false)                         \
    X(REPLACE,   "replace",   "kfebn",  CMD_F_WRITE, false)                         \
    X(APPEND,    "append",    "kfebn",  CMD_F_WRITE, false)                         \
    X(PREPEND,   "prepend",   "kfebn",  CMD_F_WRITE, false)                         \
    X(CAS,       "cas",       "kfebcn", CMD_F_WRITE, false)                         \
    X(INCR,      "incr",      "kvn",    CMD_F_WRITE, false)                         \
    X(DECR,      "decr",      "kvn",    CMD_F_WRITE, false)                         \
    X(DELETE,    "delete",    "kzN",    CMD_F_WRITE, false)                         \
    X(TOUCH,     "touch",     "kEn",    CMD_F_WRITE, false)                         \
    X(VERSION,   "version",   "",       CMD_F_ANY_SERVER, false)                    \
    X(QUIT,      "quit",      "*",      CMD_F_QUIT, false) /* memcached ignores args */\
    /* to every server (memcache_fanout.c): [delay] [noreply]; stats without arguments */ \
    X(FLUSH_ALL, "flush_all", "on",     CMD_F_FRAG_ALL | CMD_F_WRITE, false)         \
    X(STATS,     "stats",     "",       CMD_F_FRAG_ALL | CMD_F_FRAG_PARTIAL, false)  \
    X(MD,        "md",        "M",      CMD_F_WRITE, false)                         \
    X(MA,        "ma",        "M",      CMD_F_WRITE, false)                         \
    X(ME,        "me",        "M",      0, false)                                   \
    X(MN,        "mn",        "*",      CMD_F_LOCAL, false) /* memcached ignores args */ \
    /* known but not supported: answered "CLIENT_ERROR unsupported command" */      \
    X(VERBOSITY, "verbosity", "xn",     0, true) /* <level> [noreply] */

enum mc_cmd_id {
#define MC_CMD_ENUM(id, name, args, flags, unsupported) MC_CMD_##id,
    MC_CMD_TABLE(MC_CMD_ENUM)
#undef MC_CMD_ENUM
    MC_CMD_COUNT
};

struct mc_cmd {
    const char *name;
    uint8_t name_len;
    const char *args;      /* argument slots, see above */
    uint32_t flags;        /* CMD_F_* */
    bool unsupported;
};

extern const struct mc_cmd mc_cmds[MC_CMD_COUNT];

/* Every command's name, in the table's order: the unsupported ones, which come last (from
 * MC_CMD_VERBOSITY on), are the names refused requests are counted under. */
#define MC_REFUSED_FIRST MC_CMD_VERBOSITY
#define MC_NREFUSED (MC_CMD_COUNT - MC_REFUSED_FIRST)
extern const char *const mc_cmd_names[MC_CMD_COUNT];

/* The command named by verb[0..len) (case-sensitive, as memcached), or MC_CMD_UNKNOWN. */
enum mc_cmd_id mc_cmd_lookup(const uint8_t *verb, size_t len);

/* memcached's binary protocol (memcache_bin.h): a request starts with the magic byte 0x80 and a
 * 24-byte header; a reply with 0x81. */
#define MC_BIN_REQ_MAGIC 0x80
#define MC_BIN_RSP_MAGIC 0x81
#define MC_BIN_HDR_LEN 24

/*
 * Line tokenizer. Tokens are separated by runs of ' '; a line ends at "\n" or "\r\n" (memcached
 * accepts both); any other byte, '\r' included, belongs to a token.
 */
enum mc_tok_kind {
    MC_TOK_AGAIN,   /* no complete token yet: bytes [pos, end) (spaces) may be consumed */
    MC_TOK_WORD,    /* a token [start, end); buf[end] is its delimiter, not part of it */
    MC_TOK_EOL,     /* the line end [start, end), "\n" or "\r\n" */
    MC_TOK_LONG,    /* a token longer than max starts at start, its end not in sight: bytes
                     * [pos, end) may be dropped, then mc_tok_skip() finds the rest */
};

struct mc_tok {
    size_t start;
    size_t end;
};

/* Skips the rest of a too-long token: true when it ends in buf (its last byte is *end - 1), false
 * when bytes [pos, *end) may be dropped and more are needed. */
bool mc_tok_skip(const uint8_t *buf, size_t pos, size_t len, size_t *end);

/* Strict decimal numbers: digits only (and a leading '-' for mc_parse_i32). */
bool mc_parse_u64(const uint8_t *p, size_t len, uint64_t *out);
bool mc_parse_u32(const uint8_t *p, size_t len, uint32_t *out);
bool mc_parse_i32(const uint8_t *p, size_t len, int32_t *out);
/* An ms <datalen> token read as memcached reads it (a C strtol: leading white space and a sign
 * allowed, then digits, then the token's end or white space; no 64-bit overflow; the value cut to
 * 32 bits), accepted in 0..INT32_MAX-2. */
bool mc_parse_strtol32(const uint8_t *p, size_t len, uint32_t *out);

/* Internal step result beside PARSE_*: keep going with the bytes left. */
#define MC_STEP_CONT 2
/* ps->state of both parsers while in a data block (their own states are below it). */
#define MC_STATE_DATA 15

typedef int (*mc_step_fn)(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                          size_t *pos);
/* Sets ps->error = why (static text); returns PARSE_ERROR. */
int mc_fail(struct parse_state *ps, const char *why);
/* Consumes a reply line's free text up to and with its "\n" (ps->c counts the line's bytes):
 * PARSE_DONE at its end, PARSE_AGAIN, or PARSE_ERROR "line too long" past MC_LINE_MAX. */
int mc_rsp_text(struct parse_state *ps, const uint8_t *buf, size_t len, size_t *pos);
/* Consumes the rest of a data block (ps->b bytes to come) and the "\r\n" after it; ps->off is
 * the phase (0 data, 1 '\r', 2 '\n') and is 0 again at PARSE_DONE. PARSE_AGAIN wants more bytes,
 * PARSE_ERROR "bad data chunk" is anything but "\r\n" after the data. */
int mc_data(struct parse_state *ps, const uint8_t *buf, size_t len, size_t *pos);

/*
 * The loop of both parsers: in MC_STATE_DATA consumes the data block (mc_data) then calls
 * after_data, in any other state calls line; until a step returns a PARSE_* status. Sets
 * *consumed. Inline: each parser passes its own steps, which the compiler then calls directly.
 */
static inline int mc_run(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                         size_t *consumed, mc_step_fn line, mc_step_fn after_data)
{
    size_t pos = 0;
    int rc = MC_STEP_CONT;
    while (rc == MC_STEP_CONT) {
        if (ps->state == MC_STATE_DATA) {
            rc = mc_data(ps, buf, len, &pos);
            if (rc == PARSE_DONE) rc = after_data(ps, m, buf, len, &pos);
        } else {
            rc = line(ps, m, buf, len, &pos);
        }
    }
    *consumed = pos;
    return rc;
}

/*
 * Meta commands (memcache_meta.c). parse_state.opts of a reply (msg.rsp_opts of its request):
 * MC_RSP_META, a meta command's reply; MC_RSP_TERM, a terminator ("mn") follows the request, whose
 * reply ("MN") ends the message and is cut (msg.trim).
 */
#define MC_RSP_TERM 1
#define MC_RSP_META 2
/* ps->d while a request line is parsed: memcache_req.c's bits are 0-15 and 32-63, a meta
 * command's (memcache_meta.c) MC_META_BIT(0..15) */
#define MC_META_BIT(n) ((uint64_t)1 << (16 + (n)))
/* mc_meta_eol's result beside the PARSE_* ones: ms, ps->b bytes of data follow the line, to be
 * forwarded without a look */
#define MC_META_DATA 3
/* One argument token of a meta command (tok: NULL when it was longer than MC_KEY_MAX, whose first
 * byte is then first), off its offset in m. Returns MC_STEP_CONT or PARSE_ERROR. */
int mc_meta_arg(struct parse_state *ps, struct msg *m, const uint8_t *tok, size_t len, uint64_t off,
                uint8_t first);
/* The line's end: PARSE_DONE (forward it, or m->reject set: the proxy answers), MC_META_DATA or
 * PARSE_ERROR. */
int mc_meta_eol(struct parse_state *ps, struct msg *m);
/* A meta command's reply (mc_parse_rsp with ps->opts set). */
int mc_meta_parse_rsp(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                      size_t *consumed);
/* Decodes a base64 key as memcached does (bytes outside the alphabet skipped, groups of 4, the
 * first group holding a '=' ends it) into out (room for len / 4 * 3 bytes). Returns the decoded
 * length, 0 when memcached would refuse it. */
size_t mc_b64_decode(const uint8_t *in, size_t len, uint8_t *out);

/* `stats` through the proxy (memcache_stats.c): the servers' counters that add up, summed. */
#define MC_NSUMMED 30
struct mc_stats_sum {
    uint64_t v[MC_NSUMMED];
    bool seen[MC_NSUMMED];
    char version[64];       /* the lowest ("" until one is seen) */
    uint32_t nservers;      /* that answered */
};
/* Adds one "name value" pair of a server's statistics. */
void mc_stats_pair(struct mc_stats_sum *sum, const char *name, size_t nlen, const char *val, size_t vlen);
/* Calls emit for each statistic of the reply (NUL-terminated name and value), in order: the
 * proxy's own (nasked: the servers asked), then the sums. */
typedef void (*mc_stats_emit)(void *ctx, const char *name, const char *value);
void mc_stats_render(const struct mc_stats_sum *sum, const struct proto_view *v, uint32_t nasked,
                     mc_stats_emit emit, void *ctx);

/* The proto_ops entries, one file each. */
int mc_parse_req(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                 size_t *consumed);
int mc_parse_rsp(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                 size_t *consumed);
int mc_fragment(struct msg *req, const uint32_t *server_of_key, uint32_t nwhere, struct msg_pool *pool);
int mc_coalesce(const struct proto_view *v, struct msg *req, struct msg *rsp);
/* A fragment of req for server (ctx: the maker's own), NULL when out of memory. */
typedef struct msg *(*mc_frag_fn)(struct msg *req, uint32_t server, struct msg_pool *pool, const void *ctx);
/* req's fragments for the servers where[0..n), one each, made by make (a CMD_F_FRAG_ALL request:
 * no keys). Returns 0 or -ENOMEM (nothing left allocated). */
int mc_fragments_to(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool, mc_frag_fn make,
                    const void *ctx);
/* flush_all and stats, sent to every server (memcache_fanout.c). */
int mc_fragment_all(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool);
int mc_coalesce_all(const struct proto_view *v, struct msg *req, struct msg *rsp);

#endif
