package main

// TestE2ESearch: tool search (issue 16) end to end. The real switchboard binary fronts server-everything (stdio,
// per-client), server-memory (stdio, shared) and "suite", an official Go SDK server in this test process
// (streamable HTTP, one shared session) with 300 generated tools of made-up business domains, so that search runs
// over a large catalog. Endpoint /mcp/find is in search mode (include globs over the three upstreams, exclude
// globs hiding memory__delete_* and everything__get-env, alwaysList suite__invoice_*); /mcp/found is in search
// mode with exposeFound over everything; /mcp stays in list mode and shows the whole catalog. An override renames
// everything's long-running tool render_quarterly_report. The official TypeScript SDK client
// (testdata/e2e/search.mjs) and a raw 2026-07-28 client look at it:
//
//   - list: tools/list on /mcp/find is the two meta-tools, then the alwaysList tools (all pages, as /mcp lists
//     them);
//   - search: user-phrased queries find the right tool among ~330 (everything's sum, memory's entities, generated
//     ones), results valid against search_tools' listed outputSchema; out-of-range arguments are refused;
//   - rename: the renamed tool is found by its new name and description, and its old name is no result;
//     call_tool on it reports progress, is cancelled (the SDK rejects; the gateway counts the upstream leg
//     cancelled) and answers afterwards;
//   - direct: a found name is called with tools/call directly and through call_tool; an excluded one is not;
//   - hidden: excluded tools never appear, even for their own words with limit 50 (while /mcp/found, which does
//     not exclude them, ranks them first for those words);
//   - modern: a 2026-07-28 client lists the same meta-tools and gets the same search_tools results; its
//     search-mode lists are cacheScope private, and exposeFound lists nothing it found (it has no session);
//   - hybrid: a second gateway with search.embeddings, pointed at a fake OpenAI-compatible provider this test
//     serves (it knows that a folder is a directory), finds by a synonym a tool BM25 alone (the first gateway)
//     does not; the provider saw the Bearer key; when it fails (HTTP 500) search still answers, as BM25 does, and
//     the failures metric goes up;
//   - list_changed: suite adds a tool at runtime, which searches on /mcp/find then find; then one that alwaysList
//     lists: an open session of /mcp/find hears notifications/tools/list_changed for that one only, and its list
//     and its searches show both;
//   - exposeFound: after a search on /mcp/found the session hears list_changed and tools/list includes the found
//     tools.
//
// Gating and peers as TestE2E (e2eGate, SWITCHBOARD_E2E=require, SWITCHBOARD_E2E_RACE=1). Every wait is for an
// observable event, bounded by a guard; nothing asserts on elapsed time.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// searchWait bounds the waits of TestE2ESearch: a failure guard, never a timed assertion.
const searchWait = 30 * time.Second

// The test's names: the renamed long-running tool, the tool suite adds at runtime, the hybrid search's target
// (the only tool that mentions a directory), and the variable that holds the embeddings API key.
const (
	searchRenamed  = "render_quarterly_report"
	searchRenameTo = "Renders the quarterly sales report section by section, reporting progress as each section is done."
	searchAdded    = "suite__satellite_pass_predict"
	searchSynonym  = "suite__storage_directory_sync"
	searchKeyEnv   = "SWITCHBOARD_E2E_EMBEDDINGS_KEY"
)

// suiteParam is one argument of a generated tool.
type suiteParam struct{ name, desc string }

// suiteTool is one generated tool of the suite upstream.
type suiteTool struct {
	name, desc string
	params     []suiteParam
}

// suiteDomain is a made-up business domain: seven common operations on its records, and three of its own.
type suiteDomain struct {
	key, noun, plural, context string
	fields                     string // create's and update's arguments: "name: description; ..."
	own                        [3][3]string
}

// suiteParams parses "name: description; ...".
func suiteParams(s string) []suiteParam {
	var out []suiteParam
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		name, desc, _ := strings.Cut(p, ":")
		out = append(out, suiteParam{strings.TrimSpace(name), strings.TrimSpace(desc)})
	}
	return out
}

var suiteDomains = []suiteDomain{
	{"invoice", "invoice", "invoices", "An invoice bills a customer for line items, with a due date and a currency.",
		"customer_id: The customer billed; line_items: What is billed, with quantities and unit prices; due_date: When payment is due",
		[3][3]string{{"send_reminder", "Emails the customer a reminder that an unpaid invoice is past its due date.", "invoice_id: The unpaid invoice; note: A line added to the reminder"},
			{"void", "Voids an issued invoice so that it is no longer owed.", "invoice_id: The invoice to void; reason: Why it is voided"},
			{"mark_paid", "Records that an invoice was paid, with the payment date and method.", "invoice_id: The invoice; paid_on: The payment date; method: Card, transfer or cash"}}},
	{"ticket", "support ticket", "support tickets", "A support ticket is a customer's question or problem, handled by the helpdesk.",
		"subject: A one-line summary; body: The customer's message; priority: low, normal, high or urgent",
		[3][3]string{{"assign", "Assigns a support ticket to an agent or a team.", "ticket_id: The ticket; assignee: The agent or team"},
			{"escalate", "Escalates a support ticket to the next support tier and raises its priority, for an unhappy customer or a complaint.", "ticket_id: The ticket; reason: Why it is escalated"},
			{"add_comment", "Adds a public reply or a private internal note to a support ticket.", "ticket_id: The ticket; text: The reply; internal: Whether only agents see it"}}},
	{"customer", "customer account", "customer accounts", "A customer account holds a company's contacts, plan and billing details.",
		"company: The company's name; plan: The subscription plan; country: Where the company is based",
		[3][3]string{{"merge", "Merges two duplicate customer accounts into one, keeping the history of both.", "keep_id: The account kept; merge_id: The duplicate merged into it"},
			{"churn_risk", "Estimates how likely a customer is to cancel their subscription in the next quarter.", "customer_id: The customer"},
			{"add_tag", "Adds a label to a customer account, such as vip or beta.", "customer_id: The customer; tag: The label"}}},
	{"order", "sales order", "sales orders", "A sales order is what a buyer purchased in the web shop, with a shipping address.",
		"buyer_id: Who buys; items: Products and quantities; address: Where to ship",
		[3][3]string{{"cancel", "Cancels an order that has not shipped yet and releases its stock.", "order_id: The order; reason: Why"},
			{"refund", "Refunds money to the buyer for a returned or damaged order, in full or in part.", "order_id: The order; amount: How much to give back"},
			{"track", "Reports where the parcel of an order is now, from the carrier's tracking events.", "order_id: The order"}}},
	{"product", "product", "products", "A product is an item of the catalog, with a SKU, a price and stock per warehouse.",
		"sku: The stock keeping unit; title: The product's name; price: The list price",
		[3][3]string{{"set_price", "Changes the price of a product in a currency, from a date on.", "sku: The product; price: The new price; currency: ISO 4217 code; from: When it applies"},
			{"adjust_stock", "Adjusts the inventory count of a product in a warehouse after a stocktake.", "sku: The product; warehouse: Where; delta: Units added or removed"},
			{"upload_image", "Uploads a photo of a product and makes it the main picture.", "sku: The product; image_url: Where the photo is"}}},
	{"employee", "employee record", "employee records", "An employee record holds a person's job title, manager, team and start date.",
		"full_name: The person's name; job_title: Their role; manager_id: Who they report to",
		[3][3]string{{"onboard", "Starts onboarding a new hire: accounts, laptop and a first-week checklist.", "employee_id: The new hire; start_date: Their first day"},
			{"offboard", "Offboards a leaving employee: revokes access and collects equipment.", "employee_id: The employee; last_day: Their last working day"},
			{"request_leave", "Files a vacation or sick leave request for an employee, for a range of days.", "employee_id: The employee; from: First day off; to: Last day off; kind: vacation or sick"}}},
	{"payroll", "payroll period", "payroll periods", "A payroll period is a month or a fortnight for which salaries are paid.",
		"start: The first day; end: The last day; pay_date: When people are paid",
		[3][3]string{{"run", "Runs payroll for a pay period: computes every employee's salary, taxes and deductions and schedules the bank transfers.", "period_id: The pay period"},
			{"payslip", "Produces the payslip of one employee for a pay period, as a PDF.", "period_id: The pay period; employee_id: The employee"},
			{"tax_report", "Prepares the withholding tax report of a pay period for the tax authority.", "period_id: The pay period"}}},
	{"calendar_event", "calendar event", "calendar events", "A calendar event has a start, an end, a place and attendees.",
		"title: What it is; start: When it starts; end: When it ends; attendees: Who is invited",
		[3][3]string{{"invite", "Invites more people to a calendar event and sends them the invitation.", "event_id: The event; emails: Who to invite"},
			{"find_free_slot", "Finds a time when all the given people are free for a meeting of a given length.", "people: Whose calendars to compare; minutes: How long the meeting is; within_days: How far ahead to look"},
			{"reschedule", "Moves a calendar event to another time and tells the attendees.", "event_id: The event; start: The new start"}}},
	{"email", "email message", "email messages", "An email message of the team's shared mailbox.",
		"to: Recipients; subject: The subject line; body: The text",
		[3][3]string{{"send", "Sends an email to recipients, with a subject, a body and attachments.", "to: Recipients; subject: The subject; body: The text; attachments: Files to attach"},
			{"reply", "Replies to an email message, keeping the thread.", "message_id: The message answered; body: The reply"},
			{"mark_spam", "Marks an email message as spam and moves it out of the inbox.", "message_id: The message"}}},
	{"document", "document", "documents", "A document is a rich-text page of the team's wiki or drive.",
		"title: The document's title; content: Its text; owner: Who owns it",
		[3][3]string{{"share", "Shares a document with people or groups, as viewers or editors.", "document_id: The document; with: People or groups; role: viewer or editor"},
			{"translate", "Translates a document into another language.", "document_id: The document; language: The target language"},
			{"summarize", "Writes a short summary of a long document.", "document_id: The document; sentences: How long the summary is"}}},
	{"spreadsheet", "spreadsheet", "spreadsheets", "A spreadsheet has sheets of cells with values and formulas.",
		"title: The spreadsheet's title; sheets: The names of its sheets",
		[3][3]string{{"append_row", "Appends a row of values at the end of a sheet.", "spreadsheet_id: The spreadsheet; sheet: The sheet; values: The cells of the row"},
			{"formula_eval", "Evaluates a formula against the cells of a sheet and returns its value.", "spreadsheet_id: The spreadsheet; formula: The formula"},
			{"chart", "Draws a bar, line or pie chart from a range of cells.", "spreadsheet_id: The spreadsheet; range: The cells, such as A1:C10; kind: bar, line or pie"}}},
	{"repository", "code repository", "code repositories", "A code repository holds source code under version control.",
		"name: The repository's name; visibility: public or private; default_branch: Usually main",
		[3][3]string{{"fork", "Forks a code repository into another organisation.", "repository: The repository; organisation: Where the fork goes"},
			{"branch_protect", "Protects a branch: reviews and passing checks are required before merging.", "repository: The repository; branch: The branch; reviews: How many approvals"},
			{"clone_url", "Returns the HTTPS and SSH URLs to clone a code repository.", "repository: The repository"}}},
	{"pull_request", "pull request", "pull requests", "A pull request proposes changes from a branch for review.",
		"repository: The repository; head: The branch with the changes; base: The branch to merge into; title: What it changes",
		[3][3]string{{"merge", "Merges an approved pull request into its base branch.", "pull_request_id: The pull request; method: merge, squash or rebase"},
			{"request_review", "Asks reviewers to review the changes of a pull request.", "pull_request_id: The pull request; reviewers: Who should review"},
			{"diff", "Shows the changed lines of a pull request, file by file.", "pull_request_id: The pull request"}}},
	{"deployment", "deployment", "deployments", "A deployment ships a release of a service to an environment.",
		"service: The service; release: The version; environment: staging or production",
		[3][3]string{{"rollback", "Rolls a service back to its previous release after a bad deploy.", "service: The service; environment: Where"},
			{"promote", "Promotes a release from staging to production.", "service: The service; release: The version"},
			{"logs", "Streams the build and runtime logs of a deployment.", "deployment_id: The deployment; follow: Keep streaming"}}},
	{"incident", "incident", "incidents", "An incident is an outage or a degradation that the on-call engineers handle.",
		"title: What is broken; severity: sev1 to sev4; service: The service affected",
		[3][3]string{{"page_oncall", "Pages the engineer who is on call for a service, by phone and push notification.", "service: The service; message: What is wrong"},
			{"resolve", "Resolves an incident once the service is healthy again.", "incident_id: The incident; summary: What fixed it"},
			{"postmortem", "Drafts the postmortem of a resolved incident: timeline, impact and follow-up actions.", "incident_id: The incident"}}},
	{"alert_rule", "monitoring alert rule", "monitoring alert rules", "An alert rule fires when a metric crosses a threshold.",
		"metric: The metric watched; threshold: The value that fires it; channel: Where alerts go",
		[3][3]string{{"silence", "Silences an alert for a while, during planned maintenance.", "rule_id: The rule; minutes: For how long"},
			{"acknowledge", "Acknowledges a firing alert so that it stops notifying.", "rule_id: The rule"},
			{"threshold", "Sets the threshold at which a metric fires an alert.", "rule_id: The rule; threshold: The new value"}}},
	{"dashboard", "dashboard", "dashboards", "A dashboard shows graphs of metrics side by side.",
		"title: The dashboard's title; panels: Its graphs",
		[3][3]string{{"add_panel", "Adds a graph panel for a metric query to a dashboard.", "dashboard_id: The dashboard; query: The metric query"},
			{"snapshot", "Takes a snapshot image of a dashboard as it is now.", "dashboard_id: The dashboard"},
			{"share", "Shares a dashboard by a public link.", "dashboard_id: The dashboard; expires: When the link expires"}}},
	{"dataset", "dataset", "datasets", "A dataset is a set of tables in the data warehouse.",
		"name: The dataset's name; location: The region; description: What it holds",
		[3][3]string{{"query", "Runs a SQL query against a dataset of the data warehouse and returns the rows.", "dataset_id: The dataset; sql: The SQL statement"},
			{"schema", "Describes the tables and columns of a dataset.", "dataset_id: The dataset"},
			{"refresh", "Reloads a dataset's tables from their sources.", "dataset_id: The dataset"}}},
	{"backup", "database backup", "database backups", "A database backup is a copy of a database taken at a point in time.",
		"database: The database; retention_days: How long to keep it",
		[3][3]string{{"restore", "Restores a database from a backup, to a point in time.", "backup_id: The backup; target: Where to restore"},
			{"schedule", "Schedules nightly backups of a database.", "database: The database; hour: When"},
			{"verify", "Checks that a backup can be read back and is complete.", "backup_id: The backup"}}},
	{"certificate", "TLS certificate", "TLS certificates", "A TLS certificate secures the HTTPS traffic of a domain.",
		"domain: The domain; issuer: The certificate authority",
		[3][3]string{{"renew", "Renews a TLS certificate before it expires.", "certificate_id: The certificate"},
			{"revoke", "Revokes a TLS certificate whose private key leaked.", "certificate_id: The certificate; reason: Why"},
			{"expiry", "Reports when the certificates of a domain expire.", "domain: The domain"}}},
	{"dns_record", "DNS record", "DNS records", "A DNS record maps a host name of a zone to an address or another name.",
		"zone: The zone; host: The host name; type: A, AAAA, CNAME, MX or TXT; value: What it points to",
		[3][3]string{{"propagation", "Checks whether a DNS change has reached the public resolvers.", "host: The host name; type: The record type"},
			{"zone_import", "Imports a zone file into a DNS zone.", "zone: The zone; zone_file: The file's text"},
			{"ttl", "Changes how long resolvers may cache a DNS record.", "record_id: The record; seconds: The new time to live"}}},
	{"virtual_machine", "virtual machine", "virtual machines", "A virtual machine is a server of the cloud account, with CPUs, memory and a disk image.",
		"name: The machine's name; size: The instance type; image: The disk image",
		[3][3]string{{"start", "Starts a stopped virtual machine.", "vm_id: The machine"},
			{"stop", "Stops a running virtual machine; its disk is kept.", "vm_id: The machine"},
			{"resize", "Changes the CPU and memory size of a virtual machine.", "vm_id: The machine; size: The new instance type"}}},
	{"storage", "storage bucket", "storage buckets", "A storage bucket holds objects (files) in the cloud account.",
		"name: The bucket's name; region: Where it is; public: Whether anyone may read it",
		[3][3]string{{"upload", "Uploads a file to a storage bucket as an object.", "bucket: The bucket; key: The object's key; file: The file's content"},
			{"presign", "Creates a temporary link to download a private object of a bucket.", "bucket: The bucket; key: The object; minutes: How long the link works"},
			{"directory_sync", "Copies a local directory tree into a bucket, uploading only changed files; the directory's layout is kept.", "bucket: The bucket; source: The local path; delete_extra: Remove objects no longer in the source"}}},
	{"secret", "secret", "secrets", "A secret is a password, token or key kept in the vault.",
		"path: Where it is kept; value: The secret value",
		[3][3]string{{"rotate", "Rotates a secret: issues a new value and retires the old one after a grace period.", "path: The secret; grace_hours: How long the old value keeps working"},
			{"read_version", "Reads an older version of a secret.", "path: The secret; version: Which version"},
			{"grant_access", "Lets a service or a person read a secret.", "path: The secret; principal: Who may read it"}}},
	{"user_account", "user account", "user accounts", "A user account signs a person in to the company's applications.",
		"email: The sign-in address; display_name: The name shown; groups: Group memberships",
		[3][3]string{{"reset_password", "Sends a user a link to reset their forgotten password.", "user_id: The user"},
			{"enable_mfa", "Turns on two-factor authentication for a user.", "user_id: The user; method: totp or webauthn"},
			{"lock", "Locks a user account after suspicious sign-ins.", "user_id: The user; reason: Why"}}},
	{"campaign", "marketing campaign", "marketing campaigns", "A marketing campaign mails a newsletter or an offer to an audience.",
		"name: The campaign's name; audience: Who receives it; subject: The subject line",
		[3][3]string{{"schedule_send", "Schedules a campaign's mailing for a date and time.", "campaign_id: The campaign; at: When"},
			{"ab_test", "Splits a campaign's audience to compare two subject lines.", "campaign_id: The campaign; subject_b: The other subject line"},
			{"stats", "Reports the opens, clicks and unsubscribes of a campaign.", "campaign_id: The campaign"}}},
	{"lead", "sales lead", "sales leads", "A sales lead is a prospect that might buy, with its source and stage.",
		"name: The prospect; source: Where the lead came from; stage: Where it is in the funnel",
		[3][3]string{{"qualify", "Marks a sales lead as qualified after a discovery call.", "lead_id: The lead; notes: What was learnt"},
			{"convert", "Converts a qualified lead into a customer account and an opportunity.", "lead_id: The lead"},
			{"score", "Scores a lead from 0 to 100 by how likely it is to buy.", "lead_id: The lead"}}},
	{"shipment", "shipment", "shipments", "A shipment is a parcel sent by a carrier from a warehouse.",
		"carrier: The carrier; weight_kg: The parcel's weight; destination: The address",
		[3][3]string{{"label", "Buys and prints a shipping label for a parcel.", "shipment_id: The shipment; format: pdf or zpl"},
			{"rate_quote", "Compares carrier prices to ship a parcel of a given weight to an address.", "weight_kg: The weight; destination: The address"},
			{"customs_form", "Fills in the customs declaration of an international shipment.", "shipment_id: The shipment; contents: What is inside"}}},
	{"expense", "expense report", "expense reports", "An expense report lists what an employee spent on the company's behalf.",
		"employee_id: Who spent; items: What was bought; currency: The currency",
		[3][3]string{{"submit", "Submits an expense report for approval.", "expense_id: The report"},
			{"approve", "Approves an employee's expense report for reimbursement.", "expense_id: The report; approver: Who approves"},
			{"receipt_scan", "Reads the amount, date and merchant from a photo of a receipt.", "image_url: The photo"}}},
	{"contract", "contract", "contracts", "A contract is a legal agreement with a customer or a supplier.",
		"parties: Who signs; value: What it is worth; ends_on: When it ends",
		[3][3]string{{"send_for_signature", "Sends a contract to the parties for electronic signature.", "contract_id: The contract; signers: Who signs"},
			{"renewal_alert", "Warns the owner before a contract renews automatically.", "contract_id: The contract; days_before: How early"},
			{"clause_search", "Finds clauses of a kind, such as indemnity or termination, across contracts.", "kind: The kind of clause"}}},
}

// suiteArticle is "a" or "an" before a noun.
func suiteArticle(noun string) string {
	if strings.ContainsRune("aeio", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// suiteTools are the suite upstream's generated tools: ten per domain, 300 in all.
func suiteTools() []suiteTool {
	var out []suiteTool
	for _, d := range suiteDomains {
		id := suiteParam{d.key + "_id", "The " + d.noun + "'s id"}
		fields := suiteParams(d.fields)
		out = append(out,
			suiteTool{d.key + "_create", "Creates " + suiteArticle("new "+d.noun) + ". " + d.context, fields},
			suiteTool{d.key + "_get", "Fetches one " + d.noun + " by its id, with all of its fields.", []suiteParam{id}},
			suiteTool{d.key + "_list", "Lists " + d.plural + ", newest first, a page at a time.", suiteParams("limit: How many per page; cursor: Where the previous page ended")},
			suiteTool{d.key + "_update", "Changes fields of an existing " + d.noun + "; fields left out keep their value.", append([]suiteParam{id}, fields...)},
			suiteTool{d.key + "_delete", "Permanently deletes " + suiteArticle(d.noun) + ".", []suiteParam{id}},
			suiteTool{d.key + "_search", "Searches " + d.plural + " by words in their fields.", suiteParams("query: The words to look for")},
			suiteTool{d.key + "_export", "Exports " + d.plural + " to a CSV or JSON file.", suiteParams("format: csv or json")},
		)
		for _, o := range d.own {
			out = append(out, suiteTool{d.key + "_" + o[0], o[1], suiteParams(o[2])})
		}
	}
	return out
}

// searchSuite is the suite upstream: an official Go SDK server over streamable HTTP.
type searchSuite struct {
	s   *mcp.Server
	url string
}

func newSearchSuite(t *testing.T) *searchSuite {
	t.Helper()
	u := &searchSuite{s: mcp.NewServer(&mcp.Implementation{Name: "suite", Version: "1.0.0"}, nil)}
	tools := suiteTools()
	seen := map[string]bool{}
	for _, st := range tools {
		if seen[st.name] {
			t.Fatalf("generated tool %s twice", st.name)
		}
		seen[st.name] = true
		u.add(st)
	}
	if len(tools) != 300 {
		t.Fatalf("generated %d tools, want 300", len(tools))
	}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.s }, nil))
	t.Cleanup(func() { ts.CloseClientConnections(); ts.Close() })
	u.url = ts.URL + "/mcp"
	return u
}

// add registers a tool; its answer names it and repeats its arguments (JSON with sorted keys). Added after
// sessions exist, the SDK sends them notifications/tools/list_changed.
func (u *searchSuite) add(st suiteTool) {
	props := map[string]any{}
	var required []string
	for _, p := range st.params {
		props[p.name] = map[string]any{"type": "string", "description": p.desc}
		required = append(required, p.name)
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required[:1]
	}
	name := st.name
	u.s.AddTool(&mcp.Tool{Name: name, Description: st.desc, InputSchema: schema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &args)
		b, _ := json.Marshal(args)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: suiteAnswer(name, string(b))}}}, nil
	})
}

func suiteAnswer(name, args string) string { return "suite " + name + " done: " + args }

// searchProvider is an OpenAI-compatible /v1/embeddings provider. Its vectors are bags of words hashed into 63
// dimensions, except that folder, folders, directory and directories all count in dimension 0: it knows that a
// folder is a directory, which BM25 does not. It records what it was asked, and fails with HTTP 500 on demand.
type searchProvider struct {
	url     string
	failing atomic.Bool

	mu       sync.Mutex
	requests []searchProviderRequest
}

type searchProviderRequest struct {
	auth   string
	model  string
	inputs []string
	status int
}

func newSearchProvider(t *testing.T) *searchProvider {
	t.Helper()
	f := &searchProvider{}
	ts := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(ts.Close)
	f.url = ts.URL + "/v1"
	return f
}

func (f *searchProvider) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	rec := searchProviderRequest{auth: r.Header.Get("Authorization")}
	switch body, err := io.ReadAll(r.Body); {
	case r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings":
		rec.status = http.StatusNotFound
	case err != nil || json.Unmarshal(body, &req) != nil || len(req.Input) == 0:
		rec.status = http.StatusBadRequest
	case f.failing.Load():
		rec.status = http.StatusInternalServerError
	default:
		rec.status = http.StatusOK
	}
	rec.model, rec.inputs = req.Model, req.Input
	if rec.status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.status)
		fmt.Fprintf(w, `{"error":{"message":"fake provider: HTTP %d"}}`, rec.status)
	} else {
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := struct {
			Object string  `json:"object"`
			Data   []datum `json:"data"`
			Model  string  `json:"model"`
		}{Object: "list", Model: req.Model}
		for i, in := range req.Input {
			out.Data = append(out.Data, datum{i, searchVector(in)})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
	// Recorded once answered: a request seen here has its answer on the wire.
	f.mu.Lock()
	f.requests = append(f.requests, rec)
	f.mu.Unlock()
}

// searchVector is a text's vector (see searchProvider).
func searchVector(text string) []float32 {
	v := make([]float32, 64)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	nonzero := false
	for _, w := range words {
		nonzero = true
		switch w {
		case "folder", "folders", "directory", "directories":
			v[0]++
			continue
		}
		h := fnv.New32a()
		h.Write([]byte(w))
		v[1+h.Sum32()%63]++
	}
	if !nonzero {
		v[1] = 1
	}
	return v
}

// seen returns the requests so far.
func (f *searchProvider) seen() []searchProviderRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// answered reports whether the provider answered (200) a request with an input containing substr.
func (f *searchProvider) answered(substr string) bool {
	for _, r := range f.seen() {
		if r.status == http.StatusOK && slices.ContainsFunc(r.inputs, func(in string) bool { return strings.Contains(in, substr) }) {
			return true
		}
	}
	return false
}

// searchConfig is the gateway's config file; embeddings, when set, is the provider's base URL.
func searchConfig(listen, node, everythingJS, memoryJS, memoryFile, suiteURL, embeddings string) string {
	q := strconv.Quote
	var b strings.Builder
	fmt.Fprintf(&b, `# generated by TestE2ESearch
listen: %s
pageSize: %d
upstreams:
  - name: everything
    command: %s
    args: [%s, "stdio"]
    session: per-client
  - name: memory
    command: %[3]s
    args: [%[5]s]
    env:
      MEMORY_FILE_PATH: %[6]s
    session: shared
  - name: suite
    url: %[7]s
    session: shared
endpoints:
  - name: find
    include: ["everything__*", %[8]s, "memory__*", "suite__*"]
    exclude: ["memory__delete_*", "everything__get-env"]
    discovery: search
    alwaysList: ["suite__invoice_*"]
  - name: found
    include: ["*"]
    discovery: search
    exposeFound: true
overrides:
  everything/trigger-long-running-operation:
    name: %[8]s
    description: %[9]s
`, q(listen), catalogPageSize, q(node), q(everythingJS), q(memoryJS), q(memoryFile), q(suiteURL), q(searchRenamed), q(searchRenameTo))
	if embeddings != "" {
		fmt.Fprintf(&b, `search:
  embeddings:
    url: %s
    model: "fake-synonyms"
    apiKeyEnv: %s
  timeout: 10s
`, q(embeddings), searchKeyEnv)
	}
	return b.String()
}

// searchHit is one result of search_tools.
type searchHit struct {
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	InputSchema map[string]any `json:"inputSchema"`
	Score       float64        `json:"score"`
}

// searchResult is one query's results in search.mjs's summary.
type searchResult struct {
	Query string      `json:"query"`
	Limit int         `json:"limit"`
	Tools []searchHit `json:"tools"`
}

func searchHitNames(hits []searchHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Name
	}
	return out
}

// searchRank is a tool's place among hits, from 1; 0 when absent.
func searchRank(hits []searchHit, name string) int {
	return slices.IndexFunc(hits, func(h searchHit) bool { return h.Name == name }) + 1
}

// searchQuery is one search of a search.mjs --mode search run.
type searchQuery struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
	Brief bool   `json:"brief,omitempty"` // names and scores only
}

// runSearchScript runs queries through the TS client on url and returns each one's results, in order.
func runSearchScript(t *testing.T, js *nodeScripts, url string, queries []searchQuery, extra ...string) []searchResult {
	t.Helper()
	qs, _ := json.Marshal(queries)
	s := js.run(t, append([]string{"search.mjs", "--mode", "search", "--url", url, "--queries", string(qs)}, extra...)...)
	var res []searchResult
	if err := json.Unmarshal(s["results"], &res); err != nil || len(res) != len(queries) {
		t.Fatalf("summary.results: %v: %.500s", err, s["results"])
	}
	return res
}

// searchModernRequest sends one request as a 2026-07-28 client that declares no capabilities does.
func searchModernRequest(t *testing.T, ctx context.Context, url, method string, params map[string]any) json.RawMessage {
	t.Helper()
	return modernRequest(t, ctx, url, method, params, map[string]any{})
}

// modernRequest sends one request as a 2026-07-28 client does (no session; version, method and name in headers
// and the version, capabilities and client info in _meta) and returns its result.
func modernRequest(t *testing.T, ctx context.Context, url, method string, params, caps map[string]any) json.RawMessage {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "switchboard-e2e-modern", "version": "0.0.0"},
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	rctx, cancel := context.WithTimeout(ctx, searchWait)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	for _, key := range []string{"name", "uri", "taskId"} {
		if name, ok := params[key].(string); ok {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("2026-07-28 %s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("2026-07-28 %s %s: HTTP %s (%v): %s", method, url, resp.Status, err, raw)
	}
	msg := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data:"); ok && strings.TrimSpace(d) != "" {
				msg = []byte(d)
			}
		}
	}
	var m struct {
		ID     int             `json:"id"`
		Error  json.RawMessage `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(msg, &m); err != nil || m.ID != 7 || m.Error != nil {
		t.Fatalf("2026-07-28 %s %s: no result (%v): %s", method, url, err, raw)
	}
	return m.Result
}

// searchModern runs search_tools as a 2026-07-28 client.
func searchModern(t *testing.T, ctx context.Context, url, query string, limit int) []searchHit {
	t.Helper()
	raw := searchModernRequest(t, ctx, url, "tools/call", map[string]any{"name": "search_tools", "arguments": map[string]any{"query": query, "limit": limit}})
	var r struct {
		IsError           bool   `json:"isError"`
		ResultType        string `json:"resultType"`
		StructuredContent struct {
			Tools []searchHit `json:"tools"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.IsError {
		t.Fatalf("2026-07-28 search_tools %q: %v: %s", query, err, raw)
	}
	if r.ResultType != "complete" {
		t.Errorf("2026-07-28 search_tools %q: resultType %q, want complete", query, r.ResultType)
	}
	return r.StructuredContent.Tools
}

func TestE2ESearch(t *testing.T) {
	missing := e2eGate(t)
	if !hasMainPackage(t) {
		t.Skip("cmd/switchboard has no non-test Go files yet: no gateway to test")
	}
	root := repoRoot(t)
	node, everythingJS, memoryJS := nodePeers(t, root, missing)
	if _, err := exec.LookPath("go"); err != nil {
		missing("go not found on PATH: %v", err)
	}
	bin := buildSwitchboard(t)
	race := os.Getenv("SWITCHBOARD_E2E_RACE") == "1"
	tmp := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	suite := newSearchSuite(t)
	provider := newSearchProvider(t)
	apiKey := "sk-e2e-" + randomHex(t) + randomHex(t)

	// Two gateways over the same upstreams and endpoints: bm25 ranks with BM25 alone, hybrid with the fake
	// provider too. Started together; each is ready when /readyz answers 200.
	type gateway struct {
		name, base, config string
		p                  *process
		js                 *nodeScripts
	}
	startGateway := func(name, embeddings string, env []string) *gateway {
		port := freePort(t)
		g := &gateway{name: name, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
		g.config = searchConfig(fmt.Sprintf("127.0.0.1:%d", port), node, everythingJS, memoryJS,
			filepath.Join(tmp, name+"-memory.jsonl"), suite.url, embeddings)
		file := filepath.Join(tmp, name+".yaml")
		if err := os.WriteFile(file, []byte(g.config), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Logf("config %s:\n%s", file, g.config)
		if race {
			t.Cleanup(func() {
				if g.p != nil && strings.Contains(g.p.log.String(), "WARNING: DATA RACE") {
					t.Errorf("the race detector reported a data race in switchboard (%s); see the [%s] log lines", name, name)
				}
			})
		}
		g.p = startProcess(t, name, tmp, env, bin, "serve", "--config", file)
		g.js = &nodeScripts{ctx: ctx, node: node, dir: filepath.Join(root, "cmd", "switchboard", "testdata", "e2e"), gw: g.p}
		return g
	}
	bm25 := startGateway("switchboard-bm25", "", nil)
	hybrid := startGateway("switchboard-hybrid", provider.url, []string{searchKeyEnv + "=" + apiKey})
	for _, g := range []*gateway{bm25, hybrid} {
		if err := waitReady(ctx, g.base+"/readyz", e2eReadyTimeout, g.p); err != nil {
			t.Fatalf("%s did not become ready: %v\n--- gateway log (tail):\n%s", g.name, err, g.p.log.tail(60))
		}
	}
	js, find, found := bm25.js, bm25.base+"/mcp/find", bm25.base+"/mcp/found"

	// The whole catalog, through the TS client on /mcp (list mode): what the endpoint's globs select from. The
	// summary keeps the full definitions of the tools compared below (all of them would make a large summary).
	keep := []string{searchRenamed}
	for _, st := range suiteTools() {
		if strings.HasPrefix(st.name, "invoice_") {
			keep = append(keep, "suite__"+st.name)
		}
	}
	fullSummary := js.run(t, "search.mjs", "--mode", "list", "--url", bm25.base+"/mcp", "--keep", strings.Join(keep, ","))
	full := toolsOf(t, fullSummary)
	var fullOrder []string
	if err := json.Unmarshal(fullSummary["names"], &fullOrder); err != nil {
		t.Fatalf("summary.names: %v", err)
	}
	inFull := map[string]bool{}
	for _, n := range fullOrder {
		inFull[n] = true
	}
	t.Logf("full catalog: %d tools in %s pages", len(fullOrder), fullSummary["pages"])
	if len(inFull) != len(fullOrder) || len(fullOrder) < 320 {
		t.Fatalf("the full catalog has %d tools (%d names), want 300 of suite and those of everything and memory", len(fullOrder), len(inFull))
	}
	if len(full) != len(keep) {
		t.Fatalf("the full catalog lacks some of %v", keep)
	}
	for _, name := range []string{searchRenamed, "everything__get-sum", "everything__get-env", "memory__create_entities", "memory__delete_entities", "suite__payroll_run", searchSynonym} {
		if !inFull[name] {
			t.Fatalf("the full catalog lacks %s", name)
		}
	}
	if inFull["everything__trigger-long-running-operation"] {
		t.Fatalf("the full catalog still offers everything__trigger-long-running-operation, renamed %s", searchRenamed)
	}
	// find's view, by its globs (each checked to select something).
	view := selectTools(t, slices.Sorted(slices.Values(fullOrder)), catalogEndpoint{name: "find",
		include: []string{"everything__*", searchRenamed, "memory__*", "suite__*"},
		exclude: []string{"memory__delete_*", "everything__get-env"}})
	inView := map[string]bool{}
	for _, n := range view {
		inView[n] = true
	}
	hidden := []string{}
	for _, n := range slices.Sorted(slices.Values(fullOrder)) {
		if !inView[n] {
			hidden = append(hidden, n)
		}
	}
	t.Logf("/mcp/find serves %d tools; hidden: %v", len(view), hidden)

	// listed is what tools/list on /mcp/find returns, for the modern client to compare with.
	var listed map[string]any

	t.Run("list_is_meta_tools_and_alwaysList", func(t *testing.T) {
		s := js.run(t, "search.mjs", "--mode", "list", "--url", find)
		var got []string // in order
		if err := json.Unmarshal(s["names"], &got); err != nil {
			t.Fatalf("summary.names: %v", err)
		}
		want := []string{"search_tools", "call_tool"}
		for _, n := range fullOrder {
			if ok, _ := path.Match("suite__invoice_*", n); ok && inView[n] {
				want = append(want, n)
			}
		}
		if len(want) != 2+10 {
			t.Fatalf("alwaysList suite__invoice_* selects %v, want the 10 invoice tools", want[2:])
		}
		if !slices.Equal(got, want) {
			t.Fatalf("tools/list on /mcp/find = %v\nwant the meta-tools, then alwaysList's: %v", got, want)
		}
		if pages, _ := strconv.Atoi(string(s["pages"])); pages < 2 {
			t.Errorf("%d tools came in %d page(s) of at most %d", len(got), pages, catalogPageSize)
		}
		listed = toolsOf(t, s)
		for _, n := range want[2:] {
			if !reflect.DeepEqual(listed[n], full[n]) {
				t.Errorf("%s as /mcp/find lists it differs from /mcp's:\n%s\nvs\n%s", n, jsonOf(listed[n]), jsonOf(full[n]))
			}
		}
		meta, _ := listed["search_tools"].(map[string]any)
		if _, ok := meta["outputSchema"]; !ok {
			t.Errorf("search_tools is listed without an outputSchema: %s", jsonOf(meta))
		}
		t.Logf("/mcp/find lists %v in %s pages", got, s["pages"])
	})

	// results keeps the TS client's results by query, for the modern client to compare with.
	results := map[string][]searchHit{}

	t.Run("search_finds_tools", func(t *testing.T) {
		cases := []struct {
			query string
			want  []string // any of them ranks within top
			top   int
		}{
			{"add two numbers", []string{"everything__get-sum"}, 1},
			{"store facts about people in the knowledge graph", []string{"memory__create_entities", "memory__add_observations"}, 3},
			{"pay all the staff their salaries for this month", []string{"suite__payroll_run"}, 3},
			{"remind a client that their bill is overdue", []string{"suite__invoice_send_reminder"}, 3},
			{"give a customer their money back for a broken item", []string{"suite__order_refund"}, 3},
			{"page the on-call engineer, checkout is down", []string{"suite__incident_page_oncall"}, 3},
			{"roll back the bad deploy of the checkout service", []string{"suite__deployment_rollback"}, 3},
			{"when are we all free to meet for an hour", []string{"suite__calendar_event_find_free_slot"}, 3},
			{"render the quarterly report", []string{searchRenamed}, 1},
		}
		var qs []searchQuery
		for _, c := range cases {
			qs = append(qs, searchQuery{Query: c.query})
		}
		// The old name of the renamed tool, in its words and whole.
		qs = append(qs, searchQuery{Query: "everything__trigger-long-running-operation", Limit: 50, Brief: true})
		res := runSearchScript(t, js, find, qs, "--check-errors")
		for i, c := range cases {
			hits := res[i].Tools
			results[c.query] = hits
			best := 0
			for _, w := range c.want {
				if r := searchRank(hits, w); r > 0 && (best == 0 || r < best) {
					best = r
				}
			}
			if best == 0 || best > c.top {
				t.Errorf("search %q: %v at rank %d, want within the top %d; got %v", c.query, c.want, best, c.top, searchHitNames(hits))
			} else {
				t.Logf("search %q: rank %d: %v", c.query, best, searchHitNames(hits)[:min(5, len(hits))])
			}
			for _, h := range hits {
				if !inView[h.Name] {
					t.Errorf("search %q found %s, which /mcp/find does not serve", c.query, h.Name)
				}
			}
		}
		// The renamed tool is found with the override's name and description, as it is listed.
		if hits := results["render the quarterly report"]; len(hits) > 0 && hits[0].Name == searchRenamed {
			if hits[0].Description != searchRenameTo {
				t.Errorf("%s's description in the results = %q, want the override's", searchRenamed, hits[0].Description)
			}
			wantSchema, _ := full[searchRenamed].(map[string]any)["inputSchema"].(map[string]any)
			if !reflect.DeepEqual(hits[0].InputSchema, wantSchema) {
				t.Errorf("%s's inputSchema in the results differs from its listed one:\n%s\nvs\n%s", searchRenamed, jsonOf(hits[0].InputSchema), jsonOf(wantSchema))
			}
		}
		old := res[len(cases)].Tools
		if slices.Contains(searchHitNames(old), "everything__trigger-long-running-operation") {
			t.Errorf("the old name everything__trigger-long-running-operation is among the results: %v", searchHitNames(old))
		}
		t.Logf("search for the old name: %v", searchHitNames(old)[:min(5, len(old))])
	})

	t.Run("call_tool_progress_cancel", func(t *testing.T) {
		cancelled := func() float64 {
			return metricSum(t, bm25.base, "mcp_client_operation_duration_seconds_count", `switchboard_upstream="everything"`, `mcp_method_name="tools/call"`, `error_type="cancelled"`)
		}
		before := cancelled()
		s := js.run(t, "search.mjs", "--mode", "call", "--url", find, "--query", "quarterly sales report", "--tool", searchRenamed)
		t.Logf("found %s; progress %s; rejected: %s", s["found"], s["progress"], s["rejection"])
		waitUntil(t, bm25.p, searchWait, "the gateway counts the aborted call_tool's upstream leg as cancelled", func() bool {
			return cancelled() >= before+1
		})
		waitUntil(t, bm25.p, searchWait, "no request is left in flight at server-everything", func() bool {
			return metricSum(t, bm25.base, "switchboard_upstream_inflight", `upstream="everything"`) == 0
		})
	})

	t.Run("direct_call_of_found_names", func(t *testing.T) {
		type call struct {
			Query     string         `json:"query"`
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
			Via       string         `json:"via,omitempty"`
		}
		calls := []call{
			{"add two numbers", "everything__get-sum", map[string]any{"a": 2, "b": 3}, ""},
			{"escalate an angry customer's complaint", "suite__ticket_escalate", map[string]any{"ticket_id": "T-42", "reason": "angry"}, ""},
			{"escalate an angry customer's complaint", "suite__ticket_escalate", map[string]any{"ticket_id": "T-43"}, "call_tool"},
			// Excluded: neither found nor callable, directly or through call_tool.
			{"Delete multiple entities and their associated relations from the knowledge graph", "memory__delete_entities", map[string]any{"entityNames": []string{"nobody"}}, ""},
			{"Delete multiple entities and their associated relations from the knowledge graph", "memory__delete_entities", map[string]any{"entityNames": []string{"nobody"}}, "call_tool"},
		}
		b, _ := json.Marshal(calls)
		s := js.run(t, "search.mjs", "--mode", "direct", "--url", find, "--calls", string(b))
		var got []struct {
			Name    string          `json:"name"`
			Via     string          `json:"via"`
			Found   bool            `json:"found"`
			OK      bool            `json:"ok"`
			IsError bool            `json:"isError"`
			Text    string          `json:"text"`
			Error   json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(s["calls"], &got); err != nil || len(got) != len(calls) {
			t.Fatalf("summary.calls: %v: %s", err, s["calls"])
		}
		want := []string{"The sum of 2 and 3 is 5.", suiteAnswer("ticket_escalate", `{"reason":"angry","ticket_id":"T-42"}`), suiteAnswer("ticket_escalate", `{"ticket_id":"T-43"}`)}
		for i, g := range got {
			t.Logf("%s %s: found %v, ok %v, text %q, error %s", g.Via, g.Name, g.Found, g.OK, g.Text, g.Error)
			if i < len(want) {
				if !g.Found || !g.OK || g.Text != want[i] {
					t.Errorf("%s of found %s: found %v, ok %v, text %q error %s; want %q", g.Via, g.Name, g.Found, g.OK, g.Text, g.Error, want[i])
				}
				continue
			}
			if g.Found || g.OK {
				t.Errorf("%s of excluded %s: found %v, ok %v (%q): want neither", g.Via, g.Name, g.Found, g.OK, g.Text)
			}
		}
	})

	t.Run("hidden_tools_never_appear", func(t *testing.T) {
		// Each hidden tool's own words, and its name, with the largest limit.
		queries := []searchQuery{
			{"Delete multiple entities and their associated relations from the knowledge graph", 50, true},
			{"Delete specific observations from entities in the knowledge graph", 50, true},
			{"Delete multiple relations from the knowledge graph", 50, true},
			{"Returns all environment variables, helpful for debugging MCP server configuration", 50, true},
			{"memory__delete_entities memory__delete_observations memory__delete_relations everything__get-env", 50, true},
		}
		want := []string{"memory__delete_entities", "memory__delete_observations", "memory__delete_relations", "everything__get-env"}
		res := runSearchScript(t, js, find, queries)
		for _, r := range res {
			for _, h := range r.Tools {
				if !inView[h.Name] {
					t.Errorf("search %q on /mcp/find found the hidden %s", r.Query, h.Name)
				}
			}
			t.Logf("/mcp/find, %q: %d results, none hidden", r.Query, len(r.Tools))
		}
		// The same words find them where nothing hides them: the queries are not what keeps them out.
		ctrl := runSearchScript(t, js, found, queries[:4])
		for i, r := range ctrl {
			if rank := searchRank(r.Tools, want[i]); rank != 1 {
				t.Errorf("control: search %q on /mcp/found ranks %s at %d, want 1: %v", r.Query, want[i], rank, searchHitNames(r.Tools)[:min(5, len(r.Tools))])
			}
		}
	})

	t.Run("modern_client_same_view", func(t *testing.T) {
		if listed == nil || len(results) == 0 {
			t.Skip("no legacy view to compare with: list_is_meta_tools_and_alwaysList or search_finds_tools failed")
		}
		got, pages := modernToolsList(t, ctx, find)
		if pages < 2 {
			t.Errorf("a 2026-07-28 tools/list of %d tools came in %d page(s)", len(got), pages)
		}
		compareViews(t, "2026-07-28 /mcp/find", got, listed)
		for _, q := range []string{"add two numbers", "pay all the staff their salaries for this month", "render the quarterly report"} {
			m := searchModern(t, ctx, find, q, 10)
			if !reflect.DeepEqual(m, results[q]) {
				t.Errorf("2026-07-28 search %q:\n%s\nthe TS client's:\n%s", q, jsonOf(m), jsonOf(results[q]))
			}
		}
	})

	// docs/catalog.md: "2026-07-28 clients get the same meta-tools, and a search-mode tools/list answers them with
	// cacheScope: private"; such a client has no session, so for it exposeFound does nothing.
	t.Run("modern_search_lists_are_private", func(t *testing.T) {
		hits := searchModern(t, ctx, found, "renew the TLS certificate of our domain", 3)
		if searchRank(hits, "suite__certificate_renew") != 1 {
			t.Fatalf("2026-07-28 search on /mcp/found: %v, want suite__certificate_renew first", searchHitNames(hits))
		}
		for _, url := range []string{find, found} {
			var page struct {
				Tools      []struct{ Name string } `json:"tools"`
				CacheScope string                  `json:"cacheScope"`
			}
			if err := json.Unmarshal(searchModernRequest(t, ctx, url, "tools/list", map[string]any{}), &page); err != nil {
				t.Fatal(err)
			}
			if page.CacheScope != "private" || len(page.Tools) == 0 || page.Tools[0].Name != "search_tools" {
				t.Errorf("2026-07-28 tools/list on %s: cacheScope %q, tools %v; want private, search_tools first", url, page.CacheScope, page.Tools)
			}
		}
		// What that search found is not listed, to this client or any other (no session keeps it).
		if got, _ := modernToolsList(t, ctx, found); !slices.Equal(sortedKeys(got), []string{"call_tool", "search_tools"}) {
			t.Errorf("2026-07-28 tools/list on /mcp/found (exposeFound) after a search lists %v, want the meta-tools alone", sortedKeys(got))
		}
	})

	t.Run("hybrid_embeddings", func(t *testing.T) {
		const synonymQuery = "folder"
		hfind := hybrid.base + "/mcp/find"
		// BM25 alone does not know that a folder is a directory.
		plain := runSearchScript(t, js, find, []searchQuery{{synonymQuery, 10, false}})[0].Tools
		if searchRank(plain, searchSynonym) != 0 {
			t.Fatalf("BM25 alone finds %s for %q: %v; the synonym proves nothing", searchSynonym, synonymQuery, searchHitNames(plain))
		}
		t.Logf("BM25 alone, %q: %v", synonymQuery, searchHitNames(plain))
		// The hybrid gateway asked the provider for the tools' vectors at start; once it has them, its search ranks
		// the directory tool first.
		waitUntil(t, hybrid.p, searchWait, "the provider answered a request for the directory tool's vector", func() bool {
			return provider.answered(searchSynonym)
		})
		waitUntil(t, hybrid.p, searchWait, "the hybrid gateway to rank by the tools' vectors", func() bool {
			hits := searchModern(t, ctx, hfind, synonymQuery, 10)
			return searchRank(hits, searchSynonym) == 1
		})
		res := runSearchScript(t, hybrid.js, hfind, []searchQuery{{synonymQuery, 10, false}})[0].Tools
		if searchRank(res, searchSynonym) != 1 {
			t.Errorf("hybrid search %q through the TS client: %v, want %s first", synonymQuery, searchHitNames(res), searchSynonym)
		}
		reqs := provider.seen()
		if len(reqs) == 0 {
			t.Fatal("the provider saw no request")
		}
		for _, r := range reqs {
			if r.auth != "Bearer "+apiKey || r.model != "fake-synonyms" {
				t.Errorf("the provider got a request with Authorization %q and model %q, want the Bearer key and fake-synonyms", r.auth, r.model)
				break
			}
		}
		if strings.Contains(hybrid.p.log.String(), apiKey) {
			t.Errorf("the hybrid gateway logged the API key")
		}
		t.Logf("hybrid, %q: %v (%d requests to the provider)", synonymQuery, searchHitNames(res), len(reqs))

		// The provider fails: search answers, as BM25 alone does, and the failure is counted.
		failures := func() float64 {
			return metricSum(t, hybrid.base, "switchboard_search_embeddings_failures_total", `operation="query"`)
		}
		before := failures()
		provider.failing.Store(true)
		const fallbackQuery = "escalate a complaint from an unhappy customer"
		want := runSearchScript(t, js, find, []searchQuery{{fallbackQuery, 10, false}})[0].Tools
		got := runSearchScript(t, hybrid.js, hfind, []searchQuery{{fallbackQuery, 10, false}})[0].Tools
		if len(got) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("with the provider down, hybrid search %q = %v, want BM25's %v", fallbackQuery, searchHitNames(got), searchHitNames(want))
		}
		asked := false
		for _, r := range provider.seen()[len(reqs):] {
			asked = asked || r.status == http.StatusInternalServerError && slices.Contains(r.inputs, fallbackQuery)
		}
		if !asked {
			t.Errorf("the provider was not asked for %q's vector while down: the fallback was not exercised", fallbackQuery)
		}
		if after := failures(); after < before+1 {
			t.Errorf("switchboard_search_embeddings_failures_total{operation=\"query\"} went from %v to %v, want one more", before, after)
		}
		if !strings.Contains(hybrid.p.log.String(), "embeddings provider failed") {
			t.Errorf("the hybrid gateway did not log the provider's failure")
		}
		t.Logf("provider down, %q: %v (failures %v → %v)", fallbackQuery, searchHitNames(got), before, failures())
	})

	// After hybrid_embeddings, which compares the two gateways' rankings over the same catalog: this one changes it.
	// A search-mode session hears list_changed when its own list changes, not on every change of the catalog
	// (routing's listChanged): suite first adds a tool nothing lists, which the next searches find (checked through
	// a 2026-07-28 client), then one that alwaysList lists, which the open session hears of; after that
	// notification, and none before, its list and its searches show both.
	t.Run("list_changed_updates_results", func(t *testing.T) {
		const query = "when will the satellite pass over our ground station"
		const listed = "suite__invoice_dispute"
		r := js.start(t, "search.mjs", "--mode", "changed", "--url", find, "--query", query, "--tool", searchAdded, "--listed", listed, "--wait", "30")
		r.waitLine(t, `"event":"ready"`, searchWait)
		suite.add(suiteTool{strings.TrimPrefix(searchAdded, "suite__"), "Predicts when a satellite will next pass over a ground station, with its highest elevation and how long the pass lasts.",
			suiteParams("station: The ground station; satellite_id: The satellite's NORAD id")})
		waitUntil(t, bm25.p, searchWait, "a search on /mcp/find to find the tool suite added", func() bool {
			return searchRank(searchModern(t, ctx, find, query, 10), searchAdded) == 1
		})
		suite.add(suiteTool{strings.TrimPrefix(listed, "suite__"), "Opens a dispute about an invoice the customer contests.",
			suiteParams("invoice_id: The contested invoice; reason: What the customer contests")})
		s := r.wait(t)
		var after []searchHit
		var list []string
		if err := json.Unmarshal(s["after"], &after); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(s["list"], &list); err != nil {
			t.Fatal(err)
		}
		if rank := searchRank(after, searchAdded); rank != 1 {
			t.Errorf("after list_changed, search %q ranks %s at %d, want 1: %v", query, searchAdded, rank, searchHitNames(after))
		}
		if !slices.Contains(list, listed) || slices.Contains(list, searchAdded) {
			t.Errorf("after list_changed /mcp/find lists %v, want %s (alwaysList) and not %s", list, listed, searchAdded)
		}
		if n := string(s["stale"]); n != "0" {
			t.Errorf("%s notifications/tools/list_changed came while the session's list had not changed", n)
		}
		var before []string
		_ = json.Unmarshal(s["before"], &before)
		t.Logf("before: %v; after %s notification(s): %v; listed %v", before[:min(5, len(before))], s["notifications"], searchHitNames(after)[:min(5, len(after))], list)
	})

	t.Run("exposeFound_lists_found_tools", func(t *testing.T) {
		s := js.run(t, "search.mjs", "--mode", "expose", "--url", found, "--query", "renew the TLS certificate of our domain")
		var before, after []string
		var hits []searchHit
		for k, v := range map[string]any{"before": &before, "after": &after, "found": &hits} {
			if err := json.Unmarshal(s[k], v); err != nil {
				t.Fatalf("summary.%s: %v", k, err)
			}
		}
		if !slices.Equal(before, []string{"search_tools", "call_tool"}) {
			t.Errorf("before any search /mcp/found lists %v, want the meta-tools alone", before)
		}
		if searchRank(hits, "suite__certificate_renew") != 1 {
			t.Errorf("the search found %v, want suite__certificate_renew first", searchHitNames(hits))
		}
		want := append([]string{"search_tools", "call_tool"}, searchHitNames(hits)...)
		slices.Sort(want)
		got := slices.Sorted(slices.Values(after))
		if !slices.Equal(got, want) {
			t.Errorf("after the search /mcp/found lists %v, want the meta-tools and the found %v", after, searchHitNames(hits))
		}
		t.Logf("found %v; listed after %s notification(s) (%s stale)", searchHitNames(hits), s["notifications"], s["stale"])
	})
}
