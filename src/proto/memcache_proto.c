/*
 * memcache_proto.c - memcache_proto, the memcached protocol's proto_ops (proto.h; text, meta and
 * binary): the parsers (memcache_req.c, memcache_rsp.c), fragments (memcache_frag.c), what the proxy answers
 * itself and the reply texts it writes:
 *   rejected request: "ERROR\r\n" (unknown command) or "CLIENT_ERROR <reason>\r\n", or nothing
 *                     when it ends in noreply;
 *   quit: nothing, the connection is closed;
 *   mn (the meta no-op): "MN\r\n", written after the replies of the requests before it;
 *   failed request:   "SERVER_ERROR <strerror(err)>\r\n";
 *   unparseable stream: "CLIENT_ERROR <why>\r\n", then the connection is closed.
 * A binary-protocol request (MC_CMD_BINARY) is answered by memcache_bin_local.c instead.
 * Server connections need no set-up; the health probe is "version".
 *
 * Threads: const ops; any worker.
 */
#include "config.h"
#include "proto/memcache_bin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* snprintf's length, cut to what fits in buf (size 0: nothing written). */
static size_t clamp_len(int n, size_t size)
{
    if (n < 0 || size == 0) return 0;
    return (size_t)n < size ? (size_t)n : size - 1;
}

static size_t mc_reject_reply(const struct msg *req, char *buf, size_t size)
{
    if (req->cmd == MC_CMD_BINARY) return mc_bin_reject_reply(req, buf, size);
    if (req->reject == REJECT_CLIENT_ERROR) {
        const char *reason = req->reject_reason ? req->reject_reason : "bad command line format";
        return clamp_len(snprintf(buf, size, "CLIENT_ERROR %s\r\n", reason), size);
    }
    return clamp_len(snprintf(buf, size, "ERROR\r\n"), size);
}

static size_t mc_error_reply(const struct msg *req, int err, char *buf, size_t size)
{
    if (req != NULL && req->cmd == MC_CMD_BINARY) return mc_bin_error_reply(req, err, buf, size);
    /* text and meta requests alike: memcached sends its meta clients SERVER_ERROR too */
    char text[128];
    /* GNU strerror_r (_GNU_SOURCE): returns the text, maybe not in text[] */
    const char *s = strerror_r(err, text, sizeof(text));
    return clamp_len(snprintf(buf, size, "SERVER_ERROR %s\r\n", s), size);
}

static size_t mc_protocol_error_reply(const char *why, char *buf, size_t size)
{
    return clamp_len(snprintf(buf, size, "CLIENT_ERROR %s\r\n", why), size);
}

static void mc_session_init(struct proto_session *s, const struct conf_pool *cp, const struct conf_pool *old)
{
    (void)cp;
    (void)old; /* on a reload the variant stays: the connection keeps its protocol */
    s->admitted = true; /* nothing to authenticate */
    s->authed = false;
}

static int mc_local(struct proto_session *s, const struct conf_pool *cp, const struct msg *req, struct msg *rsp)
{
    (void)cp;
    if (req->cmd == MC_CMD_BINARY) return mc_bin_local(s, req, rsp);
    if (req->reject != REJECT_NONE) {
        /* with noreply memcached sends nothing either; an unsupported command with noreply also
         * sets quit (memcache_req.c): the client must not believe it was carried out */
        if (!req->noreply) {
            char buf[512];
            size_t n = mc_reject_reply(req, buf, sizeof(buf));
            if (msg_append_copy(rsp, buf, n) < 0) return -ENOMEM;
        }
        return req->quit ? PROTO_ANSWERED_CLOSE : PROTO_ANSWERED;
    }
    if (req->quit) return PROTO_ANSWERED_CLOSE; /* no reply */
    if (req->cmd == MC_CMD_MN) /* after every earlier reply, whichever server it came from */
        return msg_append_own(rsp, "MN\r\n", 4) < 0 ? -ENOMEM : PROTO_ANSWERED;
    return PROTO_FORWARD;
}

/* Unknown verbs and binary opcodes are "other"; a served command badly formed is not a refused
 * command. */
static int mc_refused_bucket(const struct msg *req)
{
    if (req->reject == REJECT_NONE) return -1;
    if (req->cmd == MC_CMD_UNKNOWN) return MC_NREFUSED;
    /* binary: an opcode not served (SASL, verbosity, ...), not a malformed request */
    if (req->cmd == MC_CMD_BINARY)
        return req->reject_reason == MC_BIN_TXT_UNKNOWN && !req->quit ? MC_NREFUSED : -1;
    if (req->cmd >= MC_CMD_COUNT || !mc_cmds[req->cmd].unsupported) return -1;
    return req->cmd - MC_REFUSED_FIRST;
}

static void mc_session_free(struct proto_session *s)
{
    (void)s;
}

static int mc_server_setup(const struct conf_pool *cp, uint8_t variant, bool replica, struct msg_pool *pool,
                           struct msg **out, uint32_t max)
{
    (void)cp;
    (void)variant;
    (void)replica;
    (void)pool;
    (void)out;
    (void)max;
    return 0;
}

/* A VERSION line is the only answer of a live memcached. */
static bool mc_probe_alive(const uint8_t *reply, size_t len)
{
    return memchr(reply, '\n', len) != NULL && len >= 8 && memcmp(reply, "VERSION ", 8) == 0;
}

const struct proto_ops memcache_proto = {
    .name = "memcache",
    .parse_req = mc_parse_req,
    .parse_rsp = mc_parse_rsp,
    .fragment = mc_fragment,
    .coalesce = mc_coalesce,
    .reject_reply = mc_reject_reply,
    .refused_names = mc_cmd_names + MC_REFUSED_FIRST,
    .nrefused = MC_NREFUSED,
    .refused_bucket = mc_refused_bucket,
    .error_reply = mc_error_reply,
    .protocol_error_reply = mc_protocol_error_reply,
    .session_init = mc_session_init,
    .session_free = mc_session_free,
    .local = mc_local,
    .server_setup = mc_server_setup,
    .probe_request = "version\r\n",
    .probe_alive = mc_probe_alive,
    .max_clients_reply = "SERVER_ERROR max number of clients reached\r\n",
};
