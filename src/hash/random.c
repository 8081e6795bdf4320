/*
 * random.c - twemproxy 0.5.0's random distribution: every live server once (weights are
 * ignored), picked uniformly; the key hash is not used.
 *
 * Threads: random_build on one thread; random_dispatch on any number at once. Each thread draws
 * from its own generator (thread-local state, seeded on first use), so no lock and no shared
 * write. This thread-local state is the only mutable static state in src/hash.
 */
#include "config.h"

#include <stdint.h>
#include <sys/random.h>
#include <time.h>

#include "hash/dist_impl.h"

static _Thread_local uint64_t random_state;
static _Thread_local bool random_seeded;

static void random_seed(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != (ssize_t)sizeof(seed)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)&random_state;
    }
    random_state = seed;
    random_seeded = true;
}

/* splitmix64: a full-period 64-bit generator, good enough to spread load. */
static uint64_t random_next(void)
{
    if (!random_seeded)
        random_seed();
    uint64_t z = (random_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

struct dist *random_build(const struct dist_server *servers, size_t n, const bool *live)
{
    (void)servers;
    size_t nlive = 0;
    for (size_t i = 0; i < n; i++)
        nlive += dist_is_live(live, i);

    struct dist *d = dist_alloc(DIST_RANDOM, nlive);
    if (d == NULL)
        return NULL;
    struct dist_point *next = d->points;
    for (size_t i = 0; i < n; i++) {
        if (dist_is_live(live, i)) {
            next->value = 0;
            next->index = (uint32_t)i;
            next++;
        }
    }
    return d;
}

uint32_t random_dispatch(const struct dist *d)
{
    /* the high 32 random bits scaled to [0, npoints) */
    uint64_t r = random_next() >> 32;
    return d->points[(r * d->npoints) >> 32].index;
}
