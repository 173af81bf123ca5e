package main

// redis-server for the replicas scenario, and what its INFO says: a few lines of RESP, so that the tool needs no
// Redis client of its own.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// errNoRedis is returned when redis-server is not on PATH: the scenario is skipped, not failed.
var errNoRedis = errors.New("redis-server not found on PATH")

// startRedis starts redis-server on a free loopback port, without persistence, and waits until it answers PING.
func startRedis() (*child, string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, "", errNoRedis
	}
	addr, err := freePort()
	if err != nil {
		return nil, "", err
	}
	_, port, _ := net.SplitHostPort(addr)
	c, err := startChild("redis-server", false, bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err != nil {
		return nil, "", err
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if r, err := redisDo(addr, "PING"); err == nil && r == "PONG" {
			return c, addr, nil
		}
		if c.exited() || time.Now().After(deadline) {
			c.stop()
			return nil, "", fmt.Errorf("redis-server did not answer PING: %v\n%s", c.err, c.logs)
		}
		select {
		case <-c.done:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// redisDo sends one command on a new connection and returns a simple, integer or bulk reply as a string.
func redisDo(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	var req strings.Builder
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := conn.Write([]byte(req.String())); err != nil {
		return "", err
	}
	return readRESP(bufio.NewReader(conn))
}

func readRESP(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty RESP reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redis: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad RESP bulk length %q", line)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected RESP reply %q", line)
}

// redisStats is what one INFO says about the work redis-server did.
type redisStats struct {
	cmds            map[string]int64 // calls per command (INFO commandstats), INFO itself left out
	reads           int64            // total_reads_processed: read events, about one per round trip
	netIn, netOut   int64            // total_net_input_bytes, total_net_output_bytes
	cpu             float64          // used_cpu_user + used_cpu_sys, seconds
	pubsubChannels  int64            // pubsub_channels (a gauge)
	connectedClient int64            // connected_clients (a gauge)
}

// parseInfo reads INFO's "key:value" lines.
func parseInfo(s string) redisStats {
	st := redisStats{cmds: map[string]int64{}}
	for _, l := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			// calls=12,usec=...,...
			for _, f := range strings.Split(v, ",") {
				if n, ok := strings.CutPrefix(f, "calls="); ok && name != "info" {
					st.cmds[name], _ = strconv.ParseInt(n, 10, 64)
				}
			}
			continue
		}
		n, _ := strconv.ParseFloat(v, 64)
		switch k {
		case "total_reads_processed":
			st.reads = int64(n)
		case "total_net_input_bytes":
			st.netIn = int64(n)
		case "total_net_output_bytes":
			st.netOut = int64(n)
		case "used_cpu_user", "used_cpu_sys":
			st.cpu += n
		case "pubsub_channels":
			st.pubsubChannels = int64(n)
		case "connected_clients":
			st.connectedClient = int64(n)
		}
	}
	return st
}

// redisMeter reads redis-server's INFO at both ends of a measured window. Each reading is one INFO on a new
// connection: INFO is left out of the command counts, and the end reading's own read event is taken off the reads.
type redisMeter struct {
	addr       string
	a, b       redisStats
	errA, errB error
}

func (m *redisMeter) read() (redisStats, error) {
	s, err := redisDo(m.addr, "INFO", "all")
	if err != nil {
		return redisStats{}, err
	}
	return parseInfo(s), nil
}

func (m *redisMeter) begin() { m.a, m.errA = m.read() }
func (m *redisMeter) end()   { m.b, m.errB = m.read() }

// redisDelta is redis-server's work over a window.
type redisDelta struct {
	cmds          map[string]int64
	total         int64 // commands
	reads         int64
	netIn, netOut int64
	cpu           float64
	channels      int64 // pubsub_channels at the end
}

func (m *redisMeter) delta() (redisDelta, error) {
	if err := errors.Join(m.errA, m.errB); err != nil {
		return redisDelta{}, err
	}
	d := redisDelta{cmds: map[string]int64{}, reads: m.b.reads - m.a.reads - 1, netIn: m.b.netIn - m.a.netIn,
		netOut: m.b.netOut - m.a.netOut, cpu: m.b.cpu - m.a.cpu, channels: m.b.pubsubChannels}
	for k, v := range m.b.cmds {
		if n := v - m.a.cmds[k]; n > 0 {
			d.cmds[k] = n
			d.total += n
		}
	}
	return d, nil
}

// top lists the commands by count, most first, each with its count per unit: "XADD 120 (1.000)".
func (d redisDelta) top(units int) string {
	if len(d.cmds) == 0 {
		return "none"
	}
	names := make([]string, 0, len(d.cmds))
	for k := range d.cmds {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		if d.cmds[a] != d.cmds[b] {
			return int(d.cmds[b] - d.cmds[a])
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %d (%.3f)", strings.ToUpper(k), d.cmds[k], float64(d.cmds[k])/float64(max(units, 1))))
	}
	return strings.Join(parts, ", ")
}
