// Reads the conformance CLI's results for one run and compares them with the
// committed expectations. Used by .ci/conformance; plain Node, no dependencies.
//
//   node .ci/conformance-report.mjs RUN RESULTS_DIR EXPECTED_FILE [CLI_EXIT_CODE [BASELINE_DIR]] [--scoring FILE]... [--client]
//
// RESULTS_DIR is the CLI's -o directory: one folder per scenario named
// server-<scenario>-<timestamp>, each with checks.json (an array of checks
// with status SUCCESS | FAILURE | WARNING | SKIPPED | INFO). A scenario passes
// when its checks.json has no FAILURE (this matches the CLI's own summary;
// WARNING does not fail). A scenario listed in the expectations but without a
// checks.json counts as failed.
//
// EXPECTED_FILE has sections "[RUN]" with lines "scenario pass|fail|unknown".
// Exit 1 when a scenario expected to pass did not (a regression), or when the
// section is missing; improvements and unknowns are reported, never fatal.
// BASELINE_DIR (the direct run's results) adds a note, never fatal, where a
// scenario passed with fewer SUCCESS checks than the baseline (a check that
// became INFO or SKIPPED, say).
//
// --scoring FILE (repeatable; for runs of a requirement set, `server --requirements
// REV`, conformance 0.2) splits the scenarios into scored and unscored ones. FILE
// is the output of `conformance list --server --requirements REV` (its "Server
// scenarios" are the scored ones; its "Run and reported, but never scored"
// entries tagged [server] are not) or the CLI's own log of the run (its "Not
// scored for REV" list). With a list, a scenario in neither part counts as
// unscored ("not required"); with only a log, everything not listed there is
// scored. The report then prints "scored scenarios: X/Y passed; checks: N
// passed, M failed" for the scored ones, the same for the unscored ones, and the
// run's totals, including the synthetic wire-schema-valid checks (0.2 validates
// every message against the spec's JSON schema). Scoring never changes what is
// fatal: only a `pass` line that fails is, scored or not. Without --scoring the
// output is the legacy one ("scenarios: X/Y passed; ...").
//
// --client reads a client suite's results (`conformance client -o DIR`): one folder per scenario named
// <scenario>-<timestamp>, where a scenario named auth/NAME lands in DIR/auth/NAME-<timestamp>; with --scoring,
// the list's "Client scenarios" are the scored ones and its entries tagged [client] the unscored ones.
import fs from "node:fs";
import path from "node:path";

const positional = [];
const scoringFiles = [];
let leg = "server";
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--client") leg = "client";
    else if (argv[i] === "--scoring") {
      if (argv[i + 1] === undefined) { console.error("--scoring needs a FILE"); process.exit(2); }
      scoringFiles.push(argv[++i]);
    } else positional.push(argv[i]);
  }
}
const [run, dir, expectedFile, cliExit, baselineDir] = positional;
if (!run || !dir || !expectedFile) {
  console.error("usage: conformance-report.mjs RUN RESULTS_DIR EXPECTED_FILE [CLI_EXIT_CODE [BASELINE_DIR]] [--scoring FILE]...");
  process.exit(2);
}

// --- scoring (which scenarios a requirement set scores), from `conformance list --requirements` or cli.log
const scoring = scoringFiles.length ? { required: null, unscored: new Map() } : null; // unscored: name -> reason
for (const file of scoringFiles) {
  if (!fs.existsSync(file)) continue; // e.g. no cli.log because the CLI did not run
  let block = null; // "required" | "never" | "not-scored"
  let reason = null;
  for (const raw of fs.readFileSync(file, "utf8").split("\n")) {
    const line = raw.replace(/\x1b\[[0-9;]*m/g, "").trimEnd();
    if ((leg === "server" ? /^Server scenarios\b/ : /^Client scenarios\b/).test(line)) { block = "required"; scoring.required ??= new Set(); continue; }
    if (/^Run and reported, but never scored/.test(line)) { block = "never"; continue; }
    if (/^Not scored for /.test(line)) { block = "not-scored"; continue; }
    if (/^\S/.test(line)) { block = null; continue; } // any other heading ends a block
    let m;
    if (block === "required" && (m = line.match(/^\s+- (\S+)$/))) scoring.required.add(m[1]);
    else if (block === "never" && (m = line.match(/^\s{2}(\S[^(]*?) \(\d+\):$/))) reason = m[1];
    else if (block === "never" && (m = line.match(/^\s+- (\S+) \[(\w+)\]$/)) && m[2] === leg) scoring.unscored.set(m[1], reason ?? "not scored");
    else if (block === "not-scored" && (m = line.match(/^\s+\S+ (\S+) \(([^)]*)\)$/))) scoring.unscored.set(m[1], m[2]);
  }
}
function unscoredReason(name) { // null when scored
  if (!scoring) return null;
  if (scoring.unscored.has(name)) return scoring.unscored.get(name);
  if (scoring.required && !scoring.required.has(name)) return "not required";
  return null;
}
if (scoring && !scoring.required && scoring.unscored.size === 0) {
  console.log(`[${run}] note: no scored/unscored lists found in ${scoringFiles.join(", ")}; every scenario counts as scored`);
}

// --- expectations
const expected = new Map();
let section = null;
let sawSection = false;
for (const [i, raw] of fs.readFileSync(expectedFile, "utf8").split("\n").entries()) {
  const line = raw.replace(/#.*/, "").trim();
  if (!line) continue;
  const m = line.match(/^\[(.+)\]$/);
  if (m) {
    section = m[1];
    if (section === run) sawSection = true;
    continue;
  }
  if (section !== run) continue;
  const [name, want, extra] = line.split(/\s+/);
  if (extra !== undefined || !["pass", "fail", "unknown"].includes(want)) {
    console.error(`${expectedFile}:${i + 1}: want "scenario pass|fail|unknown", got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  expected.set(name, want);
}

// --- results
function readResults(dir) {
const results = new Map(); // scenario -> {pass, ok, bad, warn, errors, statuses}
const dirRe = leg === "server" ? /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:-\d+)?Z$/
  : /^(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:-\d+)?Z$/;
// [folder, scenario name prefix]: a client scenario auth/NAME is the folder auth/NAME-<timestamp>
const entries = [];
for (const entry of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
  if (leg === "client" && !dirRe.test(entry) && fs.statSync(path.join(dir, entry)).isDirectory()) {
    for (const sub of fs.readdirSync(path.join(dir, entry))) entries.push([path.join(entry, sub), `${entry}/`, sub]);
  } else entries.push([entry, "", entry]);
}
for (const [entry, prefix, base] of entries) {
  const m = base.match(dirRe);
  if (!m) continue;
  const scenario = prefix + m[1];
  const file = path.join(dir, entry, "checks.json");
  let checks;
  try {
    checks = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (err) {
    results.set(scenario, { pass: false, ok: 0, bad: 1, warn: 0, errors: [`no readable checks.json: ${err.message}`] });
    continue;
  }
  const r = { pass: true, ok: 0, bad: 0, warn: 0, errors: [], statuses: {}, wireOk: 0, wireBad: 0, harness: 0 };
  for (const c of checks) {
    if (c.id === "wire-schema-valid") { if (c.status === "SUCCESS") r.wireOk++; else if (c.status === "FAILURE") r.wireBad++; }
    if (c.id === "wire-schema-harness-error") r.harness++;
    r.statuses[c.id] = c.status;
    if (c.status === "SUCCESS") r.ok++;
    else if (c.status === "WARNING") r.warn++;
    else if (c.status === "FAILURE") {
      r.bad++;
      r.pass = false;
      r.errors.push(`${c.id}: ${c.errorMessage ?? c.description ?? ""}`.slice(0, 300));
    }
  }
  results.set(scenario, r);
}
return results;
}
const results = readResults(dir);
const baseline = baselineDir && fs.existsSync(baselineDir) ? readResults(baselineDir) : new Map();

// --- compare
const names = [...new Set([...expected.keys(), ...results.keys()])];
let regressions = 0, improvements = 0, unknown = 0, unknownScored = 0, checksOk = 0, checksBad = 0, passed = 0;
let wireOk = 0, wireBad = 0, harness = 0;
const tally = () => ({ scenarios: 0, passed: 0, ok: 0, bad: 0 });
const scored = tally(), unscored = tally(), byReason = new Map();
const rows = [];
const suggest = [];
for (const name of names) {
  const r = results.get(name) ?? { pass: false, ok: 0, bad: 0, warn: 0, errors: ["no result (scenario did not run)"], missing: true };
  const want = expected.get(name) ?? "unknown";
  const got = r.pass ? "pass" : "fail";
  const reason = unscoredReason(name);
  checksOk += r.ok;
  checksBad += r.bad;
  wireOk += r.wireOk ?? 0;
  wireBad += r.wireBad ?? 0;
  harness += r.harness ?? 0;
  if (r.pass) passed++;
  for (const t of reason === null ? [scored] : [unscored, byReason.get(reason) ?? byReason.set(reason, tally()).get(reason)]) {
    t.scenarios++; t.ok += r.ok; t.bad += r.bad; if (r.pass) t.passed++;
  }
  let note = "";
  if (!expected.has(name)) { note = "NEW (not in expectations)"; unknown++; if (reason === null) unknownScored++; }
  else if (want === "unknown") { note = "expectation unknown"; unknown++; if (reason === null) unknownScored++; }
  else if (want === "pass" && !r.pass) { note = "REGRESSION"; regressions++; }
  else if (want === "fail" && r.pass) { note = "IMPROVED: update expectations"; improvements++; }
  const b = baseline.get(name);
  if (r.pass && b && r.ok < b.ok) {
    const lost = Object.entries(b.statuses).filter(([id, st]) => st === "SUCCESS" && r.statuses[id] !== "SUCCESS")
      .map(([id]) => `${id}: ${r.statuses[id] ?? "absent"}`);
    note = [note, `fewer SUCCESS checks than the baseline (${r.ok} < ${b.ok}): ${lost.join(", ")}`].filter(Boolean).join("; ");
  }
  rows.push({ name, got, want, scoredCol: reason === null ? "yes" : `no (${reason})`,
    counts: `${r.ok} ok, ${r.bad} failed${r.warn ? `, ${r.warn} warn` : ""}`, note, errors: r.pass ? [] : r.errors });
  suggest.push(`${name} ${got}${reason === null ? "" : `   # not scored (${reason})`}`);
}

const width = Math.max(10, ...rows.map((r) => r.name.length));
const scoredWidth = Math.max(6, ...rows.map((r) => r.scoredCol.length));
console.log(`\n--- conformance [${run}] (${dir})`);
console.log(`${"scenario".padEnd(width)}  result  expected  ${scoring ? `${"scored".padEnd(scoredWidth)}  ` : ""}checks`);
for (const r of rows) {
  console.log(`${r.name.padEnd(width)}  ${r.got.padEnd(6)}  ${r.want.padEnd(8)}  ${scoring ? `${r.scoredCol.padEnd(scoredWidth)}  ` : ""}` +
    `${r.counts}${r.note ? `   <- ${r.note}` : ""}`);
  for (const e of r.errors.slice(0, 3)) console.log(`${" ".repeat(width)}    ${e}`);
}
const cliNote = cliExit !== undefined ? `; CLI exit code ${cliExit}` : "";
if (!scoring) {
  console.log(`[${run}] scenarios: ${passed}/${names.length} passed; checks: ${checksOk} passed, ${checksBad} failed${cliNote}`);
} else {
  const line = (t) => `${t.passed}/${t.scenarios} passed; checks: ${t.ok} passed, ${t.bad} failed`;
  const reasons = [...byReason].map(([k, t]) => `${k} ${t.passed}/${t.scenarios}`).join(", ");
  console.log(`[${run}] scored scenarios: ${line(scored)}`);
  console.log(`[${run}] unscored scenarios: ${line(unscored)}${reasons ? ` (${reasons})` : ""}`);
  console.log(`[${run}] all: ${passed}/${names.length} scenarios passed; checks: ${checksOk} passed, ${checksBad} failed` +
    `; wire-schema-valid: ${wireOk} passed, ${wireBad} failed${harness ? `; wire-schema-harness-error: ${harness}` : ""}${cliNote}`);
}

if (!sawSection) {
  console.log(`[${run}] ERROR: no [${run}] section in ${expectedFile}. Suggested section:\n[${run}]\n${suggest.join("\n")}`);
  process.exit(1);
}
// An unscored scenario written `unknown` on purpose (a vacuous pass, say) does not ask for an update by itself;
// nor does a run with no results at all (nothing started): there is nothing to learn from it.
if (results.size === 0) {
  console.log(`[${run}] no results in ${dir}: nothing to compare beyond the expectations above`);
} else if (improvements > 0 || unknownScored > 0) {
  console.log(`[${run}] ${improvements} scenario(s) better than expected, ${unknown} without an expectation: ` +
    `update the [${run}] section of ${expectedFile} to:\n[${run}]\n${suggest.join("\n")}`);
} else if (unknown > 0) {
  console.log(`[${run}] ${unknown} unscored scenario(s) with expectation unknown (reported only)`);
}
if (regressions > 0) {
  console.log(`[${run}] FAIL: ${regressions} scenario(s) expected to pass failed`);
  process.exit(1);
}
console.log(`[${run}] OK: no regressions`);
