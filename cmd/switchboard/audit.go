package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/switchboard-mcp/switchboard/auth"
)

const auditUsage = `Usage:
  switchboard audit verify [--allow-truncated-head] FILE   check the hash chains of the audit records in a JSON log

FILE is a log written with log.format: json, or - for standard input. Exit status: 0 when every chain is intact,
1 when one is broken (or the file holds no chained audit records), 2 on a usage error or a file that cannot be read.
`

// auditCommand is `switchboard audit`: today only `audit verify`.
func auditCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, auditUsage)
		return exitUsage
	}
	switch args[0] {
	case "verify":
		return auditVerify(args[1:], stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, auditUsage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "switchboard audit: unknown command %q\n\n%s", args[0], auditUsage)
		return exitUsage
	}
}

// auditVerify checks the audit chains of a log and prints one line per stream: intact, or its first break.
func auditVerify(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, auditUsage+"\nFlags:\n"); fl.PrintDefaults() }
	var opts auth.AuditVerifyOptions
	fl.BoolVar(&opts.AllowTruncatedHead, "allow-truncated-head", false,
		"accept a stream whose first record in FILE is not seq 1 (a later file of a rotated log); without it that is a break")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	if fl.NArg() != 1 {
		fmt.Fprintf(stderr, "switchboard audit verify: want one FILE (or - for standard input), got %d arguments; flags go before FILE\n\n%s", fl.NArg(), auditUsage)
		return exitUsage
	}
	name := fl.Arg(0)
	in := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "switchboard audit verify: %v\n", err)
			return exitUsage
		}
		defer f.Close()
		in = f
	} else {
		name = "standard input"
	}
	rep, err := auth.VerifyAuditLog(in, opts)
	if err != nil {
		fmt.Fprintf(stderr, "switchboard audit verify: %s: %v\n", name, err)
		return exitUsage
	}
	printAuditReport(stdout, name, rep)
	if !rep.Intact() {
		return exitFailure
	}
	return exitOK
}

// printAuditReport writes a report a person can act on: each stream with its records and lines, and where and
// how a broken one breaks.
func printAuditReport(w io.Writer, name string, rep *auth.AuditReport) {
	broken := 0
	for _, s := range rep.Streams {
		if b := s.Break; b != nil {
			broken++
			fmt.Fprintf(w, "stream %s: BROKEN at line %d (%s): %s\n", s.ID, b.Line, b.Kind, b.Detail)
			continue
		}
		head := ""
		if s.FirstSeq > 1 {
			head = fmt.Sprintf("; starts at seq %d, earlier records are not in %s", s.FirstSeq, name)
		}
		records := "records"
		if s.Records == 1 {
			records = "record"
		}
		fmt.Fprintf(w, "stream %s: intact: %d %s, seq %d..%d on lines %d..%d%s\n", s.ID, s.Records, records, s.FirstSeq, s.LastSeq, s.FirstLine, s.LastLine, head)
	}
	for _, m := range rep.Malformed {
		fmt.Fprintf(w, "BROKEN: %s\n", m.Detail)
	}
	if rep.Unchained > 0 {
		fmt.Fprintf(w, "%d audit records without a chain (written before chaining) were not checked\n", rep.Unchained)
	}
	switch {
	case len(rep.Streams) == 0:
		fmt.Fprintf(w, "%s holds no chained audit records: nothing was verified (the gateway must log with log.format: json)\n", name)
	case rep.Intact():
		fmt.Fprintf(w, "%s: %d stream(s), every chain intact\n", name, len(rep.Streams))
	default:
		fmt.Fprintf(w, "%s: %d stream(s), %d broken, %d malformed line(s)\n", name, len(rep.Streams), broken, len(rep.Malformed))
	}
}
