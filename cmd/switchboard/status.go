package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/switchboard-mcp/switchboard/routing"
)

// status prints the live state of a running gateway, from its /readyz.
func status(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("status", flag.ContinueOnError)
	fl.SetOutput(stderr)
	url := fl.String("url", "", "base URL of the running gateway (default: from --config's listen, else http://127.0.0.1:8080)")
	path := fl.String("config", "", "config file of the running gateway, to find its address")
	admin := fl.String("admin", "", "base URL of the gateway's admin listener (its --admin-listen), to list the definitions that differ from their pins")
	if err := fl.Parse(args); err != nil {
		return exitUsage
	}
	base := strings.TrimSuffix(*url, "/")
	if base == "" {
		base = "http://127.0.0.1:8080"
		if *path != "" {
			cfg, code := loadConfig(*path, stderr)
			if cfg == nil {
				return code
			}
			base = "http://" + cfg.Listen
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
	if err != nil {
		fmt.Fprintf(stderr, "switchboard status: %v\n", err)
		return exitUsage
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "switchboard status: no gateway answers at %s: %v\n", base, err)
		return exitFailure
	}
	defer resp.Body.Close()
	var st struct {
		Ready     bool                     `json:"ready"`
		Sessions  int                      `json:"sessions"`
		Upstreams []routing.UpstreamStatus `json:"upstreams"`
		Conflicts []string                 `json:"conflicts"`
		Changed   int                      `json:"definitionsChanged"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st); err != nil {
		fmt.Fprintf(stderr, "switchboard status: %s/readyz did not answer as a Switchboard gateway does (HTTP %s): %v\n", base, resp.Status, err)
		return exitFailure
	}
	ready := "ready"
	if !st.Ready {
		ready = "starting"
	}
	fmt.Fprintf(stdout, "%s: %s, %d session(s)\n\n", base, ready, st.Sessions)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UPSTREAM\tTRANSPORT\tSESSION\tSTATE\tTOOLS\tPROMPTS\tRESOURCES\tRESTARTS\tSERVER\tERROR")
	for _, u := range st.Upstreams {
		state := u.State
		if u.Drained {
			state += " (drained)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", u.Name, u.Transport, u.Session, state,
			u.Tools, u.Prompts, u.Resources+u.Templates, u.Restarts, u.Server, u.Error)
	}
	tw.Flush()
	for _, c := range st.Conflicts {
		fmt.Fprintf(stdout, "\nconflict: %s", c)
	}
	if st.Changed > 0 {
		fmt.Fprintf(stdout, "\n%d definition(s) differ from their pins (approve with POST /admin/pins/approve on the admin listener)", st.Changed)
		if *admin == "" {
			fmt.Fprintln(stdout, "; --admin URL lists them")
		} else if err := printDrift(ctx, stdout, strings.TrimSuffix(*admin, "/")); err != nil {
			fmt.Fprintf(stderr, "switchboard status: %v\n", err)
			return exitFailure
		}
	}
	if !st.Ready {
		return exitFailure
	}
	return exitOK
}

// printDrift lists the definitions that differ from their pins, from the admin API.
func printDrift(ctx context.Context, stdout io.Writer, admin string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/admin/pins", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("no admin API answers at %s: %w", admin, err)
	}
	defer resp.Body.Close()
	var body struct{ Drift []routing.Drift }
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/admin/pins answered HTTP %s: %v", admin, resp.Status, err)
	}
	fmt.Fprintln(stdout, ":")
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UPSTREAM\tKIND\tNAME\tEXPOSED\tSTATE\tPINNED\tSEEN")
	for _, d := range body.Drift {
		state, pinned := "served", d.Pinned
		if d.Withheld {
			state = "withheld"
		}
		if pinned == "" {
			pinned = "(new)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Upstream, d.Kind, d.Name, d.Exposed, state, pinned, d.Seen)
	}
	return tw.Flush()
}
