/*
 * test_options.c - unit tests of the command line (src/app/options.c): every flag in both forms,
 * the defaults, every range boundary, malformed numbers, unknown flags and stray arguments, long
 * name prefixes, and the help and usage text built from the table, byte for byte.
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "app/options.h"

#define MAX_ARGS 24

struct parsed {
    struct nc_options o;
    int rc;
    char err[256];
    char *argv[MAX_ARGS + 2];
    char store[MAX_ARGS][128];
};

/* Parses a NULL-terminated list of arguments (argv[0] is added). Copies them: getopt permutes. */
static void parse_list(struct parsed *p, const char *const *args)
{
    memset(p, 0, sizeof(*p));
    int argc = 0;
    p->argv[argc++] = (char *)"nutcrackers";
    for (size_t i = 0; args[i] != NULL; i++) {
        assert_true(i < MAX_ARGS);
        snprintf(p->store[i], sizeof(p->store[i]), "%s", args[i]);
        p->argv[argc++] = p->store[i];
    }
    p->argv[argc] = NULL;
    options_init(&p->o);
    p->rc = options_parse(&p->o, argc, p->argv, p->err, sizeof(p->err));
}

#define PARSE(p, ...)                                            \
    do {                                                         \
        static const char *const args_[] = { __VA_ARGS__, NULL }; \
        parse_list((p), args_);                                  \
    } while (0)

static void expect_ok(const struct parsed *p)
{
    if (p->rc != 0) fail_msg("unexpected error: %s", p->err);
    assert_string_equal(p->err, "");
}

/* The error is exactly one line, starts with the program name and mentions needle. */
static void expect_err(const struct parsed *p, const char *needle)
{
    assert_int_equal(p->rc, -EINVAL);
    assert_non_null(strstr(p->err, "nutcrackers: "));
    assert_ptr_equal(strstr(p->err, "nutcrackers: "), p->err);
    assert_null(strchr(p->err, '\n'));
    if (strstr(p->err, needle) == NULL) fail_msg("'%s' does not mention '%s'", p->err, needle);
}

static void test_defaults(void **state)
{
    (void)state;
    struct parsed p;
    static const char *const none[] = { NULL };
    parse_list(&p, none);
    expect_ok(&p);
    assert_false(p.o.show_help);
    assert_false(p.o.show_version);
    assert_false(p.o.test_conf);
    assert_false(p.o.daemonize);
    assert_false(p.o.describe_stats);
    assert_int_equal(p.o.verbose, 5);
    assert_null(p.o.output);
    assert_string_equal(p.o.conf_file, "conf/nutcrackers.yml");
    assert_int_equal(p.o.stats_port, 22222);
    assert_string_equal(p.o.stats_addr, "0.0.0.0");
    assert_int_equal(p.o.stats_interval, 30000);
    assert_null(p.o.pid_file);
    assert_int_equal(p.o.mbuf_size, 16384);
    assert_int_equal(p.o.threads, 0); /* not given: options_resolve_threads finds it */
    assert_int_equal(p.o.slowlog_usec, 10000);
    assert_int_equal(p.o.stop_grace_msec, 5000);
}

static void test_bool_flags_short(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "-h", "-V", "-t", "-d", "-D");
    expect_ok(&p);
    assert_true(p.o.show_help && p.o.show_version && p.o.test_conf && p.o.daemonize &&
                p.o.describe_stats);
    PARSE(&p, "-hVtdD");
    expect_ok(&p);
    assert_true(p.o.show_help && p.o.show_version && p.o.test_conf && p.o.daemonize &&
                p.o.describe_stats);
    PARSE(&p, "-?");
    expect_ok(&p);
    assert_true(p.o.show_help);
}

static void test_bool_flags_long(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "--help");
    expect_ok(&p);
    assert_true(p.o.show_help);
    PARSE(&p, "--version");
    expect_ok(&p);
    assert_true(p.o.show_version);
    PARSE(&p, "--test-conf");
    expect_ok(&p);
    assert_true(p.o.test_conf);
    PARSE(&p, "--daemonize");
    expect_ok(&p);
    assert_true(p.o.daemonize);
    PARSE(&p, "--describe-stats");
    expect_ok(&p);
    assert_true(p.o.describe_stats);
    assert_false(p.o.daemonize);
}

static void test_value_flags_short(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "-v", "7", "-o", "/tmp/x.log", "-c", "a.yml", "-s", "2000", "-a", "127.0.0.1",
          "-i", "500", "-p", "/tmp/x.pid", "-m", "1024", "-T", "3", "-S", "77");
    expect_ok(&p);
    assert_int_equal(p.o.verbose, 7);
    assert_string_equal(p.o.output, "/tmp/x.log");
    assert_string_equal(p.o.conf_file, "a.yml");
    assert_int_equal(p.o.stats_port, 2000);
    assert_string_equal(p.o.stats_addr, "127.0.0.1");
    assert_int_equal(p.o.stats_interval, 500);
    assert_string_equal(p.o.pid_file, "/tmp/x.pid");
    assert_int_equal(p.o.mbuf_size, 1024);
    assert_int_equal(p.o.threads, 3);
    assert_int_equal(p.o.slowlog_usec, 77);
    /* attached values */
    PARSE(&p, "-v9", "-T4", "-cb.yml");
    expect_ok(&p);
    assert_int_equal(p.o.verbose, 9);
    assert_int_equal(p.o.threads, 4);
    assert_string_equal(p.o.conf_file, "b.yml");
}

static void test_value_flags_long(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "--verbose=8", "--output=o.log", "--conf-file=c.yml", "--port=3000",
          "--addr=127.0.0.2", "--interval=1000", "--pid-file=p.pid", "--mbuf-size=4096",
          "--thread_num=16", "--slowlog=0");
    expect_ok(&p);
    assert_int_equal(p.o.verbose, 8);
    assert_string_equal(p.o.output, "o.log");
    assert_string_equal(p.o.conf_file, "c.yml");
    assert_int_equal(p.o.stats_port, 3000);
    assert_string_equal(p.o.stats_addr, "127.0.0.2");
    assert_int_equal(p.o.stats_interval, 1000);
    assert_string_equal(p.o.pid_file, "p.pid");
    assert_int_equal(p.o.mbuf_size, 4096);
    assert_int_equal(p.o.threads, 16);
    assert_int_equal(p.o.slowlog_usec, 0);
    /* separate values, and the --thread-num alias */
    PARSE(&p, "--verbose", "2", "--conf-file", "d.yml", "--thread-num", "5");
    expect_ok(&p);
    assert_int_equal(p.o.verbose, 2);
    assert_string_equal(p.o.conf_file, "d.yml");
    assert_int_equal(p.o.threads, 5);
}

static void test_last_value_wins(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "-T", "2", "--thread_num=3");
    expect_ok(&p);
    assert_int_equal(p.o.threads, 3);
}

struct bound {
    const char *flag;
    const char *value;
    bool ok;
};

static void check_bounds(const struct bound *b, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        struct parsed p;
        const char *args[] = { b[i].flag, b[i].value, NULL };
        parse_list(&p, args);
        if (b[i].ok) {
            if (p.rc != 0) fail_msg("%s %s: %s", b[i].flag, b[i].value, p.err);
        } else {
            if (p.rc == 0) fail_msg("%s %s was accepted", b[i].flag, b[i].value);
            expect_err(&p, name);
            expect_err(&p, "out of range");
        }
    }
}

static void test_range_verbose(void **state)
{
    (void)state;
    static const struct bound b[] = {
        { "-v", "0", true }, { "-v", "11", true }, { "-v", "12", false }, { "-v", "-1", false },
    };
    check_bounds(b, sizeof(b) / sizeof(b[0]), "-v/--verbose");
    struct parsed p;
    PARSE(&p, "-v", "0");
    assert_int_equal(p.o.verbose, 0);
    PARSE(&p, "-v", "11");
    assert_int_equal(p.o.verbose, 11);
}

static void test_range_port(void **state)
{
    (void)state;
    static const struct bound b[] = {
        { "-s", "1", true }, { "-s", "65535", true }, { "-s", "0", false },
        { "-s", "65536", false }, { "--port", "-1", false },
    };
    check_bounds(b, sizeof(b) / sizeof(b[0]), "-s/--port");
    struct parsed p;
    PARSE(&p, "-s", "65535");
    assert_int_equal(p.o.stats_port, 65535);
}

static void test_range_interval(void **state)
{
    (void)state;
    static const struct bound b[] = {
        { "-i", "1", true }, { "-i", "9223372036854775807", true }, { "-i", "0", false },
        { "-i", "-5", false }, { "-i", "9223372036854775808", false },
    };
    check_bounds(b, sizeof(b) / sizeof(b[0]), "-i/--interval");
}

static void test_range_mbuf(void **state)
{
    (void)state;
    static const struct bound b[] = {
        { "-m", "512", true }, { "-m", "16777216", true }, { "-m", "511", false },
        { "-m", "16777217", false },
    };
    check_bounds(b, sizeof(b) / sizeof(b[0]), "-m/--mbuf-size");
}

static void test_range_threads(void **state)
{
    (void)state;
    static const struct bound b[] = {
        { "-T", "1", true }, { "-T", "1024", true }, { "-T", "0", false },
        { "-T", "1025", false }, { "--thread-num", "0", false },
    };
    check_bounds(b, sizeof(b) / sizeof(b[0]), "-T/--thread_num");
    struct parsed p;
    PARSE(&p, "-T", "0");
    assert_string_equal(p.err, "nutcrackers: option -T/--thread_num: '0' is out of range (1..1024)");
}

static void test_range_slowlog(void **state)
{
    (void)state;
    static const struct bound b[] = {
        { "-S", "0", true }, { "-S", "9223372036854775807", true }, { "-S", "-1", false },
    };
    check_bounds(b, sizeof(b) / sizeof(b[0]), "-S/--slowlog");
}

static void test_range_log_interval(void **state)
{
    (void)state;
    static const struct bound b[] = {
        { "-L", "1", true }, { "-L", "86400000", true }, { "-L", "0", false }, { "-L", "86400001", false },
    };
    check_bounds(b, sizeof(b) / sizeof(b[0]), "-L/--log-interval");
}

static void test_range_stop_grace(void **state)
{
    (void)state;
    static const struct bound b[] = {
        { "-G", "0", true }, { "-G", "3600000", true }, { "-G", "-1", false },
        { "-G", "3600001", false }, { "--stop-grace", "-1", false },
    };
    check_bounds(b, sizeof(b) / sizeof(b[0]), "-G/--stop-grace");
    struct parsed p;
    PARSE(&p, "--stop-grace=250");
    expect_ok(&p);
    assert_int_equal(p.o.stop_grace_msec, 250);
}

/* -M: bytes, with k, m or g multiplying by 1024, 1024^2, 1024^3; nothing else after the digits. */
static void test_max_memory_sizes(void **state)
{
    (void)state;
    static const struct { const char *arg; int64_t want; } ok[] = {
        { "0", 0 }, { "1000", 1000 }, { "64k", 64 << 10 }, { "64K", 64 << 10 }, { "512m", 512ll << 20 },
        { "2g", 2ll << 30 }, { "2G", 2ll << 30 }, { "8589934591g", 8589934591ll << 30 }, /* the largest in g */
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct parsed p;
        const char *args[] = { "-M", ok[i].arg, NULL };
        parse_list(&p, args);
        expect_ok(&p);
        assert_int_equal(p.o.max_memory, ok[i].want);
    }
    static const struct bound b[] = {
        { "-M", "-1", false }, { "-M", "8589934592g", false }, { "-M", "8589934592000g", false },
        { "--max-memory", "9223372036854775808", false }, { "-M", "9223372036854775807", true },
    };
    check_bounds(b, sizeof(b) / sizeof(b[0]), "-M/--max-memory");
    static const struct bound w[] = {
        { "-W", "-1", false }, { "-W", "1001", false }, { "--batch-wait", "0", true }, { "-W", "1000", true },
    };
    check_bounds(w, sizeof(w) / sizeof(w[0]), "-W/--batch-wait");
    static const char *const garbage[] = { "1x", "k", "1kb", "1 k", "1.5g", "" };
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        struct parsed p;
        const char *args[] = { "-M", garbage[i], NULL };
        parse_list(&p, args);
        expect_err(&p, "is not a number");
    }
}

/* -T not given: the CPUs of the affinity mask, said in the log line; more than those: a warning. */
static void test_resolve_threads(void **state)
{
    (void)state;
    int cpus = options_cpus_allowed();
    assert_true(cpus >= 1);
    char why[256];
    struct parsed p;
    PARSE(&p, "-v", "5");
    assert_int_equal(options_resolve_threads(&p.o, why, sizeof(why)), 0);
    assert_int_equal(p.o.threads, cpus < 1024 ? cpus : 1024);
    if (strstr(why, "-T not given") == NULL) fail_msg("'%s'", why);
    PARSE(&p, "-T", "1");
    assert_int_equal(options_resolve_threads(&p.o, why, sizeof(why)), 0);
    assert_int_equal(p.o.threads, 1);
    if (cpus < 1024) {
        char more[16];
        snprintf(more, sizeof(more), "%d", cpus + 1);
        const char *args[] = { "-T", more, NULL };
        parse_list(&p, args);
        assert_int_equal(options_resolve_threads(&p.o, why, sizeof(why)), 1);
        assert_int_equal(p.o.threads, cpus + 1);
        if (strstr(why, "more worker threads than") == NULL) fail_msg("'%s'", why);
    }
}

static void test_malformed_numbers(void **state)
{
    (void)state;
    static const char *const flags[] = { "-v", "-s", "-i", "-m", "-T", "-S", "-L", "-G" };
    static const char *const bad[] = { "12x", "", "x", " 5", "+5", "0x10", "1.5", "-", "5 " };
    for (size_t f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            struct parsed p;
            const char *args[] = { flags[f], bad[i], NULL };
            parse_list(&p, args);
            if (p.rc == 0) fail_msg("%s '%s' was accepted", flags[f], bad[i]);
            expect_err(&p, flags[f]);
            expect_err(&p, "is not a number");
        }
    }
    struct parsed p;
    PARSE(&p, "--mbuf-size=12x");
    expect_err(&p, "-m/--mbuf-size: '12x' is not a number");
}

static void test_overflow(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "-T", "99999999999999999999999");
    expect_err(&p, "-T/--thread_num: '99999999999999999999999' is out of range");
    PARSE(&p, "-v", "-99999999999999999999999");
    expect_err(&p, "-v/--verbose");
    expect_err(&p, "out of range");
    PARSE(&p, "-s", "4294967318"); /* 2^32 + 22: must not wrap to 22 */
    expect_err(&p, "-s/--port");
}

static void test_missing_value(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "-c");
    expect_err(&p, "option -c/--conf-file requires a value");
    PARSE(&p, "--thread_num");
    expect_err(&p, "option -T/--thread_num requires a value");
    PARSE(&p, "-d", "-T");
    expect_err(&p, "-T/--thread_num");
}

static void test_empty_string_value(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "-c", "");
    expect_err(&p, "-c/--conf-file");
    PARSE(&p, "--pid-file=");
    expect_err(&p, "-p/--pid-file");
    PARSE(&p, "-o", "");
    expect_err(&p, "-o/--output");
    PARSE(&p, "-a", "");
    expect_err(&p, "-a/--addr");
}

static void test_unknown_flags(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "-x");
    expect_err(&p, "unknown option '-x'");
    PARSE(&p, "--bogus");
    expect_err(&p, "unknown option '--bogus'");
    PARSE(&p, "-dX");
    expect_err(&p, "unknown option '-X'");
    /* twemproxy's long names are not flags of nutcrackers */
    PARSE(&p, "--stats-port=1000");
    expect_err(&p, "unknown option '--stats-port=1000'");
    PARSE(&p, "--help=1");
    expect_err(&p, "option -h/--help takes no value");
}

static void test_stray_argument(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "-d", "conf.yml");
    expect_err(&p, "unexpected argument 'conf.yml'");
    PARSE(&p, "--", "-d");
    expect_err(&p, "unexpected argument '-d'");
}

static void test_parse_twice(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "-x");
    assert_int_equal(p.rc, -EINVAL);
    PARSE(&p, "-T", "2");
    expect_ok(&p);
    assert_int_equal(p.o.threads, 2);
}

/* What options_print_help() writes (free it). */
static char *help_text(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    options_print_help(f);
    fclose(f);
    assert_non_null(buf);
    return buf;
}

static void test_help_lists_every_flag(void **state)
{
    (void)state;
    char *buf = help_text();
    static const char *const want[] = {
        "Usage: nutcrackers [-?hVdDt]",
        "-h, --help",
        "-V, --version",
        "-t, --test-conf",
        "-d, --daemonize",
        "-D, --describe-stats",
        "-v, --verbose=N",
        "(default: 5, min: 0, max: 11)",
        "-o, --output=S",
        "(default: stderr)",
        "-c, --conf-file=S",
        "(default: conf/nutcrackers.yml)",
        "-s, --port=N",
        "(default: 22222)",
        "-a, --addr=S",
        "(default: 0.0.0.0)",
        "-i, --interval=N",
        "(default: 30000 msec)",
        "-p, --pid-file=S",
        "(default: off)",
        "-m, --mbuf-size=N",
        "(default: 16384 bytes",
        "-T, --thread_num=N",
        "(default: the CPUs it may run on",
        "-S, --slowlog=N",
        "(default: 10000 usec)",
        "-N, --manage-trust=S",
        "(default: 127.0.0.0/8,::1)",
        "-K, --manage-auth-file=S",
        "-G, --stop-grace=N",
        "(default: 5000 msec)",
        "-M, --max-memory=N",
        "(default: 0 bytes: no cap)",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (strstr(buf, want[i]) == NULL) fail_msg("help lacks '%s'", want[i]);
    }
    free(buf);
}

/* The help, byte for byte: the table of options.c builds it (usage wrapped at 80 columns, the
 * defaults, units and ranges from the rows), and it must stay twemproxy's layout. */
static void test_help_exact(void **state)
{
    (void)state;
    static const char want[] =
        "Usage: nutcrackers [-?hVdDt] [-v verbosity level] [-o output file]\n"
        "                   [-c conf file] [-s stats port] [-a stats addr]\n"
        "                   [-i stats interval] [-p pid file] [-m mbuf size]\n"
        "                   [-T thread num] [-S slowlog threshold] [-N trusted nets]\n"
        "                   [-K auth file] [-L log interval] [-G stop grace]\n"
        "                   [-M max memory] [-W batch wait] [-H hot keys sample]\n"
        "\n"
        "Options:\n"
        "  -h, --help               : this help\n"
        "  -V, --version            : show version and exit\n"
        "  -t, --test-conf          : test configuration for syntax errors and exit\n"
        "  -d, --daemonize          : run as a daemon\n"
        "  -D, --describe-stats     : print stats description and exit\n"
        "  -v, --verbose=N          : set logging level (default: 5, min: 0, max: 11)\n"
        "  -o, --output=S           : set logging file (default: stderr)\n"
        "  -c, --conf-file=S        : set configuration file (default: conf/nutcrackers.yml)\n"
        "  -s, --port=N             : set manage (stats) port (default: 22222)\n"
        "  -a, --addr=S             : set manage (stats) ip (default: 0.0.0.0)\n"
        "  -i, --interval=N         : set stats aggregation interval in msec (default: 30000 msec)\n"
        "  -p, --pid-file=S         : set pid file (default: off)\n"
        "  -m, --mbuf-size=N        : set size of mbuf chunk in bytes "
        "(default: 16384 bytes, min: 512, max: 16777216)\n"
        "  -T, --thread_num=N       : set number of worker threads "
        "(default: the CPUs it may run on, min: 1, max: 1024)\n"
        "  -S, --slowlog=N          : set slowlog threshold in usec (default: 10000 usec)\n"
        "  -N, --manage-trust=S     : networks trusted with reload, slowlog get/reset and hotkeys "
        "(default: 127.0.0.0/8,::1)\n"
        "  -K, --manage-auth-file=S : read the manage port's auth password from this file (default: off)\n"
        "  -L, --log-interval=N     : log one line per interval per refused command name or failing server "
        "(default: 10000 msec)\n"
        "  -G, --stop-grace=N       : set how long SIGTERM lets requests in flight finish in msec "
        "(default: 5000 msec)\n"
        "  -M, --max-memory=N       : set the memory all clients together may make the proxy hold, in "
        "bytes (k, m, g: KiB, MiB, GiB) (default: 0 bytes: no cap)\n"
        "  -W, --batch-wait=N       : set how long a worker waits for more before it writes to a busy "
        "server or to a client awaiting more replies, in usec (half of it while the servers keep up; 0: "
        "never) (default: 100 usec, min: 0, max: 1000)\n"
        "  -H, --hotkeys-sample=N   : set the hot keys' sampling: one keyed request in N per pool, for the "
        "manage port's hotkeys (0: off) (default: 16, min: 0, max: 1048576)\n";
    char *buf = help_text();
    assert_string_equal(buf, want);
    free(buf);
}

/* Every option the help lists is in the usage line: a flag in the "[-?...]" group, an option
 * with a value as "[-X ...]". Catches a new row the usage's flag group does not name. */
static void test_usage_names_every_option(void **state)
{
    (void)state;
    char *buf = help_text();
    const char *options = strstr(buf, "\nOptions:\n");
    assert_non_null(options);
    const char *group = strstr(buf, "[-?");
    assert_non_null(group);
    const char *group_end = strchr(group, ']');
    assert_non_null(group_end);
    size_t nflags = 0;
    for (const char *line = options + 10; *line != '\0'; line = strchr(line, '\n') + 1) {
        assert_true(strncmp(line, "  -", 3) == 0);
        char letter = line[3];
        const char *eol = strchr(line, '\n');
        assert_non_null(eol);
        const char *colon = strstr(line, " : ");
        assert_true(colon != NULL && colon < eol);
        bool takes_value = memchr(line, '=', (size_t)(colon - line)) != NULL;
        if (takes_value) {
            char item[8];
            snprintf(item, sizeof(item), "[-%c ", letter);
            const char *at = strstr(buf, item);
            if (at == NULL || at > options) fail_msg("usage lacks '%s'", item);
        } else {
            const char *at = memchr(group, letter, (size_t)(group_end - group));
            if (at == NULL) fail_msg("usage's flag group lacks -%c", letter);
            nflags++;
        }
    }
    /* the group holds "-?" and the flags, nothing else */
    assert_int_equal((size_t)(group_end - group) - 3, nflags);
    free(buf);
}

/* getopt_long takes an unambiguous prefix of a long name; the alias --thread-num shares a prefix
 * with --thread_num without making it ambiguous. */
static void test_long_prefixes(void **state)
{
    (void)state;
    struct parsed p;
    PARSE(&p, "--thread=4", "--conf", "x.yml", "--vers");
    expect_ok(&p);
    assert_int_equal(p.o.threads, 4);
    assert_string_equal(p.o.conf_file, "x.yml");
    assert_true(p.o.show_version);
    PARSE(&p, "--thread-n=6");
    expect_ok(&p);
    assert_int_equal(p.o.threads, 6);
    PARSE(&p, "--thread-num=0");
    assert_string_equal(p.err, "nutcrackers: option -T/--thread_num: '0' is out of range (1..1024)");
    PARSE(&p, "--p=1"); /* --port or --pid-file */
    assert_string_equal(p.err, "nutcrackers: unknown option '--p=1' (see -h)");
    PARSE(&p, "--d"); /* --daemonize or --describe-stats */
    expect_err(&p, "unknown option '--d'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_bool_flags_short),
        cmocka_unit_test(test_bool_flags_long),
        cmocka_unit_test(test_value_flags_short),
        cmocka_unit_test(test_value_flags_long),
        cmocka_unit_test(test_last_value_wins),
        cmocka_unit_test(test_range_verbose),
        cmocka_unit_test(test_range_port),
        cmocka_unit_test(test_range_interval),
        cmocka_unit_test(test_range_mbuf),
        cmocka_unit_test(test_range_threads),
        cmocka_unit_test(test_range_stop_grace),
        cmocka_unit_test(test_resolve_threads),
        cmocka_unit_test(test_range_slowlog),
        cmocka_unit_test(test_range_log_interval),
        cmocka_unit_test(test_malformed_numbers),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_missing_value),
        cmocka_unit_test(test_empty_string_value),
        cmocka_unit_test(test_unknown_flags),
        cmocka_unit_test(test_stray_argument),
        cmocka_unit_test(test_parse_twice),
        cmocka_unit_test(test_help_lists_every_flag),
        cmocka_unit_test(test_help_exact),
        cmocka_unit_test(test_max_memory_sizes),
        cmocka_unit_test(test_usage_names_every_option),
        cmocka_unit_test(test_long_prefixes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
