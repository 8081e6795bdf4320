/*
 * mem_trim.c - see mem_trim.h.
 *
 * Threads: mem_trim_init: the master, before any other thread starts. mem_trim: any thread after.
 */
#include "config.h"
#include "common/mem_trim.h"

#include <malloc.h>

void mem_trim_init(void)
{
    malloc_trim(0); /* glibc's set-up runs here, single-threaded */
}

void mem_trim(void)
{
    malloc_trim(0);
}
