/*
 * stats_desc.h - the table of every stats field: the top-level header fields, the per-pool metrics
 * and the per-server metrics twemproxy exports (each with its type and twemproxy's description),
 * our latency histograms and their members. One X-macro per level; `-D` prints them, and the
 * stats module builds its counter blocks, its JSON and its Prometheus names from the same lists,
 * in this order (the JSON order).
 *
 * Threads: constant data, any thread.
 */
#ifndef NC_STATS_DESC_H
#define NC_STATS_DESC_H

#include <stddef.h>
#include <stdio.h>

enum stats_type {
    STATS_STRING,    /* header text (service, source, version) */
    STATS_COUNTER,   /* monotonic accumulator */
    STATS_GAUGE,     /* goes up and down */
    STATS_TIMESTAMP, /* a point in time */
    STATS_HISTOGRAM, /* a latency distribution (an object of STATS_HIST_FIELDS) */
};

/* ACTION(name, type, description): the top-level fields, before the pools. */
#define STATS_HEADER_FIELDS(ACTION)                                                          \
    ACTION(service, STATS_STRING, "service name: nutcrackers")                         \
    ACTION(source, STATS_STRING, "host name of the machine running the proxy")               \
    ACTION(version, STATS_STRING, "version of the proxy")                                    \
    ACTION(uptime, STATS_COUNTER, "seconds since the proxy started")                         \
    ACTION(timestamp, STATS_TIMESTAMP, "time of this snapshot, in seconds since epoch")      \
    ACTION(generation, STATS_GAUGE, "config generation serving: 1 at start, +1 per reload")  \
    ACTION(loaded_at, STATS_TIMESTAMP, "when that generation was loaded, seconds since epoch") \
    ACTION(total_connections, STATS_COUNTER, "# connections accepted since the start")       \
    ACTION(curr_connections, STATS_GAUGE, "# connections open now")                          \
    ACTION(client_memory, STATS_GAUGE,                                                       \
           "bytes the client connections make the proxy hold now (-M caps it)")             \
    ACTION(batch_waits, STATS_COUNTER,                                                       \
           "# loop passes that waited before writing to a busy server or client")           \
    ACTION(batch_wait_offs, STATS_COUNTER,                                                   \
           "# times the waits ended so late that a worker stopped waiting for 200 ms")      \
    ACTION(batch_waits_longer, STATS_COUNTER,                                                \
           "# of those that waited again for a pipeline answered in part: <= 4 x -W")     \
    ACTION(batch_waits_full, STATS_COUNTER,                                                  \
           "# of those whose waits were -W usec (servers behind), not half of it")          \
    ACTION(reply_holds, STATS_COUNTER,                                                       \
           "# times a client's first replies waited for the rest of its pipeline: <= 1 ms")

/*
 * The refused commands per name are flat members of the pool's object, after its fields and only
 * once non-zero: "refused_cmd_monitor":3, "refused_cmd_other":1 (any object inside a pool is a
 * server for twemproxy's readers, so no nested object). The names are the protocol's
 * (proto_ops.refused_names) and "other".
 */
#define STATS_REFUSED_PREFIX "refused_cmd_"
#define STATS_REFUSED_OTHER "other"

/* ACTION(name, type, description): one object per pool. */
#define STATS_POOL_FIELDS(ACTION)                                                            \
    ACTION(client_eof, STATS_COUNTER, "# eof on client connections")                         \
    ACTION(client_err, STATS_COUNTER, "# errors on client connections")                      \
    ACTION(client_connections, STATS_GAUGE, "# active client connections")                   \
    ACTION(server_ejects, STATS_COUNTER, "# times backend server was ejected")               \
    ACTION(forward_error, STATS_COUNTER, "# times we encountered a forwarding error")        \
    ACTION(fragments, STATS_COUNTER, "# fragments created from a multi-vector request")        \
    ACTION(cluster_redirections, STATS_COUNTER,                                              \
           "# -MOVED, -ASK and -TRYAGAIN replies of a Redis Cluster followed")              \
    ACTION(refused_commands, STATS_COUNTER,                                                  \
           "# requests refused: a command the proxy does not serve (per name: "               \
           STATS_REFUSED_PREFIX "<name>)")                                                    \
    ACTION(client_idle_timeouts, STATS_COUNTER,                                              \
           "# clients closed after client_idle_timeout with nothing sent, read or awaited")   \
    ACTION(client_memory_closes, STATS_COUNTER,                                              \
           "# clients closed because the proxy held more than -M for its clients")            \
    ACTION(client_tls_handshakes, STATS_COUNTER, "# TLS handshakes completed with clients")  \
    ACTION(client_tls_handshake_failures, STATS_COUNTER,                                     \
           "# TLS handshakes with clients that failed or timed out (the client is closed)")  \
    ACTION(client_tls_resumptions, STATS_COUNTER,                                            \
           "# TLS handshakes completed with clients that resumed an earlier session")

/* ACTION(name, type, description): one object per server, nested in its pool's. */
#define STATS_SERVER_FIELDS(ACTION)                                                          \
    ACTION(server_eof, STATS_COUNTER, "# eof on server connections")                         \
    ACTION(server_err, STATS_COUNTER, "# errors on server connections")                      \
    ACTION(server_timedout, STATS_COUNTER, "# timeouts on server connections")               \
    ACTION(server_connections, STATS_GAUGE, "# active server connections")                   \
    ACTION(server_ejected_at, STATS_TIMESTAMP,                                               \
           "timestamp when backend server was ejected in usec since epoch")                  \
    ACTION(requests, STATS_COUNTER, "# requests")                                            \
    ACTION(request_bytes, STATS_COUNTER, "total request bytes")                              \
    ACTION(responses, STATS_COUNTER, "# responses")                                          \
    ACTION(response_bytes, STATS_COUNTER, "total response bytes")                            \
    ACTION(in_queue, STATS_GAUGE, "# requests in incoming queue")                            \
    ACTION(in_queue_bytes, STATS_GAUGE, "current request bytes in incoming queue")           \
    ACTION(out_queue, STATS_GAUGE, "# requests in outgoing queue")                           \
    ACTION(out_queue_bytes, STATS_GAUGE, "current request bytes in outgoing queue")          \
    ACTION(dedicated_connections, STATS_GAUGE,                                               \
           "# dedicated server connections held by clients (transactions, blocking commands)") \
    ACTION(server_tls_handshakes, STATS_COUNTER, "# TLS handshakes completed with the server") \
    ACTION(server_tls_handshake_failures, STATS_COUNTER,                                     \
           "# TLS handshakes with the server that failed or timed out")                      \
    ACTION(server_tls_resumptions, STATS_COUNTER,                                            \
           "# TLS handshakes completed with the server that resumed an earlier session")

/*
 * The latency histograms are not in twemproxy's document (where any object inside a pool is taken
 * for a server): `status latency` holds them, in its top-level member STATS_LATENCY_KEY,
 * {"<pool>":{<pool histograms>,"servers":{"<server>":{<server histograms>}}}}.
 */
#define STATS_LATENCY_KEY "latency"
#define STATS_LATENCY_SERVERS_KEY "servers"

/* ACTION(name, type, description): the latency histograms of a pool. */
#define STATS_POOL_HISTS(ACTION)                                                             \
    ACTION(request_latency, STATS_HISTOGRAM,                                                 \
           "client-observed latency: request read to reply written")

/* ACTION(name, type, description): the latency histograms of a server. */
#define STATS_SERVER_HISTS(ACTION)                                                           \
    ACTION(server_latency, STATS_HISTOGRAM,                                                  \
           "server latency: request written to the server to its reply parsed")

/* ACTION(name, type, description): the members of every latency histogram object. */
#define STATS_HIST_FIELDS(ACTION)                                                            \
    ACTION(count, STATS_COUNTER, "# requests measured")                                      \
    ACTION(sum, STATS_COUNTER, "sum of their latencies, in usec")                            \
    ACTION(max, STATS_GAUGE, "largest latency seen, in usec")                                \
    ACTION(p50, STATS_GAUGE, "median latency, in usec (within 12.5%)")                       \
    ACTION(p99, STATS_GAUGE, "99th percentile latency, in usec (within 12.5%)")              \
    ACTION(p999, STATS_GAUGE, "99.9th percentile latency, in usec (within 12.5%)")           \
    ACTION(buckets, STATS_COUNTER,                                                           \
           "# requests per bucket, keyed by upper bound in msec: 1, 10, 20, 50, 100, 200, "  \
           "500, 1000, 2000, 3000, +inf (a latency goes in the first bucket >= it)")

#define STATS_DESC_ENUM(name, type, desc) STATS_HEADER_##name,
enum stats_header_field { STATS_HEADER_FIELDS(STATS_DESC_ENUM) STATS_HEADER_NFIELD };
#undef STATS_DESC_ENUM
#define STATS_DESC_ENUM(name, type, desc) STATS_POOL_##name,
enum stats_pool_field { STATS_POOL_FIELDS(STATS_DESC_ENUM) STATS_POOL_NFIELD };
#undef STATS_DESC_ENUM
#define STATS_DESC_ENUM(name, type, desc) STATS_SERVER_##name,
enum stats_server_field { STATS_SERVER_FIELDS(STATS_DESC_ENUM) STATS_SERVER_NFIELD };
#undef STATS_DESC_ENUM
#define STATS_DESC_ENUM(name, type, desc) STATS_POOL_HIST_##name,
enum stats_pool_hist { STATS_POOL_HISTS(STATS_DESC_ENUM) STATS_POOL_NHIST };
#undef STATS_DESC_ENUM
#define STATS_DESC_ENUM(name, type, desc) STATS_SERVER_HIST_##name,
enum stats_server_hist { STATS_SERVER_HISTS(STATS_DESC_ENUM) STATS_SERVER_NHIST };
#undef STATS_DESC_ENUM
#define STATS_DESC_ENUM(name, type, desc) STATS_HIST_##name,
enum stats_hist_field { STATS_HIST_FIELDS(STATS_DESC_ENUM) STATS_HIST_NFIELD };
#undef STATS_DESC_ENUM

struct stats_field_desc {
    const char *name;
    enum stats_type type;
    const char *desc;
};

/* Indexed by the enums above. */
extern const struct stats_field_desc stats_header_desc[STATS_HEADER_NFIELD];
extern const struct stats_field_desc stats_pool_desc[STATS_POOL_NFIELD];
extern const struct stats_field_desc stats_server_desc[STATS_SERVER_NFIELD];
extern const struct stats_field_desc stats_pool_hist_desc[STATS_POOL_NHIST];
extern const struct stats_field_desc stats_server_hist_desc[STATS_SERVER_NHIST];
extern const struct stats_field_desc stats_hist_field_desc[STATS_HIST_NFIELD];

/* "counter", "gauge", "timestamp", "string" or "histogram". */
const char *stats_type_name(enum stats_type t);

/*
 * Prints every field with its type and description (`-D`): twemproxy's `--describe-stats` layout
 * plus a type column; then the top-level fields, the latency histograms (with the shape of the
 * `status latency` document) and the members of a histogram object.
 */
void stats_describe(FILE *f);

#endif
