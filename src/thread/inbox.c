/*
 * inbox.c - worker inboxes (see inbox.h).
 * Threads: push from any thread, take from the owning worker.
 */
#include "config.h"
#include "thread/inbox.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/feature.h"
#include "feature/features.h"
#include "core/runtime.h"
#include "manage/manage_auth.h"
#include "thread/reload_req.h"

int inbox_init(struct inbox *ib)
{
    memset(ib, 0, sizeof(*ib));
    ib->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (ib->efd < 0) return -errno;
    int rc = pthread_mutex_init(&ib->lock, NULL);
    if (rc != 0) {
        close(ib->efd);
        return -rc;
    }
    return 0;
}

/* What an undelivered item holds goes back. */
static void inbox_discard(void *arg, const struct inbox_item *it)
{
    (void)arg;
    if (it->type == INBOX_NEW_CLIENT && it->fd >= 0) close(it->fd);
    if (it->type == INBOX_RELOAD) runtime_put(it->rt);
    if (it->type == INBOX_RELOAD_REQ) reload_req_put(it->req); /* its asker gave up */
    if (it->type == INBOX_PASSWORD) {
        manage_password_wipe(it->password);
        free(it->password);
    }
}

static void inbox_discard_msg(void *arg, struct loop_msg *m)
{
    (void)arg;
    feature_loop_msg_free(&features_all, m); /* its asker is gone too (the loops stop before
                                              * their inboxes go) */
}

void inbox_deinit(struct inbox *ib)
{
    while (ib->head != NULL) inbox_drain(ib, inbox_discard, NULL); /* (nobody pushes any more) */
    inbox_drain_msgs(ib, inbox_discard_msg, NULL);
    close(ib->efd);
    pthread_mutex_destroy(&ib->lock);
}

static void inbox_wake(struct inbox *ib)
{
    uint64_t one = 1;
    ssize_t n;
    do {
        n = write(ib->efd, &one, sizeof(one));
    } while (n < 0 && errno == EINTR);
    /* EAGAIN means the counter is already non-zero: the owner will wake */
}

int inbox_push(struct inbox *ib, const struct inbox_item *item)
{
    struct inbox_item *it = malloc(sizeof(*it));
    if (it == NULL) return -ENOMEM;
    *it = *item;
    it->next = NULL;
    pthread_mutex_lock(&ib->lock);
    if (ib->tail) ib->tail->next = it;
    else ib->head = it;
    ib->tail = it;
    pthread_mutex_unlock(&ib->lock);
    inbox_wake(ib);
    return 0;
}

void inbox_post(struct inbox *ib, struct loop_msg *m)
{
    m->next = NULL;
    pthread_mutex_lock(&ib->lock);
    if (ib->mtail) ib->mtail->next = m;
    else ib->mhead = m;
    ib->mtail = m;
    pthread_mutex_unlock(&ib->lock);
    inbox_wake(ib);
}

void inbox_drain_msgs(struct inbox *ib, inbox_msg_fn fn, void *arg)
{
    pthread_mutex_lock(&ib->lock);
    struct loop_msg *m = ib->mhead;
    ib->mhead = ib->mtail = NULL;
    pthread_mutex_unlock(&ib->lock);
    while (m != NULL) {
        struct loop_msg *next = m->next;
        fn(arg, m);
        m = next;
    }
}

void inbox_drain(struct inbox *ib, inbox_fn fn, void *arg)
{
    uint64_t cnt;
    ssize_t n;
    do {
        n = read(ib->efd, &cnt, sizeof(cnt));
    } while (n < 0 && errno == EINTR);
    /* at most INBOX_DRAIN_MAX items a pass: a storm of new clients waits for the next pass rather
     * than starving the requests of the clients already served (the wake brings it back at once) */
    pthread_mutex_lock(&ib->lock);
    struct inbox_item *it = ib->head, *last = it;
    for (uint32_t i = 1; last != NULL && last->next != NULL && i < INBOX_DRAIN_MAX; i++) last = last->next;
    ib->head = last != NULL ? last->next : NULL;
    if (ib->head == NULL) ib->tail = NULL;
    if (last != NULL) last->next = NULL;
    bool more = ib->head != NULL;
    pthread_mutex_unlock(&ib->lock);
    if (more) inbox_wake(ib);
    while (it != NULL) {
        struct inbox_item *next = it->next;
        fn(arg, it);
        free(it);
        it = next;
    }
}
