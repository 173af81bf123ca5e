package config

import (
	"net/url"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Redis configures the shared state that lets several replicas serve the same sessions (docs/scaling.md).
type Redis struct {
	// URL is redis://[user@]host:port[/db] or rediss:// for TLS; go-redis options may be given as query
	// parameters (for example ?dial_timeout=1s).
	URL string
	// Password, usually "${SWITCHBOARD_REDIS_PASSWORD}"; it overrides one in the URL.
	Password string
	// TLS forces TLS even for a redis:// URL.
	TLS bool
	// KeyPrefix prefixes every key, so several gateways can share one Redis; default "switchboard:".
	KeyPrefix string
	// SentinelMaster and SentinelAddrs select Redis Sentinel: the URL's password and database still apply, its
	// host is ignored. ClusterAddrs selects Redis Cluster. At most one of the two.
	SentinelMaster string
	SentinelAddrs  []string
	ClusterAddrs   []string
}

func redisFields() []field { return fieldsOf(redisTable()) }

// redisTable is how the redis: block's keys are read.
func redisTable() []blockField[Redis] {
	return []blockField[Redis]{
		{field: field{key: "url", typ: tString, doc: "redis://[user@]host:port[/db], or rediss:// for TLS; go-redis options as query parameters; ${VAR} is expanded (required)."},
			read: func(p *parser, f pair, path string, r *Redis) {
				v, raw, ok := p.expanded(f.val, path)
				if !ok {
					return
				}
				r.URL = v
				u, err := url.Parse(v)
				switch {
				case err != nil || u.Host == "":
					p.errorf(resolve(f.val), path, "%q is not a Redis URL; use redis://host:port[/db] or rediss://host:port[/db]", raw)
				case u.Scheme != "redis" && u.Scheme != "rediss":
					p.errorf(resolve(f.val), path, "scheme %q is not redis or rediss", u.Scheme)
				}
			}},
		{field: field{key: "password", typ: tString, secret: true, doc: "The password, such as \"${SWITCHBOARD_REDIS_PASSWORD}\"; it overrides one in the URL."},
			read: func(p *parser, f pair, path string, r *Redis) {
				if v, _, ok := p.expanded(f.val, path); ok {
					r.Password = v
				}
			}},
		{field: field{key: "tls", typ: tBool, def: "false", doc: "Forces TLS even for a redis:// URL."},
			read: func(p *parser, f pair, path string, r *Redis) {
				if v, ok := p.boolean(f.val, path); ok {
					r.TLS = v
				}
			}},
		{field: field{key: "keyPrefix", typ: tString, def: "switchboard:", doc: "Prefixes every key, so several gateways can share one Redis."},
			read: func(p *parser, f pair, path string, r *Redis) {
				if v, ok := p.scalar(f.val, path); ok {
					if strings.ContainsAny(v, " {}") {
						p.errorf(resolve(f.val), path, "must not contain spaces or braces")
					}
					r.KeyPrefix = v
				}
			}},
		{field: field{key: "sentinel", typ: tBlock, sub: func() []field { return fieldsOf(sentinelTable()) },
			doc: "Redis Sentinel: the URL's password and database still apply, its host is ignored."},
			read: func(p *parser, f pair, path string, r *Redis) {
				if _, ok := readBlock(p, f.val, path, nil, sentinelTable(), r); ok && (r.SentinelMaster == "" || len(r.SentinelAddrs) == 0) {
					p.errorf(resolve(f.val), path, "needs masterName and addrs (host:port of each sentinel)")
				}
			}},
		{field: field{key: "cluster", typ: tBlock, sub: func() []field { return fieldsOf(clusterTable()) }, doc: "Redis Cluster (not with sentinel)."},
			read: func(p *parser, f pair, path string, r *Redis) {
				if _, ok := readBlock(p, f.val, path, nil, clusterTable(), r); !ok {
					return
				}
				if len(r.ClusterAddrs) == 0 {
					p.errorf(resolve(f.val), path, "needs addrs (host:port of some cluster nodes)")
				}
				if r.SentinelMaster != "" {
					p.errorf(resolve(f.val), path, "cannot be combined with redis.sentinel; choose one")
				}
			}},
	}
}

func sentinelTable() []blockField[Redis] {
	return []blockField[Redis]{
		{field: field{key: "masterName", typ: tString, doc: "The name of the master the sentinels watch."},
			read: func(p *parser, f pair, path string, r *Redis) { r.SentinelMaster, _ = p.scalar(f.val, path) }},
		{field: field{key: "addrs", typ: tStrings, doc: "host:port of each sentinel; ${VAR} is expanded."},
			read: func(p *parser, f pair, path string, r *Redis) {
				r.SentinelAddrs, _, _ = p.stringList(f.val, path, true)
			}},
	}
}

func clusterTable() []blockField[Redis] {
	return []blockField[Redis]{
		{field: field{key: "addrs", typ: tStrings, doc: "host:port of some cluster nodes; ${VAR} is expanded."},
			read: func(p *parser, f pair, path string, r *Redis) { r.ClusterAddrs, _, _ = p.stringList(f.val, path, true) }},
	}
}

// readRedisConfig reads the redis: block.
func readRedisConfig(p *parser, n *yaml.Node, cfg *Config) {
	r := &Redis{KeyPrefix: "switchboard:"}
	o, ok := readBlock(p, n, "redis", nil, redisTable(), r)
	if !ok {
		return
	}
	cfg.Redis = r
	if _, ok := o.get("url"); !ok {
		p.errorf(resolve(o.node), "redis", "missing url, such as redis://redis:6379/0 (or rediss:// for TLS)")
	}
}

// RateLimit bounds what one principal (or, without auth, one client address) may ask of the gateway, across
// every replica when Redis is configured.
type RateLimit struct {
	// RequestsPerSecond is the sustained rate of requests; Burst how many may come at once. 0 = no rate limit.
	RequestsPerSecond float64
	Burst             int
	// ConcurrentCalls bounds the requests in flight at once; 0 = no bound.
	ConcurrentCalls int
}

func rateLimitFields() []field { return fieldsOf(rateLimitTable()) }

// rateLimitTable is how the rateLimit: block's keys are read.
func rateLimitTable() []blockField[RateLimit] {
	return []blockField[RateLimit]{
		{field: field{key: "requestsPerSecond", typ: tNumber, def: "0", doc: "The sustained rate of requests; 0 is no rate limit."},
			read: func(p *parser, f pair, path string, rl *RateLimit) {
				v, err := strconv.ParseFloat(resolve(f.val).Value, 64)
				if err != nil || v < 0 {
					p.errorf(resolve(f.val), path, "must be a number ≥ 0, not %q", resolve(f.val).Value)
				}
				rl.RequestsPerSecond = v
			}},
		{field: field{key: "burst", typ: tInt, doc: "How many requests may come at once (default: the rate, at least 1)."},
			read: func(p *parser, f pair, path string, rl *RateLimit) {
				if v, ok := p.integer(f.val, path); ok {
					if v < 1 {
						p.errorf(resolve(f.val), path, "must be at least 1")
					}
					rl.Burst = int(v)
				}
			}},
		{field: field{key: "concurrentCalls", typ: tInt, def: "0", doc: "The requests in flight at once; 0 is no bound."},
			read: func(p *parser, f pair, path string, rl *RateLimit) {
				if v, ok := p.integer(f.val, path); ok {
					if v < 0 {
						p.errorf(resolve(f.val), path, "must be ≥ 0")
					}
					rl.ConcurrentCalls = int(v)
				}
			}},
	}
}

// readRateLimitConfig reads the rateLimit: block.
func readRateLimitConfig(p *parser, n *yaml.Node, cfg *Config) {
	rl := &RateLimit{}
	if _, ok := readBlock(p, n, "rateLimit", nil, rateLimitTable(), rl); !ok {
		return
	}
	cfg.RateLimit = rl
	if rl.RequestsPerSecond > 0 && rl.Burst == 0 {
		rl.Burst = max(1, int(rl.RequestsPerSecond))
	}
}
