/*
 * memcache_bin_local.c - what the proxy answers itself to a binary-protocol client
 * (memcache_proto.c's local, reject_reply and error_reply hand binary requests here):
 *   - the first request of a binary connection makes its session binary (MC_VARIANT_BINARY: its
 *     requests go on binary server connections);
 *   - noop: a reply with the request's opaque, written after the replies of every earlier request
 *     (the core writes replies in request order, whichever server they came from), so a quiet
 *     pipeline ended by a noop gets it last, as from one memcached;
 *   - quit: an empty reply, then the connection is closed; quitq: closed without one;
 *   - a rejected request (memcache_bin_req.c): memcached's status and text with the request's
 *     opcode and opaque; nothing for one with bad magic (closed, as memcached);
 *   - a request that failed (server down, timed out, out of memory): status 0x0086 (temporary
 *     failure) with strerror's text, or 0x0082 "Out of memory"; never a miss.
 *
 * Threads: pure functions; the worker owning the request.
 */
#include "config.h"
#include "proto/memcache_bin.h"

#include <errno.h>
#include <string.h>

void mc_bin_hdr(uint8_t *out, uint8_t opcode, uint16_t status, uint16_t keylen, uint8_t extlen,
                uint32_t bodylen, const uint8_t *opaque)
{
    memset(out, 0, MC_BIN_HDR_LEN);
    out[0] = MC_BIN_RSP_MAGIC;
    out[MC_BIN_OFF_OPCODE] = opcode;
    out[MC_BIN_OFF_KEYLEN] = (uint8_t)(keylen >> 8);
    out[MC_BIN_OFF_KEYLEN + 1] = (uint8_t)keylen;
    out[MC_BIN_OFF_EXTLEN] = extlen;
    out[MC_BIN_OFF_STATUS] = (uint8_t)(status >> 8);
    out[MC_BIN_OFF_STATUS + 1] = (uint8_t)status;
    for (int i = 0; i < 4; i++) out[MC_BIN_OFF_BODY + i] = (uint8_t)(bodylen >> (24 - 8 * i));
    memcpy(out + MC_BIN_OFF_OPAQUE, opaque, 4);
}

/* A reply of a header and a text body (an error) into buf; its length, 0 when it does not fit. */
static size_t text_reply(const struct msg *req, uint16_t status, const char *text, char *buf, size_t size)
{
    uint8_t h[MC_BIN_HDR_LEN] = { 0 };
    size_t body = strlen(text);
    if (size < MC_BIN_HDR_LEN + body) return 0;
    msg_copy_out(req, 0, h, sizeof(h));
    mc_bin_hdr((uint8_t *)buf, h[MC_BIN_OFF_OPCODE], status, 0, 0, (uint32_t)body, h + MC_BIN_OFF_OPAQUE);
    memcpy(buf + MC_BIN_HDR_LEN, text, body);
    return MC_BIN_HDR_LEN + body;
}

size_t mc_bin_reject_reply(const struct msg *req, char *buf, size_t size)
{
    const char *why = req->reject_reason != NULL ? req->reject_reason : MC_BIN_TXT_UNKNOWN;
    uint16_t status = MC_BIN_ST_UNKNOWN;
    if (why == MC_BIN_TXT_EINVAL) status = MC_BIN_ST_EINVAL;
    else if (why == MC_BIN_TXT_STATS_ARG) status = MC_BIN_ST_NOT_SUPPORTED;
    else if (why == MC_BIN_TXT_TOO_LARGE) status = MC_BIN_ST_TOO_LARGE;
    return text_reply(req, status, why, buf, size);
}

size_t mc_bin_error_reply(const struct msg *req, int err, char *buf, size_t size)
{
    if (err == ENOMEM) return text_reply(req, MC_BIN_ST_ENOMEM, "Out of memory", buf, size);
    char text[128];
    /* GNU strerror_r (_GNU_SOURCE): returns the text, maybe not in text[] */
    return text_reply(req, MC_BIN_ST_TMPFAIL, strerror_r(err, text, sizeof(text)), buf, size);
}

/* An empty reply (status 0) to req: noop, quit. */
static int empty_reply(const struct msg *req, struct msg *rsp)
{
    uint8_t h[MC_BIN_HDR_LEN], out[MC_BIN_HDR_LEN];
    msg_copy_out(req, 0, h, sizeof(h));
    mc_bin_hdr(out, h[MC_BIN_OFF_OPCODE], MC_BIN_ST_OK, 0, 0, 0, h + MC_BIN_OFF_OPAQUE);
    return msg_append_own(rsp, out, sizeof(out));
}

int mc_bin_local(struct proto_session *s, const struct msg *req, struct msg *rsp)
{
    s->variant = MC_VARIANT_BINARY;
    if (req->reject != REJECT_NONE) {
        if (!req->noreply) {
            char buf[MC_BIN_HDR_LEN + 128];
            size_t n = mc_bin_reject_reply(req, buf, sizeof(buf));
            if (msg_append_own(rsp, buf, n) < 0) return -ENOMEM;
        }
        return req->quit ? PROTO_ANSWERED_CLOSE : PROTO_ANSWERED;
    }
    if (req->quit) {
        if (!req->noreply && empty_reply(req, rsp) < 0) return -ENOMEM;
        return PROTO_ANSWERED_CLOSE;
    }
    uint8_t opcode = 0;
    msg_copy_out(req, MC_BIN_OFF_OPCODE, &opcode, 1);
    if (opcode == MC_BIN_OP_NOOP) return empty_reply(req, rsp) < 0 ? -ENOMEM : PROTO_ANSWERED;
    return PROTO_FORWARD;
}
