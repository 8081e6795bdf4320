/*
 * redis_info.c - HELLO and INFO, answered by the proxy from every server's INFO
 * (CMD_F_FRAG_ALL, notes/resp3-and-handshake.md): the fragments (one INFO per server of the pool)
 * and the reply built from those that answered (CMD_F_FRAG_PARTIAL: a server that is down does
 * not fail the command).
 *
 * HELLO's reply is redis' own (a flat array in RESP2, a map in RESP3): server "redis", version,
 * proto, id, mode "standalone" ("cluster" with client_cluster_mode), role "master", modules; the
 * version is the lowest redis_version of the servers that answered, so a client never believes
 * in a feature one of them lacks.
 *
 * INFO [section ...]: the sections server (the lowest redis_version, redis_mode, and the proxy's
 * own process_id, tcp_port, uptime), clients (connected_clients: the pool's clients), memory
 * (maxmemory_policy: noeviction when every server says so, else the first other policy, so that
 * a client checking that keys are never evicted, as BullMQ does, warns when one server may),
 * persistence (loading:1 when any server loads), stats (the counters that add up, summed) and
 * keyspace (keys and expires per db, summed; avg_ttl weighted by expires). No section, "default",
 * "all" or "everything": all six; an unknown one adds nothing, as in redis. The text is a bulk string in
 * RESP2 and a verbatim string in RESP3, as redis sends it.
 *
 * Threads: no state; the worker that owns the request, its fragments and their replies.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "conf/conf.h"
#include "proto/redis.h"
#include "proto/redis_cmd.h"

/* A server's INFO text is taken up to this size (a few KB in practice). */
#define INFO_TEXT_MAX (4u << 20)
/* Keyspace lines are summed for dbs below this index (redis' default is 16 dbs). */
#define INFO_MAX_DB 4096

/* The INFO sections the proxy answers, in the order redis writes them. */
enum {
    INFO_SERVER = 1u << 0,
    INFO_CLIENTS = 1u << 1,
    INFO_PERSISTENCE = 1u << 2,
    INFO_STATS = 1u << 3,
    INFO_KEYSPACE = 1u << 4,
    INFO_MEMORY = 1u << 5,
    INFO_ALL = INFO_SERVER | INFO_CLIENTS | INFO_MEMORY | INFO_PERSISTENCE | INFO_STATS | INFO_KEYSPACE,
};

/* The stats counters whose sum over the servers means something for the pool. */
static const char *const info_stats_summed[] = {
    "total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec",
    "total_net_input_bytes", "total_net_output_bytes", "rejected_connections", "expired_keys",
    "evicted_keys", "evicted_clients", "keyspace_hits", "keyspace_misses", "pubsub_channels",
    "pubsub_patterns", "total_forks", "total_error_replies", "unexpected_error_replies",
    "total_reads_processed", "total_writes_processed",
};
#define INFO_NSTATS (sizeof(info_stats_summed) / sizeof(info_stats_summed[0]))

struct info_db {
    int64_t keys, expires;
    long double ttl_weighted; /* sum of avg_ttl * expires */
    bool seen;
};

/* What the servers' INFO texts add up to. */
struct info_sum {
    char version[32];             /* the lowest redis_version ("" until one is seen) */
    uint32_t ver[3];
    char policy[32];              /* maxmemory_policy: "" until one is seen, then see INFO above */
    bool loading;
    int64_t stats[INFO_NSTATS];
    bool stats_seen[INFO_NSTATS];
    struct info_db *dbs;          /* [0, ndbs) */
    uint32_t ndbs;
    bool oom;
};

int redis_fragment_all(struct msg *req, const uint32_t *where, uint32_t n, struct msg_pool *pool)
{
    bool hello = req->cmd < redis_ncmds && redis_cmds[req->cmd].local == REDIS_LOCAL_HELLO;
    /* HELLO needs the version only; INFO without a section has every section there is */
    const char *text = hello ? "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n" : "*1\r\n$4\r\nINFO\r\n";
    struct msg **frags = calloc(n ? n : 1, sizeof(*frags));
    if (frags == NULL) return -ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        struct msg *fr = proto_frag_new(req, where[i], pool);
        if (fr == NULL || msg_append_literal(fr, text, strlen(text)) < 0) {
            if (fr != NULL) msg_put(pool, fr);
            while (i > 0) msg_put(pool, frags[--i]);
            free(frags);
            return -ENOMEM;
        }
        fr->nargs = hello ? 2 : 1;
        frags[i] = fr;
    }
    req->frags = frags;
    req->nfrags = n;
    req->nfrags_done = 0;
    req->key_frag = NULL;
    return 0;
}

/* The text of an INFO reply (a bulk string, or a RESP3 verbatim one: its "txt:" left out), copied
 * out NUL-terminated. NULL when r is of another kind (an error) or too large, or out of memory
 * (then *oom is set: the reply cannot be built, rather than built without that server's part). */
static char *info_text_of(const struct msg *r, size_t *len, bool *oom)
{
    if (r->rsp_type != RSP_BULK && r->rsp_type != RSP_VERBATIM) return NULL;
    uint8_t head[REDIS_MAX_HDR];
    size_t got = msg_copy_out(r, 0, head, sizeof(head));
    long eol = redis_line(head, got, sizeof(head));
    int64_t n;
    if (eol < 2 || (head[0] != '$' && head[0] != '=') || !redis_parse_int(head + 1, (size_t)eol - 1, &n) || n < 0)
        return NULL;
    uint64_t skip = (uint64_t)eol + 2, size = (uint64_t)n;
    if (head[0] == '=') { /* "txt:" (or another 3-letter format) */
        if (size < 4) return NULL;
        skip += 4;
        size -= 4;
    }
    if (size > INFO_TEXT_MAX || skip + size > r->len) return NULL;
    char *text = malloc(size + 1);
    if (text == NULL) {
        *oom = true;
        return NULL;
    }
    if (msg_copy_out(r, skip, text, size) != size) {
        free(text);
        return NULL;
    }
    text[size] = '\0';
    *len = size;
    return text;
}

/* "7.0.15" -> {7, 0, 15}; false when it does not start with a number. */
static bool info_parse_version(const char *v, uint32_t out[3])
{
    memset(out, 0, 3 * sizeof(out[0]));
    if (*v < '0' || *v > '9') return false;
    for (int i = 0; i < 3 && *v >= '0' && *v <= '9'; i++) {
        uint64_t x = 0;
        while (*v >= '0' && *v <= '9') {
            if (x < UINT32_MAX) x = x * 10 + (uint64_t)(*v - '0');
            v++;
        }
        out[i] = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
        if (*v != '.') break;
        v++;
    }
    return true;
}

static void info_add_version(struct info_sum *sum, const char *v, size_t n)
{
    char copy[sizeof(sum->version)];
    uint32_t ver[3];
    if (n >= sizeof(copy)) n = sizeof(copy) - 1;
    memcpy(copy, v, n);
    copy[n] = '\0';
    if (!info_parse_version(copy, ver)) return;
    if (sum->version[0] != '\0') {
        int i = 0;
        while (i < 3 && ver[i] == sum->ver[i]) i++;
        if (i == 3 || ver[i] > sum->ver[i]) return; /* not lower than the lowest so far */
    }
    memcpy(sum->ver, ver, sizeof(ver));
    memcpy(sum->version, copy, n + 1);
}

/* A strict decimal of at most 19 digits, optionally negative; false otherwise. */
static bool info_int(const char *p, size_t n, int64_t *out)
{
    return redis_parse_int((const uint8_t *)p, n, out);
}

/* The value of "name=<int>" in a keyspace line's "keys=1,expires=0,avg_ttl=0". */
static bool info_field(const char *val, size_t n, const char *name, int64_t *out)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i + nl < n; i++) {
        if ((i == 0 || val[i - 1] == ',') && memcmp(val + i, name, nl) == 0 && val[i + nl] == '=') {
            size_t s = i + nl + 1, e = s;
            while (e < n && val[e] != ',') e++;
            return info_int(val + s, e - s, out);
        }
    }
    return false;
}

static void info_add_db(struct info_sum *sum, const char *key, size_t kn, const char *val, size_t vn)
{
    int64_t db, keys, expires, ttl = 0;
    if (kn < 3 || memcmp(key, "db", 2) != 0 || !info_int(key + 2, kn - 2, &db) || db < 0 || db >= INFO_MAX_DB)
        return;
    if (!info_field(val, vn, "keys", &keys) || !info_field(val, vn, "expires", &expires)) return;
    info_field(val, vn, "avg_ttl", &ttl);
    if ((uint32_t)db >= sum->ndbs) {
        uint32_t n = (uint32_t)db + 1;
        struct info_db *dbs = realloc(sum->dbs, n * sizeof(*dbs));
        if (dbs == NULL) {
            sum->oom = true;
            return;
        }
        memset(dbs + sum->ndbs, 0, (n - sum->ndbs) * sizeof(*dbs));
        sum->dbs = dbs;
        sum->ndbs = n;
    }
    struct info_db *d = &sum->dbs[db];
    d->seen = true;
    d->keys += keys;
    d->expires += expires;
    d->ttl_weighted += (long double)ttl * (long double)expires;
}

/* Adds one server's INFO text to sum: line by line, "key:value" within "# Section" headers. */
static void info_add(struct info_sum *sum, const char *text, size_t len)
{
    const char *section = "";
    size_t section_len = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl != NULL ? nl : end;
        size_t n = (size_t)(eol - p);
        if (n > 0 && p[n - 1] == '\r') n--;
        if (n > 2 && p[0] == '#' && p[1] == ' ') {
            section = p + 2;
            section_len = n - 2;
        } else {
            const char *colon = memchr(p, ':', n);
            if (colon != NULL) {
                size_t kn = (size_t)(colon - p), vn = n - kn - 1;
                const char *v = colon + 1;
#define IN(s) (section_len == strlen(s) && memcmp(section, s, section_len) == 0)
#define KEY(s) (kn == strlen(s) && memcmp(p, s, kn) == 0)
                if (IN("Server") && KEY("redis_version")) {
                    info_add_version(sum, v, vn);
                } else if (IN("Memory") && KEY("maxmemory_policy")) {
                    if (sum->policy[0] == '\0' || strcmp(sum->policy, "noeviction") == 0) {
                        size_t pn = vn < sizeof(sum->policy) ? vn : sizeof(sum->policy) - 1;
                        memcpy(sum->policy, v, pn);
                        sum->policy[pn] = '\0';
                    }
                } else if (IN("Persistence") && KEY("loading")) {
                    if (vn == 1 && v[0] == '1') sum->loading = true;
                } else if (IN("Stats")) {
                    int64_t x, total;
                    for (size_t i = 0; i < INFO_NSTATS; i++) {
                        if (!KEY(info_stats_summed[i])) continue;
                        if (info_int(v, vn, &x) && !__builtin_add_overflow(sum->stats[i], x, &total)) {
                            sum->stats[i] = total;
                            sum->stats_seen[i] = true;
                        }
                        break;
                    }
                } else if (IN("Keyspace")) {
                    info_add_db(sum, p, kn, v, vn);
                }
#undef IN
#undef KEY
            }
        }
        p = eol + 1;
    }
}

/* The sections INFO's arguments name (none: every one). */
static unsigned info_sections(const struct msg *req)
{
    static const struct {
        const char *name;
        unsigned bits;
    } names[] = {
        { "server", INFO_SERVER }, { "clients", INFO_CLIENTS }, { "memory", INFO_MEMORY },
        { "persistence", INFO_PERSISTENCE },
        { "stats", INFO_STATS }, { "keyspace", INFO_KEYSPACE }, { "default", INFO_ALL },
        { "all", INFO_ALL }, { "everything", INFO_ALL },
    };
    if (req->nkeys == 0) return INFO_ALL;
    unsigned bits = 0;
    for (uint32_t i = 0; i < req->nkeys; i++) {
        for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
            if (redis_key_is(&req->keys[i], names[j].name)) bits |= names[j].bits;
        }
    }
    return bits;
}

/* The mode HELLO and INFO tell: "cluster" to the clients of a pool with client_cluster_mode. */
static const char *info_mode(const struct conf_pool *cp)
{
    return cp->client_cluster_mode ? "cluster" : "standalone";
}

static uint16_t info_tcp_port(const struct conf_pool *cp)
{
    return cp->listen.is_unix ? 0 : cp->listen.port;
}

/* The INFO text of the sections asked for. */
static void info_render(struct textbuf *t, const struct proto_view *v, const struct info_sum *sum, unsigned bits)
{
    bool first = true;
#define SECTION(title)                     \
    do {                                   \
        if (!first) textbuf_adds(t, "\r\n");  \
        first = false;                     \
        textbuf_adds(t, "# " title "\r\n");   \
    } while (0)
    if (bits & INFO_SERVER) {
        uint64_t up = nc_uptime_usec() / 1000000u;
        SECTION("Server");
        textbuf_addf(t, "redis_version:%s\r\nredis_mode:%s\r\nprocess_id:%ld\r\ntcp_port:%u\r\n"
                     "uptime_in_seconds:%" PRIu64 "\r\nuptime_in_days:%" PRIu64 "\r\n",
                     sum->version, info_mode(v->cp), (long)getpid(), info_tcp_port(v->cp), up, up / 86400u);
    }
    if (bits & INFO_CLIENTS) {
        SECTION("Clients");
        textbuf_addf(t, "connected_clients:%ld\r\n", v->pool_clients);
    }
    if (bits & INFO_MEMORY) {
        SECTION("Memory");
        if (sum->policy[0] != '\0') textbuf_addf(t, "maxmemory_policy:%s\r\n", sum->policy);
    }
    if (bits & INFO_PERSISTENCE) {
        SECTION("Persistence");
        textbuf_addf(t, "loading:%d\r\n", sum->loading ? 1 : 0);
    }
    if (bits & INFO_STATS) {
        SECTION("Stats");
        for (size_t i = 0; i < INFO_NSTATS; i++) {
            if (sum->stats_seen[i]) textbuf_addf(t, "%s:%" PRId64 "\r\n", info_stats_summed[i], sum->stats[i]);
        }
    }
    if (bits & INFO_KEYSPACE) {
        SECTION("Keyspace");
        for (uint32_t db = 0; db < sum->ndbs; db++) {
            const struct info_db *d = &sum->dbs[db];
            if (!d->seen) continue;
            int64_t ttl = d->expires > 0 ? (int64_t)(d->ttl_weighted / (long double)d->expires) : 0;
            textbuf_addf(t, "db%u:keys=%" PRId64 ",expires=%" PRId64 ",avg_ttl=%" PRId64 "\r\n", db, d->keys,
                         d->expires, ttl);
        }
    }
#undef SECTION
}

/* HELLO's reply, as redis': a map in RESP3, a flat array in RESP2. */
static void hello_render(struct textbuf *t, const struct proto_session *s, const char *version, const char *mode)
{
    textbuf_adds(t, s->variant == REDIS_RESP3 ? "%7\r\n" : "*14\r\n");
    resp_add_bulk(t, "server", 6);
    resp_add_bulk(t, "redis", 5);
    resp_add_bulk(t, "version", 7);
    resp_add_bulk(t, version, strlen(version));
    resp_add_bulk(t, "proto", 5);
    textbuf_addf(t, ":%d\r\n", s->variant == REDIS_RESP3 ? 3 : 2);
    resp_add_bulk(t, "id", 2);
    textbuf_addf(t, ":%" PRIu64 "\r\n", s->id);
    resp_add_bulk(t, "mode", 4);
    resp_add_bulk(t, mode, strlen(mode));
    resp_add_bulk(t, "role", 4);
    resp_add_bulk(t, "master", 6);
    resp_add_bulk(t, "modules", 7);
    textbuf_adds(t, "*0\r\n");
}

int redis_coalesce_all(const struct proto_view *v, struct msg *req, struct msg *rsp)
{
    struct info_sum sum;
    memset(&sum, 0, sizeof(sum));
    const struct msg *err = NULL;
    uint32_t nok = 0;
    for (uint32_t f = 0; f < req->nfrags; f++) {
        const struct msg *r = req->frags[f]->peer;
        if (r == NULL || req->frags[f]->err != 0) continue; /* that server did not answer */
        if (r->rsp_type == RSP_ERROR || r->rsp_type == RSP_BLOB_ERROR) {
            if (err == NULL) err = r;
            continue;
        }
        size_t len = 0;
        char *text = info_text_of(r, &len, &sum.oom);
        if (text == NULL) continue;
        info_add(&sum, text, len);
        free(text);
        nok++;
    }
    int rc;
    if (sum.oom) {
        rc = -ENOMEM;
    } else if (nok == 0 && err != NULL) { /* every server refused: the first one's words */
        rsp->rsp_type = err->rsp_type;
        rc = msg_append_slice(rsp, err, 0, err->len);
    } else if (nok == 0) {
        rc = -EINVAL;
    } else {
        struct textbuf t = { 0 };
        if (redis_cmds[req->cmd].local == REDIS_LOCAL_HELLO) {
            hello_render(&t, v->sess, sum.version[0] != '\0' ? sum.version : "unknown", info_mode(v->cp));
            rsp->rsp_type = v->sess->variant == REDIS_RESP3 ? RSP_MAP : RSP_ARRAY;
        } else {
            struct textbuf text = { 0 };
            info_render(&text, v, &sum, info_sections(req));
            if (textbuf_failed(&text)) t.failed = true;
            else resp_add_text(&t, v->sess->variant, text.data != NULL ? text.data : "", text.len);
            textbuf_deinit(&text);
            rsp->rsp_type = v->sess->variant == REDIS_RESP3 ? RSP_VERBATIM : RSP_BULK;
        }
        rc = proto_text_put(&t, rsp);
    }
    free(sum.dbs);
    return rc;
}
