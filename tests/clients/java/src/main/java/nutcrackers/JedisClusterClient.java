/*
 * JedisClusterClient.java - Jedis's cluster clients at their defaults, `JedisCluster` and the
 * newer `RedisClusterClient`, with the proxy's address as their only seed, against a pool with
 * client_cluster_mode, which announces itself as the one node of the cluster
 * (tests/integration/test_cluster_clients.py, notes/cluster-clients.md). Run as
 *
 *   JedisClient cluster '{"port": N, "prefix": "p", "keys": [...], "tagged": [...], "counter": "k"}'
 *
 * For each client: SET and GET of every key (value "v-<key>"), MSET and MGET of the tagged keys
 * (one hash slot: Jedis refuses a multi-key command over two), a pipeline of 100 commands (50 SETs
 * of <prefix>:<client>:p:0..49, values v0..v49, then their GETs), INCR and INCRBY of
 * <counter><client>, DEL and EXISTS of the tagged keys. Prints one JSON object (what each saw,
 * and the nodes it was told of), or exits 1 with a message on stderr at the first wrong value.
 * One thread (the clients' pools have none of their own).
 */
package nutcrackers;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import redis.clients.jedis.ClusterPipeline;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;

final class JedisClusterClient {
    private JedisClusterClient() {}

    static final int PIPELINED = 50; // SETs, then as many GETs

    /** The quoted strings of the JSON array named key in plan. */
    static List<String> strings(String plan, String key) {
        Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*\\[([^\\]]*)\\]").matcher(plan);
        JedisClient.check(m.find(), "no " + key + " in " + plan);
        List<String> out = new ArrayList<>();
        Matcher s = Pattern.compile("\"([^\"]*)\"").matcher(m.group(1));
        while (s.find()) out.add(s.group(1));
        return out;
    }

    static String string(String plan, String key) {
        Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*\"([^\"]*)\"").matcher(plan);
        JedisClient.check(m.find(), "no " + key + " in " + plan);
        return m.group(1);
    }

    static List<String> pipeline(ClusterPipeline p, String prefix) {
        List<Response<String>> replies = new ArrayList<>();
        for (int i = 0; i < PIPELINED; i++) replies.add(p.set(prefix + ":p:" + i, "v" + i));
        for (int i = 0; i < PIPELINED; i++) replies.add(p.get(prefix + ":p:" + i));
        p.sync();
        List<String> out = new ArrayList<>();
        for (Response<String> r : replies) out.add(r.get());
        p.close();
        return out;
    }

    /** The sequence on one client; what it saw. */
    static Map<String, Object> run(UnifiedJedis c, Set<String> nodes, ClusterPipeline p, String plan,
                                   String name) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("nodes", new ArrayList<>(new TreeSet<>(nodes)));
        List<String> keys = strings(plan, "keys"), tagged = strings(plan, "tagged");
        for (String k : keys) JedisClient.same("SET " + k, c.set(k, "v-" + k), "OK");
        int gets = 0;
        for (String k : keys) {
            JedisClient.same("GET " + k, c.get(k), "v-" + k);
            gets++;
        }
        out.put("gets", gets);
        List<String> pairs = new ArrayList<>();
        for (String k : tagged) {
            pairs.add(k);
            pairs.add("t-" + k);
        }
        JedisClient.same("MSET", c.mset(pairs.toArray(new String[0])), "OK");
        out.put("mget", c.mget(tagged.toArray(new String[0])));
        out.put("pipeline", pipeline(p, string(plan, "prefix") + ":" + name));
        String counter = string(plan, "counter") + name;
        for (long i = 1; i <= 10; i++) JedisClient.same("INCR", c.incr(counter), i);
        out.put("incr", c.incrBy(counter, 5));
        out.put("del", c.del(tagged.toArray(new String[0])));
        out.put("exists", c.exists(tagged.toArray(new String[0])));
        return out;
    }

    static void main(String plan) throws java.io.IOException {
        Matcher pm = Pattern.compile("\"port\"\\s*:\\s*(\\d+)").matcher(plan);
        JedisClient.check(pm.find(), "no port in " + plan);
        HostAndPort seed = new HostAndPort("127.0.0.1", Integer.parseInt(pm.group(1)));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("client", "jedis");
        out.put("version", JedisClient.jedisVersion());
        try (JedisCluster c = new JedisCluster(seed)) { // the defaults
            out.put("jediscluster", run(c, c.getClusterNodes().keySet(), c.pipelined(), plan, "jc"));
        }
        try (RedisClusterClient c = RedisClusterClient.create(seed)) { // the defaults
            out.put("redisclusterclient", run(c, c.getClusterNodes().keySet(), c.pipelined(), plan, "rcc"));
        }
        System.out.println(JedisClient.json(out));
    }
}
