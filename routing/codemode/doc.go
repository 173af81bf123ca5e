// Package codemode runs code-mode scripts (issue 35): a model writes one short JavaScript or TypeScript
// program that calls many tools, filters and joins their results, and only what it prints and returns goes
// back to the model.
//
// # The language
//
// A script is the body of an async function: top-level await and return work. A script goja parses runs as it
// is; TypeScript (and text TypeScript reads otherwise than JavaScript) is stripped by esbuild first (ES2017 and
// later; newer syntax is lowered). `await tools.NAME(args)`
// calls the tool through the run's [Caller]: it resolves to the tool's structuredContent when it has one, else
// its content array; a tool error (isError, or a JSON-RPC error) is a thrown Error carrying the upstream's
// message. console.log is captured; progress(n, total, msg) reaches [Run.Progress]; setTimeout is the only
// clock (Date sees the epoch). There is no require, network, file system or environment.
//
// # Where scripts run
//
// An [Engine] with [Options.Worker] runs each script in a sandbox worker process: the gateway's own executable
// re-executed with a hidden subcommand that calls [WorkerMain]. A worker (but one built with the race detector) bounds its memory with RLIMIT_DATA
// (and writes no files, opens few descriptors), speaks one JSON frame a line on stdin and stdout, and sends
// the script's tool calls back to the parent, which makes them. The pool is bounded (Options.Workers), and so
// is the queue before it (Options.MaxWaiting; past it Run returns [ErrBusy]). A worker whose run broke a limit
// is stopped and replaced; one whose run ended cleanly serves the next run, each run in a fresh interpreter.
// Without Options.Worker scripts run in the gateway's process, where every limit but memory holds.
//
// # Limits
//
// [Limits] bound wall time, CPU time (the interpreter is interrupted), tool calls, calls in flight (more
// wait), output (truncated with a note saying how much), stack depth and pending timers. A run that breaks one
// ends with a [*LimitError] naming it. The parent enforces what it can itself (wall time, the call budget,
// exact tool names): it does not trust the worker.
//
// # Consent
//
// A call to a tool that is not readOnlyHint: true is a write: the run's [Approver] is asked first, one question
// at a time, and an [AllowForRun] answer is remembered for the rest of the run. A declined write, or any write
// in a run without an Approver, throws in the script.
//
// [Describe] renders the TypeScript declarations describe_tools returns, and [Brief] those search_tools returns
// in code mode. docs/code-mode.md is the user's guide.
package codemode
