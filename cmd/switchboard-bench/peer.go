package main

// The real peer: TBXark's mcp-proxy (github.com/TBXark/mcp-proxy), an MCP aggregator in Go on mark3labs/mcp-go,
// built from source and measured beside the plain proxy and the simple bridge in the load and stdio scenarios.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// defaultPeer is the version the bench builds when -mcp-proxy is not given. The Go module proxy serves this exact
// version but no version list for the module, so the version is spelled out: "@latest" does not resolve.
const defaultPeer = "github.com/TBXark/mcp-proxy@v0.43.2"

// noPeer is the -mcp-proxy value that leaves the peer out.
const noPeer = "none"

// peerBinary is TBXark's mcp-proxy, built or found, and the label the report gives it.
type peerBinary struct {
	path, label string
}

// buildPeer makes spec into a binary in dir: an existing file is taken as it is; module@version is downloaded
// through the Go module proxy (go mod download) and built from its source, with its own go.mod and go.sum.
func buildPeer(dir, spec string) (peerBinary, error) {
	if fi, err := os.Stat(spec); err == nil && !fi.IsDir() {
		return peerBinary{path: spec, label: "mcp-proxy (" + filepath.Base(spec) + ")"}, nil
	}
	mod, version, ok := strings.Cut(spec, "@")
	if !ok || mod == "" || version == "" {
		return peerBinary{}, fmt.Errorf("%q is neither a file nor module@version", spec)
	}
	dl := exec.Command("go", "mod", "download", "-json", spec)
	dl.Dir = dir // outside any module: the download is the module's own, not ours
	dl.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	dl.Stderr = &stderr
	out, err := dl.Output()
	var got struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &got); jerr == nil && got.Error != "" {
		return peerBinary{}, fmt.Errorf("go mod download %s: %s", spec, got.Error)
	}
	if err != nil || got.Dir == "" {
		return peerBinary{}, fmt.Errorf("go mod download %s: %v\n%s", spec, err, bytes.TrimSpace(stderr.Bytes()))
	}
	bin := filepath.Join(dir, "mcp-proxy")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Dir = got.Dir
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if b, err := build.CombinedOutput(); err != nil {
		return peerBinary{}, fmt.Errorf("building %s: %v\n%s", spec, err, b)
	}
	return peerBinary{path: bin, label: "mcp-proxy " + version}, nil
}

// peerProc is a running mcp-proxy with one server behind it.
type peerProc struct {
	*child
	url string // the server's MCP endpoint
}

// peerServer is one entry of mcp-proxy's mcpServers: a stdio command, or a streamable HTTP URL.
type peerServer struct {
	Command       string   `json:"command,omitempty"`
	Args          []string `json:"args,omitempty"`
	URL           string   `json:"url,omitempty"`
	TransportType string   `json:"transportType,omitempty"`
}

// start writes mcp-proxy's config (its documented v2 form: streamable HTTP in front, stateless, no logging, no
// auth; one server named name) to dir and starts it, then waits until the server answers initialize. mcp-proxy
// mounts a server only once its client has connected, and says so only in its log, so readiness is an answer.
// It is started as pin places a middle process.
func (pb peerBinary) start(dir string, pin cpuPin, name string, srv peerServer) (*peerProc, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"mcpProxy": map[string]any{
			"baseURL": "http://" + addr, "addr": addr, "name": "switchboard-bench peer", "version": "1.0.0",
			"type": "streamable-http", "options": map[string]any{"logEnabled": false, "panicIfInvalid": true},
		},
		"mcpServers": map[string]any{name: srv},
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "mcp-proxy-"+name+".json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, err
	}
	bin, args := pin.middleCommand(pb.path, "-config", path, "-expand-env=false")
	c, err := startChild(pb.label, false, bin, args...)
	if err != nil {
		return nil, err
	}
	p := &peerProc{child: c, url: "http://" + addr + "/" + name + "/"}
	if err := p.waitReady(); err != nil {
		c.stop()
		return nil, err
	}
	return p, nil
}

// waitReady polls with initialize every 20 ms until it is answered, for at most 60 s.
func (p *peerProc) waitReady() error {
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + clientProtocol +
		`","capabilities":{},"clientInfo":{"name":"switchboard-bench","version":"1"}}}`
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p.exited() {
			return fmt.Errorf("%s exited: %v\nlog:\n%s", p.name, p.err, p.logs)
		}
		req, err := http.NewRequest(http.MethodPost, p.url, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("%s did not answer initialize at %s within 60s", p.name, p.url),
				fmt.Errorf("log:\n%s", p.logs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// peerLoadTable writes the load scenario's comparison of switchboard serve with the peer, labelled label.
// mcp-proxy keeps one upstream session for all its clients, so serve's shared session is the like-for-like row;
// per-client is beside it.
func peerLoadTable(out io.Writer, label string, clients []int, byKey map[string]loadResult) {
	fmt.Fprintf(out, "\n### Against %s, a real peer (same run)\n\n"+
		"| clients | peer calls/s | peer added p50 µs | peer CPU µs/call | serve shared ÷ peer calls/s | serve per-client ÷ peer calls/s | serve shared added p50 ÷ peer's | serve shared CPU per call ÷ peer's |\n"+
		"|---:|---:|---:|---:|---:|---:|---:|---:|\n", label)
	for _, n := range clients {
		d, p := byKey[fmt.Sprint(directName, n)], byKey[fmt.Sprint(label, n)]
		s, g := byKey[fmt.Sprint(sharedName, n)], byKey[fmt.Sprint(perClientName, n)]
		pa, sa := p.pct(.5)-d.pct(.5), s.pct(.5)-d.pct(.5)
		pc, sc := perCall(p.midCPU, p.calls), perCall(s.midCPU, s.calls)
		fmt.Fprintf(out, "| %d | %.0f | %s | %.1f | %s | %s | %s | %s |\n", n, p.throughput(), us(pa), pc*1e6,
			ratio(s.throughput(), p.throughput()), ratio(g.throughput(), p.throughput()), ratio(float64(sa), float64(pa)), ratio(sc, pc))
	}
}
