/*
 * test_mem_trim.c - unit test of mem_trim: after mem_trim_init, threads trimming all at once do
 * not crash. The race it guards against (glibc's allocator set up by two first trims at once)
 * exists only when malloc is not glibc's, so this test can fail only in the ASan and TSan builds
 * (scripts/test.sh runs the unit tests there too): without mem_trim_init, about one child in
 * twenty crashes there, and the test runs a hundred.
 *
 * Threads: the test's; each child process runs TRIM_THREADS threads.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/mem_trim.h"

#define TRIM_THREADS 8
#define TRIM_CHILDREN 100

static pthread_barrier_t start;

static void *trim_at_once(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    mem_trim();
    return NULL;
}

/* A fresh process (glibc's allocator not set up when malloc is a sanitizer's) as the proxy: init
 * first, then every thread's first trim at the same moment. Exits 0 unless something crashed. */
static void child(void)
{
    pthread_t t[TRIM_THREADS];
    mem_trim_init();
    pthread_barrier_init(&start, NULL, TRIM_THREADS);
    for (int i = 0; i < TRIM_THREADS; i++)
        if (pthread_create(&t[i], NULL, trim_at_once, NULL) != 0) _exit(3);
    for (int i = 0; i < TRIM_THREADS; i++) pthread_join(t[i], NULL);
    _exit(0);
}

static void test_concurrent_first_trims_after_init(void **state)
{
    (void)state;
    int crashed = 0;
    for (int i = 0; i < TRIM_CHILDREN; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) child();
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) crashed++;
    }
    assert_int_equal(crashed, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_first_trims_after_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
