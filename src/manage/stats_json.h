/*
 * stats_json.h - the stats JSON document: twemproxy's shape and key order (the top-level fields,
 * then one object per pool holding its fields, then one object per server holding its fields),
 * with "service":"nutcrackers", and the latency histogram objects appended at the end of each pool
 * and server object.
 *
 * Threads: whoever owns the snapshot and the buffer (the stats thread).
 */
#ifndef NC_STATS_JSON_H
#define NC_STATS_JSON_H

#include "manage/stats_buf.h"
#include "manage/stats_snapshot.h"

/* Appends the document of s (one line, no line end). A single-worker snapshot gets a leading
 * "worker":<id> member. */
void stats_json_render(struct stats_buf *b, const struct stats_snapshot *s);

/* Appends one histogram object: {"count":..,"sum":..,...,"buckets":{"1":..,...,"+inf":..}}. */
void stats_json_render_hist(struct stats_buf *b, const struct stats_hist_sum *h);

#endif
