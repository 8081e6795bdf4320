/*
 * reload_req.c - the manage port's reload hand-off to the master (see reload_req.h).
 *
 * Threads: stats thread (create, wait, put) and master (answer, put); the mutex guards the answer.
 */
#include "config.h"
#include "thread/reload_req.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RELOAD_WAIT_STEP_MS 100

struct reload_req {
    atomic_uint refs;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool done;
    char answer[RELOAD_ANSWER_MAX];
};

struct reload_req *reload_req_create(void)
{
    struct reload_req *r = calloc(1, sizeof(*r));
    if (r == NULL) return NULL;
    atomic_init(&r->refs, 2);
    pthread_mutex_init(&r->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cond, &attr);
    pthread_condattr_destroy(&attr);
    return r;
}

void reload_req_put(struct reload_req *r)
{
    if (r == NULL || atomic_fetch_sub(&r->refs, 1) != 1) return;
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

void reload_req_answer(struct reload_req *r, const char *text)
{
    pthread_mutex_lock(&r->lock);
    strncpy(r->answer, text, sizeof(r->answer) - 1);
    r->answer[sizeof(r->answer) - 1] = '\0';
    r->done = true;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

bool reload_req_wait(struct reload_req *r, unsigned timeout_ms, const atomic_bool *stop, char *out, size_t cap)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    unsigned waited = 0;
    bool got = false;
    pthread_mutex_lock(&r->lock);
    while (!r->done && waited < timeout_ms && !atomic_load(stop)) {
        struct timespec until = now;
        until.tv_nsec += (long)RELOAD_WAIT_STEP_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&r->cond, &r->lock, &until);
        now = until;
        waited += RELOAD_WAIT_STEP_MS;
    }
    if (r->done && cap > 0) {
        strncpy(out, r->answer, cap - 1);
        out[cap - 1] = '\0';
        got = true;
    }
    pthread_mutex_unlock(&r->lock);
    return got;
}
