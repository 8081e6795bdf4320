/*
 * JedisClient.java - drives nutcrackers with Jedis at its default options, through both of its
 * entry points: the classic single-connection `Jedis` and the pooled `RedisClient`. For each pool:
 * connect, every data type, pipelines, multi-key commands over several servers, a transaction on
 * hash-tagged keys, WATCH (Jedis), and a transaction whose keys cross servers, which must abort
 * with nothing written (checked on the backends directly); then the client must still work.
 * Run by tests/integration/test_clients_go_java.py with one JSON argument:
 *
 *   {"prefix": "java", "pools": [{"port": 22121, "backends": [6379, 6380]}, ...]}
 *
 * The pools must have hash_tag "{}" (the transactions keep their keys together with it).
 * `JedisClient cluster '<plan JSON>'` runs Jedis's cluster clients instead (JedisClusterClient.java).
 * Prints one JSON object (what it saw, per pool and entry point) and exits 0, or exits 1 with a
 * message on stderr at the first wrong value. One thread (Jedis's pool has no threads of its own).
 */
package nutcrackers;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.AbstractTransaction;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.commands.JedisCommands;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.ZRangeParams;
import redis.clients.jedis.resps.Tuple;

public final class JedisClient {
    private JedisClient() {}

    static final class Failure extends RuntimeException {
        Failure(String msg) { super(msg); }
    }

    static void check(boolean ok, String msg) {
        if (!ok) throw new Failure(msg);
    }

    static void same(String what, Object got, Object want) {
        check(Objects.equals(got, want), what + ": got " + got + ", want " + want);
    }

    /** The client under test: its commands and how it opens pipelines and transactions. */
    record Client(String name, JedisCommands cmd, Supplier<String> ping,
                  Supplier<AbstractPipeline> pipelined, Supplier<AbstractTransaction> multi) {}

    /** For each key, the index of the one backend that holds it. */
    static int[] backendsOf(List<Jedis> direct, List<String> keys) {
        int[] where = new int[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            where[i] = -1;
            for (int b = 0; b < direct.size(); b++) {
                if (direct.get(b).exists(keys.get(i))) {
                    check(where[i] < 0, keys.get(i) + " is on two backends");
                    where[i] = b;
                }
            }
            check(where[i] >= 0, keys.get(i) + " is on no backend");
        }
        return where;
    }

    static void nowhere(List<Jedis> direct, String... keys) {
        for (int b = 0; b < direct.size(); b++) {
            long n = direct.get(b).exists(keys);
            check(n == 0, "backend " + b + " holds " + n + " of " + Arrays.toString(keys)
                  + ", written by an aborted transaction");
        }
    }

    /** Per backend, the calls of the commands a cross-server transaction would send (INFO
     *  commandstats): they must not move when the proxy refuses it. */
    static List<Map<String, String>> txnCalls(List<Jedis> direct) {
        List<Map<String, String>> out = new ArrayList<>();
        Pattern line = Pattern.compile("^(cmdstat_(?:multi|exec|discard|set|incr)):(calls=\\d+),", Pattern.MULTILINE);
        for (Jedis d : direct) {
            Map<String, String> calls = new java.util.TreeMap<>();
            Matcher m = line.matcher(d.info("commandstats"));
            while (m.find()) calls.put(m.group(1), m.group(2));
            out.add(calls);
        }
        return out;
    }

    static void dataTypes(JedisCommands c, String p) {
        String s = p + ":str";
        same("SET", c.set(s, "hello"), "OK");
        same("GET", c.get(s), "hello");
        same("APPEND", c.append(s, " world"), 11L);
        same("STRLEN", c.strlen(s), 11L);
        same("GETRANGE", c.getrange(s, 0, 4), "hello");
        same("GET of a missing key", c.get(p + ":missing"), null);
        String n = p + ":n";
        same("INCR", c.incr(n), 1L);
        same("INCRBY", c.incrBy(n, 41), 42L);
        same("INCRBYFLOAT", c.incrByFloat(n, 0.5), 42.5);
        same("EXPIRE", c.expire(n, 3600), 1L);
        long ttl = c.ttl(n);
        check(ttl > 3500 && ttl <= 3600, "TTL " + ttl);

        String l = p + ":list";
        same("RPUSH", c.rpush(l, "b", "c"), 2L);
        same("LPUSH", c.lpush(l, "a"), 3L);
        same("LRANGE", c.lrange(l, 0, -1), List.of("a", "b", "c"));
        same("LLEN", c.llen(l), 3L);
        same("LINDEX", c.lindex(l, 1), "b");
        same("LPOP", c.lpop(l), "a");
        same("RPOP", c.rpop(l), "c");

        String h = p + ":hash";
        same("HSET", c.hset(h, Map.of("f1", "v1", "f2", "v2", "n", "1")), 3L);
        same("HGET", c.hget(h, "f1"), "v1");
        same("HGETALL", c.hgetAll(h), Map.of("f1", "v1", "f2", "v2", "n", "1"));
        same("HMGET", c.hmget(h, "f2", "nope"), Arrays.asList("v2", null));
        same("HINCRBY", c.hincrBy(h, "n", 9), 10L);
        same("HDEL", c.hdel(h, "f1"), 1L);
        same("HLEN", c.hlen(h), 2L);
        same("HEXISTS", c.hexists(h, "f1"), false);

        String st = p + ":set";
        same("SADD", c.sadd(st, "x", "y", "z", "x"), 3L);
        same("SMEMBERS", new TreeSet<>(c.smembers(st)), new TreeSet<>(List.of("x", "y", "z")));
        same("SISMEMBER", c.sismember(st, "y"), true);
        same("SREM", c.srem(st, "y"), 1L);
        same("SCARD", c.scard(st), 2L);

        String z = p + ":zset";
        same("ZADD", c.zadd(z, Map.of("one", 1.0, "two", 2.5, "three", 3.0)), 3L);
        same("ZSCORE", c.zscore(z, "two"), 2.5);
        same("ZINCRBY", c.zincrby(z, 10, "one"), 11.0);
        same("ZRANGE WITHSCORES", c.zrangeWithScores(z, ZRangeParams.zrangeParams(0, -1)),
             List.of(new Tuple("two", 2.5), new Tuple("three", 3.0), new Tuple("one", 11.0)));
        same("ZRANK", c.zrank(z, "one"), 2L);
        same("ZCARD", c.zcard(z), 3L);
        same("ZRANGEBYSCORE", c.zrangeByScore(z, "2", "(11"), List.of("two", "three"));

        same("DEL", c.del(s, n, l, h, st, z), 6L);
    }

    static int pipelines(Client cl, String p) {
        final int n = 100;
        List<Response<String>> sets = new ArrayList<>();
        List<Response<Long>> incrs = new ArrayList<>();
        List<Response<String>> gets = new ArrayList<>();
        String[] keys = new String[n];
        try (AbstractPipeline pipe = cl.pipelined().get()) {
            for (int i = 0; i < n; i++) {
                keys[i] = p + ":pipe:" + i;
                sets.add(pipe.set(keys[i], Integer.toString(i)));
                incrs.add(pipe.incrBy(keys[i], 1000));
                gets.add(pipe.get(keys[i]));
            }
            pipe.sync();
        }
        List<String> want = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            want.add(Integer.toString(1000 + i));
            same("pipelined SET", sets.get(i).get(), "OK");
            same("pipelined INCRBY", incrs.get(i).get(), 1000L + i);
            same("pipelined GET", gets.get(i).get(), want.get(i));
        }
        // multi-key commands inside a pipeline, split over the servers and merged back in order
        Response<List<String>> mget;
        Response<Long> del;
        try (AbstractPipeline pipe = cl.pipelined().get()) {
            mget = pipe.mget(keys);
            del = pipe.del(keys);
            pipe.sync();
        }
        same("pipelined MGET", mget.get(), want);
        same("pipelined DEL", del.get(), (long) n);
        return 3 * n + 2;
    }

    static Map<String, Object> runPool(Client cl, int port, List<Integer> backends, String prefix,
                                       Jedis watcher) {
        Map<String, Object> res = new LinkedHashMap<>();
        JedisCommands c = cl.cmd();
        List<Jedis> direct = new ArrayList<>();
        for (int b : backends) direct.add(new Jedis("127.0.0.1", b));
        try {
            String p = prefix + ":" + cl.name() + ":" + port;
            same("PING", cl.ping().get(), "PONG");
            if (watcher != null) // the handshake as the proxy saw it: "resp=2 lib-name=jedis ..."
                res.put("client_info", watcher.clientInfo());

            // multi-key commands over keys on several servers
            List<String> keys = new ArrayList<>();
            List<String> kv = new ArrayList<>();
            List<String> want = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                // keys that differ only in a last digit tend to hash to one server: these differ first
                String k = String.format("k%d-%08x:%s", i, ((i + 1) * 2654435761L) & 0xffffffffL, p);
                keys.add(k);
                kv.add(k);
                kv.add("v" + i);
                want.add("v" + i);
            }
            same("MSET", c.mset(kv.toArray(new String[0])), "OK");
            int[] where = backendsOf(direct, keys);
            int[] spread = new int[direct.size()];
            for (int b : where) spread[b]++;
            for (int b = 0; b < spread.length; b++)
                check(spread[b] > 0, "no key of " + keys + " on backend " + b);
            res.put("spread", Arrays.stream(spread).boxed().toList());
            List<String> withMissing = new ArrayList<>(keys);
            withMissing.add(p + ":missing");
            List<String> mget = c.mget(withMissing.toArray(new String[0]));
            want.add(null);
            same("MGET", mget, want);
            res.put("mget", mget);
            same("EXISTS", c.exists(keys.toArray(new String[0])), (long) keys.size());
            same("DEL", c.del(withMissing.toArray(new String[0])), (long) keys.size());
            nowhere(direct, keys.toArray(new String[0]));

            dataTypes(c, p);
            res.put("pipeline", pipelines(cl, p));

            // a transaction on hash-tagged keys: one server, redis's own semantics
            String a = "{" + p + ":tx}:a", b = "{" + p + ":tx}:b", h = "{" + p + ":tx}:h";
            List<Object> tx;
            List<Object> got = new ArrayList<>();
            try (AbstractTransaction t = cl.multi().get()) {
                Response<String> r0 = t.set(a, "1");
                Response<Long> r1 = t.incr(a);
                Response<Long> r2 = t.rpush(b, "x", "y");
                Response<List<String>> r3 = t.lrange(b, 0, -1);
                Response<Long> r4 = t.hset(h, "f", "v");
                Response<Map<String, String>> r5 = t.hgetAll(h);
                Response<String> r6 = t.get(a);
                tx = t.exec();
                got.addAll(List.of(r0.get(), r1.get(), r2.get(), r3.get(), r4.get(), r5.get(), r6.get()));
            }
            check(tx != null && tx.size() == 7, "EXEC: " + tx);
            same("transaction results", got,
                 List.of("OK", 2L, 2L, List.of("x", "y"), 1L, Map.of("f", "v"), "2"));
            res.put("tx", got);
            int[] txWhere = backendsOf(direct, List.of(a, b, h));
            check(txWhere[0] == txWhere[1] && txWhere[1] == txWhere[2],
                  "hash-tagged keys on " + Arrays.toString(txWhere));
            same("GET on the backend", direct.get(txWhere[0]).get(a), "2");

            // a command failing inside EXEC: the others still run (redis's semantics, no rollback)
            try (AbstractTransaction t = cl.multi().get()) {
                Response<String> r0 = t.set(b, "x");
                t.incr(b);
                Response<String> r2 = t.get(b);
                List<Object> r = t.exec();
                check(r != null && r.size() == 3, "EXEC with an error: " + r);
                check(r.get(1) instanceof JedisDataException e && e.getMessage().contains("not an integer"),
                      "INCR of a string in EXEC: " + r.get(1));
                same("EXEC with an error: SET", r0.get(), "OK");
                same("EXEC with an error: GET", r2.get(), "x");
                res.put("tx_err", ((JedisDataException) r.get(1)).getMessage());
            }

            // WATCH, then a transaction on the watched key (Jedis's own connection)
            if (watcher != null) {
                same("WATCH", watcher.watch(a), "OK");
                int v = Integer.parseInt(watcher.get(a));
                AbstractTransaction t = watcher.multi();
                t.set(a, Integer.toString(v * 10));
                List<Object> r = t.exec();
                same("EXEC after WATCH", r, List.of("OK"));
                res.put("watch", c.get(a));
                same("value set under WATCH", res.get("watch"), "20");
            }
            same("DEL", c.del(a, b, h), 3L);

            // a transaction whose keys cross servers: refused whole, nothing on any backend
            String ka = null, kb = null;
            for (int i = 1; i < keys.size() && ka == null; i++) {
                if (where[i] != where[0]) {
                    ka = keys.get(0);
                    kb = keys.get(i);
                }
            }
            String x = "{" + ka + "}:new", y = "{" + kb + "}:new"; // on ka's and kb's servers
            res.put("cross_keys", List.of(x, y));
            List<Map<String, String>> before = txnCalls(direct);
            check(before.get(txWhere[0]).containsKey("cmdstat_multi"),
                  "INFO commandstats without the MULTI sent: " + before);
            String error = null;
            try (AbstractTransaction t = cl.multi().get()) {
                t.set(x, "1");
                t.set(y, "2");
                t.incr(x);
                List<Object> r = t.exec();
                check(false, "a transaction over two servers succeeded: " + r);
            } catch (JedisDataException e) {
                error = e.getMessage();
            }
            res.put("cross", error);
            check(error.contains("EXECABORT"), "cross-server transaction: " + error + ", want EXECABORT");
            nowhere(direct, x, y);
            same("calls on the backends around the cross-server transaction", txnCalls(direct), before);

            // the client and its connections are still usable
            same("PING after", cl.ping().get(), "PONG");
            same("MSET after", c.mset(x, "a", y, "b"), "OK");
            same("MGET after", c.mget(x, y), List.of("a", "b"));
            same("DEL after", c.del(x, y), 2L);
            res.put("after", "ok");
            return res;
        } finally {
            for (Jedis d : direct) d.close();
        }
    }

    // --- a minimal JSON reader (the argument) and writer (the results) ---

    static String json(Object o) {
        if (o == null) return "null";
        if (o instanceof String s) {
            StringBuilder b = new StringBuilder("\"");
            for (char ch : s.toCharArray()) {
                if (ch == '"' || ch == '\\') b.append('\\').append(ch);
                else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
                else b.append(ch);
            }
            return b.append('"').toString();
        }
        if (o instanceof Number || o instanceof Boolean) return o.toString();
        if (o instanceof Map<?, ?> m) {
            List<String> parts = new ArrayList<>();
            m.forEach((k, v) -> parts.add(json(k.toString()) + ": " + json(v)));
            return "{" + String.join(", ", parts) + "}";
        }
        if (o instanceof List<?> l) {
            List<String> parts = new ArrayList<>();
            for (Object v : l) parts.add(json(v));
            return "[" + String.join(", ", parts) + "]";
        }
        throw new Failure("cannot print " + o.getClass());
    }

    static List<Integer> ints(String text) {
        List<Integer> out = new ArrayList<>();
        Matcher m = Pattern.compile("\\d+").matcher(text);
        while (m.find()) out.add(Integer.parseInt(m.group()));
        return out;
    }

    /** The version of the Jedis jar on the class path (its Maven properties). */
    static String jedisVersion() throws java.io.IOException {
        java.util.Properties props = new java.util.Properties();
        try (java.io.InputStream in = Jedis.class.getResourceAsStream(
                "/META-INF/maven/redis.clients/jedis/pom.properties")) {
            if (in == null) return null;
            props.load(in);
        }
        return props.getProperty("version");
    }

    static void fail(Exception e) {
        System.err.println("jedis client: " + e);
        e.printStackTrace();
        System.exit(1);
    }

    public static void main(String[] argv) {
        if (argv.length == 2 && argv[0].equals("cluster")) { // JedisClusterClient.java
            try {
                JedisClusterClient.main(argv[1]);
            } catch (Failure | redis.clients.jedis.exceptions.JedisException | java.io.IOException e) {
                fail(e);
            }
            return;
        }
        if (argv.length != 1) {
            System.err.println("usage: JedisClient '{\"prefix\": \"...\", \"pools\": [{\"port\": N, \"backends\": [N, ...]}]}'");
            System.exit(2);
        }
        try {
            Matcher pm = Pattern.compile("\"prefix\"\\s*:\\s*\"([^\"]*)\"").matcher(argv[0]);
            check(pm.find(), "no prefix in " + argv[0]);
            String prefix = pm.group(1);
            Matcher m = Pattern.compile("\\{\\s*\"port\"\\s*:\\s*(\\d+)\\s*,\\s*\"backends\"\\s*:\\s*\\[([^\\]]*)\\]\\s*\\}")
                .matcher(argv[0]);
            List<Object> pools = new ArrayList<>();
            while (m.find()) {
                int port = Integer.parseInt(m.group(1));
                List<Integer> backends = ints(m.group(2));
                Map<String, Object> pool = new LinkedHashMap<>();
                pool.put("port", port);
                try (Jedis j = new Jedis("127.0.0.1", port)) { // the defaults
                    pool.put("jedis", runPool(new Client("jedis", j, j::ping, j::pipelined, j::multi),
                                              port, backends, prefix, j));
                }
                try (RedisClient r = RedisClient.create("127.0.0.1", port)) { // the defaults
                    pool.put("redisclient", runPool(new Client("redisclient", r, r::ping, r::pipelined,
                                                               r::multi), port, backends, prefix, null));
                }
                pools.add(pool);
            }
            check(!pools.isEmpty(), "no pool in " + argv[0]);
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("client", "jedis");
            out.put("version", jedisVersion());
            out.put("pools", pools);
            System.out.println(json(out));
        } catch (Failure | JedisDataException | java.io.IOException e) {
            fail(e);
        }
    }
}
