/*
 * main.c - wires the process together: command line, -V/-h/-D/-t, log, SIGSEGV handler, config,
 * daemon, pid file, then the master until SIGINT/SIGTERM.
 *
 * Threads: the main thread only (it becomes the master thread in master_run).
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "app/daemon.h"
#include "app/fault.h"
#include "app/options.h"
#include "app/pidfile.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/ratelimit.h"
#include "conf/conf.h"
#include "net/transport.h"
#include "proto/proto.h"
#include "stats/stats_desc.h"
#include "thread/master.h"
#include "nc_commit.h" /* NC_GIT_COMMIT, when built from a git checkout (Makefile.am) */

/* Config errors during a normal start: to the log, and to stderr too when the log is a file. */
static void main_conf_error(void *ctx, const char *line)
{
    const struct nc_options *opts = ctx;
    log_error("%s", line);
    if (opts->output != NULL) fprintf(stderr, "nutcrackers: %s\n", line);
}

/* -t's list, one line per pool and server: the connections each backend will receive from this
 * proxy. Every worker opens its own server_connections to each server, and redis pools open up to
 * dedicated_connections more per worker, on demand, for transactions. */
static void main_print_connections(FILE *f, const struct conf *conf, int threads)
{
    for (size_t i = 0; i < conf->npools; i++) {
        const struct conf_pool *cp = &conf->pools[i];
        long shared = (long)threads * cp->server_connections;
        long dedicated = cp->redis ? (long)threads * cp->dedicated_connections : 0;
        /* a Redis Cluster pool's nodes are known at run time: one line for each of them */
        size_t n = cp->redis_cluster ? 1 : cp->nservers;
        for (size_t j = 0; j < n; j++) {
            if (cp->redis_cluster)
                fprintf(f, "pool '%s': each Redis Cluster node (up to %d masters%s; seeds from '%s'):", cp->name,
                        CONF_CLUSTER_MASTERS, cp->nshards != cp->nservers ? " and their replicas" : "",
                        cp->seeds[0].pname);
            else
                fprintf(f, "pool '%s': server '%s':", cp->name, cp->servers[j].stats_name);
            fprintf(f, " connections: %ld (-T %d x server_connections %d)", shared, threads, cp->server_connections);
            if (dedicated > 0) {
                fprintf(f, ", up to %ld with transactions (+ -T %d x dedicated_connections %d)",
                        shared + dedicated, threads, cp->dedicated_connections);
            }
            fprintf(f, "\n");
        }
    }
}

/* -t: load the file (the loader prints each error), then one verdict line (stderr) and the
 * connections each backend will receive (stdout). */
static int main_test_conf(struct nc_options *opts)
{
    struct conf *conf = conf_load(opts->conf_file, NULL, NULL);
    if (conf != NULL && (transport_conf_check(conf, NULL, NULL) + proto_conf_check(conf, NULL, NULL)) > 0) {
        /* TLS: files that parse, ...; redis: declared commands the proxy may route */
        conf_unref(conf);
        conf = NULL;
    }
    if (conf == NULL) {
        fprintf(stderr, "nutcrackers: configuration file '%s' syntax is invalid\n", opts->conf_file);
        return 1;
    }
    char why[256];
    if (options_resolve_threads(opts, why, sizeof(why)) > 0) fprintf(stderr, "nutcrackers: %s\n", why);
    fprintf(stderr, "nutcrackers: configuration file '%s' syntax is ok\n", opts->conf_file);
    main_print_connections(stdout, conf, opts->threads);
    conf_unref(conf);
    return 0;
}

/* The daemon chdirs to "/": names of files it opens again later must be absolute. */
static int main_abspaths(struct nc_options *opts, char **owned, size_t n)
{
    const char **fields[] = { &opts->output, &opts->pid_file, &opts->conf_file, &opts->manage_auth_file };
    for (size_t i = 0; i < n && i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (*fields[i] == NULL) continue;
        owned[i] = daemon_abspath(*fields[i]);
        if (owned[i] == NULL) return -1;
        *fields[i] = owned[i];
    }
    return 0;
}

/* A proxy holds two sockets per client at worst: take every fd the hard limit allows. */
static void main_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rlim_t soft = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            log_info("open file limit raised from %lu to %lu", (unsigned long)soft,
                     (unsigned long)rl.rlim_max);
    }
}

/* Writes the pid file (-p). Returns 0, or -1 after logging why (another process holds it). */
static int main_write_pidfile(struct pidfile *pf, const char *path)
{
    pid_t holder = 0;
    int err = pidfile_write(pf, path, &holder);
    if (err == -EEXIST) {
        log_error("pid file '%s' is held by the running process %ld", path, (long)holder);
        return -1;
    }
    if (err < 0) {
        log_error("cannot write pid file '%s': %s", path, strerror(-err));
        return -1;
    }
    return 0;
}

static int main_run(struct nc_options *opts)
{
    char *owned[4] = { NULL, NULL, NULL, NULL };
    struct pidfile pf;
    pidfile_init(&pf);
    int rc = 1;
    struct conf *conf = NULL;

    if (main_abspaths(opts, owned, 4) < 0) {
        fprintf(stderr, "nutcrackers: out of memory or no current directory\n");
        goto out;
    }
    nc_ratelimit_default_ms = (uint32_t)opts->log_interval_ms; /* before any thread starts */
    int err = log_init(opts->verbose, opts->output);
    if (err < 0) {
        fprintf(stderr, "nutcrackers: cannot open log file '%s': %s\n", opts->output, strerror(-err));
        goto out;
    }
    err = fault_install(); /* a SIGSEGV is logged from here on */
    if (err < 0) log_warn("cannot handle SIGSEGV: %s", strerror(-err));
    char why[256];
    if (options_resolve_threads(opts, why, sizeof(why)) > 0) log_warn("%s", why);
    else log_notice("%s", why);
    conf = conf_load(opts->conf_file, main_conf_error, opts);
    if (conf != NULL &&
        (transport_conf_check(conf, main_conf_error, opts) + proto_conf_check(conf, main_conf_error, opts)) > 0) {
        conf_unref(conf);
        conf = NULL;
    }
    if (conf == NULL) {
        log_error("configuration file '%s' is invalid", opts->conf_file);
        if (opts->output != NULL) {
            fprintf(stderr, "nutcrackers: configuration file '%s' is invalid\n", opts->conf_file);
        }
        goto out_log;
    }
    signal(SIGPIPE, SIG_IGN);
    main_raise_nofile();
    if (opts->daemonize) {
        err = daemon_detach(opts->output == NULL);
        if (err < 0) {
            log_error("cannot daemonize: %s", strerror(-err));
            goto out_conf;
        }
    }
    if (opts->pid_file != NULL && main_write_pidfile(&pf, opts->pid_file) < 0) goto out_conf;
    nc_clock_mark_start(); /* INFO's uptime: this process', from here */
    rc = master_run(opts, conf); /* tells a -d launcher once it listens (daemon_started) */
    pidfile_remove(&pf);
out_conf:
    conf_unref(conf);
out_log:
    log_deinit();
out:
    for (size_t i = 0; i < 4; i++) free(owned[i]);
    return rc; /* a daemon that failed before daemon_started: its launcher exits 1 */
}

int main(int argc, char **argv)
{
    struct nc_options opts;
    char err[256];
    options_init(&opts);
    if (options_parse(&opts, argc, argv, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (opts.show_help || opts.show_version || opts.describe_stats) {
#ifdef NC_GIT_COMMIT
        printf("This is nutcrackers-%s (git %s)\n", PACKAGE_VERSION, NC_GIT_COMMIT);
#else
        printf("This is nutcrackers-%s\n", PACKAGE_VERSION);
#endif
        if (opts.show_help) {
            printf("\n");
            options_print_help(stdout);
        }
        if (opts.describe_stats) {
            printf("\n");
            stats_describe(stdout);
        }
        return 0;
    }
    if (opts.test_conf) return main_test_conf(&opts);
    return main_run(&opts);
}
