/*
 * ncload.c - the benchmark's own load generator (bench/ only; not part of the proxy): its
 * options and modes. Speaks the memcached ASCII (text get/set, or with --proto mcmeta the meta
 * commands `mg <key> v` and `ms <key> <bytes>`), memcached binary (--proto mcbin: GET and SET,
 * one reply per request; status 1, key not found, is a miss like text's END, any other non-zero
 * status an error) and redis protocols over epoll, on 127.0.0.1 only. The modes live in
 * ncload_load.c, ncload_rate.c, ncload_idle.c and ncload_storm.c.
 *
 *   ncload load  --proto mc|mcmeta|mcbin|redis -p PORT [-c conns] [-P pipeline] [-n requests]
 *                [-r keyspace] [-d value bytes] [--op get|set|mix] [--seq] [--seconds S] [--timeout s]
 *       The closed loop: every connection sends a batch of P requests, waits for the P replies,
 *       sends the next batch (as redis-benchmark does) until n requests have been answered.
 *       Prints one line:
 *       requests=N errors=N elapsed_s=F rps=F avg_ms=F p50_ms=F p99_ms=F p999_ms=F max_ms=F
 *       (latency of a request: from the write of its batch to the read of its reply).
 *       --seconds S: no new batch after S seconds (n requests at most).
 *       --seq sets keys 0..n-1 in order (to preload a keyspace); --op mix is 9 gets : 1 set.
 *
 *   ncload rate  --proto mc|redis -p PORT --rate R --seconds S [-c conns] [-P pipeline]
 *                [-r keyspace] [-d value bytes] [--op get|set|mix] [--timeout s]
 *       The open loop: R * S requests, request i due at i / R seconds from the start whatever
 *       the replies (with -P: in batches of P, each due with its first request and written at
 *       once), spread over the conns connections in turn (each pipelines more when its replies
 *       are late; with -P a latency is a batch's, from its due time to its last reply); waits
 *       for every reply (up to S + timeout seconds). Prints one line:
 *       requests=N errors=N elapsed_s=F target_rps=F rps=F p50_ms=F p99_ms=F p999_ms=F max_ms=F
 *       send_lag_p99_ms=F send_lag_max_ms=F
 *       (latency of a request: from the time it was due to the read of its reply, so a reply
 *       that holds back later requests is charged for them too; rps: replies over the time from
 *       the start to the last reply; send_lag: how late ncload itself wrote the requests, i.e.
 *       when it fell short of R on its own).
 *
 *   ncload idle  --proto mc|redis -p PORT -c conns [--pid PROXY_PID] [-d bytes] [-r keyspace]
 *       Opens conns connections in batches of 256 (with --pid, waits after each batch until the
 *       proxy holds the new sockets, so no SYN is dropped), prints "open N", then obeys lines on
 *       standard input: "burst K" (every connection writes K pipelined GETs, then every reply is
 *       read; prints "burst done N") and "quit". Ends on EOF too.
 *
 *   ncload storm --proto mc|redis -p PORT [-c conns] [--rate R [--burst K]] [--timeout s]
 *       A connection storm: up to conns connections at a time, each connects, sends one PING
 *       (memcached: version), reads the reply and closes; the next starts as soon as one ends,
 *       or with --rate R no sooner than R per second on average (connects due are started
 *       together, at most one millisecond late; --burst K: K at once every K/R seconds, with
 *       conns >= K). Runs until "quit" or EOF on standard input
 *       (or --timeout), lets the connections in flight end, then prints one line:
 *       connects=N errors=N elapsed_s=F rate=F p50_ms=F p99_ms=F max_ms=F
 *       (connects: the ones that got their reply; errors: a connect that failed, a close before
 *       the reply, an error reply; latency: from the connect to the reply).
 *
 * Threads: single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ncload.h"

static void usage(void)
{
    fprintf(stderr, "usage: ncload load|rate|idle|storm --proto mc|mcmeta|mcbin|redis -p PORT [-c N] [-P N]\n"
                    "              [-n N] [-r N] [-d N] [--op get|set|mix] [--seq] [--pid PID] [--seconds S] [--rate R]\n"
                    "              [--burst K] [--timeout S]\n");
    exit(2);
}

/* --proto's value: mc, mcmeta, mcbin, else redis. */
static enum proto proto_named(const char *v)
{
    if (strcmp(v, "mc") == 0) return P_MC;
    if (strcmp(v, "mcmeta") == 0) return P_MCMETA;
    if (strcmp(v, "mcbin") == 0) return P_MCBIN;
    return P_REDIS;
}

/* Sets the option a (whose value is v); false if a is no option. */
static bool set_option(struct opts *o, const char *a, const char *v)
{
    if (strcmp(a, "--proto") == 0) o->proto = proto_named(v);
    else if (strcmp(a, "-p") == 0) o->port = atoi(v);
    else if (strcmp(a, "-c") == 0) o->conns = atoi(v);
    else if (strcmp(a, "-P") == 0) o->pipeline = atoi(v);
    else if (strcmp(a, "-n") == 0) o->requests = strtoull(v, NULL, 10);
    else if (strcmp(a, "-r") == 0) o->keyspace = (uint32_t)strtoul(v, NULL, 10);
    else if (strcmp(a, "-d") == 0) o->value_len = (uint32_t)strtoul(v, NULL, 10);
    else if (strcmp(a, "--pid") == 0) o->pid = atoi(v);
    else if (strcmp(a, "--timeout") == 0) o->timeout_s = atoi(v);
    else if (strcmp(a, "--rate") == 0) o->rate = atof(v);
    else if (strcmp(a, "--seconds") == 0) o->seconds = atoi(v);
    else if (strcmp(a, "--burst") == 0) o->burst = (uint32_t)strtoul(v, NULL, 10);
    else if (strcmp(a, "--op") == 0) o->op = strcmp(v, "set") == 0 ? OP_SET : strcmp(v, "mix") == 0 ? OP_MIX : OP_GET;
    else return false;
    return true;
}

static bool opts_valid(const struct opts *o)
{
    return o->port > 0 && o->port <= 65535 && o->conns > 0 && o->conns <= 100000 && o->pipeline > 0 &&
           o->pipeline <= 1024 && o->keyspace != 0 && o->value_len <= 1000000 && o->timeout_s > 0 && o->rate >= 0 &&
           o->seconds >= 0 && o->burst != 0 && o->burst <= (uint32_t)o->conns;
}

int main(int argc, char **argv)
{
    struct opts o = { .proto = P_REDIS, .port = 0, .conns = 50, .pipeline = 1, .requests = 100000,
                      .keyspace = 10000, .value_len = 16, .op = OP_GET, .timeout_s = 120, .burst = 1 };
    if (argc < 2) usage();
    const char *mode = argv[1];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--seq") == 0) {
            o.seq = true;
            continue;
        }
        if (i + 1 >= argc || !set_option(&o, argv[i], argv[i + 1])) usage();
        i++;
    }
    if (!opts_valid(&o)) usage();
    if (o.seq && o.requests > o.keyspace) o.requests = o.keyspace;
    if (strcmp(mode, "load") == 0) return run_load(&o);
    if (strcmp(mode, "rate") == 0) {
        if (o.rate <= 0 || o.seconds <= 0 || o.rate * o.seconds > 1e9) usage();
        return run_rate(&o);
    }
    if (strcmp(mode, "idle") == 0) return run_idle(&o);
    if (strcmp(mode, "storm") == 0) return run_storm(&o);
    usage();
    return 2;
}
