package codemode

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dop251/goja"
)

// install gives the script its globals: tools, console, progress, setTimeout and clearTimeout. Nothing else
// reaches outside the VM: goja has no require, network, file system or environment.
func (s *script) install() error {
	vm := s.vm
	g := vm.GlobalObject()
	s.errorCtor = g.Get("Error")
	jsonObj := g.Get("JSON").ToObject(vm)
	s.jsonParse, _ = goja.AssertFunction(jsonObj.Get("parse"))
	s.stringify, _ = goja.AssertFunction(jsonObj.Get("stringify"))
	freeze, _ := goja.AssertFunction(g.Get("Object").ToObject(vm).Get("freeze"))

	tools := vm.NewObject()
	if err := tools.SetPrototype(nil); err != nil {
		return err
	}
	for _, name := range s.spec.Tools {
		if err := tools.DefineDataProperty(name, vm.ToValue(s.toolFunc(name)), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE); err != nil {
			return err
		}
	}
	if _, err := freeze(goja.Undefined(), tools); err != nil {
		return err
	}
	// A name outside the set fails inside the VM, where the gateway would never see it: the proxy notes it for
	// the audit. It traps reads of names only; writes, definitions, deletions, keys and the prototype still
	// meet the frozen object.
	view := vm.NewProxy(tools, &goja.ProxyTrapConfig{
		Get: func(target *goja.Object, name string, _ goja.Value) goja.Value {
			if v := target.Get(name); v != nil {
				return v
			}
			s.noteUnknown(name)
			return nil // no member: typeof says "undefined", and a call's TypeError names the name
		},
	})
	console := vm.NewObject()
	for _, m := range []string{"log", "info", "warn", "error", "debug"} {
		if err := console.Set(m, s.log); err != nil {
			return err
		}
	}
	for name, v := range map[string]any{
		"tools": vm.ToValue(view), "console": console, "progress": s.progress,
		"setTimeout": s.setTimeout, "clearTimeout": s.clearTimeout,
	} {
		// tools cannot be replaced or redefined; the others are the script's own to shadow.
		w := goja.FLAG_TRUE
		if name == "tools" {
			w = goja.FLAG_FALSE
		}
		if err := g.DefineDataProperty(name, vm.ToValue(v), w, w, goja.FLAG_FALSE); err != nil {
			return err
		}
	}
	return nil
}

// maxUnknown bounds the names outside the set a run reports: a script that asks for many reports the first.
const maxUnknown = 16

// noteUnknown notes a name the script asked of tools that is not in its set. The names the language itself asks
// of any object (await asks for then, JSON.stringify for toJSON, string conversion for toString and valueOf, and
// the like of Object.prototype) are no tool's: they are not noted.
func (s *script) noteUnknown(name string) {
	switch name {
	case "then", "toJSON", "constructor", "toString", "toLocaleString", "valueOf", "hasOwnProperty",
		"isPrototypeOf", "propertyIsEnumerable", "__proto__", "__defineGetter__", "__defineSetter__",
		"__lookupGetter__", "__lookupSetter__":
		return
	}
	if len(s.unknown) < maxUnknown && !slices.Contains(s.unknown, name) {
		s.unknown = append(s.unknown, name)
	}
}

// toolFunc is tools.<name>: it sends the call and returns a promise its result settles. The name is bound
// here, in Go: whatever the script does to the tools object or the function, the call names this tool.
func (s *script) toolFunc(name string) func(goja.FunctionCall) goja.Value {
	return func(call goja.FunctionCall) goja.Value {
		lim := s.spec.Limits
		if s.calls >= lim.MaxCalls {
			s.vm.Interrupt(interrupt{LimitCalls, fmt.Sprintf("the script made more than %d tool calls", lim.MaxCalls)})
			p, _, _ := s.vm.NewPromise()
			return s.vm.ToValue(p)
		}
		args := call.Argument(0)
		var raw string
		if goja.IsUndefined(args) || goja.IsNull(args) {
			raw = "{}"
		} else {
			v, err := s.stringify(goja.Undefined(), args)
			if err != nil {
				panic(err)
			}
			raw = v.String()
		}
		if len(raw) > lim.MaxArgBytes {
			panic(s.vm.NewTypeError(fmt.Sprintf("tools.%s: arguments of %d bytes exceed the limit of %d", name, len(raw), lim.MaxArgBytes)))
		}
		if !strings.HasPrefix(raw, "{") {
			panic(s.vm.NewTypeError(fmt.Sprintf("tools.%s: arguments must be an object", name)))
		}
		s.calls++
		s.nextID++
		id := s.nextID
		p, resolve, reject := s.vm.NewPromise()
		if err := s.send(frame{T: frameCall, Run: s.run, ID: id, Name: name, Args: json.RawMessage(raw)}); err != nil {
			panic(s.vm.NewGoError(err))
		}
		s.pending[id] = pendingCall{name: name, resolve: resolve, reject: reject}
		return s.vm.ToValue(p)
	}
}

// log is console.log and its siblings: the arguments, strings as they are and the rest as JSON, on one line.
func (s *script) log(call goja.FunctionCall) goja.Value {
	var b strings.Builder
	for i, a := range call.Arguments {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s.format(a))
	}
	b.WriteByte('\n')
	s.out.write(b.String())
	return goja.Undefined()
}

func (s *script) format(v goja.Value) string {
	if o, ok := v.(*goja.Object); ok {
		if _, isFunc := goja.AssertFunction(o); !isFunc && o.ClassName() != "Error" {
			if j, err := s.stringify(goja.Undefined(), o); err == nil && !goja.IsUndefined(j) {
				return j.String()
			}
		}
	}
	return s.describe(v)
}

// progress is progress(n, total, msg): it reaches the caller's Progress.
func (s *script) progress(n, total float64, msg string) {
	if err := s.send(frame{T: frameProgress, Run: s.run, N: n, Total: total, Msg: msg}); err != nil {
		panic(s.vm.NewGoError(err))
	}
}

// setTimeout is bounded: at most MaxTimers pending, none later than the run's wall time.
func (s *script) setTimeout(call goja.FunctionCall) goja.Value {
	fn, ok := goja.AssertFunction(call.Argument(0))
	if !ok {
		panic(s.vm.NewTypeError("setTimeout: the callback is not a function"))
	}
	if len(s.timers) >= s.spec.Limits.MaxTimers {
		s.vm.Interrupt(interrupt{LimitTimers, fmt.Sprintf("the script has more than %d pending timers", s.spec.Limits.MaxTimers)})
		return goja.Undefined()
	}
	ms := call.Argument(1).ToFloat()
	d := time.Duration(min(max(ms, 0), float64(s.spec.Limits.WallTime/time.Millisecond))) * time.Millisecond
	s.nextTime++
	var args []goja.Value
	if len(call.Arguments) > 2 {
		args = append(args, call.Arguments[2:]...)
	}
	s.timers = append(s.timers, timer{id: s.nextTime, at: time.Now().Add(d), fn: fn, args: args})
	return s.vm.ToValue(s.nextTime)
}

func (s *script) clearTimeout(id int64) {
	for i, t := range s.timers {
		if t.id == id {
			s.timers = append(s.timers[:i], s.timers[i+1:]...)
			return
		}
	}
}

// output is what the script printed, up to max bytes; past it the rest is counted, not kept.
type output struct {
	b       strings.Builder
	max     int
	dropped int
}

func (o *output) write(s string) {
	room := o.max - o.b.Len()
	if room < len(s) {
		o.dropped += len(s) - max(room, 0)
		s = s[:max(room, 0)]
	}
	o.b.WriteString(s)
}

// value keeps a return value that fits what is left of the output budget; a larger one is printed, truncated,
// and not returned.
func (o *output) value(v json.RawMessage) json.RawMessage {
	if len(v) <= o.max-o.b.Len() {
		return v
	}
	o.write(string(v))
	return nil
}

// String is the output with a note on what was cut.
func (o *output) String() string {
	if o.dropped == 0 {
		return o.b.String()
	}
	return fmt.Sprintf("%s\n[output truncated: %d more bytes not shown (limit %d bytes)]\n", o.b.String(), o.dropped, o.max)
}
