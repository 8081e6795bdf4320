/*
 * conf_commands.c - the pool key `commands` (notes/declared-commands.md): a sequence of
 * "NAME FIRST LAST STEP [readonly|write]" strings declaring redis commands with redis's key
 * positions (COMMAND INFO's first key, last key, step), parsed into conf_pool.commands: the name
 * (letters, digits, '.', '_', '-', '|'; any case, kept lowercase; at most CONF_COMMAND_NAME_MAX
 * bytes), FIRST >= 1 (a command with no key cannot be routed), LAST >= FIRST or negative (counted
 * from the end, -1 the last argument), STEP >= 1, the mode (write when omitted: never sent to a
 * replica). A name twice in one list is an error; so is the key on a memcached pool. Whether a
 * name is one of the proxy's own commands is the protocol's to say (proto_ops.conf_check).
 *
 * Threads: whoever loads a config. Nothing is kept.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/conf_int.h"

#define CONF_COMMAND_FORM "\"NAME FIRST LAST STEP [readonly|write]\""
#define CONF_COMMAND_FIELDS_MAX 5
#define CONF_COMMAND_POS_MAX 63  /* key positions, and the arity they need, fit the command
                                  * table's int8_t */
#define CONF_COMMANDS_MAX 1024   /* entries of one pool (msg->cmd numbers them after the built-ins) */

/* The fields of one entry, split at blanks (NUL-terminated copies in buf). */
struct conf_command_fields {
    char buf[CONF_ERR_MAX];
    const char *f[CONF_COMMAND_FIELDS_MAX + 1];
    size_t n;
};

/* Splits text into fields; false when it has more than CONF_COMMAND_FIELDS_MAX or is too long. */
static bool conf_command_split(const char *text, struct conf_command_fields *out)
{
    size_t len = strlen(text);
    out->n = 0;
    if (len >= sizeof(out->buf)) return false;
    memcpy(out->buf, text, len + 1);
    for (char *save = NULL, *tok = strtok_r(out->buf, " \t", &save); tok != NULL;
         tok = strtok_r(NULL, " \t", &save)) {
        if (out->n == CONF_COMMAND_FIELDS_MAX) return false;
        out->f[out->n++] = tok;
    }
    return true;
}

/* The name into c->name, lowercase; else why not. */
static const char *conf_command_name(const char *s, struct conf_command *c)
{
    size_t len = strlen(s);
    if (len > CONF_COMMAND_NAME_MAX) return "too long for a command name";
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '.' || ch == '_' || ch == '-' || ch == '|';
        if (!ok) return "a command name is letters, digits, '.', '_', '-' and '|'";
        c->name[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + ('a' - 'A') : ch);
    }
    c->name[len] = '\0';
    return NULL;
}

/* One key position: an integer in [lo, CONF_COMMAND_POS_MAX]; else why not (into err). */
static bool conf_command_pos(const char *what, const char *s, int64_t lo, int *out, char *err, size_t errlen)
{
    int64_t v;
    int rc = conf_parse_int(s, strlen(s), 10, lo, CONF_COMMAND_POS_MAX, &v);
    if (rc == -EINVAL) snprintf(err, errlen, "%s '%s' is not an integer", what, s);
    else if (rc != 0) /* (0 is read, to be refused with its own reason: the range starts at 1) */
        snprintf(err, errlen, "%s %s is out of range (%lld to %d)", what, s, (long long)(lo == 0 ? 1 : lo),
                 CONF_COMMAND_POS_MAX);
    if (rc != 0) return false;
    *out = (int)v;
    return true;
}

/* The key positions and the mode of fields f[1..n) into c; false with why in err. */
static bool conf_command_spec(const struct conf_command_fields *fl, struct conf_command *c, char *err, size_t errlen)
{
    if (!conf_command_pos("FIRST", fl->f[1], 0, &c->first, err, errlen) ||
        !conf_command_pos("LAST", fl->f[2], -CONF_COMMAND_POS_MAX, &c->last, err, errlen) ||
        !conf_command_pos("STEP", fl->f[3], 0, &c->step, err, errlen))
        return false;
    if (c->first == 0) {
        snprintf(err, errlen, "FIRST 0: a command with no key cannot be routed (FIRST is 1 or more)");
        return false;
    }
    if (c->last >= 0 && c->last < c->first) {
        snprintf(err, errlen, "LAST %d is before FIRST %d (a negative LAST counts from the end)", c->last, c->first);
        return false;
    }
    if (c->step == 0) {
        snprintf(err, errlen, "STEP 0: the distance between keys is 1 or more");
        return false;
    }
    c->readonly = false;
    if (fl->n == CONF_COMMAND_FIELDS_MAX) {
        if (strcasecmp(fl->f[4], "readonly") == 0) c->readonly = true;
        else if (strcasecmp(fl->f[4], "write") != 0) {
            snprintf(err, errlen, "unknown mode '%s' (readonly or write)", fl->f[4]);
            return false;
        }
    }
    return true;
}

/* Parses one entry and appends it to p->commands (which has room for it). */
static int conf_command_add(const char *key, const struct conf_node *item, struct conf_pool *p,
                            struct conf_report *r)
{
    struct conf_command_fields fl;
    struct conf_command c = { .line = item->line };
    char err[CONF_ERR_MAX];
    if (item->kind != CONF_NODE_SCALAR) {
        conf_report(r, item->line, 0, p->name, key, "expected a command %s, got %s", CONF_COMMAND_FORM,
                    conf_node_what(item));
        return -EINVAL;
    }
    if (!conf_command_split(item->text, &fl) || fl.n < CONF_COMMAND_FIELDS_MAX - 1) {
        conf_report(r, item->line, 0, p->name, key, "'%s': expected %s", item->text, CONF_COMMAND_FORM);
        return -EINVAL;
    }
    const char *bad = conf_command_name(fl.f[0], &c);
    if (bad != NULL) {
        conf_report(r, item->line, 0, p->name, key, "'%s': %s", item->text, bad);
        return -EINVAL;
    }
    if (!conf_command_spec(&fl, &c, err, sizeof(err))) {
        conf_report(r, item->line, 0, p->name, key, "'%s': %s", item->text, err);
        return -EINVAL;
    }
    for (size_t i = 0; i < p->ncommands; i++) {
        if (strcmp(p->commands[i].name, c.name) == 0) {
            conf_report(r, item->line, 0, p->name, key, "'%s': command '%s' declared twice (first at line %d)",
                        item->text, c.name, p->commands[i].line);
            return -EINVAL;
        }
    }
    p->commands[p->ncommands++] = c;
    return 0;
}

int conf_commands_parse(const char *key, const struct conf_node *v, struct conf_pool *p, struct conf_report *r)
{
    int rc = 0;
    if (v->kind != CONF_NODE_SEQ) {
        conf_report(r, v->line, 0, p->name, key, "expected a sequence of %s, got %s", CONF_COMMAND_FORM,
                    conf_node_what(v));
        return -EINVAL;
    }
    if (v->nkids > CONF_COMMANDS_MAX) {
        conf_report(r, v->line, 0, p->name, key, "%zu commands: at most %d may be declared", v->nkids,
                    CONF_COMMANDS_MAX);
        return -EINVAL;
    }
    p->commands = calloc(v->nkids ? v->nkids : 1, sizeof(*p->commands)); /* set, even empty */
    if (p->commands == NULL) {
        conf_report(r, v->line, 0, p->name, key, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < v->nkids; i++) {
        int one = conf_command_add(key, v->kids[i], p, r);
        if (one != 0 && rc == 0) rc = one;
    }
    return rc;
}

unsigned conf_commands_check(const struct conf_pool *p, struct conf_report *r)
{
    unsigned before = r->nerrors;
    if (p->commands != NULL && !p->redis)
        conf_report(r, conf_pool_key_line(p, "commands"), 0, p->name, "commands",
                    "declared commands are redis commands: this pool is a memcached pool (set redis: true)");
    return r->nerrors - before;
}
