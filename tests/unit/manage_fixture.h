/*
 * manage_fixture.h - what the manage command tests (test_manage, test_manage_hotkeys) share: a
 * stats fixture (stats_fixture.h, 3 workers), a manage context over it, a trusted session and an
 * output buffer, and running one command line.
 *
 * Threads: the test's only.
 */
#ifndef NC_TEST_MANAGE_FIXTURE_H
#define NC_TEST_MANAGE_FIXTURE_H

#include "manage/manage_cmd.h"
#include "stats_fixture.h"

struct mfix {
    struct sfix f;
    struct manage_ctx ctx;
    struct manage_session sess;   /* trusted unless a test says otherwise */
    struct textbuf out;
};

/* cmocka setup and teardown: *state is a struct mfix. */
int mfix_setup(void **state);
int mfix_teardown(void **state);

/* The session is no longer trusted, and auth (the caller's, until m->ctx.auth is NULL again)
 * trusts no network. */
void mfix_untrusted(struct mfix *m, struct manage_auth *auth);

/* Runs a line; fails the test when it does not return expect; returns the reply (free it). */
char *mfix_run(struct mfix *m, const char *line, enum manage_rc expect);

#endif
