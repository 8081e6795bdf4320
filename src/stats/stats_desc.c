/*
 * stats_desc.c - the stats field tables (see stats_desc.h) and the `-D` listing.
 *
 * Threads: constant data, any thread.
 */
#include "config.h"
#include "stats/stats_desc.h"

#include <string.h>

#define STATS_DESC_ROW(name, type, desc) { #name, type, desc },
const struct stats_field_desc stats_header_desc[STATS_HEADER_NFIELD] = {
    STATS_HEADER_FIELDS(STATS_DESC_ROW)
};
const struct stats_field_desc stats_pool_desc[STATS_POOL_NFIELD] = {
    STATS_POOL_FIELDS(STATS_DESC_ROW)
};
const struct stats_field_desc stats_server_desc[STATS_SERVER_NFIELD] = {
    STATS_SERVER_FIELDS(STATS_DESC_ROW)
};
const struct stats_field_desc stats_pool_hist_desc[STATS_POOL_NHIST] = {
    STATS_POOL_HISTS(STATS_DESC_ROW)
};
const struct stats_field_desc stats_server_hist_desc[STATS_SERVER_NHIST] = {
    STATS_SERVER_HISTS(STATS_DESC_ROW)
};
const struct stats_field_desc stats_hist_field_desc[STATS_HIST_NFIELD] = {
    STATS_HIST_FIELDS(STATS_DESC_ROW)
};
#undef STATS_DESC_ROW

const char *stats_type_name(enum stats_type t)
{
    switch (t) {
    case STATS_STRING: return "string";
    case STATS_COUNTER: return "counter";
    case STATS_GAUGE: return "gauge";
    case STATS_TIMESTAMP: return "timestamp";
    case STATS_HISTOGRAM: return "histogram";
    }
    return "?";
}

static void stats_describe_rows(FILE *f, const struct stats_field_desc *d, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *gap = strlen(d[i].name) >= 20 ? " " : ""; /* a long name still ends in a space */
        fprintf(f, "  %-20s%s%-11s\"%s\"\n", d[i].name, gap, stats_type_name(d[i].type), d[i].desc);
    }
}

void stats_describe(FILE *f)
{
    fputs("pool stats:\n", f);
    stats_describe_rows(f, stats_pool_desc, STATS_POOL_NFIELD);
    static const struct stats_field_desc refused = {
        STATS_REFUSED_PREFIX "<name>", STATS_COUNTER,
        "# requests refused per command name, once not zero (" STATS_REFUSED_OTHER ": any name no command has)",
    };
    stats_describe_rows(f, &refused, 1);
    fputs("\nserver stats:\n", f);
    stats_describe_rows(f, stats_server_desc, STATS_SERVER_NFIELD);
    fputs("\ntop-level fields:\n", f);
    stats_describe_rows(f, stats_header_desc, STATS_HEADER_NFIELD);
    fputs("\nlatency histograms (`status latency`, GET /latency, not in `status`: the top-level "
          "fields, then\n \"" STATS_LATENCY_KEY "\":{\"<pool>\":{\"request_latency\":{...},\"" STATS_LATENCY_SERVERS_KEY
          "\":{\"<server>\":{\"server_latency\":{...}}}}}):\n", f);
    stats_describe_rows(f, stats_pool_hist_desc, STATS_POOL_NHIST);
    stats_describe_rows(f, stats_server_hist_desc, STATS_SERVER_NHIST);
    fputs("\nhistogram fields:\n", f);
    stats_describe_rows(f, stats_hist_field_desc, STATS_HIST_NFIELD);
}
