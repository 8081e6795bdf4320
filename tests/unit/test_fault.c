/*
 * test_fault.c - unit tests of the SIGSEGV handler (app/fault.h) and of the async-signal-safe log
 * line it writes (common/log.h): the UTC time stamp against gmtime_r over four centuries, leap
 * days included; a line written whatever the level; and in a child process, a SIGSEGV sent by
 * kill(2) and a real invalid access, each logged (sender or address) before the child dies of it;
 * a real fault goes on to the handler that was there before (a sanitizer's, in the proxy).
 *
 * Threads: the test's; each SIGSEGV case runs in a child process of its own.
 */
#include "config.h"
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "app/fault.h"
#include "common/log.h"

/* a fresh file name in the temp folder (unlinked again by the caller) */
static void temp_log(char *path, size_t n)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, n, "%s/nc-test-fault-XXXXXX", dir != NULL && dir[0] != '\0' ? dir : "/tmp");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void check_stamp(time_t t, long msec)
{
    char want[64], got[64], day[32];
    struct tm tm;
    assert_non_null(gmtime_r(&t, &tm));
    strftime(day, sizeof(day), "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(want, sizeof(want), "[%s.%03ld +0000] ", day, msec);
    size_t n = log_utc_stamp(got, sizeof(got), t, msec);
    assert_string_equal(got, want);
    assert_int_equal(n, strlen(want));
}

static void test_utc_stamp_is_gmtime(void **state)
{
    (void)state;
    /* every day from 1970 to 2400 (at a time of day that moves), and the edges of the days
     * around leap days and century years */
    for (time_t t = 0; t < (time_t)13569465600LL; t += 86400 + 3607)
        check_stamp(t, (long)(t % 1000));
    static const char *const days[] = { "2000-02-28", "2000-02-29", "2000-03-01", "2100-02-28",
                                        "2100-03-01", "2024-12-31", "2025-01-01", "1972-02-29" };
    for (size_t i = 0; i < sizeof(days) / sizeof(days[0]); i++) {
        struct tm tm = { 0 };
        assert_non_null(strptime(days[i], "%Y-%m-%d", &tm));
        time_t t = timegm(&tm);
        check_stamp(t, 0);
        check_stamp(t + 86399, 999);
    }
}

static void test_utc_stamp_cut_to_fit(void **state)
{
    (void)state;
    char buf[8];
    assert_int_equal(log_utc_stamp(buf, sizeof(buf), 0, 0), 7);
    assert_string_equal(buf, "[1970-0");
    assert_int_equal(log_utc_stamp(buf, 1, 0, 0), 0);
    assert_string_equal(buf, "");
}

static void test_safe_line_whatever_the_level(void **state)
{
    (void)state;
    char path[256];
    temp_log(path, sizeof(path));
    assert_int_equal(log_init(LOG_EMERG, path), 0);
    log_write_safe(LOG_CRIT, "src/app/fault.c", 42, "a line");
    log_deinit();
    const char *text = slurp(path);
    unlink(path);
    /* "[YYYY-MM-DD HH:MM:SS.mmm +0000] CRIT fault.c:42 a line\n" */
    assert_int_equal(strlen(text), 32 + strlen("CRIT fault.c:42 a line\n"));
    assert_true(text[0] == '[' && strncmp(text + 24, " +0000] ", 8) == 0);
    assert_string_equal(text + 32, "CRIT fault.c:42 a line\n");
}

/* The handler before ours in the chaining case: it says so and exits. */
static void earlier_handler(int signo)
{
    (void)signo;
    _exit(77);
}

/* Runs how() in a child with the handler installed over prev (SIG_DFL or earlier_handler, not
 * cmocka's) and its log in a file; returns the child's status, its pid and its log. */
static int segv_child(void (*prev)(int), void (*how)(void), pid_t *child, char *log, size_t n)
{
    char path[256];
    temp_log(path, sizeof(path));
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct sigaction sa = { .sa_handler = prev };
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGSEGV, &sa, NULL) < 0 || log_init(LOG_NOTICE, path) < 0 || fault_install() < 0) _exit(90);
        how();
        _exit(91); /* still alive */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    snprintf(log, n, "%s", slurp(path));
    unlink(path);
    *child = pid;
    return status;
}

static void send_segv(void)
{
    kill(getpid(), SIGSEGV);
}

static void touch_bad_address(void)
{
    static volatile uintptr_t bad = 16;
    *(volatile int *)bad = 1;
}

static void test_sent_segv_logged_then_fatal(void **state)
{
    (void)state;
    char log[8192], want[64];
    pid_t pid;
    /* a sent one goes to the default action, whatever was there before */
    for (int i = 0; i < 2; i++) {
        int status = segv_child(i == 0 ? SIG_DFL : earlier_handler, send_segv, &pid, log, sizeof(log));
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGSEGV);
        snprintf(want, sizeof(want), "signal 11 (SIGSEGV): sent by pid %ld, dumping core\n", (long)pid);
        assert_non_null(strstr(log, want));
        assert_non_null(strstr(log, "] CRIT fault.c:"));
    }
}

/* A real fault: the line names the address; then the handler before ours runs (when there was
 * one: here earlier_handler, in the proxy a sanitizer's), or the default action ends the child. */
static void test_fault_logged_then_earlier_handler_or_fatal(void **state)
{
    (void)state;
    char log[8192];
    pid_t pid;
    for (int i = 0; i < 2; i++) {
        int status = segv_child(i == 0 ? SIG_DFL : earlier_handler, touch_bad_address, &pid, log, sizeof(log));
        if (i == 0) assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
        else assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 77);
        assert_non_null(strstr(log, "signal 11 (SIGSEGV): invalid memory access at 0x10, dumping core\n"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utc_stamp_is_gmtime),
        cmocka_unit_test(test_utc_stamp_cut_to_fit),
        cmocka_unit_test(test_safe_line_whatever_the_level),
        cmocka_unit_test(test_sent_segv_logged_then_fatal),
        cmocka_unit_test(test_fault_logged_then_earlier_handler_or_fatal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
