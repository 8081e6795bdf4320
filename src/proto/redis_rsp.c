/*
 * redis_rsp.c - the redis response parser (proto.h parse_rsp): RESP2 replies, incremental.
 *
 * Types: +status, -error, :integer, $bulk ($-1 nil), *array (*-1 nil) nested to any depth up to
 * REDIS_MAX_DEPTH. RESP3 types are refused (protocol error): a server only sends them after HELLO 3,
 * and HELLO is not supported. Tokens: "$N\r\n", "*N\r\n" and ":N\r\n" lines are consumed whole
 * (at most REDIS_MAX_HDR bytes); bulk data in pieces, then its CRLF; status and error lines in
 * pieces up to their LF, except that a top-level error's first REDIS_ERR_PREFIX bytes (or its
 * whole line when shorter) are taken at once to classify it.
 *
 * It sets m->rsp_type (of the top-level value), m->integer for a top-level ':', m->rsp_fatal, and,
 * when ps->want_elems is set, one msg_elem per top-level array element.
 *
 * rsp_fatal: error replies that say the server cannot serve anything now, so they count as a
 * server failure (ejection): -LOADING (loading its dataset), -BUSY (a script or function runs too
 * long), -MASTERDOWN (replica lost its master, serve-stale-data off), -NOAUTH (the proxy is not
 * authenticated: a config problem), -MISCONF (it cannot persist: the issue and twemproxy treat it
 * as unusable) and "-ERR max number of clients reached". Not fatal, unlike twemproxy's -OOM: -OOM,
 * -READONLY and -NOREPLICAS refuse writes only; the server still serves reads, and ejecting a full
 * server would only move its load onto the other full ones.
 *
 * ps use: state (enum rs_state); c = bulk bytes still to consume; depth and stack = open arrays,
 * elements still to come in each (heap, grown by doubling, freed by parse_free); elem_start =
 * offset of the current top-level element.
 *
 * Threads: no state of its own; a worker calls it on its connections' parse_state.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "proto/redis.h"

enum rs_state {
    RS_START = 0,   /* the type byte of a value */
    RS_LINE_REST,   /* the rest of a status or error line, up to its LF */
    RS_BULK_DATA,   /* bulk data, c bytes left */
    RS_BULK_CRLF,   /* the CRLF after bulk data */
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

/* text: an error reply after its '-', CR/LF excluded (maybe only its first bytes). Whether it
 * is one of rs_unready (only those with probe_down when for_probe). */
static bool rs_is_unready(const uint8_t *text, size_t n, bool for_probe)
{
    for (size_t i = 0; i < sizeof(rs_unready) / sizeof(rs_unready[0]); i++) {
        if (for_probe && !rs_unready[i].probe_down) continue;
        size_t cl = strlen(rs_unready[i].code);
        if (n >= cl && memcmp(text, rs_unready[i].code, cl) == 0 && (n == cl || text[cl] == ' '))
            return true;
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

/* A value ended at offset end: counts it in its array, closing every array it completes. */
static int rs_value_done(struct parse_state *ps, struct msg *m, uint64_t end)
{
    ps->state = RS_START;
    for (;;) {
        if (ps->depth == 0) return PARSE_DONE;
        if (ps->depth == 1 && ps->want_elems && msg_add_elem(m, ps->elem_start, end, NULL, 0) < 0)
            return rs_error(ps, "out of memory");
        if (--ps->stack[ps->depth - 1] > 0) return REDIS_CONT;
        ps->depth--;
    }
}

static int rs_push(struct parse_state *ps, uint64_t n)
{
    if (ps->depth >= REDIS_MAX_DEPTH) return rs_error(ps, "reply nested too deep");
    if (ps->depth == ps->stack_cap) {
        uint32_t ncap = ps->stack_cap ? ps->stack_cap * 2 : 8;
        uint64_t *s = realloc(ps->stack, (size_t)ncap * sizeof(*s));
        if (s == NULL) return rs_error(ps, "out of memory");
        ps->stack = s;
        ps->stack_cap = ncap;
    }
    ps->stack[ps->depth++] = n;
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
    if (nl != NULL) {
        *pp = p + seen + 1;
        return rs_value_done(ps, m, m->len + *pp);
    }
    *pp = p + REDIS_ERR_PREFIX;
    ps->state = RS_LINE_REST;
    return REDIS_CONT;
}

static int rs_start(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                    size_t *pp)
{
    size_t p = *pp;
    if (p == len) return PARSE_AGAIN;
    bool top = ps->depth == 0;
    if (ps->depth == 1) ps->elem_start = m->len + p;
    uint8_t t = buf[p];

    if (t == '-' && top) return rs_top_error(ps, m, buf, len, pp);
    if (t == '+' || t == '-') {
        if (top) m->rsp_type = RSP_STATUS;
        *pp = p + 1;
        ps->state = RS_LINE_REST;
        return REDIS_CONT;
    }
    if (t != ':' && t != '$' && t != '*') return rs_error(ps, "unknown reply type");

    long n = redis_line(buf + p, len - p, REDIS_MAX_HDR);
    if (n == REDIS_LINE_AGAIN) return PARSE_AGAIN;
    int64_t v;
    if (n == REDIS_LINE_BAD || !redis_parse_int(buf + p + 1, (size_t)n - 1, &v) ||
        (t != ':' && v < -1))
        return rs_error(ps, t == ':' ? "invalid integer reply" : t == '$' ? "invalid bulk length"
                                                                        : "invalid array length");
    *pp = p + (size_t)n + 2;
    uint64_t end = m->len + *pp;

    if (t == ':') {
        if (top) {
            m->rsp_type = RSP_INTEGER;
            m->integer = v;
        }
        return rs_value_done(ps, m, end);
    }
    if (t == '$') {
        if (top) m->rsp_type = v < 0 ? RSP_NIL_BULK : RSP_BULK;
        if (v < 0) return rs_value_done(ps, m, end);
        ps->c = (uint64_t)v;
        ps->state = RS_BULK_DATA;
        return REDIS_CONT;
    }
    if (top) m->rsp_type = v < 0 ? RSP_NIL_ARRAY : RSP_ARRAY;
    if (v <= 0) return rs_value_done(ps, m, end);
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

int redis_parse_rsp(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                    size_t *consumed)
{
    static const redis_step_fn steps[] = {
        [RS_START] = rs_start,
        [RS_LINE_REST] = rs_line_rest,
        [RS_BULK_DATA] = rs_bulk_data,
        [RS_BULK_CRLF] = rs_bulk_crlf,
    };
    return redis_run(steps, sizeof(steps) / sizeof(steps[0]), ps, m, buf, len, consumed);
}
