/*
 * stats_json.c - rendering a snapshot as the twemproxy-shaped JSON document, and its latency
 * histograms as the `status latency` document (see stats_json.h). Key order follows the field
 * tables of stats_desc.h, which is twemproxy's order.
 *
 * Threads: the snapshot's owner (the stats thread).
 */
#include "config.h"
#include "manage/stats_json.h"

#include <stdbool.h>
#include <string.h>

#include "core/runtime.h"
#include "topo/topology.h"

static void stats_json_key(struct textbuf *b, const char *name)
{
    textbuf_add_json_str(b, name, strlen(name));
    textbuf_addc(b, ':');
}

/* A counter or timestamp as unsigned, a gauge as signed. */
static void stats_json_number(struct textbuf *b, enum stats_type type, uint64_t v)
{
    if (type == STATS_GAUGE) textbuf_add_i64(b, stats_snapshot_signed(v));
    else textbuf_add_u64(b, v);
}

static void stats_json_fields(struct textbuf *b, const uint64_t *f, const struct stats_field_desc *d,
                              size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i > 0) textbuf_addc(b, ',');
        stats_json_key(b, d[i].name);
        stats_json_number(b, d[i].type, f[i]);
    }
}

/* The histograms of one level as members of the object being written, each after a comma unless
 * it is the object's first member. */
static void stats_json_hists(struct textbuf *b, const struct stats_hist_sum *h,
                             const struct stats_field_desc *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i > 0) textbuf_addc(b, ',');
        stats_json_key(b, d[i].name);
        stats_json_render_hist(b, &h[i]);
    }
}

void stats_json_render_hist(struct textbuf *b, const struct stats_hist_sum *h)
{
    textbuf_addc(b, '{');
    for (size_t i = 0; i < STATS_HIST_NFIELD; i++) {
        if (i > 0) textbuf_addc(b, ',');
        stats_json_key(b, stats_hist_field_desc[i].name);
        switch ((enum stats_hist_field)i) {
        case STATS_HIST_count: textbuf_add_u64(b, h->count); break;
        case STATS_HIST_sum: textbuf_add_u64(b, h->sum_usec); break;
        case STATS_HIST_max: textbuf_add_u64(b, h->max_usec); break;
        case STATS_HIST_p50: textbuf_add_u64(b, stats_hist_quantile(h, 50, 100)); break;
        case STATS_HIST_p99: textbuf_add_u64(b, stats_hist_quantile(h, 99, 100)); break;
        case STATS_HIST_p999: textbuf_add_u64(b, stats_hist_quantile(h, 999, 1000)); break;
        case STATS_HIST_buckets: {
            uint64_t json[STATS_LAT_JSON_NBUCKETS];
            stats_hist_json_buckets(h, json);
            textbuf_addc(b, '{');
            for (unsigned k = 0; k < STATS_LAT_JSON_NBUCKETS; k++) {
                if (k > 0) textbuf_addc(b, ',');
                if (k < STATS_LAT_JSON_NBOUNDS) textbuf_addf(b, "\"%u\":", stats_lat_json_bound_msec[k]);
                else textbuf_adds(b, "\"+inf\":");
                textbuf_add_u64(b, json[k]);
            }
            textbuf_addc(b, '}');
            break;
        }
        case STATS_HIST_NFIELD: break;
        }
    }
    textbuf_addc(b, '}');
}

static void stats_json_header(struct textbuf *b, const struct stats_snapshot *s)
{
    for (size_t i = 0; i < STATS_HEADER_NFIELD; i++) {
        if (i > 0) textbuf_addc(b, ',');
        stats_json_key(b, stats_header_desc[i].name);
        switch ((enum stats_header_field)i) {
        case STATS_HEADER_service: textbuf_adds(b, "\"nutcrackers\""); break;
        case STATS_HEADER_source:
            textbuf_add_json_str(b, s->src->host, strlen(s->src->host));
            break;
        case STATS_HEADER_version: textbuf_adds(b, "\"" PACKAGE_VERSION "\""); break;
        case STATS_HEADER_uptime: textbuf_add_u64(b, s->uptime_sec); break;
        case STATS_HEADER_timestamp: textbuf_add_u64(b, s->timestamp_sec); break;
        case STATS_HEADER_generation: textbuf_add_u64(b, s->src->rt->generation); break;
        case STATS_HEADER_loaded_at: textbuf_add_u64(b, s->src->rt->loaded_at_usec / 1000000u); break;
        case STATS_HEADER_total_connections: textbuf_add_u64(b, s->total_connections); break;
        case STATS_HEADER_curr_connections: textbuf_add_i64(b, s->curr_connections); break;
        case STATS_HEADER_client_memory: textbuf_add_i64(b, s->client_memory); break;
        case STATS_HEADER_batch_waits: textbuf_add_u64(b, s->batch_waits); break;
        case STATS_HEADER_batch_wait_offs: textbuf_add_u64(b, s->batch_wait_offs); break;
        case STATS_HEADER_batch_waits_longer: textbuf_add_u64(b, s->batch_waits_longer); break;
        case STATS_HEADER_batch_waits_full: textbuf_add_u64(b, s->batch_waits_full); break;
        case STATS_HEADER_reply_holds: textbuf_add_u64(b, s->reply_holds); break;
        case STATS_HEADER_NFIELD: break;
        }
    }
}

/* Opens a document: '{', "worker":<id> for a single-worker snapshot, the top-level fields. */
static void stats_json_begin(struct textbuf *b, const struct stats_snapshot *s)
{
    textbuf_addc(b, '{');
    if (s->worker >= 0) textbuf_addf(b, "\"worker\":%ld,", s->worker);
    stats_json_header(b, s);
}

/* Opens an object-valued member: [,]"<name>":{ */
static void stats_json_open(struct textbuf *b, bool comma, const char *name)
{
    if (comma) textbuf_addc(b, ',');
    textbuf_add_json_str(b, name, strlen(name));
    textbuf_adds(b, ":{");
}

/* The pool's refused commands that are not zero: ,"refused_cmd_<name>":N (flat: see stats_desc.h) */
static void stats_json_refused(struct textbuf *b, const struct stats_snapshot *s, size_t p)
{
    const char *name;
    for (size_t r = 0; (name = stats_snapshot_refused_name(s, p, r)) != NULL; r++) {
        if (s->pools[p].refused[r] == 0) continue;
        textbuf_adds(b, ",\"" STATS_REFUSED_PREFIX);
        textbuf_adds(b, name); /* the protocol's names: lowercase letters, '_' and '-' */
        textbuf_adds(b, "\":");
        textbuf_add_u64(b, s->pools[p].refused[r]);
    }
}

/* A pool whose servers move: ,"topology":"<source>","topology_reachable":N (how many of the
 * services the source follows answer: sentinels) */
static void stats_json_topology(struct textbuf *b, const char *source, unsigned up)
{
    textbuf_adds(b, ",\"topology\":");
    textbuf_add_json_str(b, source, strlen(source));
    textbuf_adds(b, ",\"topology_reachable\":");
    textbuf_add_u64(b, up);
}

/* Server k's place now: ,"server_addr":"host:port","server_role":"master"; a Redis Cluster
 * master's hash slots too: ,"server_slots":"0-5460,6000" */
static void stats_json_server_place(struct textbuf *b, const struct topo_set *set, uint32_t k)
{
    const struct topo_server *ts = &set->servers[k];
    textbuf_adds(b, ",\"server_addr\":");
    textbuf_add_json_str(b, ts->addr.text, strlen(ts->addr.text));
    textbuf_adds(b, ",\"server_role\":");
    textbuf_adds(b, ts->role == TOPO_ROLE_MASTER ? "\"master\"" : "\"replica\"");
    if (set->slots == NULL || ts->role != TOPO_ROLE_MASTER) return;
    textbuf_adds(b, ",\"server_slots\":\"");
    bool first = true;
    for (uint32_t s = 0; s < DIST_NSLOTS; s++) {
        if (set->slots[s] != k) continue;
        uint32_t e = s;
        while (e + 1 < DIST_NSLOTS && set->slots[e + 1] == k) e++;
        textbuf_addf(b, e == s ? "%s%u" : "%s%u-%u", first ? "" : ",", s, e);
        first = false;
        s = e;
    }
    textbuf_addc(b, '"');
}

void stats_json_render(struct textbuf *b, const struct stats_snapshot *s)
{
    const struct runtime *rt = s->src->rt;
    stats_json_begin(b, s);
    for (size_t p = 0; p < s->npools; p++) {
        const struct conf_pool *cp = rt->pools[p].cp;
        const struct stats_pool_snap *ps = &s->pools[p];
        stats_json_open(b, true, cp->name);
        stats_json_fields(b, ps->f, stats_pool_desc, STATS_POOL_NFIELD);
        stats_json_refused(b, s, p);
        if (ps->set != NULL) stats_json_topology(b, rt->pools[p].source_ops->name, ps->topo_up);
        for (size_t k = 0; k < ps->nservers; k++) {
            if (!stats_snap_server_shown(cp, ps, k)) continue;
            stats_json_open(b, true, cp->servers[k].stats_name);
            stats_json_fields(b, ps->servers[k].f, stats_server_desc, STATS_SERVER_NFIELD);
            if (ps->set != NULL && k < ps->set->nservers) stats_json_server_place(b, ps->set, (uint32_t)k);
            textbuf_addc(b, '}');
        }
        textbuf_addc(b, '}');
    }
    textbuf_addc(b, '}');
}

void stats_json_render_latency(struct textbuf *b, const struct stats_snapshot *s)
{
    const struct runtime *rt = s->src->rt;
    stats_json_begin(b, s);
    stats_json_open(b, true, STATS_LATENCY_KEY);
    for (size_t p = 0; p < s->npools; p++) {
        const struct conf_pool *cp = rt->pools[p].cp;
        const struct stats_pool_snap *ps = &s->pools[p];
        stats_json_open(b, p > 0, cp->name);
        stats_json_hists(b, ps->latency, stats_pool_hist_desc, STATS_POOL_NHIST);
        stats_json_open(b, true, STATS_LATENCY_SERVERS_KEY);
        bool comma = false;
        for (size_t k = 0; k < ps->nservers; k++) {
            if (!stats_snap_server_shown(cp, ps, k)) continue;
            stats_json_open(b, comma, cp->servers[k].stats_name);
            comma = true;
            stats_json_hists(b, ps->servers[k].latency, stats_server_hist_desc, STATS_SERVER_NHIST);
            textbuf_addc(b, '}');
        }
        textbuf_adds(b, "}}");
    }
    textbuf_adds(b, "}}");
}
