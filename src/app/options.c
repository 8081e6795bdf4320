/*
 * options.c - the command line (see options.h). One table, one row per option, describes every
 * flag: its letter, long name(s), field, default, range and help. It drives getopt_long, the
 * defaults, the range checks, the error lines, the usage line and the help text.
 *
 * Threads: the main thread, before any other thread exists (getopt_long keeps global state).
 */
#include "config.h"
#include "app/options.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/ratelimit.h"
#include "common/util.h"
#include "core/batch_wait.h"
#include "msg/mbuf.h"
#include "stats/stats_hotkeys.h"

/* The C type of an option's field in struct nc_options; it decides the option's kind: a bool is a
 * flag (no value), a string takes any non-empty text, the others take a number in a range. */
enum opt_type { OPT_T_BOOL, OPT_T_STR, OPT_T_INT, OPT_T_U16, OPT_T_I64, OPT_T_SIZE };

/* Where a row stores its value, and that field's type (picked by the compiler, so a row cannot
 * disagree with struct nc_options). */
#define OPT_FIELD(f)                                                                        \
    .offset = offsetof(struct nc_options, f),                                               \
    .type = _Generic(((struct nc_options *)0)->f, bool: OPT_T_BOOL, const char *: OPT_T_STR, \
                     int: OPT_T_INT, uint16_t: OPT_T_U16, int64_t: OPT_T_I64, size_t: OPT_T_SIZE)

struct opt_desc {
    char short_name;
    const char *long_name;   /* as shown in help and errors */
    const char *alias;       /* another accepted long spelling (not shown), or NULL */
    size_t offset;           /* the field in struct nc_options */
    enum opt_type type;
    int64_t def;             /* numbers: the default */
    const char *def_text;    /* numbers: a default found at run time, as the help calls it (the
                              * field is 0 until options_resolve_threads), or NULL */
    const char *def_str;     /* strings: the default, or NULL for none */
    const char *none;        /* strings without a default: how the help calls that ("off") */
    int64_t min, max;        /* numbers: accepted range; max INT64_MAX means unbounded */
    bool help_range;         /* numbers: the help shows min and max */
    bool size_suffix;        /* numbers: k, m or g after the digits multiply by 1024, 1024^2, 1024^3 */
    const char *unit;        /* numbers: the help's unit after the default, or NULL */
    const char *usage;       /* values: what the usage line calls the value */
    const char *help;        /* the text after ':' in the help, before the default */
};

#define OPT_THREADS_MAX 1024

/* One row per option, in the help's order (twemproxy's, then ours). */
static const struct opt_desc opt_table[] = {
    { .short_name = 'h', .long_name = "help", OPT_FIELD(show_help), .help = "this help" },
    { .short_name = 'V', .long_name = "version", OPT_FIELD(show_version),
      .help = "show version and exit" },
    { .short_name = 't', .long_name = "test-conf", OPT_FIELD(test_conf),
      .help = "test configuration for syntax errors and exit" },
    { .short_name = 'd', .long_name = "daemonize", OPT_FIELD(daemonize), .help = "run as a daemon" },
    { .short_name = 'D', .long_name = "describe-stats", OPT_FIELD(describe_stats),
      .help = "print stats description and exit" },
    { .short_name = 'v', .long_name = "verbose", OPT_FIELD(verbose), .def = LOG_LEVEL_DEFAULT,
      .min = LOG_LEVEL_MIN, .max = LOG_LEVEL_MAX, .help_range = true, .usage = "verbosity level",
      .help = "set logging level" },
    { .short_name = 'o', .long_name = "output", OPT_FIELD(output), .none = "stderr",
      .usage = "output file", .help = "set logging file" },
    { .short_name = 'c', .long_name = "conf-file", OPT_FIELD(conf_file),
      .def_str = "conf/nutcrackers.yml", .usage = "conf file", .help = "set configuration file" },
    { .short_name = 's', .long_name = "port", OPT_FIELD(stats_port), .def = 22222, .min = 1,
      .max = 65535, .usage = "stats port", .help = "set manage (stats) port" },
    { .short_name = 'a', .long_name = "addr", OPT_FIELD(stats_addr), .def_str = "0.0.0.0",
      .usage = "stats addr", .help = "set manage (stats) ip" },
    { .short_name = 'i', .long_name = "interval", OPT_FIELD(stats_interval), .def = 30000,
      .min = 1, .max = INT64_MAX, .unit = "msec", .usage = "stats interval",
      .help = "set stats aggregation interval in msec" },
    { .short_name = 'p', .long_name = "pid-file", OPT_FIELD(pid_file), .none = "off",
      .usage = "pid file", .help = "set pid file" },
    { .short_name = 'm', .long_name = "mbuf-size", OPT_FIELD(mbuf_size), .def = MBUF_DEFAULT_SIZE,
      .min = MBUF_MIN_SIZE, .max = MBUF_MAX_SIZE, .help_range = true, .unit = "bytes",
      .usage = "mbuf size", .help = "set size of mbuf chunk in bytes" },
    { .short_name = 'T', .long_name = "thread_num", .alias = "thread-num", OPT_FIELD(threads),
      .def_text = "the CPUs it may run on", .min = 1, .max = OPT_THREADS_MAX, .help_range = true,
      .usage = "thread num", .help = "set number of worker threads" },
    { .short_name = 'S', .long_name = "slowlog", OPT_FIELD(slowlog_usec), .def = 10000, .min = 0,
      .max = INT64_MAX, .unit = "usec", .usage = "slowlog threshold",
      .help = "set slowlog threshold in usec" },
    { .short_name = 'N', .long_name = "manage-trust", OPT_FIELD(manage_trust),
      .def_str = "127.0.0.0/8,::1", .usage = "trusted nets",
      .help = "networks trusted with reload, slowlog get/reset and hotkeys" },
    { .short_name = 'K', .long_name = "manage-auth-file", OPT_FIELD(manage_auth_file),
      .none = "off", .usage = "auth file",
      .help = "read the manage port's auth password from this file" },
    { .short_name = 'L', .long_name = "log-interval", OPT_FIELD(log_interval_ms),
      .def = NC_RATELIMIT_DEFAULT_MS, .min = 1, .max = 86400000, .unit = "msec",
      .usage = "log interval",
      .help = "log one line per interval per refused command name or failing server" },
    { .short_name = 'G', .long_name = "stop-grace", OPT_FIELD(stop_grace_msec), .def = 5000,
      .min = 0, .max = 3600000, .unit = "msec", .usage = "stop grace",
      .help = "set how long SIGTERM lets requests in flight finish in msec" },
    { .short_name = 'M', .long_name = "max-memory", OPT_FIELD(max_memory), .def = 0, .min = 0,
      .max = INT64_MAX, .size_suffix = true, .unit = "bytes: no cap", .usage = "max memory",
      .help = "set the memory all clients together may make the proxy hold, in bytes (k, m, g: KiB, "
              "MiB, GiB)" },
    { .short_name = 'W', .long_name = "batch-wait", OPT_FIELD(batch_wait_usec), .def = BATCH_WAIT_DEFAULT_USEC,
      .min = 0, .max = BATCH_WAIT_MAX_USEC, .help_range = true, .unit = "usec", .usage = "batch wait",
      .help = "set how long a worker waits for more before it writes to a busy server or to a client "
              "awaiting more replies, in usec (half of it while the servers keep up; 0: never)" },
    { .short_name = 'H', .long_name = "hotkeys-sample", OPT_FIELD(hotkeys_every), .def = HOTKEYS_EVERY_DEFAULT,
      .min = 0, .max = HOTKEYS_EVERY_MAX, .help_range = true, .usage = "hot keys sample",
      .help = "set the hot keys' sampling: one keyed request in N per pool, for the manage port's hotkeys "
              "(0: off)" },
};

/* The usage line's group of flags, in twemproxy's order ("-?" is help too); the test checks that
 * it names every flag of the table. */
#define OPT_USAGE_FLAGS "?hVdDt"
#define OPT_USAGE_WIDTH 80 /* the usage line wraps before this column */

static bool opt_takes_value(const struct opt_desc *d)
{
    return d->type != OPT_T_BOOL;
}

static void opt_store_int(struct nc_options *o, const struct opt_desc *d, int64_t v)
{
    void *f = (char *)o + d->offset;
    switch (d->type) {
    case OPT_T_INT: *(int *)f = (int)v; break;
    case OPT_T_U16: *(uint16_t *)f = (uint16_t)v; break;
    case OPT_T_I64: *(int64_t *)f = v; break;
    case OPT_T_SIZE: *(size_t *)f = (size_t)v; break;
    case OPT_T_BOOL:
    case OPT_T_STR: NC_NOT_REACHED(); break;
    }
}

static void opt_store_str(struct nc_options *o, const struct opt_desc *d, const char *v)
{
    NC_ASSERT(d->type == OPT_T_STR);
    *(const char **)((char *)o + d->offset) = v;
}

static void opt_store_flag(struct nc_options *o, const struct opt_desc *d)
{
    NC_ASSERT(d->type == OPT_T_BOOL);
    *(bool *)((char *)o + d->offset) = true;
}

void options_init(struct nc_options *o)
{
    memset(o, 0, sizeof(*o));
    for (size_t i = 0; i < NC_ARRAY_LEN(opt_table); i++) {
        const struct opt_desc *d = &opt_table[i];
        if (d->type == OPT_T_STR) {
            opt_store_str(o, d, d->def_str);
        } else if (d->type != OPT_T_BOOL && d->def_text != NULL) {
            opt_store_int(o, d, 0); /* found at run time */
        } else if (d->type != OPT_T_BOOL) {
            NC_ASSERT(d->def >= d->min && d->def <= d->max);
            opt_store_int(o, d, d->def);
        }
    }
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

/* The multiplier of a size suffix as a shift (k: 10, m: 20, g: 30, either case), 0: none. */
static int opt_size_shift(char c)
{
    switch (c) {
    case 'k': case 'K': return 10;
    case 'm': case 'M': return 20;
    case 'g': case 'G': return 30;
    default: return 0;
    }
}

/*
 * Parses a decimal integer in d's range (with d->size_suffix, one of k, m, g may follow). Accepts an optional '-' (so "-1" is reported as out of
 * range, not as garbage); rejects spaces, '+', hex, trailing characters and the empty string.
 */
static int opt_parse_int(const struct opt_desc *d, const char *arg, int64_t *out, char *err,
                         size_t errlen)
{
    const char *p = arg[0] == '-' ? arg + 1 : arg;
    size_t n = strlen(p);
    int shift = d->size_suffix && n > 1 ? opt_size_shift(p[n - 1]) : 0;
    if (shift > 0) n--;
    bool digits = n > 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') digits = false;
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
    if (shift > 0 && errno != ERANGE && (v > (LLONG_MAX >> shift) || v < (LLONG_MIN >> shift))) errno = ERANGE;
    if (shift > 0 && errno != ERANGE) v = (long long)((unsigned long long)v << shift);
    if (errno == ERANGE || v < d->min || v > d->max) {
        snprintf(err, errlen, "nutcrackers: option -%c/--%s: '%s' is out of range (%s)",
                 d->short_name, d->long_name, arg, range);
        return -EINVAL;
    }
    *out = (int64_t)v;
    return 0;
}

/* getopt_long said '?': an unknown flag, "-?" (help), or a value given to a flag that takes none. */
static int opt_bad_flag(struct nc_options *o, int argc, char **argv, char *err, size_t errlen)
{
    if (optopt == '?') {
        o->show_help = true;
        return 0;
    }
    const struct opt_desc *d = optopt != 0 ? opt_find(optopt) : NULL;
    if (d != NULL && !opt_takes_value(d)) {
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

/* getopt_long's view of the table: the long names with their aliases, and the short letters.
 * A leading ':' makes getopt return ':' for a missing value; "-?" is left out so that getopt
 * returns '?' with optopt '?' for it (help). */
struct opt_getopt {
    struct option longs[2 * NC_ARRAY_LEN(opt_table) + 1];
    char shorts[1 + 2 * NC_ARRAY_LEN(opt_table) + 1];
};

static void opt_getopt_build(struct opt_getopt *g)
{
    size_t nl = 0, ns = 0;
    g->shorts[ns++] = ':';
    for (size_t i = 0; i < NC_ARRAY_LEN(opt_table); i++) {
        const struct opt_desc *d = &opt_table[i];
        int has_arg = opt_takes_value(d) ? required_argument : no_argument;
        g->longs[nl++] = (struct option){ d->long_name, has_arg, NULL, d->short_name };
        if (d->alias != NULL) {
            g->longs[nl++] = (struct option){ d->alias, has_arg, NULL, d->short_name };
        }
        g->shorts[ns++] = d->short_name;
        if (opt_takes_value(d)) g->shorts[ns++] = ':';
    }
    g->longs[nl] = (struct option){ NULL, 0, NULL, 0 };
    g->shorts[ns] = '\0';
}

int options_parse(struct nc_options *o, int argc, char **argv, char *err, size_t errlen)
{
    if (errlen > 0) err[0] = '\0';
    struct opt_getopt g;
    opt_getopt_build(&g);
    optind = 0; /* glibc: full re-initialisation, so the parser can run more than once */
    opterr = 0; /* every message is ours, one line each */
    for (;;) {
        int c = getopt_long(argc, argv, g.shorts, g.longs, NULL);
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
        if (d->type == OPT_T_BOOL) {
            opt_store_flag(o, d);
        } else if (d->type == OPT_T_STR) {
            if (optarg[0] == '\0') {
                snprintf(err, errlen, "nutcrackers: option -%c/--%s: the value is empty",
                         d->short_name, d->long_name);
                return -EINVAL;
            }
            opt_store_str(o, d, optarg);
        } else {
            int64_t v = 0;
            int rc = opt_parse_int(d, optarg, &v, err, errlen);
            if (rc < 0) return rc;
            opt_store_int(o, d, v);
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "nutcrackers: unexpected argument '%s' (see -h)", argv[optind]);
        return -EINVAL;
    }
    return 0;
}

/* "Usage: nutcrackers [-?hVdDt] [-v verbosity level] ...", wrapped before OPT_USAGE_WIDTH. */
static void opt_print_usage(FILE *f)
{
    static const char lead[] = "Usage: nutcrackers ";
    size_t col = (size_t)fprintf(f, "%s[-" OPT_USAGE_FLAGS "]", lead);
    for (size_t i = 0; i < NC_ARRAY_LEN(opt_table); i++) {
        const struct opt_desc *d = &opt_table[i];
        if (!opt_takes_value(d)) continue;
        char item[64];
        int n = snprintf(item, sizeof(item), "[-%c %s]", d->short_name, d->usage);
        if (n < 0) continue;
        if (col + 1 + (size_t)n > OPT_USAGE_WIDTH) {
            col = (size_t)fprintf(f, "\n%*s%s", (int)(sizeof(lead) - 1), "", item) - 1;
        } else {
            col += (size_t)fprintf(f, " %s", item);
        }
    }
    fprintf(f, "\n");
}

/* The help text of d: what it does, then its default (and unit and range) in parentheses. */
static void opt_help_text(const struct opt_desc *d, char *buf, size_t len)
{
    switch (d->type) {
    case OPT_T_BOOL:
        snprintf(buf, len, "%s", d->help);
        break;
    case OPT_T_STR:
        snprintf(buf, len, "%s (default: %s)", d->help, d->def_str != NULL ? d->def_str : d->none);
        break;
    default: {
        char range[64] = "";
        if (d->help_range) {
            snprintf(range, sizeof(range), ", min: %" PRId64 ", max: %" PRId64, d->min, d->max);
        }
        char def[64];
        if (d->def_text != NULL) snprintf(def, sizeof(def), "%s", d->def_text);
        else snprintf(def, sizeof(def), "%" PRId64, d->def);
        snprintf(buf, len, "%s (default: %s%s%s%s)", d->help, def, d->unit != NULL ? " " : "",
                 d->unit != NULL ? d->unit : "", range);
        break;
    }
    }
}

void options_print_help(FILE *f)
{
    opt_print_usage(f);
    fprintf(f, "\nOptions:\n");
    for (size_t i = 0; i < NC_ARRAY_LEN(opt_table); i++) {
        const struct opt_desc *d = &opt_table[i];
        char name[40];
        snprintf(name, sizeof(name), "--%s%s", d->long_name,
                 d->type == OPT_T_BOOL ? "" : d->type == OPT_T_STR ? "=S" : "=N");
        char help[256]; /* the longest help text and its parentheses fit */
        opt_help_text(d, help, sizeof(help));
        fprintf(f, "  -%c, %-20s : %s\n", d->short_name, name, help);
    }
}

int options_cpus_allowed(void)
{
    /* the mask may be larger than cpu_set_t on a machine with many CPUs: grow until it fits */
    for (size_t ncpus = CPU_SETSIZE; ncpus <= (1u << 16); ncpus *= 2) {
        cpu_set_t *set = CPU_ALLOC(ncpus);
        if (set == NULL) return 1;
        size_t size = CPU_ALLOC_SIZE(ncpus);
        CPU_ZERO_S(size, set);
        int rc = sched_getaffinity(0, size, set);
        int n = rc == 0 ? CPU_COUNT_S(size, set) : 0;
        int err = errno;
        CPU_FREE(set);
        if (rc == 0) return n > 0 ? n : 1;
        if (err != EINVAL) return 1;
    }
    return 1;
}

int options_resolve_threads(struct nc_options *o, char *why, size_t whylen)
{
    int cpus = options_cpus_allowed();
    if (o->threads == 0) {
        o->threads = cpus < OPT_THREADS_MAX ? cpus : OPT_THREADS_MAX;
        snprintf(why, whylen, "%d worker threads: -T not given, the %d CPUs this process may run on",
                 o->threads, cpus);
        return 0;
    }
    if (o->threads > cpus) {
        snprintf(why, whylen, "-T %d is more worker threads than the %d CPUs this process may run "
                 "on: they will share cores, which costs CPU per request and adds no throughput",
                 o->threads, cpus);
        return 1;
    }
    snprintf(why, whylen, "%d worker threads (-T), on %d CPUs this process may run on", o->threads, cpus);
    return 0;
}
