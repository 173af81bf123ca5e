package main

// A minimal raw-HTTP MCP client over streamable HTTP: one session, requests one at a time, answers read as JSON
// or as an SSE stream. Cheaper than the SDK client, so the load generator takes less of the machine.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

const clientProtocol = "2025-11-25"

// newHTTPClient returns a client with enough idle connections for every simulated client to keep its own.
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			MaxIdleConns: 4096, MaxIdleConnsPerHost: 4096, IdleConnTimeout: 90 * time.Second,
			DisableCompression: true, ForceAttemptHTTP2: false,
		},
		Timeout: 30 * time.Second,
	}
}

type mcpClient struct {
	hc      *http.Client
	url     string
	sid     string
	version string // negotiated by initialize
	nextID  int64
	body    bytes.Buffer
}

// rpcAnswer is the part of a JSON-RPC response the tool checks.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *mcpClient) post(body []byte) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	h := req.Header
	h["Content-Type"] = []string{"application/json"}
	h["Accept"] = []string{"application/json, text/event-stream"}
	if c.sid != "" {
		h["Mcp-Session-Id"] = []string{c.sid}
	}
	if c.version != "" { // after initialize: the version it agreed
		h["Mcp-Protocol-Version"] = []string{c.version}
	}
	return c.hc.Do(req)
}

// request sends one request and returns its response's result, failing on a JSON-RPC error or HTTP status.
func (c *mcpClient) request(method string, params string) (json.RawMessage, *http.Response, error) {
	c.nextID++
	id := strconv.FormatInt(c.nextID, 10)
	c.body.Reset()
	c.body.WriteString(`{"jsonrpc":"2.0","id":`)
	c.body.WriteString(id)
	c.body.WriteString(`,"method":"`)
	c.body.WriteString(method)
	c.body.WriteString(`","params":`)
	c.body.WriteString(params)
	c.body.WriteByte('}')
	resp, err := c.post(c.body.Bytes())
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, resp, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, bytes.TrimSpace(b))
	}
	ans, err := readAnswer(resp, id)
	if err != nil {
		return nil, resp, fmt.Errorf("%s: %w", method, err)
	}
	if ans.Error != nil {
		return nil, resp, fmt.Errorf("%s: JSON-RPC error %d: %s", method, ans.Error.Code, ans.Error.Message)
	}
	if ans.Result == nil {
		return nil, resp, fmt.Errorf("%s: response without result", method)
	}
	return ans.Result, resp, nil
}

// readAnswer finds the response with the given id in a JSON body or an SSE stream.
func readAnswer(resp *http.Response, id string) (rpcAnswer, error) {
	ct := resp.Header.Get("Content-Type")
	if len(ct) >= 16 && ct[:16] == "application/json" {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return rpcAnswer{}, err
		}
		var a rpcAnswer
		if err := json.Unmarshal(b, &a); err != nil {
			return rpcAnswer{}, fmt.Errorf("bad JSON answer: %v", err)
		}
		if string(a.ID) != id {
			return rpcAnswer{}, fmt.Errorf("answer id %s, want %s", a.ID, id)
		}
		return a, nil
	}
	if len(ct) < 17 || ct[:17] != "text/event-stream" {
		return rpcAnswer{}, fmt.Errorf("unexpected Content-Type %q", ct)
	}
	br := bufio.NewReaderSize(resp.Body, 8192)
	var data, long []byte
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a line longer than the buffer (a large list in one data line)
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && len(line) == 0 {
			return rpcAnswer{}, fmt.Errorf("SSE stream ended without the answer: %v", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				var a rpcAnswer
				if json.Unmarshal(data, &a) == nil && a.Method == "" && string(a.ID) == id {
					// Read the stream to its end, as an SDK client does: the server ends a POST's stream after the
					// answer, and a body closed before its end costs the keep-alive connection (net/http closes
					// it), which the gateway and the proxy then see as a cancelled request and a closed upstream
					// connection: every layer would re-dial, and dials per call would measure this client.
					_, _ = io.Copy(io.Discard, br)
					return a, nil
				}
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[5:], []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
		if err != nil {
			return rpcAnswer{}, fmt.Errorf("SSE stream ended without the answer: %v", err)
		}
	}
}

// initialize opens the session: initialize, then notifications/initialized.
func (c *mcpClient) initialize() error {
	res, resp, err := c.request("initialize", `{"protocolVersion":"`+clientProtocol+`","capabilities":{},"clientInfo":{"name":"switchboard-bench","version":"1.0.0"}}`)
	if err != nil {
		return err
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res, &init); err != nil || init.ProtocolVersion == "" {
		return fmt.Errorf("initialize: no protocolVersion in %s", res)
	}
	c.version = init.ProtocolVersion
	// "A server using the Streamable HTTP transport MAY assign a session ID at initialization time": a stateless
	// server (the peer's) assigns none, and a stateful one that lost it fails the calls that follow.
	c.sid = resp.Header.Get("Mcp-Session-Id")
	resp, err = c.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("notifications/initialized: HTTP %d", resp.StatusCode)
	}
	return nil
}

// callTool calls a tool and checks that the result is not a tool error.
func (c *mcpClient) callTool(params string) error {
	res, _, err := c.request("tools/call", params)
	if err != nil {
		return err
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("tools/call: bad result: %v", err)
	}
	if r.IsError {
		return fmt.Errorf("tools/call: tool error: %s", res)
	}
	return nil
}

// close ends the session (DELETE); errors are ignored: the measurement is over.
func (c *mcpClient) close() {
	if c.sid == "" {
		return
	}
	req, err := http.NewRequest(http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", c.sid)
	req.Header.Set("Mcp-Protocol-Version", clientProtocol)
	if resp, err := c.hc.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c.sid = ""
}

// listPages lists every page of tools/list, returning each page's latency and the number of tools.
func listPages(c *mcpClient) ([]time.Duration, int, error) {
	var lats []time.Duration
	tools, cursor := 0, ""
	for {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + strconv.Quote(cursor) + `}`
		}
		t0 := time.Now()
		res, _, err := c.request("tools/list", params)
		lats = append(lats, time.Since(t0))
		if err != nil {
			return lats, tools, err
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return lats, tools, fmt.Errorf("tools/list: %v", err)
		}
		tools += len(page.Tools)
		if page.NextCursor == "" {
			return lats, tools, nil
		}
		cursor = page.NextCursor
		if len(lats) > 100000 {
			return lats, tools, errors.New("tools/list: no end to the pages")
		}
	}
}
