/*
 * memcache_bin.h - memcached's binary protocol (memcache_bin_*.c): the packet header, the opcodes
 * the proxy knows and how each is served, the statuses it writes, and the entry points the text
 * files call (memcache_req.c picks the protocol on a connection's first byte, memcache_rsp.c hands
 * over the replies of binary requests, memcache_proto.c their local answers, memcache_fanout.c
 * stat and flush). Nothing is translated: a keyed request goes to its key's server as it came, on
 * a server connection of its own variant (MC_VARIANT_BINARY), and the client gets that server's
 * reply as it came (notes/memcache-binary.md).
 *
 * Threads: const tables and pure functions; any worker (each parse_state belongs to one conn).
 */
#ifndef NC_MEMCACHE_BIN_H
#define NC_MEMCACHE_BIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/memcache.h"

/* parse_state.mode of a memcached client connection (its first byte decides, as memcached's
 * "-B auto"): text (meta commands included), binary from its first message on; BIN_FIRST while
 * that first message is read (it goes through local(), which sets the session's variant). */
#define MC_MODE_TEXT      1
#define MC_MODE_BINARY    2
#define MC_MODE_BIN_FIRST 3
/* proto_session.variant of a binary client: its requests go on binary server connections */
#define MC_VARIANT_BINARY 1
/* msg.rsp_opts of a binary request: its reply is binary packets (with MC_RSP_TERM: up to the
 * reply to the NOOP the proxy appended) */
#define MC_RSP_BIN 4

/* Header fields (big-endian): magic, opcode, key length (2), extras length, data type, vbucket
 * (request) or status (reply) (2), body length (4) = extras + key + value, opaque (4), cas (8). */
#define MC_BIN_OFF_OPCODE 1
#define MC_BIN_OFF_KEYLEN 2
#define MC_BIN_OFF_EXTLEN 4
#define MC_BIN_OFF_STATUS 6
#define MC_BIN_OFF_BODY   8
#define MC_BIN_OFF_OPAQUE 12

/* The opcodes the proxy serves. */
#define MC_BIN_OP_FLUSH   0x08
#define MC_BIN_OP_NOOP    0x0a
#define MC_BIN_OP_VERSION 0x0b
#define MC_BIN_OP_STAT    0x10
#define MC_BIN_OP_QUITQ   0x17
#define MC_BIN_OP_FLUSHQ  0x18

/* Statuses (memcached's texts) */
#define MC_BIN_ST_OK            0x0000
#define MC_BIN_ST_TOO_LARGE     0x0003  /* "Too large." */
#define MC_BIN_ST_EINVAL        0x0004  /* "Invalid arguments" */
#define MC_BIN_ST_UNKNOWN       0x0081  /* "Unknown command" */
#define MC_BIN_ST_ENOMEM        0x0082  /* "Out of memory" */
#define MC_BIN_ST_NOT_SUPPORTED 0x0083
#define MC_BIN_ST_TMPFAIL       0x0086  /* the proxy could not get an answer (the server's errno) */

/* Reject reasons of binary requests (msg.reject_reason; the status follows from it). */
extern const char MC_BIN_TXT_UNKNOWN[];   /* 0x0081 */
extern const char MC_BIN_TXT_EINVAL[];    /* 0x0004 */
extern const char MC_BIN_TXT_STATS_ARG[]; /* 0x0083 */
extern const char MC_BIN_TXT_TOO_LARGE[]; /* 0x0003 */

/* How an opcode is served (mc_bin_op.shape): which parts a well-formed request has. */
enum mc_bin_shape {
    MC_BIN_UNKNOWN = 0, /* not served: "Unknown command", its body passed over */
    MC_BIN_GET,         /* no extras, a key, no value */
    MC_BIN_STORE,       /* 8 extras (flags, exptime), a key, a value */
    MC_BIN_DELETE,      /* no extras, a key, no value */
    MC_BIN_ARITH,       /* 20 extras (delta, initial, exptime), a key, no value */
    MC_BIN_CONCAT,      /* no extras, a key, a value */
    MC_BIN_TOUCH,       /* 4 extras (exptime), a key, no value */
    MC_BIN_BARE,        /* nothing at all (noop, quit, version) */
    MC_BIN_FLUSH,       /* 0 or 4 extras (delay), nothing else */
    MC_BIN_STAT,        /* an optional key (a group: refused), nothing else */
};

struct mc_bin_op {
    const char *name;   /* for the slow log ("getkq", ...) */
    uint8_t shape;      /* enum mc_bin_shape */
    bool quiet;         /* memcached may answer nothing: the proxy appends a NOOP */
    uint32_t flags;     /* CMD_F_* of the request */
};
/* Indexed by opcode; entries of unknown opcodes are zero. */
extern const struct mc_bin_op mc_bin_ops[256];

/* The NOOP request appended to a quiet one (opaque 0): its reply ends the quiet one's. */
extern const uint8_t MC_BIN_NOOP_REQ[MC_BIN_HDR_LEN];

/* Big-endian fields. */
static inline uint16_t mc_bin_u16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t mc_bin_u32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
/* Writes a reply header into out[0..24): magic 0x81, opcode, status, the lengths (body =
 * extlen + keylen + the value's length), the opaque as sent (4 bytes) and cas 0. */
void mc_bin_hdr(uint8_t *out, uint8_t opcode, uint16_t status, uint16_t keylen, uint8_t extlen,
                uint32_t bodylen, const uint8_t *opaque);

/* The parsers (proto.h parse_req, parse_rsp) of a binary connection; ps->state values from
 * MC_BIN_STATE_FIRST on. */
#define MC_BIN_STATE_FIRST 16
int mc_bin_parse_req(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *consumed);
int mc_bin_parse_rsp(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *consumed);

/* local() of a binary request (memcache_bin_local.c): the session becomes binary; rejects, noop
 * and quit are answered. Returns enum proto_local or -ENOMEM. */
int mc_bin_local(struct proto_session *s, const struct msg *req, struct msg *rsp);
/* The reply to a rejected binary request, and to one that failed with err (proto.h). */
size_t mc_bin_reject_reply(const struct msg *req, char *buf, size_t size);
size_t mc_bin_error_reply(const struct msg *req, int err, char *buf, size_t size);

/* stat and flush, sent to every server (memcache_bin_fanout.c). */
int mc_bin_fragment_all(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool);
int mc_bin_coalesce_all(const struct proto_view *v, struct msg *req, struct msg *rsp);

#endif
