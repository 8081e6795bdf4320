/*
 * fuzz_check.h - FZ_CHECK for the libFuzzer targets: a failed check prints where and aborts, so
 * libFuzzer saves the input as a crash (checks are about the code under test, never the input).
 *
 * Threads: any (no state).
 */
#ifndef NC_FUZZ_CHECK_H
#define NC_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FZ_CHECK(cond)                                                      \
    do {                                                                    \
        if (!(cond)) fz_fail(__FILE__, __LINE__, #cond);                    \
    } while (0)

static inline _Noreturn void fz_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "fuzz check failed at %s:%d: %s\n", file, line, what);
    abort();
}

#endif
