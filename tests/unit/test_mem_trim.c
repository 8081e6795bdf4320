/*
 * test_mem_trim.c - unit test of mem_trim: after mem_trim_init, threads trimming all at once do
 * not crash. The race it guards against (glibc's allocator set up by two first trims at once)
 * exists only when malloc is not glibc's: each trial is a fresh process (this program run with
 * --child) whose malloc is jemalloc (LD_PRELOAD, Debian's libjemalloc2, a dependency of
 * redis-tools) or, in the ASan and TSan builds, the sanitizer's. Without mem_trim_init about one
 * trial in ten crashes; the test runs a hundred. With neither allocator there, it cannot fail,
 * so it is skipped.
 *
 * Threads: the test's; each child process runs TRIM_THREADS threads.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/mem_trim.h"

#define TRIM_THREADS 8
#define TRIM_CHILDREN 100

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TRIM_SANITIZED 1 /* malloc is the sanitizer's, and it must stay first: no LD_PRELOAD */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TRIM_SANITIZED 1
#endif
#endif

static pthread_barrier_t start;

static void *trim_at_once(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    mem_trim();
    return NULL;
}

/* As the proxy does: init first, then every thread's first trim at the same moment. */
static int child_main(void)
{
    pthread_t t[TRIM_THREADS];
    mem_trim_init();
    pthread_barrier_init(&start, NULL, TRIM_THREADS);
    for (int i = 0; i < TRIM_THREADS; i++)
        if (pthread_create(&t[i], NULL, trim_at_once, NULL) != 0) return 3;
    for (int i = 0; i < TRIM_THREADS; i++) pthread_join(t[i], NULL);
    return 0;
}

/* The malloc to preload into the children, or NULL (a sanitized build, or no jemalloc). */
static const char *child_preload(void)
{
#ifdef TRIM_SANITIZED
    return NULL;
#else
    static const char *const jemalloc_paths[] = {
        "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
        "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2",
        "/usr/lib/libjemalloc.so.2",
    };
    for (size_t i = 0; i < sizeof(jemalloc_paths) / sizeof(jemalloc_paths[0]); i++)
        if (access(jemalloc_paths[i], R_OK) == 0) return jemalloc_paths[i];
    return NULL;
#endif
}

static void test_concurrent_first_trims_after_init(void **state)
{
    (void)state;
    const char *preload = child_preload();
#ifndef TRIM_SANITIZED
    if (preload == NULL) {
        /* glibc's malloc is already set up in the children: they could not fail, a pass would
         * say nothing */
        print_message("no jemalloc found (Debian: libjemalloc2): skipped\n");
        skip();
    }
#endif
    int crashed = 0;
    for (int i = 0; i < TRIM_CHILDREN; i++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (preload != NULL) setenv("LD_PRELOAD", preload, 1);
            execl("/proc/self/exe", "test_mem_trim", "--child", (char *)NULL);
            _exit(4);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) crashed++;
    }
    assert_int_equal(crashed, 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child") == 0) return child_main();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_first_trims_after_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
