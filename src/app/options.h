/*
 * options.h - the command line (twemproxies' flags, long and short forms). The defaults and
 * ranges live in one place, the table of options.c, which `-h` prints.
 *
 * Threads: parsed by the main thread before any other thread starts; read-only afterwards.
 */
#ifndef NC_OPTIONS_H
#define NC_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct nc_options {
    bool show_help;          /* -h */
    bool show_version;       /* -V */
    bool test_conf;          /* -t */
    bool daemonize;          /* -d */
    bool describe_stats;     /* -D */
    int verbose;             /* -v / --verbose */
    const char *output;      /* -o / --output, NULL = stderr */
    const char *conf_file;   /* -c / --conf-file */
    uint16_t stats_port;     /* -s / --port */
    const char *stats_addr;  /* -a / --addr */
    int64_t stats_interval;  /* -i / --interval, ms */
    const char *pid_file;    /* -p / --pid-file, NULL = none */
    size_t mbuf_size;        /* -m / --mbuf-size, bytes */
    int threads;             /* -T / --thread_num / --thread-num; 0 = not given: the CPUs the
                              * process may run on (options_resolve_threads) */
    int64_t slowlog_usec;    /* -S / --slowlog, usec: a request this slow goes to the slowlog */
    const char *manage_trust;          /* -N / --manage-trust: networks trusted on the manage port */
    const char *manage_auth_file;  /* -K / --manage-auth-file, NULL = no password */
    int64_t log_interval_ms; /* -L / --log-interval, ms: repeated notice lines, one per subject */
    int64_t stop_grace_msec; /* -G / --stop-grace, ms: SIGTERM lets requests in flight finish
                              * this long (0: it stops at once, as SIGINT does) */
    int64_t max_memory;      /* -M / --max-memory, bytes all client connections together may make
                              * the proxy hold (core/client_mem.h); 0: no cap */
    int64_t batch_wait_usec; /* -W / --batch-wait, usec: how long a worker waits for more work
                              * before writing to a busy peer (core/batch_wait.h); 0: never */
    int64_t hotkeys_every;   /* -H / --hotkeys-sample: one keyed request in this many is sampled
                              * per pool for the hot keys (stats/stats_hotkeys.h); 0: none */
};

/* Fills the defaults. */
void options_init(struct nc_options *o);

/*
 * Parses argv into o (strings point into argv). On a bad flag or value writes one line naming the
 * flag to err (size errlen) and returns -EINVAL; otherwise 0.
 */
int options_parse(struct nc_options *o, int argc, char **argv, char *err, size_t errlen);

/* The CPUs this process may run on: the count of its affinity mask (sched_getaffinity; taskset
 * and cgroup cpusets narrow it), 1 when it cannot be read. */
int options_cpus_allowed(void);

/*
 * Gives o->threads its value when -T was not given (the CPUs the process may run on, at most
 * -T's maximum) and writes to why (size whylen) one line for the log: the choice, or a warning
 * when -T asks for more threads than those CPUs. Returns 1 for a warning, else 0.
 */
int options_resolve_threads(struct nc_options *o, char *why, size_t whylen);

/* Writes the help text (usage and every flag with its default) to f. */
void options_print_help(FILE *f);

#endif
