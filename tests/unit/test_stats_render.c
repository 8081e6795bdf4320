/*
 * test_stats_render.c - unit tests of aggregation and rendering: worker blocks summed into a
 * snapshot (counters and gauges add up, timestamps take the latest, one worker alone), the JSON
 * document (parses, twemproxy's key order and shape as agents read it, escaping of pool and server
 * names), the latency document (its shape, histogram objects), the Prometheus text (line grammar,
 * families whole, _total counters, cumulative le buckets, label escaping, agreement with the
 * JSON), the buffer's escapers and limit, and `-D` describing every key both documents have.
 *
 * Threads: the test's only.
 */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "json_check.h"
#include "manage/stats_json.h"
#include "manage/stats_prom.h"
#include "proto/redis_cmd.h"
#include "stats_fixture.h"

#define WEIRD_POOL "we\"ird\\pool\tname \xc3\xa9"

/* Counts in two workers: alpha s2 and the weird pool. */
static void fill(struct sfix *f)
{
    struct stats_worker *w0 = f->blocks[0], *w1 = f->blocks[1];
    struct stats_pool_block *a0 = sfix_pb(f, 0, "alpha"), *a1 = sfix_pb(f, 1, "alpha");
    struct stats_server_block *s0 = sfix_sb(f, 0, "alpha", 1), *s1 = sfix_sb(f, 1, "alpha", 1);
    stats_ctr_add(&w0->total_connections, 5);
    stats_ctr_add(&w1->total_connections, 7);
    stats_ctr_add(&w0->curr_connections, 2);
    stats_ctr_add(&w1->curr_connections, 1);
    STATS_POOL_ADD(a0, client_eof, 3);
    STATS_POOL_ADD(a1, client_eof, 4);
    STATS_POOL_ADD(a0, fragments, 6);
    STATS_POOL_ADD(a1, client_connections, 1);
    /* refused commands (alpha is redis): MONITOR on both workers, a garbage name on one */
    int sub = redis_refused_lookup((const uint8_t *)"monitor", 7);
    assert_true(sub >= 0);
    stats_ctr_add(&a0->refused[sub], 2);
    stats_ctr_add(&a1->refused[sub], 3);
    stats_ctr_add(&a0->refused[REDIS_NREFUSED], 1);
    STATS_POOL_ADD(a0, refused_commands, 3);
    STATS_POOL_ADD(a1, refused_commands, 3);
    STATS_SERVER_ADD(s0, requests, 10);
    STATS_SERVER_ADD(s1, requests, 32);
    STATS_SERVER_ADD(s0, request_bytes, 1000);
    STATS_SERVER_ADD(s1, request_bytes, 234);
    STATS_SERVER_ADD(s0, in_queue, 2);
    STATS_SERVER_ADD(s1, in_queue, -3); /* a gauge renders signed */
    STATS_SERVER_ADD(s0, server_ejected_at, 1700000000000000);
    STATS_SERVER_ADD(s1, server_ejected_at, 1700000000500000); /* latest wins */
    STATS_SERVER_ADD(sfix_sb(f, 1, WEIRD_POOL, 1), responses, 9);
    stats_hist_record(&a0->request_latency, 500);
    stats_hist_record(&a0->request_latency, 1500);
    stats_hist_record(&a1->request_latency, 4000000);
    stats_hist_record(&s1->server_latency, 20000);
}

static struct jv *render_with(struct sfix *f, long worker,
                              void (*render)(struct stats_buf *, const struct stats_snapshot *))
{
    struct stats_snapshot *s = stats_snapshot_create(&f->src);
    assert_non_null(s);
    stats_snapshot_take(s, worker);
    struct stats_buf b;
    stats_buf_init(&b, 1 << 20);
    render(&b, s);
    assert_false(stats_buf_failed(&b));
    struct jv *v = jv_parse(b.data, b.len);
    if (v == NULL) fail_msg("not JSON: %.*s", (int)b.len, b.data);
    stats_buf_deinit(&b);
    stats_snapshot_destroy(s);
    return v;
}

/* the `status` document (all workers, or one) */
static struct jv *render_json(struct sfix *f, long worker)
{
    return render_with(f, worker, stats_json_render);
}

/* the `status latency` document */
static struct jv *render_latency(struct sfix *f, long worker)
{
    return render_with(f, worker, stats_json_render_latency);
}

static int64_t num(const struct jv *v)
{
    assert_non_null(v);
    assert_int_equal(v->type, JV_NUMBER);
    assert_true(v->is_int);
    return v->i;
}

static void check_keys(const struct jv *obj, size_t first, const struct stats_field_desc *d, size_t n)
{
    assert_true(obj->n >= first + n);
    for (size_t i = 0; i < n; i++) assert_string_equal(obj->keys[first + i], d[i].name);
}

static void test_json_shape_and_sums(void **state)
{
    (void)state;
    struct sfix f;
    sfix_init(&f, sfix_yaml, 2);
    fill(&f);
    struct jv *v = render_json(&f, -1);
    /* header, in twemproxy's order, then the pools in config order */
    check_keys(v, 0, stats_header_desc, STATS_HEADER_NFIELD);
    assert_int_equal(v->n, STATS_HEADER_NFIELD + 2);
    assert_string_equal(v->keys[STATS_HEADER_NFIELD], "alpha");
    assert_string_equal(v->keys[STATS_HEADER_NFIELD + 1], WEIRD_POOL); /* escaped and back */
    assert_string_equal(jv_get(v, "service")->s, "nutcrackers");
    assert_string_equal(jv_get(v, "source")->s, "test-host");
    assert_string_equal(jv_get(v, "version")->s, PACKAGE_VERSION);
    assert_int_equal(num(jv_get(v, "total_connections")), 12);
    assert_int_equal(num(jv_get(v, "curr_connections")), 3);

    const struct jv *alpha = jv_get(v, "alpha");
    check_keys(alpha, 0, stats_pool_desc, STATS_POOL_NFIELD);
    /* the refused commands that are not zero: flat numbers after the fields, "other" last */
    assert_string_equal(alpha->keys[STATS_POOL_NFIELD], "refused_cmd_monitor");
    assert_string_equal(alpha->keys[STATS_POOL_NFIELD + 1], "refused_cmd_other");
    assert_int_equal(num(jv_get(alpha, "refused_cmd_monitor")), 5);
    assert_int_equal(num(jv_get(alpha, "refused_cmd_other")), 1);
    assert_int_equal(num(jv_get(alpha, "refused_commands")), 6);
    assert_string_equal(alpha->keys[STATS_POOL_NFIELD + 2], "s1");
    assert_string_equal(alpha->keys[STATS_POOL_NFIELD + 3], "s2");
    assert_string_equal(alpha->keys[STATS_POOL_NFIELD + 4], "s3");
    assert_int_equal(alpha->n, STATS_POOL_NFIELD + 5); /* nothing after the servers */
    assert_int_equal(num(jv_get(alpha, "client_eof")), 7);
    assert_int_equal(num(jv_get(alpha, "fragments")), 6);
    assert_int_equal(num(jv_get(alpha, "client_connections")), 1);

    const struct jv *s2 = jv_get(alpha, "s2");
    check_keys(s2, 0, stats_server_desc, STATS_SERVER_NFIELD);
    assert_int_equal(s2->n, STATS_SERVER_NFIELD);
    assert_int_equal(num(jv_get(s2, "requests")), 42);
    assert_int_equal(num(jv_get(s2, "request_bytes")), 1234);
    assert_int_equal(num(jv_get(s2, "in_queue")), -1);
    assert_int_equal(num(jv_get(s2, "server_ejected_at")), 1700000000500000);
    assert_int_equal(num(jv_path(v, "alpha", "s1", "requests", NULL)), 0);

    const struct jv *weird = jv_get(v, WEIRD_POOL);
    assert_non_null(weird);
    assert_string_equal(weird->keys[STATS_POOL_NFIELD], "127.0.0.1:11211:1"); /* unnamed: pname */
    assert_string_equal(weird->keys[STATS_POOL_NFIELD + 1], "odd\"name");
    assert_int_equal(num(jv_path(weird, "odd\"name", "responses", NULL)), 9);
    jv_free(v);
    sfix_deinit(&f);
}

/*
 * A document read the way monitoring agents written for twemproxy read it: every object-valued
 * top-level member is a pool; in a pool, every object-valued member is a server whose requests,
 * responses, ... are summed, every other member a pool counter. So only the pools may be objects
 * at the top level, and a pool holds its counters and its servers, nothing else.
 */
static void check_agent_view(const struct jv *doc, size_t npools)
{
    size_t pools = 0;
    for (size_t i = 0; i < doc->n; i++) {
        const struct jv *pool = doc->vals[i];
        if (pool->type != JV_OBJECT) { /* a top-level field: "worker" or a header field */
            bool known = strcmp(doc->keys[i], "worker") == 0;
            for (size_t k = 0; k < STATS_HEADER_NFIELD; k++)
                known = known || strcmp(doc->keys[i], stats_header_desc[k].name) == 0;
            if (!known) fail_msg("top-level '%s' is neither a known field nor a pool", doc->keys[i]);
            continue;
        }
        pools++;
        size_t counters = 0;
        for (size_t k = 0; k < pool->n; k++) {
            const struct jv *m = pool->vals[k];
            if (m->type != JV_OBJECT) {
                assert_int_equal(m->type, JV_NUMBER);
                if (counters == STATS_POOL_NFIELD) { /* past the fields: a refused command's count */
                    assert_true(strncmp(pool->keys[k], STATS_REFUSED_PREFIX, strlen(STATS_REFUSED_PREFIX)) == 0);
                    continue;
                }
                assert_string_equal(pool->keys[k], stats_pool_desc[counters].name);
                counters++;
                continue;
            }
            /* a server: every twemproxy field, in order, numbers only, and nothing else */
            if (m->n != STATS_SERVER_NFIELD)
                fail_msg("'%s' in pool '%s' is not a server: %zu members", pool->keys[k], doc->keys[i], m->n);
            for (size_t j = 0; j < m->n; j++) {
                assert_string_equal(m->keys[j], stats_server_desc[j].name);
                if (m->vals[j]->type != JV_NUMBER || !m->vals[j]->is_int)
                    fail_msg("%s.%s.%s is not a number", doc->keys[i], pool->keys[k], m->keys[j]);
            }
        }
        assert_int_equal(counters, STATS_POOL_NFIELD);
    }
    assert_int_equal(pools, npools);
}

static void test_json_is_what_twemproxy_agents_read(void **state)
{
    (void)state;
    struct sfix f;
    sfix_init(&f, sfix_yaml, 2);
    fill(&f);
    for (long worker = -1; worker < 2; worker++) { /* summed, and each worker's (status workers) */
        struct jv *v = render_json(&f, worker);
        check_agent_view(v, 2);
        jv_free(v);
    }
    sfix_deinit(&f);
}

static void test_json_histograms(void **state)
{
    (void)state;
    struct sfix f;
    sfix_init(&f, sfix_yaml, 2);
    fill(&f);
    struct jv *v = render_latency(&f, -1);
    /* the header fields, then one member holding every pool's histograms */
    check_keys(v, 0, stats_header_desc, STATS_HEADER_NFIELD);
    assert_int_equal(v->n, STATS_HEADER_NFIELD + 1);
    assert_string_equal(v->keys[STATS_HEADER_NFIELD], STATS_LATENCY_KEY);
    assert_string_equal(jv_get(v, "service")->s, "nutcrackers");
    assert_int_equal(num(jv_get(v, "total_connections")), 12);
    const struct jv *lat = jv_get(v, STATS_LATENCY_KEY);
    assert_int_equal(lat->n, 2);
    assert_string_equal(lat->keys[0], "alpha");
    assert_string_equal(lat->keys[1], WEIRD_POOL);
    const struct jv *alpha = jv_get(lat, "alpha");
    check_keys(alpha, 0, stats_pool_hist_desc, STATS_POOL_NHIST);
    assert_int_equal(alpha->n, STATS_POOL_NHIST + 1);
    assert_string_equal(alpha->keys[STATS_POOL_NHIST], STATS_LATENCY_SERVERS_KEY);
    const struct jv *servers = jv_get(alpha, STATS_LATENCY_SERVERS_KEY);
    assert_int_equal(servers->n, 3);
    assert_string_equal(servers->keys[0], "s1");
    assert_string_equal(servers->keys[2], "s3");
    for (size_t k = 0; k < servers->n; k++)
        check_keys(servers->vals[k], 0, stats_server_hist_desc, STATS_SERVER_NHIST);
    const struct jv *weird = jv_path(lat, WEIRD_POOL, STATS_LATENCY_SERVERS_KEY, NULL);
    assert_string_equal(weird->keys[0], "127.0.0.1:11211:1");
    assert_string_equal(weird->keys[1], "odd\"name");

    const struct jv *h = jv_get(alpha, "request_latency");
    assert_non_null(h);
    check_keys(h, 0, stats_hist_field_desc, STATS_HIST_NFIELD);
    assert_int_equal(num(jv_get(h, "count")), 3);
    assert_int_equal(num(jv_get(h, "sum")), 500 + 1500 + 4000000);
    assert_int_equal(num(jv_get(h, "max")), 4000000);
    int64_t p50 = num(jv_get(h, "p50"));
    assert_true(p50 >= 1500 && p50 <= 1500 + 1500 / 8);
    assert_int_equal(num(jv_get(h, "p999")), 4000000);
    const struct jv *b = jv_get(h, "buckets");
    static const char *keys[] = { "1", "10", "20", "50", "100", "200", "500", "1000", "2000", "3000", "+inf" };
    assert_int_equal(b->n, 11);
    for (size_t i = 0; i < 11; i++) assert_string_equal(b->keys[i], keys[i]);
    assert_int_equal(num(jv_get(b, "1")), 1);
    assert_int_equal(num(jv_get(b, "10")), 1);
    assert_int_equal(num(jv_get(b, "+inf")), 1);
    const struct jv *sl = jv_path(servers, "s2", "server_latency", NULL);
    assert_int_equal(num(jv_get(sl, "count")), 1);
    assert_int_equal(num(jv_path(sl, "buckets", "20", NULL)), 1); /* 20 ms is <= 20 */
    assert_int_equal(num(jv_path(servers, "s1", "server_latency", "count", NULL)), 0);
    jv_free(v);
    sfix_deinit(&f);
}

static void test_json_one_worker(void **state)
{
    (void)state;
    struct sfix f;
    sfix_init(&f, sfix_yaml, 2);
    fill(&f);
    struct jv *v = render_json(&f, 1);
    assert_string_equal(v->keys[0], "worker");
    assert_int_equal(num(jv_get(v, "worker")), 1);
    assert_string_equal(v->keys[1], "service");
    assert_int_equal(num(jv_get(v, "total_connections")), 7);
    assert_int_equal(num(jv_path(v, "alpha", "s2", "requests", NULL)), 32);
    assert_int_equal(num(jv_path(v, "alpha", "s2", "in_queue", NULL)), -3);
    jv_free(v);
    v = render_latency(&f, 1);
    assert_string_equal(v->keys[0], "worker");
    assert_int_equal(num(jv_path(v, STATS_LATENCY_KEY, "alpha", "request_latency", "count", NULL)), 1);
    assert_int_equal(num(jv_path(v, STATS_LATENCY_KEY, "alpha", STATS_LATENCY_SERVERS_KEY, "s2",
                                 "server_latency", "count", NULL)), 1);
    jv_free(v);
    sfix_deinit(&f);
}

static void test_buf_escapes_and_limit(void **state)
{
    (void)state;
    struct stats_buf b;
    stats_buf_init(&b, 1 << 16);
    const char in[] = "a\"b\\c\n\x01\x7f\xc3\xa9\xff\xe2\x82\xac\xed\xa0\x80z";
    stats_buf_add_json_str(&b, in, sizeof(in) - 1);
    char *s = sfix_cstr(&b);
    assert_string_equal(s, "\"a\\\"b\\\\c\\u000a\\u0001\\u007f\xc3\xa9\\ufffd\xe2\x82\xac\\ufffd\\ufffd\\ufffdz\"");
    struct jv *v = jv_parse(b.data, b.len);
    assert_non_null(v);
    jv_free(v);
    free(s);

    stats_buf_reset(&b);
    const uint8_t raw[] = { 'k', ' ', '"', '\\', 0, 0xff, '\r' };
    stats_buf_add_quoted(&b, raw, sizeof(raw));
    s = sfix_cstr(&b);
    assert_string_equal(s, "k \\\"\\\\\\x00\\xff\\x0d");
    free(s);

    stats_buf_reset(&b);
    stats_buf_add_u64(&b, UINT64_MAX);
    stats_buf_addc(&b, ' ');
    stats_buf_add_i64(&b, INT64_MIN);
    s = sfix_cstr(&b);
    assert_string_equal(s, "18446744073709551615 -9223372036854775808");
    free(s);
    stats_buf_deinit(&b);

    stats_buf_init(&b, 10);
    stats_buf_adds(&b, "0123456789");
    assert_false(stats_buf_failed(&b));
    stats_buf_addc(&b, 'x');
    assert_true(stats_buf_failed(&b));
    assert_int_equal(b.len, 10);
    stats_buf_addf(&b, "%d", 1);
    assert_int_equal(b.len, 10);
    stats_buf_reset(&b);
    assert_false(stats_buf_failed(&b));
    stats_buf_addf(&b, "%s", "a long string beyond the limit");
    assert_true(stats_buf_failed(&b));
    stats_buf_deinit(&b);
}

static char *render_prom(struct sfix *f)
{
    struct stats_snapshot *s = stats_snapshot_create(&f->src);
    assert_non_null(s);
    stats_snapshot_take(s, -1);
    struct stats_buf b;
    stats_buf_init(&b, 1 << 20);
    stats_prom_render(&b, s);
    assert_false(stats_buf_failed(&b));
    char *text = sfix_cstr(&b);
    stats_buf_deinit(&b);
    stats_snapshot_destroy(s);
    return text;
}

/* the value of the sample line that starts with prefix (name and labels), or -1 */
static double prom_value(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);
    for (const char *p = text; p != NULL && *p != '\0';) {
        if (strncmp(p, prefix, n) == 0 && p[n] == ' ') return strtod(p + n + 1, NULL);
        p = strchr(p, '\n');
        if (p != NULL) p++;
    }
    return -1;
}

static bool prom_name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
           (!first && c >= '0' && c <= '9');
}

/* Checks the grammar of every line and that each family's samples follow its TYPE, contiguously. */
static void prom_check_grammar(char *text)
{
    char family[256] = "";
    char seen[64][256];
    size_t nseen = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "# HELP ", 7) == 0) continue;
        if (strncmp(line, "# TYPE ", 7) == 0) {
            char name[256], type[32];
            assert_int_equal(sscanf(line + 7, "%255s %31s", name, type), 2);
            for (size_t i = 0; i < nseen; i++) assert_string_not_equal(seen[i], name); /* whole families */
            assert_true(nseen < 64);
            strcpy(seen[nseen++], name);
            strcpy(family, name);
            assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0 ||
                        strcmp(type, "histogram") == 0);
            if (strcmp(type, "counter") == 0) assert_non_null(strstr(name, "_total"));
            continue;
        }
        const char *p = line;
        assert_true(prom_name_char(*p, true));
        while (prom_name_char(*p, false)) p++;
        size_t nlen = (size_t)(p - line);
        assert_true(nlen >= strlen(family) && strncmp(line, family, strlen(family)) == 0);
        if (*p == '{') {
            p++;
            while (*p != '}') {
                assert_true(prom_name_char(*p, true));
                while (prom_name_char(*p, false)) p++;
                assert_true(p[0] == '=' && p[1] == '"');
                p += 2;
                while (*p != '"') {
                    assert_true(*p != '\0' && *p != '\n');
                    if (*p == '\\') {
                        assert_true(p[1] == '\\' || p[1] == '"' || p[1] == 'n');
                        p++;
                    }
                    p++;
                }
                p++;
                if (*p == ',') p++;
            }
            p++;
        }
        assert_true(*p == ' ');
        char *end;
        strtod(p + 1, &end);
        assert_true(end != p + 1 && *end == '\0');
    }
}

static void test_prometheus(void **state)
{
    (void)state;
    struct sfix f;
    sfix_init(&f, sfix_yaml, 2);
    fill(&f);
    char *text = render_prom(&f);
    assert_non_null(strstr(text, "nutcrackers_info{service=\"nutcrackers\",source=\"test-host\",version=\"" PACKAGE_VERSION "\"} 1\n"));
    assert_non_null(strstr(text, "# TYPE nutcrackers_pool_client_eof_total counter\n"));
    assert_non_null(strstr(text, "# TYPE nutcrackers_server_in_queue gauge\n"));
    assert_non_null(strstr(text, "# TYPE nutcrackers_pool_request_latency_seconds histogram\n"));
    assert_true(prom_value(text, "nutcrackers_client_connections_accepted_total") == 12);
    assert_true(prom_value(text, "nutcrackers_client_connections") == 3);
    assert_non_null(strstr(text, "# TYPE nutcrackers_uptime_seconds gauge\n"));
    assert_non_null(strstr(text, "# TYPE nutcrackers_time_seconds gauge\n"));
    assert_non_null(strstr(text, "# TYPE nutcrackers_server_eof_total counter\n"));
    assert_non_null(strstr(text, "# TYPE nutcrackers_server_connections gauge\n"));
    assert_null(strstr(text, "_server_server_"));
    assert_null(strstr(text, "nutcrackers_uptime_total"));
    assert_true(prom_value(text, "nutcrackers_pool_client_eof_total{pool=\"alpha\"}") == 7);
    assert_true(prom_value(text, "nutcrackers_server_requests_total{pool=\"alpha\",server=\"s2\"}") == 42);
    assert_non_null(strstr(text, "# TYPE nutcrackers_refused_commands_total counter\n"));
    assert_true(prom_value(text, "nutcrackers_refused_commands_total{pool=\"alpha\",command=\"monitor\"}") == 5);
    assert_true(prom_value(text, "nutcrackers_refused_commands_total{pool=\"alpha\",command=\"other\"}") == 1);
    assert_null(strstr(text, "command=\"blpop\"")); /* zero: no sample */
    assert_true(prom_value(text, "nutcrackers_server_in_queue{pool=\"alpha\",server=\"s2\"}") == -1);
    assert_true(prom_value(text, "nutcrackers_server_ejected_at_seconds{pool=\"alpha\",server=\"s2\"}") ==
                1700000000.5);
    assert_non_null(strstr(text, "# TYPE nutcrackers_server_ejected_at_seconds gauge\n"));
    /* names escaped as label values */
    assert_true(prom_value(text, "nutcrackers_server_responses_total{pool=\"we\\\"ird\\\\pool\tname \xc3\xa9\","
                                 "server=\"odd\\\"name\"}") == 9);
    /* cumulative buckets in seconds, +Inf == _count, _sum in seconds */
    const char *h = "nutcrackers_pool_request_latency_seconds";
    char key[256];
    /* 500 us, 1500 us, 4 s */
    static const char *le[] = { "0.00005", "0.0001", "0.0002", "0.0005", "0.001", "0.002", "0.005", "0.01",
                                "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "3", "5", "10", "+Inf" };
    static const double cum[] = { 0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3 };
    for (size_t i = 0; i < sizeof(le) / sizeof(le[0]); i++) {
        snprintf(key, sizeof(key), "%s_bucket{pool=\"alpha\",le=\"%s\"}", h, le[i]);
        assert_true(prom_value(text, key) == cum[i]);
    }
    snprintf(key, sizeof(key), "%s_count{pool=\"alpha\"}", h);
    assert_true(prom_value(text, key) == 3);
    assert_non_null(strstr(text, "nutcrackers_pool_request_latency_seconds_sum{pool=\"alpha\"} 4.002\n"));
    assert_true(prom_value(text, "nutcrackers_server_latency_seconds_bucket{pool=\"alpha\",server=\"s2\","
                                 "le=\"0.01\"}") == 0);
    assert_true(prom_value(text, "nutcrackers_server_latency_seconds_bucket{pool=\"alpha\",server=\"s2\","
                                 "le=\"0.02\"}") == 1);
    prom_check_grammar(text);
    free(text);
    sfix_deinit(&f);
}

/* the -D line of key: "\n  <key> " (type unchecked) or "\n  <key padded>histogram" */
static void check_described(const char *out, const char *key, bool histogram)
{
    char needle[128];
    if (histogram) snprintf(needle, sizeof(needle), "\n  %-20shistogram", key);
    else snprintf(needle, sizeof(needle), "\n  %s ", key);
    if (strstr(out, needle) == NULL) fail_msg("-D does not describe '%s'", key);
}

/* every key the JSON documents have is in the -D listing, histograms with their type */
static void test_describe_covers_the_json(void **state)
{
    (void)state;
    char *out = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&out, &len);
    assert_non_null(mf);
    stats_describe(mf);
    fclose(mf);
    struct sfix f;
    sfix_init(&f, sfix_yaml, 2);
    fill(&f);
    struct jv *v = render_json(&f, -1);
    size_t checked = 0;
    for (size_t i = 0; i < v->n; i++) {
        const struct jv *pool = v->vals[i];
        if (pool->type != JV_OBJECT) {
            check_described(out, v->keys[i], false);
            checked++;
            continue;
        }
        for (size_t k = 0; k < pool->n; k++) {
            const struct jv *m = pool->vals[k];
            if (m->type != JV_OBJECT) { /* a pool field, or a refused command's count */
                bool refused = strncmp(pool->keys[k], STATS_REFUSED_PREFIX, strlen(STATS_REFUSED_PREFIX)) == 0;
                check_described(out, refused ? STATS_REFUSED_PREFIX "<name>" : pool->keys[k], false);
                checked++;
                continue;
            }
            for (size_t j = 0; j < m->n; j++) {
                check_described(out, m->keys[j], false);
                checked++;
            }
        }
    }
    jv_free(v);
    assert_true(checked > 30);
    /* the latency document: its pool and server histograms, and their members */
    v = render_latency(&f, -1);
    const struct jv *lat = jv_get(v, STATS_LATENCY_KEY);
    for (size_t p = 0; p < lat->n; p++) {
        const struct jv *pool = lat->vals[p];
        for (size_t k = 0; k < pool->n; k++) {
            if (strcmp(pool->keys[k], STATS_LATENCY_SERVERS_KEY) == 0) {
                const struct jv *servers = pool->vals[k];
                for (size_t j = 0; j < servers->n; j++) {
                    for (size_t h = 0; h < servers->vals[j]->n; h++)
                        check_described(out, servers->vals[j]->keys[h], true);
                }
                continue;
            }
            check_described(out, pool->keys[k], true);
            for (size_t h = 0; h < pool->vals[k]->n; h++) check_described(out, pool->vals[k]->keys[h], false);
        }
    }
    assert_non_null(strstr(out, "\n  request_latency     histogram  \""));
    assert_non_null(strstr(out, "\n  server_latency      histogram  \""));
    assert_non_null(strstr(out, "\"" STATS_LATENCY_KEY "\":{\"<pool>\""));
    jv_free(v);
    free(out);
    sfix_deinit(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_shape_and_sums),
        cmocka_unit_test(test_json_is_what_twemproxy_agents_read),
        cmocka_unit_test(test_json_histograms),
        cmocka_unit_test(test_json_one_worker),
        cmocka_unit_test(test_buf_escapes_and_limit),
        cmocka_unit_test(test_prometheus),
        cmocka_unit_test(test_describe_covers_the_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
