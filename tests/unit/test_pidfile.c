/*
 * test_pidfile.c - unit tests of the pid file (src/app/pidfile.c): content, a live holder is
 * refused, a stale file is replaced, removal leaves other processes' files alone.
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "app/pidfile.h"

struct tmp {
    char dir[64];
    char path[128];
};

static int tmp_setup(void **state)
{
    struct tmp *t = calloc(1, sizeof(*t));
    if (t == NULL) return -1;
    snprintf(t->dir, sizeof(t->dir), "/tmp/nc-pidfile-XXXXXX");
    if (mkdtemp(t->dir) == NULL) {
        free(t);
        return -1;
    }
    snprintf(t->path, sizeof(t->path), "%s/nc.pid", t->dir);
    *state = t;
    return 0;
}

static int tmp_teardown(void **state)
{
    struct tmp *t = *state;
    unlink(t->path);
    rmdir(t->dir);
    free(t);
    return 0;
}

static void read_file(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void assert_holds_own_pid(const char *path)
{
    char buf[64], want[64];
    read_file(path, buf, sizeof(buf));
    snprintf(want, sizeof(want), "%ld\n", (long)getpid());
    assert_string_equal(buf, want);
}

static void test_write_and_remove(void **state)
{
    struct tmp *t = *state;
    struct pidfile pf;
    pidfile_init(&pf);
    assert_int_equal(pidfile_write(&pf, t->path, NULL), 0);
    assert_holds_own_pid(t->path);
    pidfile_remove(&pf);
    assert_int_equal(access(t->path, F_OK), -1);
    assert_null(pf.path);
    pidfile_remove(&pf); /* idempotent */
}

static void test_live_holder_refused(void **state)
{
    struct tmp *t = *state;
    struct pidfile a, b;
    pidfile_init(&a);
    pidfile_init(&b);
    assert_int_equal(pidfile_write(&a, t->path, NULL), 0);
    pid_t holder = -1;
    /* flock locks belong to the open file, so a second open in this process conflicts */
    assert_int_equal(pidfile_write(&b, t->path, &holder), -EEXIST);
    assert_int_equal(holder, getpid());
    assert_null(b.path);
    pidfile_remove(&a);
    assert_int_equal(pidfile_write(&b, t->path, NULL), 0);
    pidfile_remove(&b);
}

static void test_stale_file_replaced(void **state)
{
    struct tmp *t = *state;
    write_file(t->path, "999999\n");
    struct pidfile pf;
    pidfile_init(&pf);
    assert_int_equal(pidfile_write(&pf, t->path, NULL), 0);
    assert_holds_own_pid(t->path);
    pidfile_remove(&pf);
    /* garbage and empty files are stale too */
    write_file(t->path, "");
    assert_int_equal(pidfile_write(&pf, t->path, NULL), 0);
    pidfile_remove(&pf);
}

static void test_remove_spares_replaced_file(void **state)
{
    struct tmp *t = *state;
    struct pidfile pf;
    pidfile_init(&pf);
    assert_int_equal(pidfile_write(&pf, t->path, NULL), 0);
    assert_int_equal(unlink(t->path), 0);
    write_file(t->path, "4242\n"); /* someone else's file now */
    pidfile_remove(&pf);
    char buf[64];
    read_file(t->path, buf, sizeof(buf));
    assert_string_equal(buf, "4242\n");
}

static void test_missing_directory(void **state)
{
    (void)state;
    struct pidfile pf;
    pidfile_init(&pf);
    assert_int_equal(pidfile_write(&pf, "/nonexistent-nc-dir/x.pid", NULL), -ENOENT);
    assert_null(pf.path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_write_and_remove, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(test_live_holder_refused, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(test_stale_file_replaced, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(test_remove_spares_replaced_file, tmp_setup, tmp_teardown),
        cmocka_unit_test_setup_teardown(test_missing_directory, tmp_setup, tmp_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
