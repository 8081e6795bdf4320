/*
 * options.c - the command line (see options.h). One table describes every flag: it drives
 * getopt_long, the range checks, the error lines and the help text.
 *
 * Threads: the main thread, before any other thread exists (getopt_long keeps global state).
 */
#include "config.h"
#include "app/options.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"

#define NC_MBUF_MIN_SIZE 512
#define NC_MBUF_MAX_SIZE 16777216
#define NC_DEFAULT_MBUF_SIZE 16384

enum opt_kind { OPT_FLAG, OPT_INT, OPT_STR };

struct opt_desc {
    char short_name;
    const char *long_name;   /* as shown in help and errors */
    enum opt_kind kind;
    int64_t min, max;        /* OPT_INT: accepted range; max INT64_MAX means unbounded */
    const char *help;        /* the text after ':' in the help */
};

static const struct opt_desc opt_table[] = {
    { 'h', "help", OPT_FLAG, 0, 0, "this help" },
    { 'V', "version", OPT_FLAG, 0, 0, "show version and exit" },
    { 't', "test-conf", OPT_FLAG, 0, 0, "test configuration for syntax errors and exit" },
    { 'd', "daemonize", OPT_FLAG, 0, 0, "run as a daemon" },
    { 'D', "describe-stats", OPT_FLAG, 0, 0, "print stats description and exit" },
    { 'v', "verbose", OPT_INT, LOG_LEVEL_MIN, LOG_LEVEL_MAX,
      "set logging level (default: 5, min: 0, max: 11)" },
    { 'o', "output", OPT_STR, 0, 0, "set logging file (default: stderr)" },
    { 'c', "conf-file", OPT_STR, 0, 0, "set configuration file (default: " NC_DEFAULT_CONF_FILE ")" },
    { 's', "port", OPT_INT, 1, 65535, "set manage (stats) port (default: 22222)" },
    { 'a', "addr", OPT_STR, 0, 0, "set manage (stats) ip (default: " NC_DEFAULT_STATS_ADDR ")" },
    { 'i', "interval", OPT_INT, 1, INT64_MAX,
      "set stats aggregation interval in msec (default: 30000 msec)" },
    { 'p', "pid-file", OPT_STR, 0, 0, "set pid file (default: off)" },
    { 'm', "mbuf-size", OPT_INT, NC_MBUF_MIN_SIZE, NC_MBUF_MAX_SIZE,
      "set size of mbuf chunk in bytes (default: 16384 bytes, min: 512, max: 16777216)" },
    { 'T', "thread_num", OPT_INT, 1, NC_MAX_THREADS,
      "set number of worker threads (default: 8, min: 1, max: 1024)" },
    { 'S', "slowlog", OPT_INT, 0, INT64_MAX,
      "set slowlog threshold in usec (default: 10000 usec)" },
};

/* getopt_long's view of the table, plus the hidden alias --thread-num. */
static const struct option opt_long[] = {
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { "test-conf", no_argument, NULL, 't' },
    { "daemonize", no_argument, NULL, 'd' },
    { "describe-stats", no_argument, NULL, 'D' },
    { "verbose", required_argument, NULL, 'v' },
    { "output", required_argument, NULL, 'o' },
    { "conf-file", required_argument, NULL, 'c' },
    { "port", required_argument, NULL, 's' },
    { "addr", required_argument, NULL, 'a' },
    { "interval", required_argument, NULL, 'i' },
    { "pid-file", required_argument, NULL, 'p' },
    { "mbuf-size", required_argument, NULL, 'm' },
    { "thread_num", required_argument, NULL, 'T' },
    { "thread-num", required_argument, NULL, 'T' },
    { "slowlog", required_argument, NULL, 'S' },
    { NULL, 0, NULL, 0 },
};

/* Leading ':' makes getopt return ':' for a missing value; "?" is accepted as a help flag. */
static const char opt_short[] = ":hVtdDv:o:c:s:a:i:p:m:T:S:";

void options_init(struct nc_options *o)
{
    memset(o, 0, sizeof(*o));
    o->verbose = LOG_LEVEL_DEFAULT;
    o->output = NULL;
    o->conf_file = NC_DEFAULT_CONF_FILE;
    o->stats_port = NC_DEFAULT_STATS_PORT;
    o->stats_addr = NC_DEFAULT_STATS_ADDR;
    o->stats_interval = NC_DEFAULT_STATS_INTERVAL;
    o->pid_file = NULL;
    o->mbuf_size = NC_DEFAULT_MBUF_SIZE;
    o->threads = NC_DEFAULT_THREADS;
    o->slowlog_usec = NC_DEFAULT_SLOWLOG_USEC;
}

static const struct opt_desc *opt_find(int short_name)
{
    for (size_t i = 0; i < NC_ARRAY_LEN(opt_table); i++) {
        if (opt_table[i].short_name == short_name) return &opt_table[i];
    }
    return NULL;
}

static void opt_range_text(const struct opt_desc *d, char *buf, size_t len)
{
    if (d->max == INT64_MAX) {
        snprintf(buf, len, ">= %" PRId64, d->min);
    } else {
        snprintf(buf, len, "%" PRId64 "..%" PRId64, d->min, d->max);
    }
}

/*
 * Parses a decimal integer in d's range. Accepts an optional '-' (so "-1" is reported as out of
 * range, not as garbage); rejects spaces, '+', hex, trailing characters and the empty string.
 */
static int opt_parse_int(const struct opt_desc *d, const char *arg, int64_t *out, char *err,
                         size_t errlen)
{
    const char *p = arg[0] == '-' ? arg + 1 : arg;
    bool digits = p[0] != '\0';
    for (const char *q = p; *q != '\0'; q++) {
        if (*q < '0' || *q > '9') digits = false;
    }
    char range[64];
    opt_range_text(d, range, sizeof(range));
    if (!digits) {
        snprintf(err, errlen, "nutcrackers: option -%c/--%s: '%s' is not a number (%s)",
                 d->short_name, d->long_name, arg, range);
        return -EINVAL;
    }
    errno = 0;
    char *end = NULL;
    long long v = strtoll(arg, &end, 10);
    if (errno == ERANGE || v < d->min || v > d->max) {
        snprintf(err, errlen, "nutcrackers: option -%c/--%s: '%s' is out of range (%s)",
                 d->short_name, d->long_name, arg, range);
        return -EINVAL;
    }
    *out = (int64_t)v;
    return 0;
}

static void opt_store_int(struct nc_options *o, int short_name, int64_t v)
{
    switch (short_name) {
    case 'v': o->verbose = (int)v; break;
    case 's': o->stats_port = (uint16_t)v; break;
    case 'i': o->stats_interval = v; break;
    case 'm': o->mbuf_size = (size_t)v; break;
    case 'T': o->threads = (int)v; break;
    case 'S': o->slowlog_usec = v; break;
    default: NC_NOT_REACHED(); break;
    }
}

static void opt_store_str(struct nc_options *o, int short_name, const char *v)
{
    switch (short_name) {
    case 'o': o->output = v; break;
    case 'c': o->conf_file = v; break;
    case 'a': o->stats_addr = v; break;
    case 'p': o->pid_file = v; break;
    default: NC_NOT_REACHED(); break;
    }
}

static void opt_store_flag(struct nc_options *o, int short_name)
{
    switch (short_name) {
    case 'h': o->show_help = true; break;
    case 'V': o->show_version = true; break;
    case 't': o->test_conf = true; break;
    case 'd': o->daemonize = true; break;
    case 'D': o->describe_stats = true; break;
    default: NC_NOT_REACHED(); break;
    }
}

/* getopt_long said '?': an unknown flag, "-?" (help), or a value given to a flag that takes none. */
static int opt_bad_flag(struct nc_options *o, int argc, char **argv, char *err, size_t errlen)
{
    if (optopt == '?') {
        o->show_help = true;
        return 0;
    }
    const struct opt_desc *d = optopt != 0 ? opt_find(optopt) : NULL;
    if (d != NULL && d->kind == OPT_FLAG) {
        snprintf(err, errlen, "nutcrackers: option -%c/--%s takes no value", d->short_name,
                 d->long_name);
    } else if (optopt != 0) {
        snprintf(err, errlen, "nutcrackers: unknown option '-%c' (see -h)", optopt);
    } else {
        const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
        snprintf(err, errlen, "nutcrackers: unknown option '%s' (see -h)", arg);
    }
    return -EINVAL;
}

int options_parse(struct nc_options *o, int argc, char **argv, char *err, size_t errlen)
{
    if (errlen > 0) err[0] = '\0';
    optind = 0; /* glibc: full re-initialisation, so the parser can run more than once */
    opterr = 0; /* every message is ours, one line each */
    for (;;) {
        int c = getopt_long(argc, argv, opt_short, opt_long, NULL);
        if (c == -1) break;
        if (c == '?') {
            int rc = opt_bad_flag(o, argc, argv, err, errlen);
            if (rc < 0) return rc;
            continue;
        }
        if (c == ':') {
            const struct opt_desc *d = opt_find(optopt);
            if (d == NULL) {
                snprintf(err, errlen, "nutcrackers: an option is missing its value (see -h)");
            } else {
                snprintf(err, errlen, "nutcrackers: option -%c/--%s requires a value",
                         d->short_name, d->long_name);
            }
            return -EINVAL;
        }
        const struct opt_desc *d = opt_find(c);
        NC_ASSERT(d != NULL);
        if (d == NULL) return -EINVAL;
        switch (d->kind) {
        case OPT_FLAG:
            opt_store_flag(o, c);
            break;
        case OPT_INT: {
            int64_t v = 0;
            int rc = opt_parse_int(d, optarg, &v, err, errlen);
            if (rc < 0) return rc;
            opt_store_int(o, c, v);
            break;
        }
        case OPT_STR:
            if (optarg[0] == '\0') {
                snprintf(err, errlen, "nutcrackers: option -%c/--%s: the value is empty",
                         d->short_name, d->long_name);
                return -EINVAL;
            }
            opt_store_str(o, c, optarg);
            break;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "nutcrackers: unexpected argument '%s' (see -h)", argv[optind]);
        return -EINVAL;
    }
    return 0;
}

void options_print_help(FILE *f)
{
    fprintf(f,
            "Usage: nutcrackers [-?hVdDt] [-v verbosity level] [-o output file]\n"
            "                   [-c conf file] [-s stats port] [-a stats addr]\n"
            "                   [-i stats interval] [-p pid file] [-m mbuf size]\n"
            "                   [-T thread num] [-S slowlog threshold]\n"
            "\n"
            "Options:\n");
    for (size_t i = 0; i < NC_ARRAY_LEN(opt_table); i++) {
        const struct opt_desc *d = &opt_table[i];
        char name[40];
        snprintf(name, sizeof(name), "--%s%s", d->long_name,
                 d->kind == OPT_INT ? "=N" : d->kind == OPT_STR ? "=S" : "");
        fprintf(f, "  -%c, %-20s : %s\n", d->short_name, name, d->help);
    }
}
