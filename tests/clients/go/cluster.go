// cluster.go - the cluster mode of the go-redis program: go-redis v9's ClusterClient at its
// defaults (RESP3 via HELLO 3, a connection pool per node) with the proxy's address as its only
// seed, against a pool with client_cluster_mode, which announces itself as the one node of the
// cluster (tests/integration/test_cluster_clients.py, notes/cluster-clients.md):
//
//	client cluster '{"port": N, "prefix": "p", "keys": [...], "tagged": [...], "counter": "k"}'
//
// SET and GET of every key of keys (value "v-<key>"), MSET and MGET of the tagged keys (one hash
// slot: a cluster client refuses a multi-key command over two), a pipeline of 100 commands (50
// SETs of <prefix>:p:0..49, values v0..v49, then their GETs), INCR and INCRBY of counter, then
// DEL of the tagged keys and EXISTS of them. The keys, the pipeline's and the counter stay for the
// test to find on the backends. Prints one JSON object (what it saw, and the cluster it was
// told of), or exits 1 with a message on stderr at the first wrong value.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/redis/go-redis/v9"
)

const clusterPipelined = 50 // SETs, then as many GETs

type clusterArg struct {
	Port    int      `json:"port"`
	Prefix  string   `json:"prefix"`
	Keys    []string `json:"keys"`
	Tagged  []string `json:"tagged"`
	Counter string   `json:"counter"`
}

type clusterResult struct {
	Client   string   `json:"client"`
	Version  string   `json:"version"`
	Nodes    []string `json:"nodes"`
	Slots    [][]any  `json:"slots"`
	Gets     int      `json:"gets"`
	MGet     []any    `json:"mget"`
	Pipeline []string `json:"pipeline"`
	Incr     int64    `json:"incr"`
	Del      int64    `json:"del"`
	Exists   int64    `json:"exists"`
}

func clusterMain(argv []string) {
	check(len(argv) == 1, "usage: client cluster '<plan JSON>'")
	var a clusterArg
	check(json.Unmarshal([]byte(argv[0]), &a) == nil, "bad argument %q", argv[0])
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr(a.Port)}}) // the defaults
	defer c.Close()
	res := clusterResult{Client: "go-redis", Version: redis.Version()}
	for _, s := range must(c.ClusterSlots(ctx).Result()) {
		nodes := []string{}
		for _, n := range s.Nodes {
			nodes = append(nodes, n.Addr+" "+n.ID)
		}
		res.Slots = append(res.Slots, []any{s.Start, s.End, nodes})
	}
	check(c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		res.Nodes = append(res.Nodes, m.Options().Addr)
		return nil
	}) == nil, "the masters it knows")
	for _, k := range a.Keys {
		same("SET "+k, must(c.Set(ctx, k, "v-"+k, 0).Result()), "OK")
	}
	for _, k := range a.Keys {
		same("GET "+k, must(c.Get(ctx, k).Result()), "v-"+k)
		res.Gets++
	}
	pairs := []any{}
	for _, k := range a.Tagged {
		pairs = append(pairs, k, "t-"+k)
	}
	same("MSET", must(c.MSet(ctx, pairs...).Result()), "OK")
	res.MGet = must(c.MGet(ctx, a.Tagged...).Result())
	res.Pipeline = setGetPipeline(c, a.Prefix, clusterPipelined)
	for i := 1; i <= 10; i++ {
		same("INCR", must(c.Incr(ctx, a.Counter).Result()), int64(i))
	}
	res.Incr = must(c.IncrBy(ctx, a.Counter, 5).Result())
	res.Del = must(c.Del(ctx, a.Tagged...).Result())
	res.Exists = must(c.Exists(ctx, a.Tagged...).Result())
	check(json.NewEncoder(os.Stdout).Encode(res) == nil, "cannot print the results")
}
