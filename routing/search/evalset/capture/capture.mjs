// capture.mjs captures tools/list from the MCP servers listed in servers.json and writes ../testdata/catalog.json.
//
// It is a Node script, not a Go program, because nearly every server it captures is an npm package: Node installs
// them with the registry's own client and runs their bins directly, and the few others (the Go SDK's examples) are
// plain commands. It has no dependencies: it speaks JSON-RPC over the servers' stdio itself.
//
//   node capture.mjs install [NAME...]  # npm-installs the npm servers of servers.json into $SCRATCH (default /work/scratch-eval)
//   node capture.mjs capture   # runs each server with dummy credentials, asks tools/list, writes ../testdata/catalog.json
//   node capture.mjs capture NAME...   # re-captures only these upstreams, keeping the others from catalog.json
//   node capture.mjs purposes  # prints upstream<TAB>purpose for each captured server (what a blind query writer sees)
//
// The Go SDK's and mcp-go's example servers (entries with goModule and goPackage) are built by install into
// $SCRATCH/bin from a scratch module that requires them (the Go module proxy serves them).
//
// Installs and captures run one at a time, each under a timeout (the machine is small and shared). Each package is
// installed with --ignore-scripts into its own directory $SCRATCH/pkgs/<upstream> (one tree for all of them took
// far longer to resolve, and one bad package failed it all).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const scratch = process.env.SCRATCH || '/work/scratch-eval';
const manifest = JSON.parse(fs.readFileSync(path.join(here, 'servers.json'), 'utf8'));
const out = path.join(here, '..', 'testdata', 'catalog.json');
const failLog = path.join(here, 'failures.txt');

// Dummy credentials that many servers check for at start-up; none of them is real, and no capture makes a call
// beyond tools/list (a server that needs its service to list its tools fails and is reported).
const dummyEnv = {
  HOME: path.join(scratch, 'home'), KUBECONFIG: path.join(scratch, 'home', 'kubeconfig'), NODE_ENV: 'production', NO_COLOR: '1', CI: '1',
  PUPPETEER_SKIP_DOWNLOAD: '1', PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1',
  API_KEY: 'dummy-key', ACCESS_TOKEN: 'dummy-token', AUTH_TOKEN: 'dummy-token',
  GITHUB_PERSONAL_ACCESS_TOKEN: 'dummy-github-personal-access-token',
  GITHUB_TOKEN: 'dummy-github-token',
  GH_TOKEN: 'dummy-gh-token',
  SLACK_BOT_TOKEN: 'dummy-slack-bot-token',
  SLACK_TEAM_ID: 'dummy-slack-team-id',
  SLACK_MCP_XOXP_TOKEN: 'dummy-slack-mcp-xoxp-token',
  SLACK_TOKEN: 'dummy-slack-token',
  BRAVE_API_KEY: 'dummy-brave-api-key',
  GITLAB_PERSONAL_ACCESS_TOKEN: 'dummy-gitlab-personal-access-token',
  GITLAB_TOKEN: 'dummy-gitlab-token',
  GOOGLE_MAPS_API_KEY: 'dummy-google-maps-api-key',
  GOOGLE_API_KEY: 'dummy-google-api-key',
  EVERART_API_KEY: 'dummy-everart-api-key',
  NOTION_TOKEN: 'dummy-notion-token',
  NOTION_API_KEY: 'dummy-notion-api-key',
  SENTRY_ACCESS_TOKEN: 'dummy-sentry-access-token',
  SENTRY_AUTH_TOKEN: 'dummy-sentry-auth-token',
  FIRECRAWL_API_KEY: 'dummy-firecrawl-api-key',
  TAVILY_API_KEY: 'dummy-tavily-api-key',
  EXA_API_KEY: 'dummy-exa-api-key',
  CIRCLECI_TOKEN: 'dummy-circleci-token',
  PRIVATE_APP_ACCESS_TOKEN: 'dummy-private-app-access-token',
  FIGMA_API_KEY: 'dummy-figma-api-key',
  LINEAR_API_KEY: 'dummy-linear-api-key',
  LINEAR_ACCESS_TOKEN: 'dummy-linear-access-token',
  AIRTABLE_API_KEY: 'dummy-airtable-api-key',
  NEON_API_KEY: 'dummy-neon-api-key',
  BROWSERBASE_API_KEY: 'dummy-browserbase-api-key',
  BROWSERBASE_PROJECT_ID: 'dummy-browserbase-project-id',
  AMAP_MAPS_API_KEY: 'dummy-amap-maps-api-key',
  BAIDU_MAP_API_KEY: 'dummy-baidu-map-api-key',
  PERPLEXITY_API_KEY: 'dummy-perplexity-api-key',
  JINA_API_KEY: 'dummy-jina-api-key',
  SERPER_API_KEY: 'dummy-serper-api-key',
  GOOGLE_SEARCH_ENGINE_ID: 'dummy-google-search-engine-id',
  GOOGLE_CSE_ID: 'dummy-google-cse-id',
  API_TOKEN: 'dummy-api-token',
  HYPERBROWSER_API_KEY: 'dummy-hyperbrowser-api-key',
  APIFY_TOKEN: 'dummy-apify-token',
  COINGECKO_PRO_API_KEY: 'dummy-coingecko-pro-api-key',
  COINGECKO_DEMO_API_KEY: 'dummy-coingecko-demo-api-key',
  STRIPE_SECRET_KEY: 'dummy-stripe-secret-key',
  XERO_CLIENT_ID: 'dummy-xero-client-id',
  XERO_CLIENT_SECRET: 'dummy-xero-client-secret',
  XERO_CLIENT_BEARER_TOKEN: 'dummy-xero-client-bearer-token',
  MAPBOX_ACCESS_TOKEN: 'dummy-mapbox-access-token',
  VARIFLIGHT_API_KEY: 'dummy-variflight-api-key',
  BITBUCKET_USERNAME: 'dummy-bitbucket-username',
  BITBUCKET_APP_PASSWORD: 'dummy-bitbucket-app-password',
  BITBUCKET_TOKEN: 'dummy-bitbucket-token',
  ATLASSIAN_API_TOKEN: 'dummy-atlassian-api-token',
  ATLASSIAN_USER_EMAIL: 'dummy-atlassian-user-email',
  JIRA_API_TOKEN: 'dummy-jira-api-token',
  JIRA_EMAIL: 'dummy-jira-email',
  JIRA_TOKEN: 'dummy-jira-token',
  CONFLUENCE_API_TOKEN: 'dummy-confluence-api-token',
  SHORTCUT_API_TOKEN: 'dummy-shortcut-api-token',
  ASANA_ACCESS_TOKEN: 'dummy-asana-access-token',
  TRELLO_API_KEY: 'dummy-trello-api-key',
  TRELLO_TOKEN: 'dummy-trello-token',
  TRELLO_BOARD_ID: 'dummy-trello-board-id',
  PLANE_API_KEY: 'dummy-plane-api-key',
  PLANE_WORKSPACE_SLUG: 'dummy-plane-workspace-slug',
  MONDAY_TOKEN: 'dummy-monday-token',
  TODOIST_API_TOKEN: 'dummy-todoist-api-token',
  TODOIST_API_KEY: 'dummy-todoist-api-key',
  CHANNEL_ACCESS_TOKEN: 'dummy-channel-access-token',
  DESTINATION_USER_ID: 'dummy-destination-user-id',
  CHATWORK_API_TOKEN: 'dummy-chatwork-api-token',
  RESEND_API_KEY: 'dummy-resend-api-key',
  SENDER_EMAIL_ADDRESS: 'dummy-sender-email-address',
  MYSQL_PASS: 'dummy-mysql-pass',
  SUPABASE_ACCESS_TOKEN: 'dummy-supabase-access-token',
  PINECONE_API_KEY: 'dummy-pinecone-api-key',
  UPSTASH_EMAIL: 'dummy-upstash-email',
  UPSTASH_API_KEY: 'dummy-upstash-api-key',
  CLOUDFLARE_API_TOKEN: 'dummy-cloudflare-api-token',
  CLOUDFLARE_ACCOUNT_ID: 'dummy-cloudflare-account-id',
  HEROKU_API_KEY: 'dummy-heroku-api-key',
  DIGITALOCEAN_API_TOKEN: 'dummy-digitalocean-api-token',
  VERCEL_API_TOKEN: 'dummy-vercel-api-token',
  VERCEL_TOKEN: 'dummy-vercel-token',
  NETLIFY_PERSONAL_ACCESS_TOKEN: 'dummy-netlify-personal-access-token',
  ARGOCD_API_TOKEN: 'dummy-argocd-api-token',
  DATADOG_API_KEY: 'dummy-datadog-api-key',
  DATADOG_APP_KEY: 'dummy-datadog-app-key',
  DD_API_KEY: 'dummy-dd-api-key',
  DD_APP_KEY: 'dummy-dd-app-key',
  GRAFANA_API_KEY: 'dummy-grafana-api-key',
  GRAFANA_TOKEN: 'dummy-grafana-token',
  ROLLBAR_ACCESS_TOKEN: 'dummy-rollbar-access-token',
  LAUNCHDARKLY_API_KEY: 'dummy-launchdarkly-api-key',
  SONARQUBE_TOKEN: 'dummy-sonarqube-token',
  HF_TOKEN: 'dummy-hf-token',
  CREEM_API_KEY: 'dummy-creem-api-key',
  KARAKEEP_API_KEY: 'dummy-karakeep-api-key',
  PAPERLESS_API_KEY: 'dummy-paperless-api-key',
  HEVY_API_KEY: 'dummy-hevy-api-key',
  TWILIO_ACCOUNT_SID: 'dummy-twilio-account-sid',
  TWILIO_API_KEY: 'dummy-twilio-api-key',
  TWILIO_API_SECRET: 'dummy-twilio-api-secret',
  POSTMAN_API_KEY: 'dummy-postman-api-key',
  SHOPIFY_ACCESS_TOKEN: 'dummy-shopify-access-token',
  REPLICATE_API_TOKEN: 'dummy-replicate-api-token',
  OPENAI_API_KEY: 'dummy-openai-api-key',
  ANTHROPIC_API_KEY: 'dummy-anthropic-api-key',
  AWS_ACCESS_KEY_ID: 'dummy-aws-access-key-id',
  AWS_SECRET_ACCESS_KEY: 'dummy-aws-secret-access-key',
  NCBI_API_KEY: 'dummy-ncbi-api-key',
  ELASTICSEARCH_API_KEY: 'dummy-elasticsearch-api-key',
  ES_API_KEY: 'dummy-es-api-key',
  EMAIL_PASSWORD: 'dummy-email-password',
  SMTP_PASSWORD: 'dummy-smtp-password',
  IMAP_PASSWORD: 'dummy-imap-password',
  MAIL_PASSWORD: 'dummy-mail-password',
  OBSIDIAN_API_KEY: 'dummy-obsidian-api-key',
  AZURE_DEVOPS_PAT: 'dummy-azure-devops-pat',
  AZURE_DEVOPS_TOKEN: 'dummy-azure-devops-token',
  CONTEXT7_API_KEY: 'dummy-context7-api-key',
  GREPTILE_API_KEY: 'dummy-greptile-api-key',
  BRIGHTDATA_API_KEY: 'dummy-brightdata-api-key',
};

function sh(cmd, args, opts) {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', ...opts });
  return { ok: r.status === 0, out: (r.stdout || '') + (r.stderr || '') };
}

function npmInstall(dir, specs) {
  fs.mkdirSync(dir, { recursive: true });
  if (!fs.existsSync(path.join(dir, 'package.json'))) fs.writeFileSync(path.join(dir, 'package.json'), '{"private":true}\n');
  return sh('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', ...specs],
    { cwd: dir, timeout: 300_000, env: { ...process.env, PUPPETEER_SKIP_DOWNLOAD: '1', PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' } });
}

// installGo builds the Go example servers (entries with goModule and goPackage) into $SCRATCH/bin/<upstream>, from
// a scratch module that requires their modules.
function installGo() {
  const gos = manifest.servers.filter((s) => s.goPackage);
  if (!gos.length) return;
  const dir = path.join(scratch, 'gomod');
  fs.mkdirSync(dir, { recursive: true });
  const mods = [...new Set(gos.map((s) => s.goModule))];
  fs.writeFileSync(path.join(dir, 'go.mod'), 'module scratch/evalcapture\n\ngo 1.26\n\nrequire (\n' +
    mods.map((m) => '\t' + m.replace('@', ' ') + '\n').join('') + ')\n');
  fs.writeFileSync(path.join(dir, 'tools.go'), '//go:build tools\n\npackage tools\n\nimport (\n' +
    gos.map((s) => `\t_ "${s.goPackage}"\n`).join('') + ')\n');
  let r = sh('go', ['mod', 'tidy'], { cwd: dir, timeout: 600_000 });
  if (!r.ok) { console.log('go mod tidy: FAILED\n' + r.out); return; }
  for (const s of gos) {
    r = sh('go', ['build', '-o', path.join(scratch, 'bin', s.upstream), s.goPackage], { cwd: dir, timeout: 600_000 });
    console.log(`go build ${s.goPackage}: ${r.ok ? 'ok' : 'FAILED ' + r.out}`);
  }
}

// install installs each npm server of servers.json (or only the named upstreams) into its own directory
// $SCRATCH/pkgs/<upstream>, one at a time, each under a timeout of 5 minutes, skipping those already there.
function install(only) {
  if (!only.length) installGo();
  const order = only.length ? only.map((u) => manifest.servers.find((s) => s.upstream === u)).filter(Boolean) : manifest.servers;
  for (const s of order) {
    if (!s.package || where(s)) continue;
    const t = Date.now();
    const r = npmInstall(path.join(scratch, 'pkgs', s.upstream), [`${s.package}@${s.version}`]);
    console.log(`${s.upstream}: ${s.package}@${s.version}: ${r.ok ? 'ok' : 'FAILED ' + r.out.replace(/\s+/g, ' ').slice(0, 300)} in ${((Date.now() - t) / 1000).toFixed(0)}s`);
  }
}

// where finds the installed package of s (a batch directory or its own) and returns its directory.
function where(s) {
  const p = path.join(scratch, 'pkgs', s.upstream, 'node_modules', s.package);
  return fs.existsSync(path.join(p, 'package.json')) ? p : null;
}

// command returns the argv that starts server s.
function command(s, dir, pj) {
  if (s.goPackage) return [path.join(scratch, 'bin', s.upstream)];
  if (s.cmd) return s.cmd.map((a) => a.replaceAll('$SCRATCH', scratch));
  let bin = pj.bin;
  if (typeof bin === 'object') bin = bin[s.bin] || (Object.keys(bin).length === 1 ? Object.values(bin)[0] : bin[pj.name.split('/').pop()]);
  if (!bin && s.main) bin = s.main;
  if (!bin) throw new Error('no bin in package.json: ' + JSON.stringify(pj.bin));
  const file = path.join(dir, bin);
  const head = fs.readFileSync(file, 'utf8').slice(0, 200);
  const args = (s.args || []).map((a) => a.replaceAll('$SCRATCH', scratch));
  if (/^#!.*\b(sh|bash)\b/.test(head)) return ['sh', file, ...args];
  return [process.execPath, file, ...args];
}

function rpcSession(argv, env, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { env, cwd: path.join(scratch, 'home'), stdio: ['pipe', 'pipe', 'pipe'], detached: true });
    let buf = '', errTail = '', done = false, nextId = 1;
    const pending = new Map();
    const finish = (v) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try { process.kill(-child.pid, 'SIGKILL'); } catch {}
      resolve({ ...v, stderr: errTail.slice(-600) });
    };
    const timer = setTimeout(() => finish({ error: 'timeout after ' + timeoutMs / 1000 + 's' }), timeoutMs);
    const send = (m) => { try { child.stdin.write(JSON.stringify(m) + '\n'); } catch {} };
    const call = (method, params) => new Promise((res, rej) => { const id = nextId++; pending.set(id, { res, rej }); send({ jsonrpc: '2.0', id, method, params }); });
    child.on('error', (e) => finish({ error: 'spawn: ' + e.message }));
    child.on('exit', (code, sig) => setTimeout(() => finish({ error: `exited ${code ?? sig} before answering` }), 200));
    child.stderr.on('data', (d) => { errTail = (errTail + d).slice(-4000); });
    child.stdout.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line.startsWith('{')) continue; // some servers log to stdout
        let m;
        try { m = JSON.parse(line); } catch { continue; }
        if (m.method && m.id !== undefined) { // a request from the server: roots, sampling, ping
          send({ jsonrpc: '2.0', id: m.id, result: m.method === 'roots/list' ? { roots: [] } : {} });
        } else if (m.id !== undefined && pending.has(m.id)) {
          const p = pending.get(m.id);
          pending.delete(m.id);
          m.error ? p.rej(new Error(JSON.stringify(m.error))) : p.res(m.result);
        }
      }
    });
    (async () => {
      try {
        const init = await call('initialize', { protocolVersion: '2025-06-18', capabilities: { roots: {} }, clientInfo: { name: 'switchboard-evalset-capture', version: '1' } });
        send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        const tools = [];
        let cursor;
        for (let page = 0; page < 50; page++) {
          const r = await call('tools/list', cursor ? { cursor } : {});
          tools.push(...(r.tools || []));
          cursor = r.nextCursor;
          if (!cursor) break;
        }
        finish({ init, tools });
      } catch (e) {
        finish({ error: e.message });
      }
    })();
  });
}

function keepTool(t) {
  const o = { name: t.name };
  if (t.title) o.title = t.title;
  o.description = t.description || '';
  o.inputSchema = t.inputSchema;
  if (t.outputSchema) o.outputSchema = t.outputSchema;
  if (t.annotations && Object.keys(t.annotations).length) o.annotations = t.annotations;
  return o;
}

async function capture(only) {
  fs.mkdirSync(path.join(scratch, 'home'), { recursive: true });
  // a kubeconfig with one context on an address where nothing listens, for the Kubernetes servers
  fs.writeFileSync(dummyEnv.KUBECONFIG, 'apiVersion: v1\nkind: Config\ncurrent-context: dummy\nclusters:\n- name: dummy\n  cluster: {server: "https://127.0.0.1:9"}\n' +
    'contexts:\n- name: dummy\n  context: {cluster: dummy, user: dummy}\nusers:\n- name: dummy\n  user: {token: dummy}\n');
  let prev = { servers: [] };
  if (only.length && fs.existsSync(out)) prev = JSON.parse(fs.readFileSync(out, 'utf8'));
  const servers = [], failures = [];
  if (only.length && fs.existsSync(failLog)) { // keep the failures of the servers not captured this time
    for (const line of fs.readFileSync(failLog, 'utf8').split('\n')) {
      const u = line.split('\t')[0];
      if (line && !only.includes(u) && manifest.servers.some((s) => s.upstream === u)) failures.push(line);
    }
  }
  for (const s of manifest.servers) {
    if (only.length && !only.includes(s.upstream)) {
      const p = prev.servers.find((x) => x.upstream === s.upstream);
      if (p) servers.push(p);
      continue;
    }
    let dir = null, pj = {}, argv;
    try {
      if (s.package) {
        dir = where(s);
        if (!dir) throw new Error('not installed');
        pj = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
      }
      argv = command(s, dir, pj);
    } catch (e) {
      failures.push(`${s.upstream}\t${s.package || s.goPackage}\t${e.message}`);
      console.log(`${s.upstream}: FAILED ${e.message}`);
      continue;
    }
    const env = { PATH: process.env.PATH, ...dummyEnv, ...(s.env || {}) };
    const t = Date.now();
    const r = await rpcSession(argv, env, (s.timeout || 40) * 1000);
    const secs = ((Date.now() - t) / 1000).toFixed(1);
    if (r.error || !r.tools.length) {
      const why = r.error || 'no tools listed';
      failures.push(`${s.upstream}\t${s.package ? s.package + '@' + s.version : s.goPackage}\t${why}\t${r.stderr.replace(/\s+/g, ' ').slice(-300)}`);
      console.log(`${s.upstream}: FAILED ${why} (${secs}s) ${r.stderr.replace(/\s+/g, ' ').slice(-200)}`);
      continue;
    }
    const version = pj.version || s.version;
    const purpose = s.purpose || (pj.description || '').trim();
    const si = r.init.serverInfo || {};
    servers.push({
      upstream: s.upstream,
      purpose,
      purposeFrom: s.purpose ? (s.purposeFrom || 'README') : 'package.json description',
      source: s.package
        ? `tools/list of npm ${s.package}@${version} (serverInfo ${si.name || '?'} ${si.version || ''}), captured over stdio`.replace(' )', ')')
        : `tools/list of ${s.source} (serverInfo ${si.name || '?'} ${si.version || ''}), captured over stdio`.replace(' )', ')'),
      instructions: r.init.instructions || '',
      tools: r.tools.map(keepTool),
    });
    console.log(`${s.upstream}: ${r.tools.length} tools (${secs}s)`);
  }
  const nTools = servers.reduce((n, s) => n + s.tools.length, 0);
  fs.writeFileSync(out, JSON.stringify({ about: manifest.about, servers }, null, 1) + '\n');
  fs.writeFileSync(failLog, failures.join('\n') + (failures.length ? '\n' : ''));
  console.log(`wrote ${out}: ${servers.length} servers, ${nTools} tools; ${failures.length} failed (see failures.txt)`);
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === 'install') install(rest);
else if (mode === 'capture') await capture(rest);
else if (mode === 'purposes') {
  for (const s of JSON.parse(fs.readFileSync(out, 'utf8')).servers) console.log(`${s.upstream}\t${s.purpose}`);
} else { console.error('usage: node capture.mjs install | capture [UPSTREAM...] | purposes'); process.exit(2); }
