/*
 * stats_prom.h - the Prometheus text exposition format (version 0.0.4) of a snapshot.
 *
 * Names follow Prometheus' conventions (units in the name, _total on counters only): the top-level
 * fields are nutcrackers_uptime_seconds, nutcrackers_time_seconds, nutcrackers_config_generation,
 * nutcrackers_config_loaded_at_seconds, nutcrackers_client_connections_accepted_total and
 * nutcrackers_client_connections; service, source and version are the labels of nutcrackers_info 1.
 * Pool and server fields are nutcrackers_pool_<field>{pool=".."} and
 * nutcrackers_server_<field>{pool="..",server=".."}, a server field without its leading "server_";
 * timestamps (usec in the JSON) are gauges in seconds (nutcrackers_server_ejected_at_seconds).
 * Latency histograms are nutcrackers_pool_request_latency_seconds and
 * nutcrackers_server_latency_seconds with le buckets 50 us .. 10 s (stats_hist.h) and +Inf, _sum in
 * seconds and _count.
 *
 * Threads: whoever owns the snapshot and the buffer (the stats thread).
 */
#ifndef NC_STATS_PROM_H
#define NC_STATS_PROM_H

#include "manage/text_escape.h"
#include "manage/stats_snapshot.h"

/* Appends every metric family of s. */
void stats_prom_render(struct textbuf *b, const struct stats_snapshot *s);

/* Appends s as a label value: \, " and newline escaped. */
void stats_prom_label_value(struct textbuf *b, const char *s);

#endif
