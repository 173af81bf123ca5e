package routing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/switchboard-mcp/switchboard/routing/codemode"
	"github.com/switchboard-mcp/switchboard/upstream/jsonrpc"
	"github.com/switchboard-mcp/switchboard/upstream/protocol"
)

// A 2026-07-28 client has no session to ask during a run ("servers never send requests"). A script's write asks
// it as any multi round-trip request does: run_script is answered with an InputRequiredResult carrying the
// consent question and a requestState the parkTable seals (bound to the principal, to tools/call run_script, and
// to this replica, where the run goes on waiting); the client's retry, run_script again with inputResponses and
// that requestState, attaches to the run, which answers it, or asks its next question, on the retry's stream.

// consentInputKey is the consent question's key in inputRequests.
const consentInputKey = "consent"

// scriptParkPrefix starts the park id of a waiting run, in its requestState: the parkTable's own parks have
// none, so a retry names one or the other.
const scriptParkPrefix = "cm-"

// scriptWait is a run waiting for a 2026-07-28 client's answer.
type scriptWait struct {
	run   *scriptRun
	bind  string
	retry chan scriptRetry // capacity 1: the first retry answers
}

// scriptRetry is the client's retry: its answers, and the request the run now answers.
type scriptRetry struct {
	answers map[string]json.RawMessage
	at      runAttach
}

// askRetry puts a consent question (params of elicitation/create) to a 2026-07-28 client: it answers the run's
// request with input_required and waits, detached, for the retry (parkTTL at most).
func (h *codeHost) askRetry(ctx context.Context, s *Session, run *scriptRun, question []byte) (codemode.Decision, error) {
	var rb [8]byte
	rand.Read(rb[:])
	park := scriptParkPrefix + hex.EncodeToString(rb[:])
	w := &scriptWait{run: run, bind: bindHash(s.params.Principal, protocol.MethodToolsCall, runScriptTool), retry: make(chan scriptRetry, 1)}
	h.mu.Lock()
	at := run.at
	if at.out == nil {
		h.mu.Unlock()
		return codemode.Decline, errors.New("run_script's request is gone")
	}
	run.round++
	state := s.r.parkTable.stateToken(park, run.round, w.bind, time.Now().Add(parkTTL))
	if h.waits == nil {
		h.waits = map[string]*scriptWait{}
	}
	h.waits[park] = w
	h.detachLocked(run)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.waits, park)
		h.mu.Unlock()
	}()
	b := append([]byte(nil), `{"resultType":"input_required","inputRequests":{"`+consentInputKey+`":{"method":"elicitation/create","params":`...)
	b = append(b, question...)
	b = append(b, `}},"requestState":`...)
	b = jsonrpc.AppendQuote(b, state)
	reply(at.out, at.id, append(b, '}'))
	timer := time.NewTimer(parkTTL)
	defer timer.Stop()
	select {
	case r := <-w.retry:
		answer, ok := r.answers[consentInputKey]
		if !ok {
			return codemode.Decline, errors.New("the retry did not answer the consent question")
		}
		return consentAnswer(answer), nil
	case <-timer.C:
		return codemode.Decline, fmt.Errorf("the client did not answer within %s", parkTTL)
	case <-ctx.Done():
		return codemode.Decline, ctx.Err()
	}
}

// abandonWait ends the run waiting on the question of requestState state, reporting whether one was: a task whose
// run waits for consent was cancelled, and no retry will come.
func (h *codeHost) abandonWait(s *Session, state string) bool {
	parts, ok := s.r.parkTable.openState(state)
	if !ok || !strings.HasPrefix(parts[0], scriptParkPrefix) {
		return false
	}
	h.mu.Lock()
	w := h.waits[parts[0]]
	h.mu.Unlock()
	if w == nil {
		return false
	}
	w.run.cancel()
	return true
}

// resume takes a 2026-07-28 client's retry of a run_script that asked a question, reporting whether the
// requestState was a waiting run's: the run then answers the retry.
func (h *codeHost) resume(s *Session, m jsonrpc.Message, out *Stream, state string) bool {
	parts, ok := s.r.parkTable.openState(state)
	if !ok || !strings.HasPrefix(parts[0], scriptParkPrefix) {
		return false
	}
	fail := func(msg string) bool {
		replyError(out, m.ID(), protocol.CodeInvalidParams, msg)
		return true
	}
	if exp, err := strconv.ParseInt(parts[2], 10, 64); err != nil || time.Now().Unix() > exp {
		return fail("requestState has expired: run the script again")
	}
	h.mu.Lock()
	w := h.waits[parts[0]]
	h.mu.Unlock()
	switch {
	case parts[3] != bindHash(s.params.Principal, m.Method(), requestName(m)):
		return fail(errState.Error())
	case w == nil || w.run.s.params.Endpoint != s.params.Endpoint:
		return fail("the script is no longer waiting for this answer (it ended, or it was answered already): run it again")
	}
	var p struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	_ = json.Unmarshal(m.Params(), &p)
	at := runAttach{out: out, id: clone(m.ID())}
	if st, e, ok := jsonrpc.Lookup(m.Params(), "_meta", "progressToken"); ok {
		at.token = clone(m.Params()[st:e])
	}
	h.mu.Lock()
	if h.waits[parts[0]] != w || w.run.attached {
		h.mu.Unlock()
		return fail("the script's question was answered already")
	}
	key := runKey{s, s.callKey(out, at.id)}
	if _, dup := h.runs[key]; dup {
		h.mu.Unlock()
		return fail(fmt.Sprintf("request id %s is already in use by a request in flight", m.ID()))
	}
	w.run.at, w.run.key, w.run.attached = at, key, true
	h.runs[key] = w.run
	delete(h.waits, parts[0])
	h.mu.Unlock()
	w.retry <- scriptRetry{answers: p.InputResponses, at: at}
	return true
}
