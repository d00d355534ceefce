// The client command the conformance suite runs for each scenario: it
// plays a host that drives mcp-audit. The suite appends the scenario
// server's URL and names the scenario, its wire version and its context in
// MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_PROTOCOL_VERSION and
// MCP_CONFORMANCE_CONTEXT.
//
// It writes a config naming that server with its protocolVersion pinned
// to the scenario's wire version (and, for auth/* scenarios, the oauth
// settings from the context), logs in with `mcp-audit auth login` for the
// auth/* scenarios (not with CONF_LOGIN=run, a host that relies on
// `run --login` alone), then runs `mcp-audit run --once` once per step of
// the scenario (a tool call, a resource read or a prompt; none: just
// connect and list). Every token lives in the scenario's own
// $XDG_CONFIG_HOME.
//
// It exits with the first failing run's status (0 when every run
// succeeded) and records every run's status in $CONF_EXIT_DIR, since the
// suite does not report a client's exit status when it runs a whole
// requirement set.
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const url = process.argv[process.argv.length - 1];
const scenario = process.env.MCP_CONFORMANCE_SCENARIO || '';
const version = process.env.MCP_CONFORMANCE_PROTOCOL_VERSION || '';
const ctx = process.env.MCP_CONFORMANCE_CONTEXT ? JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT) : {};
const steps = JSON.parse(process.env.CONF_STEPS || '{}');
const bin = process.env.MCP_AUDIT;
const auth = scenario.startsWith('auth/');

if (process.argv[2] === 'follow') {
  // The browser of `auth login`: fetch the authorization URL and follow
  // its redirects to the loopback listener.
  fetch(process.argv[3], { redirect: 'follow' }).then((r) => r.text()).then(
    () => process.exit(0),
    (e) => { console.error(e.message); process.exit(1); });
  return;
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'conf-'));
const env = { ...process.env, XDG_CONFIG_HOME: path.join(dir, 'config') };
const server = { type: 'http', url };
// CONF_PIN=none leaves the version to mcp-audit's default.
if (version && process.env.CONF_PIN !== 'none') server.protocolVersion = version;
if (auth) {
  // The Client ID Metadata Document URL is the one the suite's
  // authorization server expects where it supports such documents.
  const oauth = { clientMetadataUrl: 'https://conformance-test.local/client-metadata.json' };
  if (ctx.client_id) oauth.clientId = ctx.client_id;
  if (ctx.client_secret) oauth.clientSecret = ctx.client_secret;
  if (ctx.private_key_pem) { oauth.privateKey = ctx.private_key_pem; oauth.signingAlgorithm = ctx.signing_algorithm; }
  if (scenario.startsWith('auth/client-credentials')) oauth.grant = 'client_credentials';
  server.oauth = oauth;
  env.MCPLIFE_BROWSER = `${process.execPath} ${__filename} follow`;
}
const config = path.join(dir, 'config.json');
fs.writeFileSync(config, JSON.stringify({ mcpServers: { c: server } }));
const common = ['--db', path.join(dir, 'events.db')];
const where = ['--cwd', dir, '--no-project-config', '--config', config];

const runs = [];
function run(args) {
  const r = spawnSync(bin, args, { env, stdio: 'inherit' });
  const code = r.status === null ? 128 : r.status;
  runs.push({ args: args.slice(common.length), code });
  return code;
}

// CONF_LOGIN=run plays a host that relies on `run --login` alone.
if (auth && process.env.CONF_LOGIN !== 'run') run([...common, 'auth', 'login', 'c', ...where]);

// A scenario's steps: the test's table, else the tool calls its context
// names, else the one tool the auth/* servers offer.
let plan = steps[scenario];
if (!plan && Array.isArray(ctx.toolCalls)) plan = ctx.toolCalls.map((c) => ({ call: c.name, args: c.arguments || {} }));
if (!plan && auth) plan = [{ call: 'test-tool', args: {} }];
if (!plan || plan.length === 0) plan = [{}];

let exit = 0;
for (const step of plan) {
  const args = [...common, 'run', '--once', '--elicit', 'accept-defaults', ...where];
  if (auth) args.push('--login');
  if (step.call) args.push('--call', 'c/' + step.call, '--args', JSON.stringify(step.args || {}));
  if (step.read) args.push('--read', 'c:' + step.read);
  if (step.prompt) args.push('--prompt', 'c/' + step.prompt);
  const code = run(args);
  if (code !== 0 && exit === 0) exit = code;
}

if (process.env.CONF_EXIT_DIR) {
  const file = path.join(process.env.CONF_EXIT_DIR, scenario.replace(/[^A-Za-z0-9_.-]/g, '_') + '.json');
  fs.writeFileSync(file, JSON.stringify({ scenario, version, exit, runs }));
}
fs.rmSync(dir, { recursive: true, force: true });
process.exit(exit);
