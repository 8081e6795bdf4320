/*
 * options.h - the command line (twemproxies' flags, long and short forms) and its defaults.
 *
 * Threads: parsed by the main thread before any other thread starts; read-only afterwards.
 */
#ifndef NC_OPTIONS_H
#define NC_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NC_DEFAULT_CONF_FILE "conf/nutcrackers.yml"
#define NC_DEFAULT_STATS_PORT 22222
#define NC_DEFAULT_STATS_ADDR "0.0.0.0"
#define NC_DEFAULT_STATS_INTERVAL 30000 /* ms */
#define NC_DEFAULT_THREADS 8
#define NC_MAX_THREADS 1024
#define NC_DEFAULT_SLOWLOG_USEC 10000   /* -S: requests slower than this go to the slowlog */

struct nc_options {
    bool show_help;          /* -h */
    bool show_version;       /* -V */
    bool test_conf;          /* -t */
    bool daemonize;          /* -d */
    bool describe_stats;     /* -D */
    int verbose;             /* -v, 0..11, default 5 */
    const char *output;      /* -o, NULL = stderr */
    const char *conf_file;   /* -c */
    uint16_t stats_port;     /* -s / --port */
    const char *stats_addr;  /* -a / --addr */
    int64_t stats_interval;  /* -i / --interval, ms */
    const char *pid_file;    /* -p, NULL = none */
    size_t mbuf_size;        /* -m, 512..16777216 */
    int threads;             /* -T / --thread_num / --thread-num, 1..1024 */
    int64_t slowlog_usec;    /* -S / --slowlog */
};

/* Fills the defaults. */
void options_init(struct nc_options *o);

/*
 * Parses argv into o (strings point into argv). On a bad flag or value writes one line naming the
 * flag to err (size errlen) and returns -EINVAL; otherwise 0.
 */
int options_parse(struct nc_options *o, int argc, char **argv, char *err, size_t errlen);

/* Writes the help text (usage and every flag with its default) to f. */
void options_print_help(FILE *f);

#endif
