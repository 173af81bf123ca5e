// Reads the conformance CLI's results for one run and compares them with the
// committed expectations. Used by .ci/conformance; plain Node, no dependencies.
//
//   node .ci/conformance-report.mjs RUN RESULTS_DIR EXPECTED_FILE [CLI_EXIT_CODE [BASELINE_DIR]]
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
import fs from "node:fs";
import path from "node:path";

const [run, dir, expectedFile, cliExit, baselineDir] = process.argv.slice(2);
if (!run || !dir || !expectedFile) {
  console.error("usage: conformance-report.mjs RUN RESULTS_DIR EXPECTED_FILE [CLI_EXIT_CODE]");
  process.exit(2);
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
const dirRe = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:-\d+)?Z$/;
for (const entry of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
  const m = entry.match(dirRe);
  if (!m) continue;
  const scenario = m[1];
  const file = path.join(dir, entry, "checks.json");
  let checks;
  try {
    checks = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (err) {
    results.set(scenario, { pass: false, ok: 0, bad: 1, warn: 0, errors: [`no readable checks.json: ${err.message}`] });
    continue;
  }
  const r = { pass: true, ok: 0, bad: 0, warn: 0, errors: [], statuses: {} };
  for (const c of checks) {
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
let regressions = 0, improvements = 0, unknown = 0, checksOk = 0, checksBad = 0, passed = 0;
const rows = [];
const suggest = [];
for (const name of names) {
  const r = results.get(name) ?? { pass: false, ok: 0, bad: 0, warn: 0, errors: ["no result (scenario did not run)"], missing: true };
  const want = expected.get(name) ?? "unknown";
  const got = r.pass ? "pass" : "fail";
  checksOk += r.ok;
  checksBad += r.bad;
  if (r.pass) passed++;
  let note = "";
  if (!expected.has(name)) { note = "NEW (not in expectations)"; unknown++; }
  else if (want === "unknown") { note = "expectation unknown"; unknown++; }
  else if (want === "pass" && !r.pass) { note = "REGRESSION"; regressions++; }
  else if (want === "fail" && r.pass) { note = "IMPROVED: update expectations"; improvements++; }
  const b = baseline.get(name);
  if (r.pass && b && r.ok < b.ok) {
    const lost = Object.entries(b.statuses).filter(([id, st]) => st === "SUCCESS" && r.statuses[id] !== "SUCCESS")
      .map(([id]) => `${id}: ${r.statuses[id] ?? "absent"}`);
    note = [note, `fewer SUCCESS checks than the baseline (${r.ok} < ${b.ok}): ${lost.join(", ")}`].filter(Boolean).join("; ");
  }
  rows.push({ name, got, want, counts: `${r.ok} ok, ${r.bad} failed${r.warn ? `, ${r.warn} warn` : ""}`, note, errors: r.pass ? [] : r.errors });
  suggest.push(`${name} ${got}`);
}

const width = Math.max(10, ...rows.map((r) => r.name.length));
console.log(`\n--- conformance [${run}] (${dir})`);
console.log(`${"scenario".padEnd(width)}  result  expected  checks`);
for (const r of rows) {
  console.log(`${r.name.padEnd(width)}  ${r.got.padEnd(6)}  ${r.want.padEnd(8)}  ${r.counts}${r.note ? `   <- ${r.note}` : ""}`);
  for (const e of r.errors.slice(0, 3)) console.log(`${" ".repeat(width)}    ${e}`);
}
console.log(`[${run}] scenarios: ${passed}/${names.length} passed; checks: ${checksOk} passed, ${checksBad} failed` +
  (cliExit !== undefined ? `; CLI exit code ${cliExit}` : ""));

if (!sawSection) {
  console.log(`[${run}] ERROR: no [${run}] section in ${expectedFile}. Suggested section:\n[${run}]\n${suggest.join("\n")}`);
  process.exit(1);
}
if (improvements > 0 || unknown > 0) {
  console.log(`[${run}] ${improvements} scenario(s) better than expected, ${unknown} without an expectation: ` +
    `update the [${run}] section of ${expectedFile} to:\n[${run}]\n${suggest.join("\n")}`);
}
if (regressions > 0) {
  console.log(`[${run}] FAIL: ${regressions} scenario(s) expected to pass failed`);
  process.exit(1);
}
console.log(`[${run}] OK: no regressions`);
