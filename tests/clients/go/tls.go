// tls.go - the TLS mode of the go-redis program: go-redis v9 at its defaults (RESP3 via HELLO 3,
// its connection pool) but for a TLS config trusting one CA file and verifying one server name,
// against a proxy's TLS listener. SET and GET, a pipeline of 100 commands (50 SETs, then 50 GETs
// of those keys), and an MGET of the keys given (on different servers behind the proxy), after a
// SET of each. The keys it writes stay for the test to find on the servers: <prefix>:tls,
// <prefix>:p:0..49 (values v0..v49) and the MGET's keys (values m-<key>).
//
//	client tls -addr 127.0.0.1:PORT -ca ca.pem -servername localhost -prefix gotls -keys k1,k2
//
// Prints one JSON object: what it read, and what it saw of the TLS connections (every handshake
// verified, the protocol version and the SHA-256 of the certificate shown), or exits 1 with a
// message on stderr (a certificate that does not verify: the error of the first command).
package main

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

const tlsPipelined = 50 // SETs, then as many GETs: 100 commands in one pipeline

// tlsSeen gathers what the handshakes showed (go-redis dials from its own goroutines).
type tlsSeen struct {
	mu           sync.Mutex
	handshakes   int
	unverified   int
	versions     map[string]bool
	fingerprints map[string]bool
}

func (s *tlsSeen) record(cs tls.ConnectionState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handshakes++
	if len(cs.VerifiedChains) == 0 {
		s.unverified++
	}
	s.versions[tls.VersionName(cs.Version)] = true
	if len(cs.PeerCertificates) > 0 {
		sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
		s.fingerprints[hex.EncodeToString(sum[:])] = true
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type tlsResult struct {
	Client       string   `json:"client"`
	Version      string   `json:"version"`
	Mode         string   `json:"mode"`
	Get          string   `json:"get"`
	Pipeline     []string `json:"pipeline"`
	MGet         []any    `json:"mget"`
	ClientInfo   string   `json:"client_info"`
	Handshakes   int      `json:"handshakes"`
	Unverified   int      `json:"unverified"`
	TLSVersions  []string `json:"tls_versions"`
	Fingerprints []string `json:"fingerprints"`
}

func tlsMain(argv []string) {
	fs := flag.NewFlagSet("tls", flag.ExitOnError)
	address := fs.String("addr", "", "the proxy's TLS listener, host:port")
	caFile := fs.String("ca", "", "PEM file of the CA that signed the proxy's certificate")
	serverName := fs.String("servername", "localhost", "the name the certificate must have (and SNI)")
	prefix := fs.String("prefix", "gotls", "the prefix of the keys it writes")
	keyList := fs.String("keys", "", "comma-separated keys for the MGET")
	check(fs.Parse(argv) == nil, "bad flags %q", argv)
	check(*address != "" && *caFile != "" && *keyList != "", "-addr, -ca and -keys are needed")
	roots := x509.NewCertPool()
	check(roots.AppendCertsFromPEM(must(os.ReadFile(*caFile))), "no certificate in %s", *caFile)
	seen := &tlsSeen{versions: map[string]bool{}, fingerprints: map[string]bool{}}
	c := redis.NewClient(&redis.Options{Addr: *address, TLSConfig: &tls.Config{
		RootCAs: roots, ServerName: *serverName, MinVersion: tls.VersionTLS12,
		VerifyConnection: seen.record,
	}})
	defer c.Close()
	res := tlsResult{Client: "go-redis", Version: redis.Version(), Mode: "tls"}

	k := *prefix + ":tls"
	same("SET", must(c.Set(ctx, k, "over-tls", 0).Result()), "OK")
	res.Get = must(c.Get(ctx, k).Result())
	same("GET", res.Get, "over-tls")
	res.ClientInfo = must(c.Do(ctx, "CLIENT", "INFO").Text())

	res.Pipeline = setGetPipeline(c, *prefix, tlsPipelined)

	keys := strings.Split(*keyList, ",")
	for _, key := range keys {
		same("SET "+key, must(c.Set(ctx, key, "m-"+key, 0).Result()), "OK")
	}
	res.MGet = must(c.MGet(ctx, keys...).Result())
	for i, key := range keys {
		same("MGET "+key, res.MGet[i], "m-"+key)
	}

	seen.mu.Lock()
	res.Handshakes, res.Unverified = seen.handshakes, seen.unverified
	res.TLSVersions, res.Fingerprints = sortedKeys(seen.versions), sortedKeys(seen.fingerprints)
	seen.mu.Unlock()
	check(json.NewEncoder(os.Stdout).Encode(res) == nil, "cannot print the results")
}
