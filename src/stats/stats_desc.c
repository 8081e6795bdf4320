/*
 * stats_desc.c - the stats field tables (see stats_desc.h) and the `-D` listing.
 *
 * Threads: constant data, any thread.
 */
#include "config.h"
#include "stats/stats_desc.h"

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
#undef STATS_DESC_ROW

const char *stats_type_name(enum stats_type t)
{
    switch (t) {
    case STATS_STRING: return "string";
    case STATS_COUNTER: return "counter";
    case STATS_GAUGE: return "gauge";
    case STATS_TIMESTAMP: return "timestamp";
    }
    return "?";
}

static void stats_describe_section(FILE *f, const char *title, const struct stats_field_desc *d,
                                   size_t n)
{
    fprintf(f, "%s:\n", title);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "  %-20s%-11s\"%s\"\n", d[i].name, stats_type_name(d[i].type), d[i].desc);
    }
}

void stats_describe(FILE *f)
{
    stats_describe_section(f, "pool stats", stats_pool_desc, STATS_POOL_NFIELD);
    fputc('\n', f);
    stats_describe_section(f, "server stats", stats_server_desc, STATS_SERVER_NFIELD);
    fputc('\n', f);
    stats_describe_section(f, "top-level fields", stats_header_desc, STATS_HEADER_NFIELD);
}
