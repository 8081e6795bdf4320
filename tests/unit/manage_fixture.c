/*
 * manage_fixture.c - the manage command tests' fixture (see manage_fixture.h).
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "manage_fixture.h"

int mfix_setup(void **state)
{
    struct mfix *m = calloc(1, sizeof(*m));
    assert_non_null(m);
    sfix_init(&m->f, sfix_yaml, 3);
    assert_int_equal(manage_ctx_init(&m->ctx, &m->f.src), 0);
    textbuf_init(&m->out, 1 << 20);
    m->sess.trusted = true;
    *state = m;
    return 0;
}

int mfix_teardown(void **state)
{
    struct mfix *m = *state;
    textbuf_deinit(&m->out);
    manage_ctx_deinit(&m->ctx);
    sfix_deinit(&m->f);
    free(m);
    return 0;
}

void mfix_untrusted(struct mfix *m, struct manage_auth *auth)
{
    memset(auth, 0, sizeof(*auth));
    char err[256];
    assert_int_equal(manage_auth_set_trust(auth, "none", err, sizeof(err)), 0);
    m->ctx.auth = auth;
    m->sess.trusted = false;
}

char *mfix_run(struct mfix *m, const char *line, enum manage_rc expect)
{
    textbuf_reset(&m->out);
    enum manage_rc rc = manage_exec(&m->ctx, &m->sess, line, strlen(line), &m->out);
    char *s = sfix_cstr(&m->out);
    if (rc != expect) fail_msg("'%s': rc %d, reply '%s'", line, (int)rc, s);
    return s;
}
