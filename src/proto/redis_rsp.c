/*
 * redis_rsp.c - the redis response parser (proto.h parse_rsp): RESP2 and RESP3 replies,
 * incremental.
 *
 * Types: RESP2 +status, -error, :integer, $bulk ($-1 nil), *array (*-1 nil); RESP3 (what a server
 * sends after HELLO 3) %map, ~set, |attribute, >push, ,double, #boolean, _null, (big number,
 * =verbatim string, !blob error. Aggregates nest to any depth up to REDIS_MAX_DEPTH; a map or an
 * attribute of N pairs holds 2N values. The RESP2 types are dispatched first: the RESP3 ones cost
 * a RESP2 reply nothing. Both are accepted on any connection (the parser does not know which
 * protocol a connection speaks; a RESP2 server never sends RESP3 type bytes).
 *
 * An attribute (|N) is auxiliary data about the value that follows it, at the top level or inside
 * an aggregate: it is not a value itself (it does not count as an element of its aggregate, and
 * the reply's type is the type of the value after it), but its bytes stay part of the message and,
 * inside an aggregate, of the element it precedes. A push (>N) is a complete message of its own,
 * typed RSP_PUSH, for the core to route; one nested in a reply (the spec allows them only at the
 * top level) is taken as an aggregate. RESP3's streamed strings and aggregates ($?, *?, %?, ~?,
 * with ";N" chunks and a "." end) are a protocol error: the spec leaves them optional and says the
 * redis server does not send them (a module's postponed-length reply is sent with its length).
 *
 * Tokens: "$N\r\n" and the other aggregate and blob headers, and ":N\r\n" lines are consumed whole
 * (at most REDIS_MAX_HDR bytes), "_\r\n" and "#t\r\n" too; bulk, verbatim and blob error data in
 * pieces, then its CRLF; status and error lines in pieces up to their LF, except that a top-level
 * error's first REDIS_ERR_PREFIX bytes (or its whole line when shorter) are taken at once to
 * classify it, and so are the first REDIS_ERR_PREFIX bytes of a top-level blob error's data;
 * doubles and big numbers in pieces, checked byte by byte (a long double may be thousands of
 * digits long).
 *
 * It sets m->rsp_type (of the top-level value), m->integer for a top-level ':', m->rsp_fatal, and,
 * when ps->want_elems is set, one msg_elem per element of a top-level array, set, map (each key
 * and each value) or push; an attribute before an element is part of that element.
 *
 * rsp_fatal: error replies (-error or !blob error) that say the server cannot serve anything now,
 * so they count as a server failure (ejection): -LOADING (loading its dataset), -BUSY (a script or
 * function runs too long), -MASTERDOWN (replica lost its master, serve-stale-data off), -NOAUTH
 * (the proxy is not authenticated: a config problem), -MISCONF (it cannot persist: the issue and
 * twemproxy treat it as unusable) and "-ERR max number of clients reached". Not fatal, unlike
 * twemproxy's -OOM: -OOM, -READONLY and -NOREPLICAS refuse writes only; the server still serves
 * reads, and ejecting a full server would only move its load onto the other full ones.
 *
 * ps use: state (enum rs_state); c = bulk bytes still to consume; depth and stack = open
 * aggregates, values still to come in each, RS_ATTR set for an attribute (heap, grown by doubling,
 * freed by parse_state_free); elem_start = offset of the current top-level element; a, b, d = where a
 * double or big number is (enum rs_num, big number or not, the letters of inf/nan).
 *
 * Threads: no state of its own; a worker calls it on its connections' parse_state.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "proto/redis.h"

enum rs_state {
    RS_START = 0,   /* the type byte of a value */
    RS_LINE_REST,   /* the rest of a status or error line, up to its LF */
    RS_BULK_DATA,   /* bulk (verbatim, blob error) data, c bytes left */
    RS_BULK_CRLF,   /* the CRLF after bulk data */
    RS_ERR_HEAD,    /* a top-level blob error's first bytes, taken at once to classify it */
    RS_VERB_HEAD,   /* a verbatim string's "fmt:" (c bytes of the string left) */
    RS_NUMBER,      /* a double or big number, byte by byte */
    RS_NUMBER_LF,   /* the LF after a double's or big number's CR */
};

/* A stack level that is an attribute: when it ends, the value it describes comes next. Counts
 * are below 2^63 (redis_parse_int, and at most INT64_MAX / 2 pairs). */
#define RS_ATTR (UINT64_C(1) << 63)

/* Where a double or big number is (ps->a), after its ',' or '('. */
enum rs_num {
    RN_START,       /* its first byte */
    RN_SIGN,        /* after '-' */
    RN_INT,         /* in the integral digits */
    RN_DOT,         /* after '.' */
    RN_FRAC,        /* in the fractional digits */
    RN_E,           /* after 'e' or 'E' */
    RN_ESIGN,       /* after the exponent's sign */
    RN_EXP,         /* in the exponent's digits */
    RN_WORD,        /* in inf, infinity or nan (any case; its letters in ps->d) */
    RN_PAREN,       /* in nan's "(char-sequence)" */
    RN_CLOSE,       /* after that ')' */
    RN_BAD,         /* (never kept) the byte cannot come there: the reply is invalid */
};

/* The error replies of a server that cannot serve now (rsp_fatal above). probe_down: a health
 * probe (a PING sent without AUTH, core/probe.c) that gets it keeps the server ejected, as one up
 * but not serving yet; to the probe, NOAUTH (it sent no AUTH), MISCONF and a full client table
 * still show a live server. One list for both, so that they cannot drift apart. */
static const struct {
    const char *code;
    bool probe_down;
} rs_unready[] = {
    { "LOADING", true }, { "BUSY", true }, { "MASTERDOWN", true },
    { "NOAUTH", false }, { "MISCONF", false }, { "ERR max number of clients reached", false },
};

static int rs_error(struct parse_state *ps, const char *why)
{
    ps->error = why;
    return PARSE_ERROR;
}

/* Whether the error text[0..n) (after its '-') starts with code, as a word. */
static bool rs_is_code(const uint8_t *text, size_t n, const char *code)
{
    size_t cl = strlen(code);
    return n >= cl && memcmp(text, code, cl) == 0 && (n == cl || text[cl] == ' ');
}

/* text: an error reply after its '-' (its first bytes): Redis Cluster's redirection, if it is one. */
static uint8_t rs_redirect(const uint8_t *text, size_t n)
{
    if (n == 0 || (text[0] != 'M' && text[0] != 'A' && text[0] != 'T')) return MSG_REDIRECT_NONE;
    if (rs_is_code(text, n, "MOVED")) return MSG_REDIRECT_MOVED;
    if (rs_is_code(text, n, "ASK")) return MSG_REDIRECT_ASK;
    if (rs_is_code(text, n, "TRYAGAIN")) return MSG_REDIRECT_TRYAGAIN;
    return MSG_REDIRECT_NONE;
}

/* text: an error reply after its '-', CR/LF excluded (maybe only its first bytes). Whether it
 * is one of rs_unready (only those with probe_down when for_probe). */
static bool rs_is_unready(const uint8_t *text, size_t n, bool for_probe)
{
    for (size_t i = 0; i < sizeof(rs_unready) / sizeof(rs_unready[0]); i++) {
        if (for_probe && !rs_unready[i].probe_down) continue;
        if (rs_is_code(text, n, rs_unready[i].code)) return true;
    }
    return false;
}

bool redis_probe_alive(const uint8_t *reply, size_t len)
{
    const uint8_t *lf = memchr(reply, '\n', len);
    if (lf == NULL || (reply[0] != '+' && reply[0] != '-')) return false;
    size_t n = (size_t)(lf - reply);
    if (n > 0 && reply[n - 1] == '\r') n--;
    return reply[0] == '+' || !rs_is_unready(reply + 1, n - 1, true);
}

/* A value ended at offset end inside an aggregate (depth > 0): counts it there, closing every
 * aggregate it completes. An attribute that ends is not a value: the value it describes is next. */
static int rs_close(struct parse_state *ps, struct msg *m, uint64_t end)
{
    do {
        uint64_t *left = &ps->stack[ps->depth - 1];
        if (ps->depth == 1 && ps->want_elems && !(*left & RS_ATTR)) {
            if (msg_add_elem(m, ps->elem_start, end, NULL, 0) < 0)
                return rs_error(ps, "out of memory");
            ps->elem_start = end;
        }
        if ((--*left & ~RS_ATTR) > 0) return REDIS_CONT;
        ps->depth--;
        if (*left & RS_ATTR) return REDIS_CONT;
    } while (ps->depth > 0);
    return PARSE_DONE;
}

/* A value ended at offset end: the reply is done, or the value counts in its aggregate. */
static inline int rs_value_done(struct parse_state *ps, struct msg *m, uint64_t end)
{
    ps->state = RS_START;
    return ps->depth == 0 ? PARSE_DONE : rs_close(ps, m, end);
}

_Static_assert(REDIS_MAX_DEPTH >= 8 && (REDIS_MAX_DEPTH & (REDIS_MAX_DEPTH - 1)) == 0,
               "REDIS_MAX_DEPTH is a power of two");

/* Opens an aggregate of n values (RS_ATTR: an attribute). The stack grows 8, 16, 32, ...: it is
 * full at REDIS_MAX_DEPTH exactly when the depth reaches it. */
static inline int rs_push(struct parse_state *ps, uint64_t n)
{
    if (nc_unlikely(ps->depth == ps->stack_cap)) {
        if (ps->depth >= REDIS_MAX_DEPTH) return rs_error(ps, "reply nested too deep");
        uint32_t ncap = ps->stack_cap ? ps->stack_cap * 2 : 8;
        uint64_t *s = realloc(ps->stack, (size_t)ncap * sizeof(*s));
        if (s == NULL) return rs_error(ps, "out of memory");
        ps->stack = s;
        ps->stack_cap = ncap;
    }
    ps->stack[ps->depth++] = n;
    return REDIS_CONT;
}

/* Why the header line at buf (n: its length without CRLF, or REDIS_LINE_BAD) is refused. */
static const char *rs_header_error(const uint8_t *buf, long n)
{
    if (n == 2 && buf[1] == '?' && buf[0] != ':') return "streamed replies are not supported";
    switch (buf[0]) {
    case ':': return "invalid integer reply";
    case '$': return "invalid bulk length";
    case '*': return "invalid array length";
    case '%': return "invalid map length";
    case '~': return "invalid set length";
    case '|': return "invalid attribute length";
    case '>': return "invalid push length";
    case '!': return "invalid blob error length";
    default:  return "invalid verbatim string length";
    }
}

/* The "<type><N>\r\n" line at buf[*pp] of a RESP3 aggregate or blob: N (min <= N <= max) in *v,
 * *pp past the line. */
static int rs_header(struct parse_state *ps, const uint8_t *buf, size_t len, size_t *pp,
                     int64_t min, int64_t max, int64_t *v)
{
    size_t p = *pp;
    long n = redis_line(buf + p, len - p, REDIS_MAX_HDR);
    if (n == REDIS_LINE_AGAIN) return PARSE_AGAIN;
    if (n == REDIS_LINE_BAD || !redis_parse_int(buf + p + 1, (size_t)n - 1, v) || *v < min ||
        *v > max)
        return rs_error(ps, rs_header_error(buf + p, n));
    *pp = p + (size_t)n + 2;
    return REDIS_CONT;
}

/* '-' at the top level: classify from the first bytes, then the rest of the line. */
static int rs_top_error(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                        size_t *pp)
{
    size_t p = *pp, avail = len - p;
    const uint8_t *nl = memchr(buf + p, '\n', avail < REDIS_ERR_PREFIX ? avail : REDIS_ERR_PREFIX);
    if (nl == NULL && avail < REDIS_ERR_PREFIX) return PARSE_AGAIN;
    size_t seen = nl != NULL ? (size_t)(nl - (buf + p)) : REDIS_ERR_PREFIX;
    size_t tlen = seen - 1;
    if (tlen > 0 && buf[p + seen - 1] == '\r') tlen--;
    m->rsp_type = RSP_ERROR;
    m->rsp_fatal = rs_is_unready(buf + p + 1, tlen, false);
    m->rsp_readonly = rs_is_code(buf + p + 1, tlen, "READONLY");
    m->rsp_redirect = rs_redirect(buf + p + 1, tlen);
    if (nl != NULL) {
        *pp = p + seen + 1;
        return rs_value_done(ps, m, m->len + *pp);
    }
    *pp = p + REDIS_ERR_PREFIX;
    ps->state = RS_LINE_REST;
    return REDIS_CONT;
}

/* "_\r\n", "#t\r\n", "#f\r\n": checked as far as they are there, taken whole. */
static int rs_null_bool(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                        size_t *pp)
{
    size_t p = *pp, avail = len - p;
    bool null = buf[p] == '_';
    size_t k = null ? 3 : 4;
    for (size_t i = 1; i < k && i < avail; i++) {
        uint8_t c = buf[p + i];
        bool ok = i == k - 1 ? c == '\n' : i == k - 2 ? c == '\r' : c == 't' || c == 'f';
        if (!ok) return rs_error(ps, null ? "invalid null reply" : "invalid boolean reply");
    }
    if (avail < k) return PARSE_AGAIN;
    if (ps->depth == 0) m->rsp_type = null ? RSP_NULL : RSP_BOOL;
    *pp = p + k;
    return rs_value_done(ps, m, m->len + *pp);
}

/* The RESP3 types (rs_start has taken the RESP2 ones; not inlined there, so that they cost a
 * RESP2 reply nothing). */
__attribute__((noinline)) static int rs_start3(struct parse_state *ps, struct msg *m,
                                               const uint8_t *buf, size_t len, size_t *pp)
{
    bool top = ps->depth == 0;
    uint8_t t = buf[*pp];
    int64_t v;
    int rc;

    switch (t) {
    case '%': case '|': case '~': case '>': {
        bool pairs = t == '%' || t == '|';
        rc = rs_header(ps, buf, len, pp, 0, pairs ? INT64_MAX / 2 : INT64_MAX, &v);
        if (rc != REDIS_CONT) return rc;
        uint64_t n = (uint64_t)v * (pairs ? 2 : 1);
        if (t == '|') return n > 0 ? rs_push(ps, n | RS_ATTR) : REDIS_CONT;
        if (top) {
            ps->elem_start = m->len + *pp;
            m->rsp_type = t == '%' ? RSP_MAP : t == '~' ? RSP_SET : RSP_PUSH;
        }
        return n > 0 ? rs_push(ps, n) : rs_value_done(ps, m, m->len + *pp);
    }
    case '!': case '=':
        rc = rs_header(ps, buf, len, pp, t == '=' ? 4 : 0, INT64_MAX, &v);
        if (rc != REDIS_CONT) return rc;
        if (top) m->rsp_type = t == '=' ? RSP_VERBATIM : RSP_BLOB_ERROR;
        ps->c = (uint64_t)v;
        ps->a = 0;
        ps->state = t == '=' ? RS_VERB_HEAD : top ? RS_ERR_HEAD : RS_BULK_DATA;
        return REDIS_CONT;
    case '_': case '#':
        return rs_null_bool(ps, m, buf, len, pp);
    case ',': case '(':
        if (top) m->rsp_type = t == ',' ? RSP_DOUBLE : RSP_BIGNUM;
        ps->a = RN_START;
        ps->b = t == '(';
        ps->d = 0;
        *pp += 1;
        ps->state = RS_NUMBER;
        return REDIS_CONT;
    default:
        return rs_error(ps, "unknown reply type");
    }
}

static int rs_start(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                    size_t *pp)
{
    size_t p = *pp;
    if (p == len) return PARSE_AGAIN;
    bool top = ps->depth == 0;
    uint8_t t = buf[p];

    if (t == '-' && top) return rs_top_error(ps, m, buf, len, pp);
    if (t == '+' || t == '-') {
        if (top) m->rsp_type = RSP_STATUS;
        *pp = p + 1;
        ps->state = RS_LINE_REST;
        return REDIS_CONT;
    }
    if (t != ':' && t != '$' && t != '*') return rs_start3(ps, m, buf, len, pp);

    int64_t v;
    long n = redis_header_fast(buf + p, len - p, &v);
    if (n < 0) {
        n = redis_line(buf + p, len - p, REDIS_MAX_HDR);
        if (n == REDIS_LINE_AGAIN) return PARSE_AGAIN;
        if (n == REDIS_LINE_BAD || !redis_parse_int(buf + p + 1, (size_t)n - 1, &v) || (t != ':' && v < -1))
            return rs_error(ps, rs_header_error(buf + p, n));
    }
    *pp = p + (size_t)n + 2;
    uint64_t end = m->len + *pp;

    /* ps->depth == 0 below, not top: reading it again costs less than keeping top across calls */
    if (t == ':') {
        if (ps->depth == 0) {
            m->rsp_type = RSP_INTEGER;
            m->integer = v;
        }
        return rs_value_done(ps, m, end);
    }
    if (t == '$') {
        if (ps->depth == 0) m->rsp_type = v < 0 ? RSP_NIL_BULK : RSP_BULK;
        if (v < 0) return rs_value_done(ps, m, end);
        ps->c = (uint64_t)v;
        ps->state = RS_BULK_DATA;
        return REDIS_CONT;
    }
    if (ps->depth == 0) m->rsp_type = v < 0 ? RSP_NIL_ARRAY : RSP_ARRAY;
    if (v <= 0) return rs_value_done(ps, m, end);
    if (ps->depth == 0) ps->elem_start = end;
    return rs_push(ps, (uint64_t)v);
}

static int rs_line_rest(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                        size_t *pp)
{
    size_t p = *pp;
    const uint8_t *nl = memchr(buf + p, '\n', len - p);
    if (nl == NULL) {
        *pp = len;
        return PARSE_AGAIN;
    }
    *pp = (size_t)(nl - buf) + 1;
    return rs_value_done(ps, m, m->len + *pp);
}

static int rs_bulk_data(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                        size_t *pp)
{
    if (!redis_take(&ps->c, len, pp)) return PARSE_AGAIN;
    ps->state = RS_BULK_CRLF;
    return REDIS_CONT;
}

static int rs_bulk_crlf(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                        size_t *pp)
{
    int crlf = redis_crlf(buf, len, *pp);
    if (crlf <= 0) return crlf == 0 ? PARSE_AGAIN : rs_error(ps, "expected CRLF after bulk data");
    *pp += 2;
    return rs_value_done(ps, m, m->len + *pp);
}

/* A top-level blob error: its first bytes (all of them when shorter) classify it, as for '-'. */
static int rs_err_head(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                       size_t *pp)
{
    size_t k = ps->c < REDIS_ERR_PREFIX ? (size_t)ps->c : REDIS_ERR_PREFIX;
    if (len - *pp < k) return PARSE_AGAIN;
    m->rsp_fatal = rs_is_unready(buf + *pp, k, false);
    m->rsp_readonly = rs_is_code(buf + *pp, k, "READONLY");
    *pp += k;
    ps->c -= k;
    ps->state = RS_BULK_DATA;
    return REDIS_CONT;
}

/* A verbatim string's first 4 bytes: a format (3 bytes, "txt", "mkd", ...) and ':'. ps->a: how
 * many of them were taken. */
static int rs_verb_head(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                        size_t *pp)
{
    for (; ps->a < 4; ps->a++, ps->c--, (*pp)++) {
        if (*pp == len) return PARSE_AGAIN;
        if (ps->a == 3 && buf[*pp] != ':') return rs_error(ps, "invalid verbatim string format");
    }
    ps->state = RS_BULK_DATA;
    return REDIS_CONT;
}

/* The letters of w (a word's ps->d: a byte each, the first the highest) are s. */
static bool rs_word_is(uint64_t w, const char *s)
{
    uint64_t x = 0;
    for (; *s != '\0'; s++) x = x << 8 | (uint8_t)*s;
    return w == x;
}

/* Whether a double or big number in state st (ps->a; word: ps->d) may end here, at its CR. */
static inline bool rs_number_may_end(uint64_t st, uint64_t word)
{
    bool is_word = st == RN_WORD && (rs_word_is(word, "inf") || rs_word_is(word, "nan") ||
                                     rs_word_is(word, "infinity"));
    return is_word || st == RN_INT || st == RN_FRAC || st == RN_EXP || st == RN_CLOSE;
}

/* The state after byte c (not the CR) in a word: inf, infinity, nan, nan's "(chars)" (st:
 * RN_WORD, RN_PAREN or RN_CLOSE; *word: its letters so far). RN_BAD: c cannot come there. */
static inline uint64_t rs_word_next(uint64_t st, uint8_t c, uint64_t *word)
{
    uint8_t lc = c | 0x20;
    bool digit = c >= '0' && c <= '9', letter = lc >= 'a' && lc <= 'z';
    switch (st) {
    case RN_WORD:
        if (letter && *word < (UINT64_C(1) << 56)) { /* at most 8 letters ("infinity") */
            *word = *word << 8 | lc;
        } else if (c == '(' && rs_word_is(*word, "nan")) {
            st = RN_PAREN;
        } else {
            return RN_BAD;
        }
        break;
    case RN_PAREN:
        if (c == ')') st = RN_CLOSE;
        else if (!digit && !letter && c != '_') return RN_BAD;
        break;
    default: /* RN_CLOSE: only the CR may follow */
        return RN_BAD;
    }
    return st;
}

/* The state of a double (big: a big number) after its byte c, not the CR (st: the state before;
 * *word: a word's letters, the first one set here). RN_BAD: c cannot come there. */
static inline uint64_t rs_number_next(uint64_t st, uint8_t c, bool big, uint64_t *word)
{
    uint8_t lc = c | 0x20;
    bool digit = c >= '0' && c <= '9', letter = lc >= 'a' && lc <= 'z';
    switch (st) {
    case RN_START:
        if (c == '-') {
            st = RN_SIGN;
            break;
        }
        /* fall through */
    case RN_SIGN:
        if (digit) {
            st = RN_INT;
        } else if (letter && !big) {
            st = RN_WORD;
            *word = lc;
        } else {
            return RN_BAD;
        }
        break;
    case RN_INT:
        if (digit) break;
        if (big) return RN_BAD;
        if (c == '.') st = RN_DOT;
        else if (lc == 'e') st = RN_E;
        else return RN_BAD;
        break;
    case RN_FRAC:
        if (digit) break;
        if (lc != 'e') return RN_BAD;
        st = RN_E;
        break;
    case RN_E:
        if (c == '+' || c == '-') {
            st = RN_ESIGN;
            break;
        }
        /* fall through */
    case RN_DOT:
    case RN_ESIGN:
        if (!digit) return RN_BAD;
        st = st == RN_DOT ? RN_FRAC : RN_EXP;
        break;
    case RN_EXP:
        if (!digit) return RN_BAD;
        break;
    default: /* RN_WORD, RN_PAREN, RN_CLOSE */
        return rs_word_next(st, c, word);
    }
    return st;
}

/*
 * A double (ps->b == 0) or a big number, up to its CR, checked byte by byte: RESP3's
 * [-]digits[.digits][(e|E)[+|-]digits] for a double, also inf, -inf and nan, and for the
 * representations of NaN older servers take from libc, "-nan", "NAN" and "nan(chars)", in any
 * case; [-]digits for a big number. ps->a: where it is (enum rs_num); ps->d: the letters of a word.
 */
static int rs_number(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *pp)
{
    bool big = ps->b != 0;
    const char *why = big ? "invalid big number reply" : "invalid double reply";
    uint64_t st = ps->a;
    size_t p = *pp;
    for (; p < len; p++) {
        uint8_t c = buf[p];
        if (c == '\r') {
            if (!rs_number_may_end(st, ps->d)) return rs_error(ps, why);
            *pp = p + 1;
            ps->state = RS_NUMBER_LF;
            return REDIS_CONT;
        }
        st = rs_number_next(st, c, big, &ps->d);
        if (st == RN_BAD) return rs_error(ps, why);
    }
    ps->a = st;
    *pp = p;
    return PARSE_AGAIN;
}

static int rs_number_lf(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                        size_t *pp)
{
    if (*pp == len) return PARSE_AGAIN;
    if (buf[*pp] != '\n')
        return rs_error(ps, ps->b ? "invalid big number reply" : "invalid double reply");
    *pp += 1;
    return rs_value_done(ps, m, m->len + *pp);
}

/* The steps in a switch (see redis_parse_req). */
int redis_parse_rsp(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                    size_t *consumed)
{
    size_t p = 0;
    int rc;
    do {
        switch (ps->state) {
        case RS_START: rc = rs_start(ps, m, buf, len, &p); break;
        case RS_LINE_REST: rc = rs_line_rest(ps, m, buf, len, &p); break;
        case RS_BULK_DATA: rc = rs_bulk_data(ps, m, buf, len, &p); break;
        case RS_BULK_CRLF: rc = rs_bulk_crlf(ps, m, buf, len, &p); break;
        case RS_ERR_HEAD: rc = rs_err_head(ps, m, buf, len, &p); break;
        case RS_VERB_HEAD: rc = rs_verb_head(ps, m, buf, len, &p); break;
        case RS_NUMBER: rc = rs_number(ps, m, buf, len, &p); break;
        case RS_NUMBER_LF: rc = rs_number_lf(ps, m, buf, len, &p); break;
        default: rc = rs_error(ps, "bad parser state"); break;
        }
    } while (rc == REDIS_CONT);
    *consumed = p; /* the contract: set on every return */
    return rc;
}
