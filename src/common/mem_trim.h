/*
 * mem_trim.h - giving freed heap pages back to the kernel (malloc_trim), safely from many threads.
 *
 * glibc sets its allocator up on the first malloc or malloc_trim, without a lock. When malloc is
 * someone else's (ASan, TSan, an LD_PRELOADed jemalloc or tcmalloc), nothing has called glibc's
 * malloc before the workers' first trims, and two workers trimming at once both set it up: the
 * process crashes (SEGV in mtrim). mem_trim_init() does that set-up once, before the threads.
 *
 * Threads: mem_trim_init: the master, before any other thread starts. mem_trim: any thread after.
 */
#ifndef NC_COMMON_MEM_TRIM_H
#define NC_COMMON_MEM_TRIM_H

/* Sets up glibc's allocator (idempotent); single-threaded. */
void mem_trim_init(void);

/* Returns free heap pages to the kernel. Any thread, after mem_trim_init. */
void mem_trim(void);

#endif
