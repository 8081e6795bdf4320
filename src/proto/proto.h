/*
 * proto.h - the contract between the core and a protocol (redis, memcached): one const
 * struct proto_ops per protocol, chosen by the pool's `redis:` key.
 *
 * Parsing is incremental and token-based. The core calls parse_req/parse_rsp with the bytes it has
 * (buf[0..len), contiguous, inside one mbuf) starting at the first byte not yet consumed. The parser
 * consumes only whole tokens: a line, a "$N\r\n" header, a key argument with its CRLF, ... except
 * value payloads that are not needed contiguous (redis bulk values that are not keys or the command
 * name, memcached data blocks), which it may consume in any number of pieces. It reports how many
 * bytes it consumed in *consumed and returns:
 *   PARSE_DONE   one message is complete; its last byte is buf[*consumed - 1]
 *   PARSE_AGAIN  more bytes are needed; the core will call again with the unconsumed bytes
 *                (maybe moved to a new mbuf, so the parser keeps no pointer into them) followed
 *                by new ones. If the unconsumed tail already fills a whole mbuf, the core gives up
 *                on the stream (the token is larger than -m allows).
 *   PARSE_ERROR  the stream cannot be parsed any further; ps->error says why. The core answers
 *                the protocol's error text and closes the connection.
 * Pointers the parser stores in the msg (keys, name, VALUE keys) point into consumed bytes, which
 * stay valid while the msg holds its spans, or into the msg's own chunk (msg_own: a key the parser
 * decoded). The msg's len is the offset of buf[0] in the message during the call (the core appends
 * the consumed bytes after the call returns), so a parser cannot edit the spans: it records its
 * edits in the msg (trim: the last bytes of a reply the client must not get; tail, tail_len: bytes
 * appended to a request, such as a terminator) and the reader applies them once the message is
 * complete, before anyone sees it (msg_finish, proto/reader.h). A request with a tail usually sets
 * rsp_opts too: the options its reply is parsed with (parse_state.opts).
 *
 * A request that parses but must not be forwarded (unknown command, wrong arity, memcached key
 * too long, ...) is returned as PARSE_DONE with msg->reject set, after consuming all its bytes,
 * so the connection stays usable. The protocol answers it in local() (below) with reject_reply,
 * or with nothing when msg->noreply is also set (memcached sends nothing for some rejects that
 * end in noreply). A reject with msg->quit set closes the connection after its reply (or after
 * the earlier ones, with noreply); such a request may end before all its bytes (a memcached
 * binary-protocol header, a redis request declaring more arguments than are worth reading): the
 * rest is never parsed.
 *
 * Everything else a protocol knows that the core does not: the requests the proxy answers itself
 * (local(), with a small per-client session), the requests it asks of every server and answers
 * from their replies (CMD_F_FRAG_ALL: redis HELLO, INFO), the protocol variant a client speaks
 * (which picks its server connections), the error texts the proxy writes, the requests sent first
 * on every new server connection (redis HELLO 3/AUTH/SELECT), the health probe and what counts as
 * an answer, and the reply to a client over client_connections. A locally answered command or a
 * connection set-up step is an entry here, never a branch in core/.
 *
 * Threads: the ops are const and the functions keep no global state; parse_state lives in a conn.
 */
#ifndef NC_PROTO_H
#define NC_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/textbuf.h"
#include "msg/msg.h"

struct conf;
struct conf_pool;
struct textbuf;

enum parse_status { PARSE_ERROR = -1, PARSE_AGAIN = 0, PARSE_DONE = 1 };

/* command flags (struct msg.cmd_flags) */
#define CMD_F_LOCAL_PING   (1u << 0)  /* answered by the proxy: +PONG */
#define CMD_F_QUIT         (1u << 1)  /* close after earlier replies (redis QUIT, memcached quit) */
#define CMD_F_AUTH         (1u << 2)  /* redis AUTH: handled by the proxy */
#define CMD_F_ANY_SERVER   (1u << 3)  /* no key: forward to an arbitrary server (COMMAND, version) */
#define CMD_F_FRAG_MGET    (1u << 4)  /* split per server, reply is an array in key order */
#define CMD_F_FRAG_SUM     (1u << 5)  /* split per server, reply is the sum of integers (DEL, EXISTS, ...) */
#define CMD_F_FRAG_MSET    (1u << 6)  /* split per server, reply is one +OK */
#define CMD_F_FRAG_MCGET   (1u << 7)  /* memcached get/gets/gat/gats: VALUE blocks in key order, one END */
#define CMD_F_FRAG_ONE     (1u << 13) /* its keys must be on one server (redis XREAD): on several,
                                       * fragment() builds no fragment and coalesce() writes the
                                       * protocol's error */
#define CMD_F_FRAG_ELEMS   (1u << 14) /* sent to every server: the fragments' replies have their
                                       * top-level elements recorded (redis SCAN, SCRIPT) */
#define CMD_F_FRAG_MASK    (CMD_F_FRAG_MGET | CMD_F_FRAG_SUM | CMD_F_FRAG_MSET | CMD_F_FRAG_MCGET | \
                            CMD_F_FRAG_ONE)
#define CMD_F_WRITE        (1u << 8)  /* informational: modifies data */
#define CMD_F_LOCAL        (1u << 9)  /* local() answers it, or checks it and says PROTO_FORWARD
                                       * (redis HELLO, CLIENT, ECHO, SELECT, RESET, INFO) */
#define CMD_F_FRAG_ALL     (1u << 10) /* keyless, sent to every server of the pool (one fragment
                                       * each, fragment() with every live server's index); its
                                       * coalesce builds the reply (redis HELLO, INFO, KEYS,
                                       * SCAN, ...; memcached stats, flush_all). fragment() may
                                       * build fewer fragments than servers (redis SCAN: one), or
                                       * none: coalesce() then answers from nothing */
#define CMD_F_FRAG_PARTIAL (1u << 11) /* a fragment that fails does not fail the request: coalesce
                                       * takes those that answered; it fails when none did */
#define CMD_F_TXN_SERVER   (1u << 12) /* answered by the proxy, but inside MULTI it is queued for
                                       * the server like any command (redis PING, ECHO) */
/* the commands the core hands to proto_ops.local() */
#define CMD_F_LOCAL_MASK   (CMD_F_LOCAL_PING | CMD_F_QUIT | CMD_F_AUTH | CMD_F_LOCAL)
/* transaction commands: the core's transaction logic (feature/txn.c) handles them */
#define CMD_F_MULTI        (1u << 16) /* redis MULTI: start queueing */
#define CMD_F_EXEC         (1u << 17) /* redis EXEC: run what was queued */
#define CMD_F_DISCARD      (1u << 18) /* redis DISCARD: drop what was queued */
#define CMD_F_WATCH        (1u << 19) /* redis WATCH key...: its keys choose the server */
#define CMD_F_UNWATCH      (1u << 20) /* redis UNWATCH */
#define CMD_F_SWITCH       (1u << 21) /* may change proto_session.variant (redis HELLO, RESET): it
                                       * is served once the client's earlier requests are answered,
                                       * so none of them can be overtaken on the other connections */
#define CMD_F_RESET        (1u << 22) /* redis RESET: ends the client's transaction and WATCH */
#define CMD_F_TXN_MASK     (CMD_F_MULTI | CMD_F_EXEC | CMD_F_DISCARD | CMD_F_WATCH | CMD_F_UNWATCH | \
                            CMD_F_SWITCH | CMD_F_RESET)
#define CMD_F_BLOCK        (1u << 23) /* may block the server connection until its own timeout
                                       * (redis BLPOP, ..., XREAD BLOCK; msg.block_ms): sent on a
                                       * dedicated connection of its client (feature/txn.c) */
/* Pub/Sub subscriptions: the core's subscriber logic (feature/pubsub.c) handles them; the arguments are
 * recorded as keys (the channels or patterns) */
#define CMD_F_PUBSUB       (1u << 24) /* redis (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE */
#define CMD_F_PS_UNSUB     (1u << 25) /* the UNSUBSCRIBE of its kind */
#define CMD_F_PS_PATTERN   (1u << 26) /* kind: patterns (PSUBSCRIBE, PUNSUBSCRIBE) */
#define CMD_F_PS_SHARD     (1u << 27) /* kind: shard channels (SSUBSCRIBE, SUNSUBSCRIBE) */

/* How many variants of its protocol a client may speak (redis: RESP2, RESP3; memcached: text,
 * binary). The core keeps a set of server connections per variant and sends a client's requests on
 * its variant's set. */
#define PROTO_VARIANTS 2

/* The protocol's own per-client data that does not fit in a few bytes (redis: the client's name,
 * lib-name, lib-ver), allocated by local() when it has some, freed by session_free. */
struct proto_session_ext;

/* What a client's connection remembers for its protocol. The core sets id, fd and t_start when it
 * accepts the client; only proto_ops.session_init and proto_ops.local change the rest. */
struct proto_session {
    bool admitted;          /* its requests may be forwarded; false: each goes to local() first
                             * (redis: AUTH is required) */
    bool authed;            /* redis: it sent the pool's redis_auth */
    uint8_t variant;        /* the protocol variant it speaks (< PROTO_VARIANTS; redis: 0 RESP2,
                             * 1 RESP3 after HELLO 3): the core sends its requests on server
                             * connections of that variant */
    uint8_t flags;          /* the protocol's own (redis: CLIENT NO-EVICT, NO-TOUCH) */
    int fd;                 /* the client's socket (redis: CLIENT INFO's addresses) */
    uint64_t id;            /* the client's id, unique in the process (redis: CLIENT ID, HELLO) */
    uint64_t t_start;       /* monotonic usec when it connected */
    struct proto_session_ext *ext; /* NULL when there is nothing in it */
};

/* What the core tells coalesce() of a client and its pool, for the replies a protocol builds from
 * every server's answer (CMD_F_FRAG_ALL). */
struct proto_view {
    const struct proto_session *sess;
    const struct conf_pool *cp;
    long pool_clients;      /* the pool's clients now, every worker */
};

/* What proto_ops.local() did with a request. */
enum proto_local {
    PROTO_FORWARD = 0,      /* not the proxy's to answer: route it to a server */
    PROTO_ANSWERED = 1,     /* answered (the reply is in rsp; empty rsp: no reply at all) */
    PROTO_ANSWERED_CLOSE = 2, /* answered, then close the client once its replies are written */
    PROTO_CLIENT_LIST = 3,  /* a list of the pool's clients (redis CLIENT LIST, and CLIENT INFO:
                             * the list of the asker alone; rsp left empty):
                             * the core gathers it from every loop (feature/clientlist.c) with
                             * list_filter(), client_line() and list_reply() */
};

/* Which clients a list names (proto_ops.list_filter; redis CLIENT LIST's TYPE and ID). */
enum proto_list_type {
    PROTO_LIST_ANY = 0,     /* every client */
    PROTO_LIST_NORMAL,      /* the clients with no subscription */
    PROTO_LIST_PUBSUB,      /* the clients with subscriptions */
    PROTO_LIST_NONE,        /* none (redis: TYPE master, replica: the proxy's clients are neither) */
    PROTO_LIST_SELF,        /* the asking client only (redis CLIENT INFO) */
};
struct proto_list_filter {
    uint8_t type;           /* enum proto_list_type */
    bool by_id;             /* only the clients whose id is one of ids[0..nids) */
    uint32_t nids;
    uint64_t *ids;          /* malloc'd (proto_list_filter_free) */
};
/* Whether the client id (subscribed: it has subscriptions) is one f names. */
bool proto_list_match(const struct proto_list_filter *f, uint64_t id, bool subscribed);
/* A copy of src into dst (its own ids). Returns 0 or -ENOMEM (dst then holds nothing). */
int proto_list_filter_copy(struct proto_list_filter *dst, const struct proto_list_filter *src);
void proto_list_filter_free(struct proto_list_filter *f);

/* The proxy's own replies in a transaction (proto_ops.txn_reply; feature/txn.c says when). */
enum proto_txn_reply {
    PROTO_TXN_OK,               /* MULTI, DISCARD, an UNWATCH with nothing watched */
    PROTO_TXN_QUEUED,           /* a command held until EXEC */
    PROTO_TXN_NESTED,           /* MULTI inside MULTI */
    PROTO_TXN_EXEC_WITHOUT,     /* EXEC outside MULTI */
    PROTO_TXN_DISCARD_WITHOUT,  /* DISCARD outside MULTI */
    PROTO_TXN_WATCH_INSIDE,     /* WATCH inside MULTI */
    PROTO_TXN_NOT_ALLOWED,      /* inside MULTI, a command the proxy answers itself (AUTH, ...) */
    PROTO_TXN_EXECABORT,        /* EXEC of a transaction in which a command was refused */
    PROTO_TXN_CROSS,            /* a command whose keys map to another server: a, b = the names */
    PROTO_TXN_BUSY,             /* no dedicated connection free to server a (b: the limit) */
    PROTO_TXN_TOO_LARGE,        /* the queued commands hold more than a bytes */
    PROTO_TXN_BLOCK_CROSS,      /* a blocking command whose keys map to two servers, a and b */
};

/* Pub/Sub (feature/pubsub.c): the kinds of subscriptions, and what a message read on a subscribed
 * server connection is. */
enum proto_ps_kind { PROTO_PS_CHANNEL = 0, PROTO_PS_PATTERN = 1, PROTO_PS_SHARD = 2, PROTO_PS_KINDS = 3 };
enum proto_ps_what {
    PROTO_PS_OTHER = 0,     /* anything else (the reply to a set-up request) */
    PROTO_PS_CONFIRM,       /* the confirmation of one name of a (un)subscribe request */
    PROTO_PS_MESSAGE,       /* a published message: name is its channel, or its pattern */
    PROTO_PS_ERROR,         /* an error reply: the whole request was refused */
};
struct proto_ps_msg {
    enum proto_ps_what what;
    uint8_t kind;           /* enum proto_ps_kind (CONFIRM, MESSAGE) */
    uint64_t name_start;    /* MESSAGE: offset and length of the channel (pattern) in the msg */
    uint64_t name_len;
};
struct proto_pubsub {
    /* What m (read on a subscribed server connection, its top-level elements recorded) is. */
    void (*classify)(const struct msg *m, struct proto_ps_msg *out);
    /* Appends to t the confirmation a client of variant gets for name (NULL: none, as an
     * UNSUBSCRIBE of nothing) of kind, with count its subscriptions after it. */
    void (*confirm)(struct textbuf *t, uint8_t variant, uint8_t kind, bool unsub, const uint8_t *name,
                    size_t len, int64_t count);
    /* Appends to t the head of a request to a server: (un)subscribe of kind with n names, each
     * then appended by arg. */
    void (*request)(struct textbuf *t, uint8_t kind, bool unsub, uint32_t n);
    void (*arg)(struct textbuf *t, const uint8_t *name, size_t len);
    /* The reply to req from a client that is subscribed, in a variant where only the
     * subscription commands are allowed (redis RESP2): PING's, or the refusal of any other.
     * Writes it into buf, returns its length; 0: req is allowed as it is. */
    size_t (*subscribed_reply)(const struct msg *req, uint8_t variant, char *buf, size_t size);
    /* The first byte of a message in each variant (redis: '*' array, '>' push); the rest of a
     * message is the same in every variant. */
    char message_type[PROTO_VARIANTS];
};

/* What the core knows of a client, for its line in a list (proto_ops.client_line). */
struct proto_client_state {
    bool subscribed;        /* it has subscriptions (or one in progress) */
    uint64_t subs[PROTO_PS_KINDS]; /* its subscriptions of each kind */
};

/* Parser state, one per connection (parse_state_reset between messages). */
/* Whether the n bytes at a and b are equal: a byte loop, cheaper than a memcmp call for the few
 * bytes of a command name or a reply word. */
static inline bool proto_bytes_equal(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;
    for (size_t i = 0; i < n; i++) {
        if (x[i] != y[i]) return false;
    }
    return true;
}

/* (parse_state_reset clears the fields one by one: a new field is cleared there too) */
struct parse_state {
    int state;              /* the parser's own state machine */
    uint64_t a, b, c, d;    /* counters the parser uses as it likes (remaining args, bytes, ...) */
    uint64_t off;           /* scratch */
    uint32_t depth;         /* redis replies: nesting depth */
    uint32_t stack_cap;
    uint64_t *stack;        /* redis replies: remaining elements per level (heap, grown as needed) */
    uint64_t elem_start;
    bool want_elems;        /* set by the core: record top-level elements (fragment replies) */
    uint8_t opts;           /* set by the core before each message: for a request, the options of
                             * the client's pool (proto_ops.parse_opts); for a reply, the rsp_opts
                             * of the request it answers (the head of the connection's sent
                             * queue; 0 when there is none) */
    uint8_t mode;           /* the protocol's choice for the whole connection (memcached: text or
                             * binary, from its first byte); 0 until it chooses. Not cleared by
                             * parse_state_reset: it outlives the messages */
    const char *error;      /* PARSE_ERROR: static text naming the problem */
    const void *table;      /* requests: the command table of the connection's pool
                             * (proto_ops.parse_table_new; redis: the built-in table with the pool's
                             * declared commands), set by the core when a client starts and when it
                             * follows a reload, always between two messages; NULL: the protocol's
                             * own. Not cleared by parse_state_reset */
    const void *entry;      /* the parser's own: what it found of the message being parsed (redis:
                             * its command's entry in the table), set before it is read. Not
                             * cleared by parse_state_reset */
};

/* Before each message: clears the state, keeping want_elems, opts, mode and the stack's memory
 * (inline: it runs twice per proxied request). */
static inline void parse_state_reset(struct parse_state *ps)
{
    ps->state = 0;
    ps->a = ps->b = ps->c = ps->d = 0;
    ps->off = 0;
    ps->depth = 0;
    ps->elem_start = 0;
    ps->error = NULL;
}
/* Frees the stack (safe to call twice). */
void parse_state_free(struct parse_state *ps);

struct proto_ops {
    const char *name;                                /* "redis" / "memcache" */
    int (*parse_req)(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *consumed);
    int (*parse_rsp)(struct parse_state *ps, struct msg *m, const uint8_t *buf, size_t len,
                     size_t *consumed);
    /* The options parse_req is given for the clients of pool cp (parse_state.opts; NULL: 0): what
     * its config changes in what a request is (redis: client_cluster_mode serves the commands of
     * cluster-mode clients, refused as unknown elsewhere). */
    uint8_t (*parse_opts)(const struct conf_pool *cp);
    /* The command table parse_req is given for the clients of pool cp (parse_state.table), built
     * once per config generation and only read afterwards, by every worker: *table NULL when the
     * protocol's own will do (redis: a pool that declares no command). Returns 0 or -ENOMEM.
     * parse_table_free frees it (NULL: nothing). NULL ops: no such table. */
    int (*parse_table_new)(const struct conf_pool *cp, const void **table);
    void (*parse_table_free)(const void *table);
    /* What a pool's config must agree on that only the protocol knows (redis: no declared command
     * is one the proxy handles itself): reports each problem through on_error in the loader's
     * format and returns their number. NULL: nothing to check. */
    unsigned (*conf_check)(const struct conf_pool *cp, void (*on_error)(void *, const char *), void *ctx);

    /*
     * Builds the sub-requests of a multi-key request req (a CMD_F_FRAG_MASK command with nkeys >= 2,
     * n == nkeys): key i goes to server where[i]. Creates one fragment per distinct server (msg_get
     * from pool), keeping key order within each, fills req->frags, req->nfrags, req->key_frag, and
     * sets each fragment's frag_owner, server_idx, nkeys/keys (pointing at req's key bytes) and
     * bytes (a header literal plus slices of req). A CMD_F_FRAG_ALL request gets one fragment per
     * entry of where[0..n) (distinct servers), no keys, no key_frag. Returns 0 or -ENOMEM (then
     * nothing is left allocated).
     */
    int (*fragment)(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool);

    /*
     * Builds in rsp the client's reply for req from its fragments' replies (frags[i]->peer, every
     * one present; with CMD_F_FRAG_PARTIAL, those of the fragments that failed, frags[i]->err set,
     * are NULL). v: the client (for the replies the protocol builds itself). Returns 0, or -EINVAL
     * when a fragment's reply is not of the expected type (the core then answers an error
     * instead), or -ENOMEM.
     */
    int (*coalesce)(const struct proto_view *v, struct msg *req, struct msg *rsp);

    /* Writes the reply text for a rejected request (msg->reject) into buf; returns its length. */
    size_t (*reject_reply)(const struct msg *req, char *buf, size_t size);

    /*
     * Refused commands, counted and logged by the core (core/refused.c): a known command the
     * proxy does not serve is counted under its name, refused_names[0..nrefused); any other name
     * in bucket nrefused, "other", so a client cannot add names. refused_bucket: the bucket of a
     * rejected request, or -1 when it is not a refused command (a served command with a wrong
     * arity or a bad argument).
     */
    const char *const *refused_names;
    uint32_t nrefused;
    int (*refused_bucket)(const struct msg *req);
    /* Writes the error reply for the failed request req (errno err): "-ERR <strerror>\r\n" or
     * "SERVER_ERROR <strerror>\r\n" (a protocol may shape it after req: NULL says nothing of
     * it). Returns its length. */
    size_t (*error_reply)(const struct msg *req, int err, char *buf, size_t size);
    /* Writes the last reply to a client whose stream cannot be parsed (why: the parser's text).
     * Returns its length. */
    size_t (*protocol_error_reply)(const char *why, char *buf, size_t size);

    /* A client starts on pool cp (old NULL; id, fd and t_start are set), or moves to cp from pool
     * old after a reload. */
    void (*session_init)(struct proto_session *s, const struct conf_pool *cp, const struct conf_pool *old);
    /* The client is gone: frees s->ext. */
    void (*session_free)(struct proto_session *s);
    /*
     * The requests the proxy answers itself. The core calls it only for a request with reject or
     * quit set, a command flag of CMD_F_LOCAL_MASK, or a client not admitted. It writes the reply
     * into rsp (an empty msg; left empty: no reply) and returns enum proto_local, or -ENOMEM.
     */
    int (*local)(struct proto_session *s, const struct conf_pool *cp, const struct msg *req, struct msg *rsp);

    /* A list of the pool's clients (local() said PROTO_CLIENT_LIST; NULL for a protocol without
     * one). list_filter: req's filter into f (returns 0), or the error for its arguments into rsp
     * (returns PROTO_ANSWERED), or -ENOMEM (f then holds nothing). client_line: appends to t the
     * line of client s of pool cp (st: what the core knows of it), its end included; each loop
     * renders its own clients. list_reply: the reply to a client of variant of the lines
     * text[0..len) into rsp; returns 0 or -ENOMEM. */
    int (*list_filter)(const struct msg *req, struct proto_list_filter *f, struct msg *rsp);
    void (*client_line)(struct textbuf *t, const struct proto_session *s, const struct conf_pool *cp,
                        const struct proto_client_state *st);
    int (*list_reply)(uint8_t variant, const char *text, size_t len, struct msg *rsp);

    /* The requests written first on every new server connection of pool cp for clients of
     * variant (redis: HELLO 3 for RESP3, AUTH, SELECT; READONLY on a Redis Cluster replica),
     * their replies dropped: built into out[] (at most max, msg_get from pool, swallow set);
     * replica: the connection is to a replica of the pool's topology. Returns how many, or
     * -ENOMEM (nothing left allocated). */
    int (*server_setup)(const struct conf_pool *cp, uint8_t variant, bool replica, struct msg_pool *pool,
                        struct msg **out, uint32_t max);
    /* The reply rsp to a set-up request marked gate (redis: ROLE where the pool follows its
     * servers through sentinels): 0 when the connection may be used, or -errno (-EREMCHG: the
     * server is not what the pool's topology says: a master no longer, or, for a replica's
     * connection, not a replica). NULL: no gate. */
    int (*setup_check)(const struct msg *req, const struct msg *rsp, bool replica);

    /* A reply the parser marked rsp_redirect (redis -MOVED/-ASK <slot> <host:port>): where it
     * points, host into host[0..hostlen) NUL-terminated. Returns 0, or -1 when it names none
     * (-TRYAGAIN). NULL for a protocol without redirections. */
    int (*redirect_target)(const struct msg *rsp, char *host, size_t hostlen, uint16_t *port);
    /* The request that makes the next one of its connection run on a slot being imported
     * (redis ASKING), its reply dropped (swallow set); NULL when out of memory. */
    struct msg *(*asking)(struct msg_pool *pool);

    /* The health probe of an ejected server: the request, and whether the start of its reply
     * (what was read, up to the first newline) shows a server ready to serve. */
    const char *probe_request;
    bool (*probe_alive)(const uint8_t *reply, size_t len);

    /* The one line sent to a client refused over client_connections before it is closed. */
    const char *max_clients_reply;

    /* Transactions (feature/txn.c; NULL for a protocol without CMD_F_TXN_MASK commands). Writes
     * the reply text for what (a, b: see enum proto_txn_reply, else NULL) into buf; returns its
     * length. */
    size_t (*txn_reply)(enum proto_txn_reply what, const char *a, const char *b, char *buf, size_t size);
    /* The request that leaves a dedicated connection clean for its next client after one that
     * watched keys (redis: UNWATCH); its reply is dropped. */
    const char *txn_clean_request;
    /* Pub/Sub subscriptions (feature/pubsub.c; NULL for a protocol without CMD_F_PUBSUB commands). */
    const struct proto_pubsub *pubsub;
};

/* A fragment of req for server (proto.c): a msg of its command (cmd, flags, name, nargs) owned
 * by req, with no bytes yet; NULL when out of memory. */
struct msg *proto_frag_new(struct msg *req, uint32_t server, struct msg_pool *pool);

/* Appends the text the protocol built for a reply (a struct textbuf, common/textbuf.h, with no
 * limit: a zeroed one) to rsp and frees the text. Returns 0 or -ENOMEM (also when the text failed). */
int proto_text_put(struct textbuf *t, struct msg *rsp);

/* How many requests server_setup may build at most. */
#define PROTO_SETUP_MAX 4

extern const struct proto_ops redis_proto;
extern const struct proto_ops memcache_proto;

/* The protocol of pool cp. */
const struct proto_ops *proto_for_pool(const struct conf_pool *cp);
/* proto_ops.conf_check of every pool of c (with conf_load and transport_conf_check: -t, start and
 * reload): the number of problems reported through on_error (NULL: stderr). */
unsigned proto_conf_check(const struct conf *c, void (*on_error)(void *, const char *), void *ctx);

#endif
