// main.go - drives nutcrackers with go-redis v9 at its default options (RESP3 via HELLO 3, its
// connection pool, CLIENT SETINFO): connect, every data type, pipelines, multi-key commands over
// several servers, a transaction on hash-tagged keys, a WATCH transaction, and a transaction whose
// keys cross servers, which must abort with nothing written (checked on the backends directly).
// Run by tests/integration/test_clients_go_java.py with one JSON argument:
//
//	{"prefix": "go", "pools": [{"port": 22121, "backends": [6379, 6380]}, ...]}
//
// The pools must have hash_tag "{}" (the transactions keep their keys together with it). It
// prints one JSON object (what it saw, per pool) and exits 0, or exits 1 with a message on
// stderr at the first wrong value. Single goroutine, apart from go-redis's own.
//
// `client tls -addr HOST:PORT -ca FILE [-servername NAME] -prefix P -keys K1,K2,...` is the TLS
// mode (tls.go, test_clients_go_java.py's TLS test): go-redis over TLS to a proxy's TLS listener.
// `client cluster '<plan JSON>'` is the cluster mode (cluster.go, test_cluster_clients.py):
// go-redis's ClusterClient against a pool with client_cluster_mode.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

type poolArg struct {
	Port     int   `json:"port"`
	Backends []int `json:"backends"`
}

type args struct {
	Prefix string    `json:"prefix"`
	Pools  []poolArg `json:"pools"`
}

// failure is what check panics with; main turns it into a message and exit status 1.
type failure string

func check(ok bool, format string, a ...any) {
	if !ok {
		panic(failure(fmt.Sprintf(format, a...)))
	}
}

func same(what string, got, want any) {
	check(reflect.DeepEqual(got, want), "%s: got %#v, want %#v", what, got, want)
}

// must returns v, or fails naming the caller's line when err is set.
func must[T any](v T, err error) T {
	if err != nil {
		_, _, line, _ := runtime.Caller(1)
		check(false, "main.go:%d: %v", line, err)
	}
	return v
}

var ctx = context.Background()

func addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// backendsOf returns, for each key, the index of the one backend that holds it.
func backendsOf(direct []*redis.Client, keys []string) []int {
	where := make([]int, len(keys))
	for i, k := range keys {
		where[i] = -1
		for b, d := range direct {
			if must(d.Exists(ctx, k).Result()) == 1 {
				check(where[i] < 0, "%s is on two backends", k)
				where[i] = b
			}
		}
		check(where[i] >= 0, "%s is on no backend", k)
	}
	return where
}

func nowhere(direct []*redis.Client, keys ...string) {
	for b, d := range direct {
		n := must(d.Exists(ctx, keys...).Result())
		check(n == 0, "backend %d holds %d of %v, written by an aborted transaction", b, n, keys)
	}
}

// setGetPipeline runs n SETs of <prefix>:p:0..n-1 (values v0..), then their n GETs, in one
// pipeline of c (a client or a cluster client); the replies, in order.
func setGetPipeline(c redis.Cmdable, prefix string, n int) []string {
	cmds := must(c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i := 0; i < n; i++ {
			pipe.Set(ctx, fmt.Sprintf("%s:p:%d", prefix, i), fmt.Sprintf("v%d", i), 0)
		}
		for i := 0; i < n; i++ {
			pipe.Get(ctx, fmt.Sprintf("%s:p:%d", prefix, i))
		}
		return nil
	}))
	same("pipeline replies", len(cmds), 2*n)
	out := []string{}
	for i, cmd := range cmds {
		switch v := cmd.(type) {
		case *redis.StatusCmd:
			out = append(out, must(v.Result()))
		case *redis.StringCmd:
			out = append(out, must(v.Result()))
		default:
			check(false, "pipelined command %d: %T", i, cmd)
		}
	}
	return out
}

// txnCalls returns, per backend, the calls of the commands a cross-server transaction would send
// (INFO commandstats): they must not move when the proxy refuses it.
func txnCalls(direct []*redis.Client) []map[string]string {
	out := make([]map[string]string, len(direct))
	for b, d := range direct {
		out[b] = map[string]string{}
		for _, line := range strings.Split(must(d.Info(ctx, "commandstats").Result()), "\n") {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
			switch name {
			case "cmdstat_multi", "cmdstat_exec", "cmdstat_discard", "cmdstat_set", "cmdstat_incr":
				calls, _, _ := strings.Cut(rest, ",")
				check(ok && strings.HasPrefix(calls, "calls="), "INFO commandstats line %q", line)
				out[b][name] = calls
			}
		}
	}
	return out
}

func dataTypes(c *redis.Client, p string) {
	s := p + ":str"
	same("SET", must(c.Set(ctx, s, "hello", 0).Result()), "OK")
	same("GET", must(c.Get(ctx, s).Result()), "hello")
	same("APPEND", must(c.Append(ctx, s, " world").Result()), int64(11))
	same("STRLEN", must(c.StrLen(ctx, s).Result()), int64(11))
	same("GETRANGE", must(c.GetRange(ctx, s, 0, 4).Result()), "hello")
	_, err := c.Get(ctx, p+":missing").Result()
	check(errors.Is(err, redis.Nil), "GET of a missing key: %v, want redis.Nil", err)
	n := p + ":n"
	same("INCR", must(c.Incr(ctx, n).Result()), int64(1))
	same("INCRBY", must(c.IncrBy(ctx, n, 41).Result()), int64(42))
	same("INCRBYFLOAT", must(c.IncrByFloat(ctx, n, 0.5).Result()), 42.5)
	same("EXPIRE", must(c.Expire(ctx, n, time.Hour).Result()), true)
	ttl := must(c.TTL(ctx, n).Result())
	check(ttl > 59*time.Minute && ttl <= time.Hour, "TTL %v", ttl)

	l := p + ":list"
	same("RPUSH", must(c.RPush(ctx, l, "b", "c").Result()), int64(2))
	same("LPUSH", must(c.LPush(ctx, l, "a").Result()), int64(3))
	same("LRANGE", must(c.LRange(ctx, l, 0, -1).Result()), []string{"a", "b", "c"})
	same("LLEN", must(c.LLen(ctx, l).Result()), int64(3))
	same("LINDEX", must(c.LIndex(ctx, l, 1).Result()), "b")
	same("LPOP", must(c.LPop(ctx, l).Result()), "a")
	same("RPOP", must(c.RPop(ctx, l).Result()), "c")

	h := p + ":hash"
	same("HSET", must(c.HSet(ctx, h, "f1", "v1", "f2", "v2", "n", "1").Result()), int64(3))
	same("HGET", must(c.HGet(ctx, h, "f1").Result()), "v1")
	same("HGETALL", must(c.HGetAll(ctx, h).Result()),
		map[string]string{"f1": "v1", "f2": "v2", "n": "1"})
	same("HMGET", must(c.HMGet(ctx, h, "f2", "nope").Result()), []any{"v2", nil})
	same("HINCRBY", must(c.HIncrBy(ctx, h, "n", 9).Result()), int64(10))
	same("HDEL", must(c.HDel(ctx, h, "f1").Result()), int64(1))
	same("HLEN", must(c.HLen(ctx, h).Result()), int64(2))
	same("HEXISTS", must(c.HExists(ctx, h, "f1").Result()), false)

	st := p + ":set"
	same("SADD", must(c.SAdd(ctx, st, "x", "y", "z", "x").Result()), int64(3))
	members := must(c.SMembers(ctx, st).Result())
	sort.Strings(members)
	same("SMEMBERS", members, []string{"x", "y", "z"})
	same("SISMEMBER", must(c.SIsMember(ctx, st, "y").Result()), true)
	same("SREM", must(c.SRem(ctx, st, "y").Result()), int64(1))
	same("SCARD", must(c.SCard(ctx, st).Result()), int64(2))

	z := p + ":zset"
	same("ZADD", must(c.ZAdd(ctx, z, redis.Z{Score: 1, Member: "one"},
		redis.Z{Score: 2.5, Member: "two"}, redis.Z{Score: 3, Member: "three"}).Result()), int64(3))
	same("ZSCORE", must(c.ZScore(ctx, z, "two").Result()), 2.5)
	same("ZINCRBY", must(c.ZIncrBy(ctx, z, 10, "one").Result()), 11.0)
	same("ZRANGE WITHSCORES", must(c.ZRangeWithScores(ctx, z, 0, -1).Result()),
		[]redis.Z{{Score: 2.5, Member: "two"}, {Score: 3, Member: "three"}, {Score: 11, Member: "one"}})
	same("ZRANK", must(c.ZRank(ctx, z, "one").Result()), int64(2))
	same("ZCARD", must(c.ZCard(ctx, z).Result()), int64(3))
	same("ZRANGEBYSCORE", must(c.ZRangeByScore(ctx, z,
		&redis.ZRangeBy{Min: "2", Max: "(11"}).Result()), []string{"two", "three"})

	same("DEL", must(c.Del(ctx, s, n, l, h, st, z).Result()), int64(6))
}

func pipelines(c *redis.Client, p string) int {
	const n = 100
	cmds := must(c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("%s:pipe:%d", p, i)
			pipe.Set(ctx, k, i, 0)
			pipe.IncrBy(ctx, k, 1000)
			pipe.Get(ctx, k)
		}
		return nil
	}))
	same("pipeline replies", len(cmds), 3*n)
	keys := make([]string, n)
	want := make([]any, n)
	for i := 0; i < n; i++ {
		keys[i] = fmt.Sprintf("%s:pipe:%d", p, i)
		want[i] = fmt.Sprint(1000 + i)
		same("pipelined SET", cmds[3*i].(*redis.StatusCmd).Val(), "OK")
		same("pipelined INCRBY", cmds[3*i+1].(*redis.IntCmd).Val(), int64(1000+i))
		same("pipelined GET", cmds[3*i+2].(*redis.StringCmd).Val(), want[i])
	}
	// multi-key commands inside a pipeline, split over the servers and merged back in order
	var mget *redis.SliceCmd
	var del *redis.IntCmd
	must(c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		mget = pipe.MGet(ctx, keys...)
		del = pipe.Del(ctx, keys...)
		return nil
	}))
	same("pipelined MGET", mget.Val(), want)
	same("pipelined DEL", del.Val(), int64(n))
	return len(cmds) + 2
}

type poolResult struct {
	Spread     []int    `json:"spread"`
	MGet       []any    `json:"mget"`
	Pipeline   int      `json:"pipeline"`
	Tx         []any    `json:"tx"`
	Watch      string   `json:"watch"`
	Cross      string   `json:"cross"`
	CrossKey   []string `json:"cross_keys"`
	After      string   `json:"after"`
	ClientInfo string   `json:"client_info"`
	TxErr      string   `json:"tx_err"`
}

func runPool(pa poolArg, prefix string) poolResult {
	var res poolResult
	c := redis.NewClient(&redis.Options{Addr: addr(pa.Port)}) // the defaults
	defer c.Close()
	direct := make([]*redis.Client, len(pa.Backends))
	for i, b := range pa.Backends {
		direct[i] = redis.NewClient(&redis.Options{Addr: addr(b)})
		defer direct[i].Close()
	}
	p := fmt.Sprintf("%s:%d", prefix, pa.Port)
	same("PING", must(c.Ping(ctx).Result()), "PONG")
	// the handshake as the proxy saw it: "resp=3 lib-name=go-redis(...) ..."
	res.ClientInfo = must(c.Do(ctx, "CLIENT", "INFO").Text())

	// multi-key commands over keys on several servers
	keys := make([]string, 16)
	kv := make([]any, 0, 32)
	for i := range keys {
		// keys that differ only in a last digit tend to hash to one server: these differ first
		keys[i] = fmt.Sprintf("k%d-%08x:%s", i, uint32(i+1)*2654435761, p)
		kv = append(kv, keys[i], fmt.Sprintf("v%d", i))
	}
	same("MSET", must(c.MSet(ctx, kv...).Result()), "OK")
	where := backendsOf(direct, keys)
	res.Spread = make([]int, len(direct))
	for _, b := range where {
		res.Spread[b]++
	}
	for b, n := range res.Spread {
		check(n > 0, "no key of %v on backend %d: the multi-key commands would not cross", keys, b)
	}
	res.MGet = must(c.MGet(ctx, append(keys, p+":missing")...).Result())
	want := make([]any, 0, len(keys)+1)
	for i := range keys {
		want = append(want, fmt.Sprintf("v%d", i))
	}
	same("MGET", res.MGet, append(want, nil))
	same("EXISTS", must(c.Exists(ctx, keys...).Result()), int64(len(keys)))
	same("DEL", must(c.Del(ctx, append(keys, p+":missing")...).Result()), int64(len(keys)))
	nowhere(direct, keys...)

	dataTypes(c, p)
	res.Pipeline = pipelines(c, p)

	// a transaction on hash-tagged keys: one server, redis's own semantics
	a, b, h := "{"+p+":tx}:a", "{"+p+":tx}:b", "{"+p+":tx}:h"
	cmds := must(c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, a, "1", 0)
		pipe.Incr(ctx, a)
		pipe.RPush(ctx, b, "x", "y")
		pipe.LRange(ctx, b, 0, -1)
		pipe.HSet(ctx, h, "f", "v")
		pipe.HGetAll(ctx, h)
		pipe.Get(ctx, a)
		return nil
	}))
	res.Tx = []any{cmds[0].(*redis.StatusCmd).Val(), cmds[1].(*redis.IntCmd).Val(),
		cmds[2].(*redis.IntCmd).Val(), cmds[3].(*redis.StringSliceCmd).Val(),
		cmds[4].(*redis.IntCmd).Val(), cmds[5].(*redis.MapStringStringCmd).Val(),
		cmds[6].(*redis.StringCmd).Val()}
	same("transaction results", res.Tx, []any{"OK", int64(2), int64(2), []string{"x", "y"},
		int64(1), map[string]string{"f": "v"}, "2"})
	txWhere := backendsOf(direct, []string{a, b, h})
	check(txWhere[0] == txWhere[1] && txWhere[1] == txWhere[2], "hash-tagged keys on %v", txWhere)
	same("GET on the backend", must(direct[txWhere[0]].Get(ctx, a).Result()), "2")

	// a command failing inside EXEC: the others still run (redis's semantics, no rollback)
	cmds, err := c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, b, "x", 0)
		pipe.Incr(ctx, b)
		pipe.Get(ctx, b)
		return nil
	})
	check(err != nil && strings.Contains(err.Error(), "not an integer"), "INCR of a string in EXEC: %v", err)
	same("EXEC with an error: SET", cmds[0].(*redis.StatusCmd).Val(), "OK")
	same("EXEC with an error: GET", cmds[2].(*redis.StringCmd).Val(), "x")
	res.TxErr = err.Error()

	// WATCH, then a transaction on the watched key (go-redis's optimistic locking)
	must(0, c.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, a).Int()
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			pipe.Set(ctx, a, v*10, 0)
			return nil
		})
		return err
	}, a))
	res.Watch = must(c.Get(ctx, a).Result())
	same("value set under WATCH", res.Watch, "20")
	same("DEL", must(c.Del(ctx, a, b, h).Result()), int64(3))

	// a transaction whose keys cross servers: refused whole, nothing on any backend
	var ka, kb string
	for i := range keys {
		if where[i] != where[0] {
			ka, kb = keys[0], keys[i]
			break
		}
	}
	x, y := "{"+ka+"}:new", "{"+kb+"}:new" // on ka's and kb's servers
	res.CrossKey = []string{x, y}
	before := txnCalls(direct)
	check(before[txWhere[0]]["cmdstat_multi"] != "", "INFO commandstats without the MULTI sent: %v", before)
	_, err = c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.Set(ctx, x, "1", 0)
		pipe.Set(ctx, y, "2", 0)
		pipe.Incr(ctx, x)
		return nil
	})
	check(err != nil, "a transaction over two servers succeeded")
	res.Cross = err.Error()
	check(strings.Contains(res.Cross, "EXECABORT"), "cross-server transaction: %q, want EXECABORT", res.Cross)
	nowhere(direct, x, y)
	same("calls on the backends around the cross-server transaction", txnCalls(direct), before)

	// the client and its connections are still usable
	same("PING after", must(c.Ping(ctx).Result()), "PONG")
	same("MSET after", must(c.MSet(ctx, x, "a", y, "b").Result()), "OK")
	same("MGET after", must(c.MGet(ctx, x, y).Result()), []any{"a", "b"})
	same("DEL after", must(c.Del(ctx, x, y).Result()), int64(2))
	res.After = "ok"
	return res
}

func main() {
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(failure); ok {
				fmt.Fprintln(os.Stderr, "go-redis client:", string(f))
				os.Exit(1)
			}
			panic(r)
		}
	}()
	if len(os.Args) > 1 && os.Args[1] == "tls" {
		tlsMain(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "cluster" {
		clusterMain(os.Args[2:])
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, `usage: client '{"prefix": "...", "pools": [{"port": N, "backends": [N, ...]}]}'`)
		fmt.Fprintln(os.Stderr, `       client tls -addr HOST:PORT -ca FILE [-servername NAME] -prefix P -keys K1,K2`)
		fmt.Fprintln(os.Stderr, `       client cluster '{"port": N, "prefix": "p", "keys": [...], "tagged": [...], "counter": "k"}'`)
		os.Exit(2)
	}
	var a args
	check(json.Unmarshal([]byte(os.Args[1]), &a) == nil, "bad argument %q", os.Args[1])
	out := map[string]any{"client": "go-redis", "version": redis.Version()}
	results := []poolResult{}
	for _, pa := range a.Pools {
		results = append(results, runPool(pa, a.Prefix))
	}
	out["pools"] = results
	enc := json.NewEncoder(os.Stdout)
	check(enc.Encode(out) == nil, "cannot print the results")
}
