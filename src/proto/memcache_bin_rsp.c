/*
 * memcache_bin_rsp.c - incremental parser of memcached binary-protocol replies (the parse_rsp of a
 * binary request's reply: its rsp_opts has MC_RSP_BIN, memcache_rsp.c hands it here).
 *
 * A reply message is one packet (24-byte header, magic 0x81, then body length bytes, consumed in
 * pieces), except:
 *   - stat: a packet per statistic (status 0, a key) up to the closing packet without a key (or
 *     an error), all one message;
 *   - under MC_RSP_TERM (a quiet request, followed by the proxy's NOOP): every packet up to the
 *     NOOP's reply, which ends the message and is cut (msg.trim): memcached may have answered the
 *     quiet request with nothing. A client's own NOOP is answered by the proxy, never forwarded,
 *     so a NOOP reply on a server connection is the proxy's.
 * The message's rsp_type is RSP_MC_BIN, its integer the first packet's status. Another magic, or
 * under MC_RSP_TERM a NOOP reply with a body (memcached's is a bare header, which is what the trim
 * cuts), is a PARSE_ERROR: the server connection is out of step (the core closes it and fails its
 * requests).
 *
 * State: state = RR_*, b = body bytes to come, c = the current packet's opcode and key length
 * (opcode << 16 | keylen), d = 1 when that packet is an error (which ends a stat sequence).
 *
 * Threads: the worker owning the connection (parse_state) and the msg.
 */
#include "config.h"
#include "proto/memcache_bin.h"

enum { RR_HDR = MC_BIN_STATE_FIRST, RR_BODY };

/* A packet is complete: whether the message is too. */
static int packet_done(struct parse_state *ps, struct msg *m)
{
    uint8_t opcode = (uint8_t)(ps->c >> 16);
    bool keyed = (ps->c & 0xffff) != 0;
    ps->state = RR_HDR;
    if (ps->opts & MC_RSP_TERM) {
        if (opcode != MC_BIN_OP_NOOP) return MC_STEP_CONT;
        m->trim = MC_BIN_HDR_LEN;
        return PARSE_DONE;
    }
    if (opcode == MC_BIN_OP_STAT && keyed && ps->d == 0) return MC_STEP_CONT;
    return PARSE_DONE;
}

static int on_header(struct parse_state *ps, struct msg *m, const uint8_t *h)
{
    if (h[0] != MC_BIN_RSP_MAGIC) return mc_fail(ps, "bad binary reply magic");
    /* the reply to the proxy's NOOP is a bare header, all of it cut: one with a body would leave
     * bytes of it to the client */
    if ((ps->opts & MC_RSP_TERM) && h[MC_BIN_OFF_OPCODE] == MC_BIN_OP_NOOP &&
        mc_bin_u32(h + MC_BIN_OFF_BODY) != 0)
        return mc_fail(ps, "binary NOOP reply with a body");
    uint16_t status = mc_bin_u16(h + MC_BIN_OFF_STATUS);
    if (m->rsp_type != RSP_MC_BIN) { /* the message's first packet */
        m->rsp_type = RSP_MC_BIN;
        m->integer = status;
    }
    ps->c = ((uint64_t)h[MC_BIN_OFF_OPCODE] << 16) | mc_bin_u16(h + MC_BIN_OFF_KEYLEN);
    ps->d = status != MC_BIN_ST_OK;
    ps->b = mc_bin_u32(h + MC_BIN_OFF_BODY);
    ps->state = RR_BODY;
    return MC_STEP_CONT;
}

int mc_bin_parse_rsp(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *consumed)
{
    size_t pos = 0;
    int rc = MC_STEP_CONT;
    if (ps->state < MC_BIN_STATE_FIRST) ps->state = RR_HDR; /* a new message (reset to 0) */
    while (rc == MC_STEP_CONT) {
        if (ps->state == RR_HDR) {
            if (len - pos < MC_BIN_HDR_LEN) {
                rc = PARSE_AGAIN;
                break;
            }
            pos += MC_BIN_HDR_LEN;
            rc = on_header(ps, m, buf + pos - MC_BIN_HDR_LEN);
            continue;
        }
        size_t n = (size_t)(ps->b < len - pos ? ps->b : len - pos);
        pos += n;
        ps->b -= n;
        rc = ps->b > 0 ? PARSE_AGAIN : packet_done(ps, m);
    }
    *consumed = pos;
    return rc;
}
