/*
 * msg.h - a request or a response: a list of spans over mbufs (its bytes, in order) plus what the
 * protocol parser found in it (command, keys, reply type, elements). Multi-key requests own
 * fragments (one sub-request per server) whose replies are coalesced into one reply.
 *
 * Offsets: a byte of a msg is named by its offset from the msg's first byte (0 .. len). Parsers
 * record keys and reply elements as offset ranges; msg_append_slice() copies such a range (as spans,
 * not bytes) into another msg.
 *
 * Edits: a parser cannot touch spans while it runs (the reader appends the bytes it consumed after
 * it returns), so it records edits the reader applies once the msg is complete (msg_finish): trim,
 * bytes cut from a reply's end (the reply to a terminator the proxy added), then tail, bytes
 * appended to a request (that terminator). Bytes the proxy writes for one msg (a decoded key, a
 * tail, a short reply) go to its own chunk (msg_own: up to MSG_OWN_CAP bytes, allocated once and
 * kept with a pooled msg, so none of this allocates per request); so do a multi-key request's
 * fragment arrays (msg_frags_array, msg_key_frag_array; notes/msg-reuse.md).
 *
 * Threads: a msg belongs to the worker that created it, like its mbufs.
 */
#ifndef NC_MSG_H
#define NC_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "msg/mbuf.h"

struct conn;

struct span {
    struct mbuf *mb;
    uint32_t off;
    uint32_t len;
};

/* A key of a request. ptr points into an mbuf the msg holds a reference on. */
struct msg_key {
    const uint8_t *ptr;
    uint32_t len;
    uint64_t start;   /* offset of this key's argument group (redis: "$3\r\nkey\r\n" and, for MSET, */
    uint64_t end;     /* the value after it; memcached: the key token) [start, end) */
};

/* A top-level element of a reply: a redis array element, or a memcached VALUE block. */
struct msg_elem {
    uint64_t start, end;  /* [start, end) offsets of the whole element */
    const uint8_t *key;   /* memcached VALUE blocks: the key; NULL otherwise */
    uint32_t key_len;
};

enum msg_rsp_type {
    RSP_NONE = 0,
    /* redis */
    RSP_STATUS, RSP_ERROR, RSP_INTEGER, RSP_BULK, RSP_NIL_BULK, RSP_ARRAY, RSP_NIL_ARRAY,
    /* redis RESP3 (a connection after HELLO 3) */
    RSP_MAP, RSP_SET, RSP_DOUBLE, RSP_BOOL, RSP_NULL, RSP_BIGNUM, RSP_VERBATIM,
    RSP_BLOB_ERROR,    /* "!N": an error reply, as RSP_ERROR */
    RSP_PUSH,          /* ">N": out-of-band data from the server, not the reply to a request */
    /* memcached */
    RSP_MC_END,        /* VALUE blocks (maybe none) then END */
    RSP_MC_STORED, RSP_MC_NOT_STORED, RSP_MC_EXISTS, RSP_MC_NOT_FOUND, RSP_MC_DELETED,
    RSP_MC_TOUCHED, RSP_MC_NUMBER, RSP_MC_VERSION, RSP_MC_OK,
    RSP_MC_ERROR, RSP_MC_CLIENT_ERROR, RSP_MC_SERVER_ERROR,
    /* memcached meta commands: VA (a value), HD, EN, NF, NS, EX, ME, and MN (a quiet request's
     * terminator alone: nothing for the client) */
    RSP_MC_VA, RSP_MC_HD, RSP_MC_EN, RSP_MC_NF, RSP_MC_NS, RSP_MC_EX, RSP_MC_ME, RSP_MC_MN,
    /* memcached binary protocol: packets (integer: the first one's status) */
    RSP_MC_BIN,
};

/* Why a parsed request is answered by the proxy with an error instead of being forwarded. */
enum msg_reject {
    REJECT_NONE = 0,
    REJECT_UNSUPPORTED,   /* redis: "-ERR unsupported command '<name>'" */
    REJECT_ARITY,         /* redis: "-ERR wrong number of arguments for '<name>' command" */
    REJECT_CLIENT_ERROR,  /* memcached: "CLIENT_ERROR <reject_reason>" */
    REJECT_ERROR,         /* memcached: "ERROR" (unknown command) */
};

/* msg.block_ms of a command that may block for ever (its timeout is 0, or not understood) */
#define MSG_BLOCK_FOREVER UINT32_MAX

/* A reply that says the request belongs elsewhere (Redis Cluster): it did not run. */
enum msg_redirect {
    MSG_REDIRECT_NONE,
    MSG_REDIRECT_MOVED,            /* -MOVED <slot> <host:port>: the slot's master is there */
    MSG_REDIRECT_ASK,              /* -ASK <slot> <host:port>: this key is there, for this request */
    MSG_REDIRECT_TRYAGAIN,         /* -TRYAGAIN: the slot is being moved: again shortly */
};

struct msg {
    TAILQ_ENTRY(msg) client_link;  /* the client's requests, in arrival order */
    TAILQ_ENTRY(msg) server_link;  /* a server connection's send queue, then its wait queue */
    struct conn *owner;            /* request: its client; response: its server conn */
    struct msg *peer;              /* request <-> its response */
    uint64_t id;

    /* bytes (the array: at the end) */
    uint32_t nspans;
    uint64_t len;

    /* request, filled by the parser */
    uint16_t cmd;                  /* index in the protocol's command table */
    uint32_t cmd_flags;            /* that command's flags (proto.h CMD_F_*) */
    const uint8_t *name;           /* command name as sent (redis arg 0 / memcached verb) */
    uint32_t name_len;
    uint32_t block_ms;             /* a blocking command's own timeout (CMD_F_BLOCK): the server
                                    * deadline instead of the pool's timeout; 0: not one;
                                    * MSG_BLOCK_FOREVER: no deadline */
    uint64_t nargs;                /* redis: number of arguments including the name */
    uint32_t nkeys;                /* (the array: at the end) */
    bool noreply;                  /* memcached "noreply": no response will come (or be sent) */
    bool quit;                     /* close the client after the replies before this one */
    uint8_t reject;                /* enum msg_reject */
    const char *reject_reason;     /* static text for REJECT_CLIENT_ERROR */
    uint8_t rsp_opts;              /* its reply's parse_state.opts (the protocol's: memcached MC_RSP_*) */
    uint8_t tail_len;              /* tail: static bytes appended when it is complete (msg_finish) */
    const uint8_t *tail;

    /* response, filled by the parser */
    uint8_t rsp_type;              /* enum msg_rsp_type */
    bool rsp_fatal;                /* a reply that means the server is unusable (-LOADING, -BUSY, ...) */
    bool rsp_readonly;             /* redis -READONLY: a replica refused a write (it did not run) */
    uint8_t rsp_redirect;          /* enum msg_redirect: Redis Cluster's -MOVED, -ASK, -TRYAGAIN */
    uint8_t trim;                  /* bytes at its end the client must not get, cut when it is
                                    * complete (msg_finish): the reply to the proxy's terminator */
    int64_t integer;               /* RSP_INTEGER value */
    uint32_t nelems;               /* top-level elements, recorded when the parser is asked to
                                    * (the array: at the end) */

    /* fragments (multi-key requests) */
    struct msg *frag_owner;        /* a fragment: the client's request */
    struct msg **frags;            /* the owner: its fragments */
    uint32_t nfrags, nfrags_done;
    uint32_t *key_frag;            /* the owner: key i went to frags[key_frag[i]] */

    /* state kept by the core */
    int err;                       /* errno of a failed request (reply "-ERR strerror") */
    bool done;                     /* its reply (or error) is ready */
    bool swallow;                  /* proxy-internal (AUTH/SELECT on connect): drop the reply */
    bool retried;                  /* sent again once after its master moved (core/park.h) */
    bool gate;                     /* a set-up request whose reply the protocol checks
                                    * (proto.setup_check) before anything after it is written */
    bool txn_wait;                 /* request held behind its client's transaction (feature/txn.c) */
    bool fair_wait;                /* request held back: its client has its share in flight (core/fair.h) */
    uint8_t redirects;             /* times a Redis Cluster sent it elsewhere (core/redirect.h) */
    uint32_t server_idx;           /* the server it was routed to */
    uint32_t fair_cost;            /* request: what it counts in its client's share while in flight */
    uint64_t t_start, t_sent;      /* usec: read from client, written to server */
    uint64_t held;                 /* request: bytes charged to its client's held_bytes */

    /* The arrays, kept with their capacity when the msg is reused (msg_get clears everything
     * before them), and its own chunk (msg_own; NULL until first used). */
    struct span *spans;
    struct msg_key *keys;
    struct msg_elem *elems;
    struct mbuf *own;
    struct msg **frags_kept;       /* a multi-key request's fragments array (msg_frags_array) */
    uint32_t *key_frag_kept;       /* and its key -> fragment array (msg_key_frag_array) */
    uint32_t spans_cap, keys_cap, elems_cap, frags_kept_cap, key_frag_kept_cap;
};

TAILQ_HEAD(msg_tqh, msg);

/* A per-worker free list of msgs. */
struct msg_pool {
    struct msg *free;              /* linked through peer */
    uint32_t nfree, max_free;
    uint32_t low_free;             /* the fewest free msgs since the last msg_pool_trim_idle */
    uint64_t next_id;
    uint64_t nlive;
};

void msg_pool_init(struct msg_pool *pool, uint32_t max_free);
void msg_pool_deinit(struct msg_pool *pool);
/* Frees free msgs beyond keep (after a burst: a free msg left in the middle of the heap would
 * keep its whole page from going back to the system). */
void msg_pool_trim(struct msg_pool *pool, uint32_t keep);
/* Frees the free msgs that stayed unused since the last call, beyond keep, and starts a new
 * period (as mbuf_pool_trim_idle); returns how many were freed. */
uint32_t msg_pool_trim_idle(struct msg_pool *pool, uint32_t keep);
/* A zeroed msg with a fresh id, or NULL when out of memory. */
struct msg *msg_get(struct msg_pool *pool);
/* Drops every span (unref'ing mbufs), the fragments array and the msg itself. Does not put the
 * fragments or the peer: the caller does that. A msg with arrays past 64 entries is freed, not
 * kept (memory returns to its baseline after a burst). */
void msg_put(struct msg_pool *pool, struct msg *m);

/* msg_append's new span when the array is full: grows it. */
int msg_append_grow(struct msg *m, struct mbuf *mb, uint32_t off, uint32_t len);

/* Appends bytes [off, off+len) of mb (takes a reference). Merges with the last span when adjacent.
 * Returns 0 or -ENOMEM. Inline: the reader appends every message it parses. */
static inline int msg_append(struct msg *m, struct mbuf *mb, uint32_t off, uint32_t len)
{
    if (len == 0) return 0;
    if (m->nspans > 0) {
        struct span *last = &m->spans[m->nspans - 1];
        if (last->mb == mb && last->off + last->len == off) {
            last->len += len;
            m->len += len;
            return 0;
        }
    }
    if (m->nspans == m->spans_cap) return msg_append_grow(m, mb, off, len);
    mbuf_ref(mb);
    m->spans[m->nspans++] = (struct span){ .mb = mb, .off = off, .len = len };
    m->len += len;
    return 0;
}
/* Appends a copy of data as a literal mbuf (a malloc: for cold replies). Returns 0 or -ENOMEM. */
int msg_append_literal(struct msg *m, const void *data, size_t len);

/* The bytes a msg may write for itself (a 24-byte binary header, a decoded 187-byte key...). */
#define MSG_OWN_CAP 256
/* n more bytes of m's own chunk, valid while m lives (the chunk is kept with a pooled msg and
 * reused once nothing else refers to it); NULL when out of memory or past MSG_OWN_CAP in all. */
uint8_t *msg_own(struct msg *m, size_t n);
/* Appends a copy of data[0..n) from m's own chunk. Returns 0 or -ENOMEM (no room left too). */
int msg_append_own(struct msg *m, const void *data, size_t n);
/* Appends a copy of data[0..n): from m's own chunk while it has room, else as a literal (short
 * protocol text on a hot path: a fragment's header, a rebuilt reply's). Returns 0 or -ENOMEM. */
int msg_append_copy(struct msg *m, const void *data, size_t n);
/* A multi-key request's arrays for m->frags (n entries, zeroed) and m->key_frag (n entries), from
 * arrays kept with m across reuses: no malloc per request once the pool is warm. msg_put leaves
 * them with the msg (it frees a frags or key_frag array only when it is not one of these).
 * NULL when out of memory. */
struct msg **msg_frags_array(struct msg *m, uint32_t n);
uint32_t *msg_key_frag_array(struct msg *m, uint32_t n);
/* Cuts the last n bytes (all when n >= len), dropping the spans left empty. */
void msg_trim_tail(struct msg *m, uint64_t n);
/* Applies the parser's edits to a complete msg: cuts trim bytes, then appends the tail. Returns 0
 * or -ENOMEM. */
int msg_finish(struct msg *m);
/* Appends the bytes [start, end) of src (by reference, no copy). Returns 0, -EINVAL or -ENOMEM. */
int msg_append_slice(struct msg *dst, const struct msg *src, uint64_t start, uint64_t end);
/* Copies up to n bytes at offset off of m into out (for tests and small peeks). Returns bytes copied. */
size_t msg_copy_out(const struct msg *m, uint64_t off, void *out, size_t n);

/* Keys one request may have: the proxy keeps about 70 bytes of bookkeeping per key (its entry,
 * its fragment's copy, its place), 2 to 35 times what the key costs the client to send, so a
 * request of unbounded keys would let one client grow the proxy by gigabytes. */
#define MSG_KEYS_MAX (1u << 20)
/* Appends a key; -E2BIG past MSG_KEYS_MAX keys, -ENOMEM. */
int msg_add_key(struct msg *m, const uint8_t *ptr, uint32_t len, uint64_t start, uint64_t end);
/* The parse error text for msg_add_key's error rc. */
const char *msg_add_key_error(int rc);
int msg_add_elem(struct msg *m, uint64_t start, uint64_t end, const uint8_t *key, uint32_t key_len);

#endif
