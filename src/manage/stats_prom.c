/*
 * stats_prom.c - Prometheus text rendering of a snapshot (see stats_prom.h). Every family is
 * written whole (HELP, TYPE, then its samples for every pool or server) as the format requires.
 *
 * Threads: the snapshot's owner (the stats thread).
 */
#include "config.h"
#include "manage/stats_prom.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"
#include "core/runtime.h"
#include "manage/hotkeys_json.h"
#include "topo/topology.h"

enum stats_prom_level { PROM_HEADER, PROM_POOL, PROM_SERVER };

static const char *const stats_prom_prefix[] = {
    [PROM_HEADER] = "nutcrackers_",
    [PROM_POOL] = "nutcrackers_pool_",
    [PROM_SERVER] = "nutcrackers_server_",
};

void stats_prom_label_value(struct textbuf *b, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\') textbuf_adds(b, "\\\\");
        else if (*s == '"') textbuf_adds(b, "\\\"");
        else if (*s == '\n') textbuf_adds(b, "\\n");
        else textbuf_addc(b, *s);
    }
}

static void stats_prom_help_text(struct textbuf *b, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\') textbuf_adds(b, "\\\\");
        else if (*s == '\n') textbuf_adds(b, "\\n");
        else textbuf_addc(b, *s);
    }
}

/* "# HELP <name> <desc><note>\n# TYPE <name> <type>\n" (note: NULL or text after desc) */
static void stats_prom_family(struct textbuf *b, const char *name, const char *desc, const char *note,
                              const char *type)
{
    textbuf_addf(b, "# HELP %s ", name);
    stats_prom_help_text(b, desc);
    if (note != NULL) textbuf_adds(b, note);
    textbuf_addf(b, "\n# TYPE %s %s\n", name, type);
}

/* The same for a pool or server field (a timestamp's description speaks of the JSON's usec). */
static void stats_prom_field_family(struct textbuf *b, const char *name, const struct stats_field_desc *d,
                                    const char *type)
{
    stats_prom_family(b, name, d->desc, d->type == STATS_TIMESTAMP ? " (here in seconds; 0: never)" : NULL, type);
}

/*
 * The name of a pool or server field: the level's prefix, the field without a "server_" that
 * would repeat the server prefix (server_eof: nutcrackers_server_eof_total), then its unit and
 * type: "_seconds" for timestamps (rendered in seconds: server_ejected_at ->
 * nutcrackers_server_ejected_at_seconds) and latency histograms, "_total" for counters.
 */
static void stats_prom_name(char *out, size_t n, enum stats_prom_level lvl, const struct stats_field_desc *d)
{
    const char *field = d->name;
    if (lvl == PROM_SERVER && strncmp(field, "server_", 7) == 0) field += 7;
    const char *unit = d->type == STATS_TIMESTAMP || d->type == STATS_HISTOGRAM ? "_seconds" : "";
    snprintf(out, n, "%s%s%s%s", stats_prom_prefix[lvl], field, unit, d->type == STATS_COUNTER ? "_total" : "");
}

static const char *stats_prom_type(enum stats_type t)
{
    return t == STATS_COUNTER ? "counter" : "gauge";
}

/* {pool="..."} or {pool="...",server="..."} (with role="..." for a server whose pool's servers
 * move: Sentinel), with an extra label pair when extra is not NULL */
static void stats_prom_labels(struct textbuf *b, const struct conf_pool *cp, const struct conf_server *cs,
                              const char *role, const char *extra)
{
    textbuf_adds(b, "{pool=\"");
    stats_prom_label_value(b, cp->name);
    textbuf_addc(b, '"');
    if (cs != NULL) {
        textbuf_adds(b, ",server=\"");
        stats_prom_label_value(b, cs->stats_name);
        textbuf_addc(b, '"');
    }
    if (role != NULL) {
        textbuf_adds(b, ",role=\"");
        textbuf_adds(b, role);
        textbuf_addc(b, '"');
    }
    if (extra != NULL) {
        textbuf_addc(b, ',');
        textbuf_adds(b, extra);
    }
    textbuf_addc(b, '}');
}

/* usec as seconds, exactly and without trailing zeros ("0.001", "2", "0.012345") */
static void stats_prom_seconds_str(char *out, size_t n, uint64_t usec)
{
    uint64_t frac = usec % 1000000u;
    int digits = 6;
    while (frac != 0 && frac % 10u == 0) {
        frac /= 10u;
        digits--;
    }
    if (frac == 0) snprintf(out, n, "%lu", (unsigned long)(usec / 1000000u));
    else snprintf(out, n, "%lu.%0*lu", (unsigned long)(usec / 1000000u), digits, (unsigned long)frac);
}

/* A pool or server field's value: gauges signed, timestamps (usec in the blocks) in seconds. */
static void stats_prom_value(struct textbuf *b, enum stats_type t, uint64_t v)
{
    textbuf_addc(b, ' ');
    if (t == STATS_GAUGE) {
        textbuf_add_i64(b, stats_snapshot_signed(v));
    } else if (t == STATS_TIMESTAMP) {
        char secs[32];
        stats_prom_seconds_str(secs, sizeof(secs), v);
        textbuf_adds(b, secs);
    } else {
        textbuf_add_u64(b, v);
    }
    textbuf_addc(b, '\n');
}

/* A family of one unlabelled sample. */
static void stats_prom_single(struct textbuf *b, const char *name, const char *desc, const char *type, uint64_t v)
{
    stats_prom_family(b, name, desc, NULL, type);
    textbuf_addf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void stats_prom_header(struct textbuf *b, const struct stats_snapshot *s)
{
    textbuf_adds(b, "# HELP nutcrackers_info the proxy: service name, host name (source) and version\n"
                      "# TYPE nutcrackers_info gauge\nnutcrackers_info{service=\"nutcrackers\",source=\"");
    stats_prom_label_value(b, s->src->host);
    textbuf_adds(b, "\",version=\"" PACKAGE_VERSION "\"} 1\n");
    /* the numeric top-level fields, named for what they measure, in their units (the strings are
     * nutcrackers_info's labels) */
    const struct stats_field_desc *h = stats_header_desc;
    const struct runtime *rt = s->src->rt;
    stats_prom_single(b, "nutcrackers_uptime_seconds", h[STATS_HEADER_uptime].desc, "gauge", s->uptime_sec);
    stats_prom_single(b, "nutcrackers_time_seconds", h[STATS_HEADER_timestamp].desc, "gauge", s->timestamp_sec);
    stats_prom_single(b, "nutcrackers_config_generation", h[STATS_HEADER_generation].desc, "gauge",
                      rt->generation);
    stats_prom_single(b, "nutcrackers_config_loaded_at_seconds", h[STATS_HEADER_loaded_at].desc, "gauge",
                      rt->loaded_at_usec / 1000000u);
    stats_prom_single(b, "nutcrackers_client_connections_accepted_total", h[STATS_HEADER_total_connections].desc,
                      "counter", s->total_connections);
    stats_prom_family(b, "nutcrackers_client_connections", h[STATS_HEADER_curr_connections].desc, NULL, "gauge");
    textbuf_adds(b, "nutcrackers_client_connections");
    stats_prom_value(b, STATS_GAUGE, (uint64_t)s->curr_connections);
    stats_prom_single(b, "nutcrackers_client_memory_bytes", h[STATS_HEADER_client_memory].desc, "gauge",
                      (uint64_t)(s->client_memory > 0 ? s->client_memory : 0));
    stats_prom_single(b, "nutcrackers_batch_waits_total", h[STATS_HEADER_batch_waits].desc, "counter",
                      s->batch_waits);
    stats_prom_single(b, "nutcrackers_batch_wait_offs_total", h[STATS_HEADER_batch_wait_offs].desc, "counter",
                      s->batch_wait_offs);
    stats_prom_single(b, "nutcrackers_batch_waits_longer_total", h[STATS_HEADER_batch_waits_longer].desc,
                      "counter", s->batch_waits_longer);
    stats_prom_single(b, "nutcrackers_batch_waits_full_total", h[STATS_HEADER_batch_waits_full].desc, "counter",
                      s->batch_waits_full);
    stats_prom_single(b, "nutcrackers_reply_holds_total", h[STATS_HEADER_reply_holds].desc, "counter",
                      s->reply_holds);
}

static void stats_prom_hist(struct textbuf *b, const char *name, const struct conf_pool *cp,
                            const struct conf_server *cs, const char *role, const struct stats_hist_sum *h)
{
    char le[48], secs[32];
    uint64_t cum = 0;
    for (unsigned k = 0; k < STATS_LAT_NCOARSE; k++) {
        cum += h->coarse[k];
        if (k < STATS_LAT_NBOUNDS) {
            stats_prom_seconds_str(secs, sizeof(secs), stats_lat_bound_usec[k]);
            snprintf(le, sizeof(le), "le=\"%s\"", secs);
        } else {
            snprintf(le, sizeof(le), "le=\"+Inf\"");
        }
        textbuf_addf(b, "%s_bucket", name);
        stats_prom_labels(b, cp, cs, role, le);
        textbuf_addc(b, ' ');
        textbuf_add_u64(b, cum);
        textbuf_addc(b, '\n');
    }
    stats_prom_seconds_str(secs, sizeof(secs), h->sum_usec);
    textbuf_addf(b, "%s_sum", name);
    stats_prom_labels(b, cp, cs, role, NULL);
    textbuf_addf(b, " %s\n%s_count", secs, name);
    stats_prom_labels(b, cp, cs, role, NULL);
    textbuf_addc(b, ' ');
    textbuf_add_u64(b, cum);
    textbuf_addc(b, '\n');
}

/* The role label of server k of a pool whose servers move (NULL: a static pool, no label). */
static const char *stats_prom_role(const struct stats_pool_snap *ps, size_t k)
{
    if (ps->set == NULL || k >= ps->set->nservers) return NULL;
    return ps->set->servers[k].role == TOPO_ROLE_MASTER ? "master" : "replica";
}

/* Pools whose servers move (Sentinel): nutcrackers_pool_topology_reachable{pool} (the services
 * their source follows that answer) and nutcrackers_server_info{pool,server,role,addr} 1 (where
 * each server is now). No family without such a pool. */
static void stats_prom_topology(struct textbuf *b, const struct stats_snapshot *s)
{
    const struct runtime *rt = s->src->rt;
    bool any = false;
    for (size_t p = 0; p < s->npools; p++) any |= s->pools[p].set != NULL;
    if (!any) return;
    stats_prom_family(b, "nutcrackers_pool_topology_reachable",
                      "# how many of the services the pool's topology source follows answer (sentinels)", NULL,
                      "gauge");
    for (size_t p = 0; p < s->npools; p++) {
        if (s->pools[p].set == NULL) continue;
        textbuf_adds(b, "nutcrackers_pool_topology_reachable");
        stats_prom_labels(b, rt->pools[p].cp, NULL, NULL, NULL);
        textbuf_addf(b, " %u\n", s->pools[p].topo_up);
    }
    stats_prom_family(b, "nutcrackers_server_info", "# where the server is now (addr) and its role", NULL, "gauge");
    for (size_t p = 0; p < s->npools; p++) {
        const struct stats_pool_snap *ps = &s->pools[p];
        const struct conf_pool *cp = rt->pools[p].cp;
        for (size_t k = 0; ps->set != NULL && k < ps->nservers && k < ps->set->nservers; k++) {
            if (!stats_snap_server_shown(cp, ps, k)) continue;
            textbuf_adds(b, "nutcrackers_server_info");
            textbuf_adds(b, "{pool=\"");
            stats_prom_label_value(b, cp->name);
            textbuf_adds(b, "\",server=\"");
            stats_prom_label_value(b, cp->servers[k].stats_name);
            textbuf_addf(b, "\",role=\"%s\",addr=\"", stats_prom_role(ps, k));
            stats_prom_label_value(b, ps->set->servers[k].addr.text);
            textbuf_adds(b, "\"} 1\n");
        }
    }
}

/* nutcrackers_refused_commands_total{pool,command}: the pool's refused commands that are not zero
 * (no family at all while every count is zero) */
static void stats_prom_refused(struct textbuf *b, const struct stats_snapshot *s)
{
    const struct runtime *rt = s->src->rt;
    bool family = false; /* the family is written with its first sample: none, no family */
    for (size_t p = 0; p < s->npools; p++) {
        const char *name;
        for (size_t r = 0; (name = stats_snapshot_refused_name(s, p, r)) != NULL; r++) {
            if (s->pools[p].refused[r] == 0) continue;
            if (!family) {
                textbuf_adds(b, "# HELP nutcrackers_refused_commands_total # requests refused: a command "
                                  "the proxy does not serve, by name (" STATS_REFUSED_OTHER
                                  ": a name no command has)\n"
                                  "# TYPE nutcrackers_refused_commands_total counter\n");
                family = true;
            }
            char label[64];
            snprintf(label, sizeof(label), "command=\"%s\"", name);
            textbuf_adds(b, "nutcrackers_refused_commands_total");
            stats_prom_labels(b, rt->pools[p].cp, NULL, NULL, label);
            textbuf_addc(b, ' ');
            textbuf_add_u64(b, s->pools[p].refused[r]);
            textbuf_addc(b, '\n');
        }
    }
}

/* nutcrackers_pool_hottest_key_share{pool}: the hottest key's share of the pool's sampled requests
 * over the hot keys' window (manage/hotkeys_json.h), never the key itself */
static void stats_prom_hot_share(struct textbuf *b, const struct stats_snapshot *s)
{
    const struct runtime *rt = s->src->rt;
    uint64_t now = nc_usec_now();
    stats_prom_family(b, "nutcrackers_pool_hottest_key_share",
                      "share of the pool's sampled requests that went to its hottest key over the last "
                      "seconds, 0..1 (0: none sampled; the key is named by the manage port's hotkeys)", NULL, "gauge");
    for (size_t p = 0; p < s->npools; p++) {
        textbuf_adds(b, "nutcrackers_pool_hottest_key_share");
        stats_prom_labels(b, rt->pools[p].cp, NULL, NULL, NULL);
        textbuf_addf(b, " %.4f\n", hotkeys_top_share(&rt->pools[p], rt->nworkers, now));
    }
}

void stats_prom_render(struct textbuf *b, const struct stats_snapshot *s)
{
    const struct runtime *rt = s->src->rt;
    char name[128];
    stats_prom_header(b, s);
    for (size_t i = 0; i < STATS_POOL_NFIELD; i++) {
        const struct stats_field_desc *d = &stats_pool_desc[i];
        stats_prom_name(name, sizeof(name), PROM_POOL, d);
        stats_prom_field_family(b, name, d, stats_prom_type(d->type));
        for (size_t p = 0; p < s->npools; p++) {
            textbuf_adds(b, name);
            stats_prom_labels(b, rt->pools[p].cp, NULL, NULL, NULL);
            stats_prom_value(b, d->type, s->pools[p].f[i]);
        }
    }
    stats_prom_hot_share(b, s);
    stats_prom_refused(b, s);
    stats_prom_topology(b, s);
    for (size_t i = 0; i < STATS_SERVER_NFIELD; i++) {
        const struct stats_field_desc *d = &stats_server_desc[i];
        stats_prom_name(name, sizeof(name), PROM_SERVER, d);
        stats_prom_field_family(b, name, d, stats_prom_type(d->type));
        for (size_t p = 0; p < s->npools; p++) {
            const struct conf_pool *cp = rt->pools[p].cp;
            for (size_t k = 0; k < s->pools[p].nservers; k++) {
                if (!stats_snap_server_shown(cp, &s->pools[p], k)) continue;
                textbuf_adds(b, name);
                stats_prom_labels(b, cp, &cp->servers[k], stats_prom_role(&s->pools[p], k), NULL);
                stats_prom_value(b, d->type, s->pools[p].servers[k].f[i]);
            }
        }
    }
    for (size_t i = 0; i < STATS_POOL_NHIST; i++) {
        const struct stats_field_desc *d = &stats_pool_hist_desc[i];
        stats_prom_name(name, sizeof(name), PROM_POOL, d);
        stats_prom_field_family(b, name, d, "histogram");
        for (size_t p = 0; p < s->npools; p++)
            stats_prom_hist(b, name, rt->pools[p].cp, NULL, NULL, &s->pools[p].latency[i]);
    }
    for (size_t i = 0; i < STATS_SERVER_NHIST; i++) {
        const struct stats_field_desc *d = &stats_server_hist_desc[i];
        stats_prom_name(name, sizeof(name), PROM_SERVER, d);
        stats_prom_field_family(b, name, d, "histogram");
        for (size_t p = 0; p < s->npools; p++) {
            const struct conf_pool *cp = rt->pools[p].cp;
            for (size_t k = 0; k < s->pools[p].nservers; k++) {
                if (!stats_snap_server_shown(cp, &s->pools[p], k)) continue;
                stats_prom_hist(b, name, cp, &cp->servers[k], stats_prom_role(&s->pools[p], k),
                                &s->pools[p].servers[k].latency[i]);
            }
        }
    }
}
