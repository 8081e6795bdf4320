/*
 * ncload.h - what the files of the benchmark's load generator (bench/ncload*.c) share: the
 * options, a client connection, the latency histogram, the protocols and the socket helpers.
 *
 * Threads: single-threaded (ncload runs one thread).
 */
#ifndef NCLOAD_H
#define NCLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#define RBUF_SIZE (256 * 1024)

/* memcached text, redis, memcached meta (mg/ms), memcached binary (GET/SET) */
enum proto { P_MC, P_REDIS, P_MCMETA, P_MCBIN };
enum op { OP_GET, OP_SET, OP_MIX };

struct opts {
    enum proto proto;
    int port;
    int conns;
    int pipeline;
    uint64_t requests;
    uint32_t keyspace;
    uint32_t value_len;
    enum op op;
    bool seq;
    int timeout_s;
    int pid;
    double rate;     /* storm: connects per second, 0: as fast as they go; rate: requests per second */
    uint32_t burst;  /* storm: connects started together */
    int seconds;     /* load: no new batch after that many seconds (0: -n alone); rate: the schedule's length */
};

/* One connection of the load, idle and rate modes. */
struct client {
    int fd;
    char *rbuf;
    size_t rlen;
    int outstanding;      /* load, idle: replies still expected for the current batch */
    uint64_t batch_t0;    /* load: ns, the write of the current batch */
    uint64_t sent;        /* rate: requests written (or buffered) on this connection */
    uint64_t answered;    /* rate: replies read on this connection */
    char *wbuf;           /* rate: bytes not yet taken by the socket */
    size_t wlen, wcap;
    bool polling_out;     /* rate: waiting for EPOLLOUT too (wbuf not empty) */
};

/* ncload_hist.c: latency histograms, in ns, with < 0.1% error (log-linear buckets). */
struct hist;
struct hist *hist_new(void);
void hist_free(struct hist *h);
void hist_record(struct hist *h, uint64_t ns);
uint64_t hist_count(const struct hist *h);
double hist_pct_ms(const struct hist *h, double p); /* the p quantile (0..1), in ms */
double hist_avg_ms(const struct hist *h);
double hist_max_ms(const struct hist *h);

/* ncload_proto.c: requests and replies of the memcached (text, meta, binary) and redis protocols. */
size_t build_request(const struct opts *o, char *out, size_t cap, const char *value);
size_t build_ping(const struct opts *o, char *out);
long parse_reply(const struct opts *o, const char *p, const char *end, bool *err);
char *value_bytes(uint32_t len);

/* ncload_io.c: time, sockets, reading replies. */
uint64_t now_ns(void);
void die(const char *what);
int connect_one(int port);
void write_all(int fd, const char *buf, size_t len, uint64_t deadline);
int client_read(const struct opts *o, struct client *c, uint64_t *errors);
struct client *clients_open(int ep, int conns, int port, uint32_t events);
void clients_close(struct client *cs, int conns);
void raise_nofile(rlim_t want);

/* The modes: each returns the process's exit status. */
int run_load(const struct opts *o);  /* ncload_load.c */
int run_idle(const struct opts *o);  /* ncload_idle.c */
int run_storm(const struct opts *o); /* ncload_storm.c */
int run_rate(const struct opts *o);  /* ncload_rate.c */

#endif
