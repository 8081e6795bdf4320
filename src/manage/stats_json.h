/*
 * stats_json.h - the stats JSON documents.
 *
 * `status` (and GET /, and what a silent client gets): twemproxy's shape and key order, with
 * "service":"nutcrackers": the top-level fields, then one object per pool holding its fields,
 * then one object per server holding its fields. Nothing else is an object: agents written for
 * twemproxy take every object at the top level for a pool and every object in a pool for a server.
 *
 * `status latency` (and GET /latency): the same top-level fields, then one member "latency"
 * holding the histograms: {"<pool>":{"request_latency":{...},"servers":{"<server>":
 * {"server_latency":{...}}}}}.
 *
 * Threads: whoever owns the snapshot and the buffer (the stats thread).
 */
#ifndef NC_STATS_JSON_H
#define NC_STATS_JSON_H

#include "manage/text_escape.h"
#include "manage/stats_snapshot.h"

/* Appends the document of s (one line, no line end). A single-worker snapshot gets a leading
 * "worker":<id> member. */
void stats_json_render(struct textbuf *b, const struct stats_snapshot *s);

/* Appends the latency document of s (one line, no line end); "worker":<id> first as above. */
void stats_json_render_latency(struct textbuf *b, const struct stats_snapshot *s);

/* Appends one histogram object: {"count":..,"sum":..,...,"buckets":{"1":..,...,"+inf":..}}. */
void stats_json_render_hist(struct textbuf *b, const struct stats_hist_sum *h);

#endif
