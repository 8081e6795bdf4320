/*
 * stats_prom.h - the Prometheus text exposition format (version 0.0.4) of a snapshot.
 *
 * Names: nutcrackers_<field> for the top-level fields, nutcrackers_pool_<field>{pool=".."} and
 * nutcrackers_server_<field>{pool="..",server=".."} for the pool and server fields; counters end in
 * _total; timestamps and gauges are gauges; service, source and version are the labels of
 * nutcrackers_info 1. Latency histograms are nutcrackers_pool_request_latency_seconds and
 * nutcrackers_server_server_latency_seconds with le buckets 0.001 .. 3 (meitu's ms bounds) and +Inf,
 * _sum in seconds and _count.
 *
 * Threads: whoever owns the snapshot and the buffer (the stats thread).
 */
#ifndef NC_STATS_PROM_H
#define NC_STATS_PROM_H

#include "manage/stats_buf.h"
#include "manage/stats_snapshot.h"

/* Appends every metric family of s. */
void stats_prom_render(struct stats_buf *b, const struct stats_snapshot *s);

/* Appends s as a label value: \, " and newline escaped. */
void stats_prom_label_value(struct stats_buf *b, const char *s);

#endif
