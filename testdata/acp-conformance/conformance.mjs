// conformance.mjs: runs the ACP v1 conformance requirements (the requirement
// list of the protocol's conformance kit, agentclientprotocol/acp-tck, v1
// suite: same ids, tiers and verdict) against an agent command, checking
// every message with the official ACP TypeScript library's schemas. See
// README.md beside this file.
//
//   node conformance.mjs [options] -- AGENT [ARGS...]
//
// Options: --agent-cwd DIR, --agent-env NAME=VALUE (repeatable),
// --cancel-prompt TEXT, --quiet-ms N (default 500), --report-json PATH,
// -k TEXT (only the tests whose name or requirement contains TEXT), -v.
// Exit status: 0 when CONFORMANT, 1 when not, 2 for a usage error.

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const SDK_VERSION = "2.4.0";
const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.ACP_SDK_DIR
  ? path.resolve(process.env.ACP_SDK_DIR)
  : path.resolve(here, "../../.tools/npm/node_modules/@agentclientprotocol/sdk");

function usage(message) {
  process.stderr.write(`conformance: ${message}\n`);
  process.stderr.write(
    "usage: node conformance.mjs [--agent-cwd DIR] [--agent-env NAME=VALUE]... [--cancel-prompt TEXT]\n" +
      "                            [--quiet-ms N] [--report-json PATH] [-k TEXT] [-v] -- AGENT [ARGS...]\n",
  );
  process.exit(2);
}

// ---------------------------------------------------------------- options

const opts = { cwd: null, env: {}, cancelPrompt: null, quietMs: 500, report: null, filter: null, verbose: false };
const argv = process.argv.slice(2);
let agentArgv = null;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  const value = () => {
    if (i + 1 >= argv.length) usage(`${a} needs a value`);
    return argv[++i];
  };
  if (a === "--") {
    agentArgv = argv.slice(i + 1);
    break;
  } else if (a === "--agent-cwd") opts.cwd = path.resolve(value());
  else if (a === "--agent-env") {
    const kv = value();
    const eq = kv.indexOf("=");
    if (eq <= 0) usage(`--agent-env ${kv}: want NAME=VALUE`);
    opts.env[kv.slice(0, eq)] = kv.slice(eq + 1);
  } else if (a === "--cancel-prompt") opts.cancelPrompt = value();
  else if (a === "--quiet-ms") {
    opts.quietMs = Number(value());
    if (!Number.isFinite(opts.quietMs) || opts.quietMs < 0) usage("--quiet-ms wants a number of milliseconds");
  } else if (a === "--report-json") opts.report = path.resolve(value());
  else if (a === "-k") opts.filter = value();
  else if (a === "-v") opts.verbose = true;
  else if (a === "--trace") opts.trace = true;
  else if (a === "-h" || a === "--help") usage("runs the ACP v1 conformance requirements against an agent");
  else usage(`unknown option ${a}`);
}
if (!agentArgv || agentArgv.length === 0) usage("no agent command after --");
if (!existsSync(path.join(sdkDir, "package.json"))) {
  usage(`no ACP SDK at ${sdkDir}: run bash scripts/install-clis, or set ACP_SDK_DIR`);
}
const sdkPkg = JSON.parse(readFileSync(path.join(sdkDir, "package.json"), "utf8"));
if (sdkPkg.version !== SDK_VERSION) {
  process.stderr.write(`conformance: warning: ${sdkDir} is version ${sdkPkg.version}, written for ${SDK_VERSION}\n`);
}
// The SDK's generated zod schemas (stable ACP v1), the ones it validates with.
const schemas = await import(pathToFileURL(path.join(sdkDir, "dist/v1/schema/zod.gen.js")).href);
// The unstable part (the same names, with the fields not yet stable), for
// ACP-SCHEMA-002: a field either part defines is no unknown field.
const unstableSchemas = await import(pathToFileURL(path.join(sdkDir, "dist/v1/unstable/schema/zod.gen.js")).href);
const unstableOf = new Map(Object.entries(schemas).map(([name, z]) => [z, unstableSchemas[name]]));

// ---------------------------------------------------------------- requirements

const MANDATORY = "MANDATORY";
const CAPABILITY = "CAPABILITY";
const ADVISORY = "ADVISORY";
const INFORMATIONAL = "INFORMATIONAL";

// The v1 requirement list: id, tier, the capability it needs (a dotted path
// in the initialize result; "inferred:..." when the test itself finds out),
// and what it asks, in short (the kit's requirements.py has the full text).
const REQUIREMENTS = [
  ["ACP-TRANSPORT-001", MANDATORY, null, "every line on stdout is one valid JSON-RPC 2.0 message"],
  ["ACP-TRANSPORT-002", MANDATORY, null, "stdout is valid UTF-8"],
  ["ACP-JSONRPC-001", MANDATORY, null, "a response's id echoes the request's, integer and string"],
  ["ACP-JSONRPC-002", MANDATORY, null, "a response has exactly one of result/error; an error has an integer code and a string message"],
  ["ACP-JSONRPC-003", MANDATORY, null, "a notification never gets a response"],
  ["ACP-JSONRPC-004", ADVISORY, null, "an unknown method gets -32601"],
  ["ACP-JSONRPC-005", ADVISORY, null, "after an erroneous request the connection stays usable"],
  ["ACP-INIT-001", MANDATORY, null, "initialize succeeds, the result validates, protocolVersion is an integer"],
  ["ACP-INIT-002", MANDATORY, null, "asked for protocol version 1, the agent answers 1"],
  ["ACP-INIT-003", MANDATORY, null, "asked for 65535, the agent answers an integer that is not 65535 and not below its v1 answer"],
  ["ACP-INIT-004", ADVISORY, null, "agentInfo has name and version"],
  ["ACP-SCHEMA-001", MANDATORY, null, "every message the agent sends validates against the schema"],
  ["ACP-SESSION-001", MANDATORY, null, "session/new with an absolute cwd and no MCP servers answers a non-empty sessionId"],
  ["ACP-SESSION-002", MANDATORY, null, "two session/new answer distinct sessionIds"],
  ["ACP-PROMPT-001", MANDATORY, null, "a text prompt resolves with a defined stopReason"],
  ["ACP-PROMPT-002", MANDATORY, null, "every session/update of a turn validates and carries the prompted sessionId"],
  ["ACP-PROMPT-003", ADVISORY, null, "a prompt with a resource_link beside text is accepted"],
  ["ACP-CANCEL-001", MANDATORY, null, "session/cancel during a prompt resolves it with stopReason cancelled"],
  ["ACP-CANCEL-002", MANDATORY, null, "no session/update of the cancelled session after the prompt's answer"],
  ["ACP-LOAD-001", CAPABILITY, "agentCapabilities.loadSession", "session/load of a session succeeds with a valid LoadSessionResponse"],
  ["ACP-LOAD-002", CAPABILITY, "agentCapabilities.loadSession", "every session/update of a load comes before its answer, none after"],
  ["ACP-LOAD-003", ADVISORY, null, "session/load's empty result is {} (an object), not null"],
  ["ACP-RESUME-001", CAPABILITY, "agentCapabilities.sessionCapabilities.resume", "session/resume with sessionId and cwd succeeds with a valid ResumeSessionResponse"],
  ["ACP-RESUME-002", CAPABILITY, "agentCapabilities.sessionCapabilities.resume", "no history update (message or thought chunk) before session/resume's answer"],
  ["ACP-LIST-001", CAPABILITY, "agentCapabilities.sessionCapabilities.list", "session/list {} answers a valid ListSessionsResponse with a sessions array"],
  ["ACP-LIST-002", CAPABILITY, "agentCapabilities.sessionCapabilities.list", "session/list of a cwd no session uses answers sessions: []"],
  ["ACP-DELETE-001", CAPABILITY, "agentCapabilities.sessionCapabilities.delete", "session/delete of a session made on the connection succeeds with {}"],
  ["ACP-DELETE-002", ADVISORY, null, "deleting a never-created or deleted session succeeds silently"],
  ["ACP-CLOSE-001", CAPABILITY, "agentCapabilities.sessionCapabilities.close", "session/close of an idle session succeeds with {}"],
  ["ACP-CLOSE-002", CAPABILITY, "agentCapabilities.sessionCapabilities.close", "session/close during a prompt resolves it with stopReason cancelled"],
  ["ACP-ADDDIRS-001", CAPABILITY, "agentCapabilities.sessionCapabilities.additionalDirectories", "session/new with an absolute additionalDirectories entry is accepted"],
  ["ACP-MODES-001", CAPABILITY, "inferred:modes", "session/new's modes validate and currentModeId is one of availableModes"],
  ["ACP-MODES-002", CAPABILITY, "inferred:modes", "session/set_mode to another mode succeeds; a current_mode_update carries currentModeId"],
  ["ACP-CONFIG-001", CAPABILITY, "inferred:configOptions", "every config option's currentValue is valid for its type"],
  ["ACP-CONFIG-002", CAPABILITY, "inferred:configOptions", "session/set_config_option answers the complete list with the new value"],
  ["ACP-CONFIG-003", MANDATORY, null, "no boolean config option unless the client advertised session.configOptions.boolean"],
  ["ACP-PROMPTCAP-001", CAPABILITY, "agentCapabilities.promptCapabilities.image", "a prompt with an image block resolves with a defined stopReason"],
  ["ACP-PROMPTCAP-002", CAPABILITY, "agentCapabilities.promptCapabilities.audio", "a prompt with an audio block resolves with a defined stopReason"],
  ["ACP-PROMPTCAP-003", CAPABILITY, "agentCapabilities.promptCapabilities.embeddedContext", "a prompt with a resource block resolves with a defined stopReason"],
  ["ACP-AUTH-001", ADVISORY, null, "authMethods ids are unique"],
  ["ACP-AUTH-002", MANDATORY, null, "no terminal auth method unless the client advertised auth.terminal"],
  ["ACP-AUTH-003", CAPABILITY, "inferred:authMethods", "authenticate (with a given method id) lets session/new succeed"],
  ["ACP-AUTH-004", CAPABILITY, "agentCapabilities.auth.logout", "logout succeeds with an object (only with --allow-logout)"],
  ["ACP-AUTH-005", ADVISORY, null, "without authMethods, session/new does not fail with -32000"],
  ["ACP-CLIENTCAP-001", MANDATORY, null, "no fs/* request when the client did not advertise fs"],
  ["ACP-CLIENTCAP-002", MANDATORY, null, "no terminal/* request when the client did not advertise terminal"],
  ["ACP-CLIENTCAP-003", MANDATORY, null, "no elicitation/create when the client did not advertise elicitation"],
  ["ACP-EXT-001", MANDATORY, null, "a request to an unknown _-prefixed method gets a response"],
  ["ACP-META-001", ADVISORY, null, "a prompt carrying _meta resolves with a defined stopReason"],
  ["ACP-ERROR-001", ADVISORY, null, "every error message is non-empty and one line"],
  ["ACP-SHUTDOWN-001", ADVISORY, null, "after stdin closes the agent exits by itself"],
  ["ACP-SCHEMA-002", ADVISORY, null, "no spec object carries a root key outside its schema besides _meta"],
  ["ACP-STDERR-001", INFORMATIONAL, null, "the stderr byte count of a full exchange (recorded)"],
  ["ACP-INFO-PARSE-001", INFORMATIONAL, null, "what a malformed line gets, and whether the connection stays usable (recorded)"],
  ["ACP-INFO-INVALIDREQ-001", INFORMATIONAL, null, "what a JSON value that is not JSON-RPC gets (recorded)"],
  ["ACP-INFO-UNKNOWNSESSION-001", INFORMATIONAL, null, "what a prompt to a never-created sessionId gets (recorded)"],
];
const REQ = new Map(REQUIREMENTS.map(([id, tier, capability, text]) => [id, { id, tier, capability, text }]));

const STOP_REASONS = new Set(["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]);
const HISTORY_KINDS = new Set(["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"]);

// ---------------------------------------------------------------- validation

function isObject(v) {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function zodIssues(schema, value) {
  const r = schema.safeParse(value);
  if (!r.success) return r.error.issues.map((i) => `${(i.path ?? []).join(".") || "(root)"}: ${i.message}`);
  return [];
}

// dropped lists what the SDK's lenient schema left out of raw: unknown
// fields (or invalid optional values it replaced), for ACP-SCHEMA-002.
function dropped(raw, parsed, p = [], out = []) {
  if (Array.isArray(raw) && Array.isArray(parsed)) {
    if (raw.length !== parsed.length) out.push(`${p.join(".")}: ${raw.length - parsed.length} item(s) dropped`);
    else raw.forEach((v, n) => dropped(v, parsed[n], [...p, n], out));
  } else if (isObject(raw) && isObject(parsed)) {
    for (const [k, v] of Object.entries(raw)) {
      if (k === "_meta") continue;
      if (!Object.hasOwn(parsed, k) || parsed[k] === undefined) out.push(`${[...p, k].join(".")}: not in the schema`);
      else dropped(v, parsed[k], [...p, k], out);
    }
  }
  return out;
}

const responseSchemas = {
  initialize: schemas.zInitializeResponse,
  authenticate: schemas.zAuthenticateResponse,
  logout: schemas.zLogoutResponse,
  "session/new": schemas.zNewSessionResponse,
  "session/load": schemas.zLoadSessionResponse,
  "session/list": schemas.zListSessionsResponse,
  "session/delete": schemas.zDeleteSessionResponse,
  "session/resume": schemas.zResumeSessionResponse,
  "session/close": schemas.zCloseSessionResponse,
  "session/set_mode": schemas.zSetSessionModeResponse,
  "session/set_config_option": schemas.zSetSessionConfigOptionResponse,
  "session/prompt": schemas.zPromptResponse,
};
const requestSchemas = {
  "session/request_permission": schemas.zRequestPermissionRequest,
  "fs/read_text_file": schemas.zReadTextFileRequest,
  "fs/write_text_file": schemas.zWriteTextFileRequest,
  "terminal/create": schemas.zCreateTerminalRequest,
  "terminal/output": schemas.zTerminalOutputRequest,
  "terminal/release": schemas.zReleaseTerminalRequest,
  "terminal/wait_for_exit": schemas.zWaitForTerminalExitRequest,
  "terminal/kill": schemas.zKillTerminalRequest,
  "elicitation/create": schemas.zCreateElicitationRequest,
};
const notificationSchemas = {
  "session/update": schemas.zSessionNotification,
  "elicitation/complete": schemas.zCompleteElicitationNotification,
};

// ---------------------------------------------------------------- the agent

class Failure extends Error {}
class Skip extends Error {}
function fail(msg) {
  throw new Failure(msg);
}
function skip(msg) {
  throw new Skip(msg);
}
function check(cond, msg) {
  if (!cond) fail(msg);
}

// Agent is one agent process: what it wrote, line by line (the transcript),
// what every line was checked to be, and a mock client that answers its
// requests.
class Agent {
  constructor(workdir) {
    this.transcript = []; // {dir: "in"|"out", text, msg, kind, method, index}
    this.schemaIssues = []; // ACP-SCHEMA-001 (and TRANSPORT-001)
    this.extraKeys = []; // ACP-SCHEMA-002
    this.transportIssues = [];
    this.clientRequests = []; // agent -> client requests other than request_permission
    this.pending = new Map(); // JSON id -> method
    this.answered = new Set();
    this.nextId = 1;
    this.waiters = new Set();
    this.cancelled = new Set(); // sessions a cancel was sent for
    this.stderrBytes = 0;
    this.exited = false;
    this.exitInfo = null;
    this.workdir = workdir;
    const env = { ...process.env, ...opts.env };
    this.child = spawn(agentArgv[0], agentArgv.slice(1), {
      cwd: opts.cwd ?? workdir,
      env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child.stdin.on("error", () => {});
    this.stderr = [];
    this.child.stderr.on("data", (b) => {
      this.stderrBytes += b.length;
      this.stderr.push(b);
    });
    this.buf = Buffer.alloc(0);
    this.decoder = new TextDecoder("utf-8", { fatal: true });
    this.child.stdout.on("data", (b) => this.feed(b));
    let outEnded = false;
    let procExited = false;
    const done = () => {
      if (outEnded && procExited && !this.exited) {
        if (this.buf.length > 0) this.line(this.buf);
        this.exited = true;
        this.wake();
      }
    };
    this.child.stdout.on("end", () => {
      outEnded = true;
      done();
    });
    this.child.on("exit", (code, signal) => {
      this.exitInfo = { code, signal };
      procExited = true;
      done();
    });
    this.child.on("error", (err) => {
      this.transportIssues.push(`spawning ${agentArgv[0]}: ${err.message}`);
      this.exitInfo = { code: null, signal: null };
      outEnded = procExited = true;
      done();
    });
  }

  wake() {
    for (const w of [...this.waiters]) w();
  }

  feed(b) {
    this.buf = Buffer.concat([this.buf, b]);
    let nl;
    while ((nl = this.buf.indexOf(10)) >= 0) {
      const line = this.buf.subarray(0, nl);
      this.buf = this.buf.subarray(nl + 1);
      this.line(line);
    }
  }

  line(bytes) {
    let text;
    try {
      text = this.decoder.decode(bytes);
    } catch {
      this.transportIssues.push("a line that is not valid UTF-8 (ACP-TRANSPORT-002)");
      text = Buffer.from(bytes).toString("latin1");
      this.record({ dir: "in", text, msg: null, kind: "bad-utf8" });
      return;
    }
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (text.trim() === "") return;
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      this.transportIssues.push(`a line that is not JSON: ${text.slice(0, 200)}`);
      this.record({ dir: "in", text, msg: null, kind: "bad-json" });
      return;
    }
    const e = { dir: "in", text, msg, kind: "other" };
    if (!isObject(msg) || msg.jsonrpc !== "2.0") {
      this.transportIssues.push(`not a JSON-RPC 2.0 message: ${text.slice(0, 200)}`);
    } else if (typeof msg.method === "string") {
      e.kind = Object.hasOwn(msg, "id") ? "request" : "notification";
      e.method = msg.method;
    } else if (Object.hasOwn(msg, "id")) {
      e.kind = "response";
    } else {
      this.transportIssues.push(`neither request, notification nor response: ${text.slice(0, 200)}`);
    }
    this.validate(e);
    this.record(e);
    if (e.kind === "request") this.answerRequest(e);
  }

  record(e) {
    if (opts.trace) process.stderr.write(`${e.dir === "in" ? "<-" : "->"} ${e.text}\n`);
    e.index = this.transcript.length;
    this.transcript.push(e);
    this.wake();
  }

  validate(e) {
    const { msg } = e;
    const issues = [];
    let schema = null;
    let value;
    if (e.kind === "response") {
      const has = ["result", "error"].filter((k) => Object.hasOwn(msg, k));
      if (has.length !== 1) issues.push("a response must have exactly one of result and error");
      const key = JSON.stringify(msg.id);
      e.method = this.pending.get(key);
      if (msg.id !== null && (!this.pending.has(key) || this.answered.has(key))) {
        issues.push(`response to id ${key}, which is no pending request`);
      }
      this.answered.add(key);
      if (Object.hasOwn(msg, "error")) {
        schema = schemas.zError;
        value = msg.error;
      } else if (e.method && responseSchemas[e.method]) {
        schema = responseSchemas[e.method];
        value = msg.result;
      }
    } else if (e.kind === "notification") {
      if (notificationSchemas[e.method]) {
        schema = notificationSchemas[e.method];
        value = msg.params;
      } else if (!e.method.startsWith("_")) issues.push(`unknown notification ${e.method}`);
      else if (Object.hasOwn(msg, "params") && !isObject(msg.params)) issues.push(`${e.method}: params is not an object`);
    } else if (e.kind === "request") {
      if (requestSchemas[e.method]) {
        schema = requestSchemas[e.method];
        value = msg.params;
      } else if (!e.method.startsWith("_")) issues.push(`unknown request ${e.method}`);
    }
    if (schema) {
      const r = schema.safeParse(value);
      if (!r.success) issues.push(...zodIssues(schema, value));
      else {
        let extra = dropped(value, r.data);
        const unstable = unstableOf.get(schema);
        if (extra.length > 0 && unstable) {
          const u = unstable.safeParse(value);
          if (u.success) extra = dropped(value, u.data);
        }
        this.extraKeys.push(...extra.map((d) => `${e.method ?? e.kind}: ${d}`));
      }
    }
    for (const i of issues) this.schemaIssues.push(`${e.kind} ${e.method ?? ""}: ${i}`.trim());
  }

  write(obj) {
    const text = JSON.stringify(obj);
    this.record({ dir: "out", text, msg: obj, kind: "sent" });
    if (!this.exited) this.child.stdin.write(text + "\n");
  }

  writeRaw(text) {
    this.record({ dir: "out", text, msg: null, kind: "sent-raw" });
    if (!this.exited) this.child.stdin.write(text + "\n");
  }

  request(method, params, id) {
    if (id === undefined) id = this.nextId++;
    this.pending.set(JSON.stringify(id), method);
    const msg = { jsonrpc: "2.0", id, method };
    if (params !== undefined) msg.params = params;
    this.write(msg);
    return id;
  }

  notify(method, params) {
    const msg = { jsonrpc: "2.0", method };
    if (params !== undefined) msg.params = params;
    this.write(msg);
  }

  // answerRequest is the mock client: a permission request gets the first
  // option (cancelled once the session was cancelled), anything else -32601.
  answerRequest(e) {
    const { msg } = e;
    if (msg.method === "session/request_permission") {
      const p = msg.params ?? {};
      const first = Array.isArray(p.options) && p.options[0] ? p.options[0].optionId : null;
      const outcome =
        this.cancelled.has(p.sessionId) || first === null ? { outcome: "cancelled" } : { outcome: "selected", optionId: first };
      this.write({ jsonrpc: "2.0", id: msg.id, result: { outcome } });
      return;
    }
    this.clientRequests.push(e);
    this.write({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: `method not found: ${msg.method}` } });
  }

  // waitFor waits until an incoming entry at index >= from matches pred and
  // returns it; it fails when the agent has exited and nothing more comes.
  waitFor(pred, from = 0, what = "a message") {
    return new Promise((resolve, reject) => {
      let scanned = from;
      // pred may write to the agent, which records the line and wakes the
      // waiters again: busy keeps this scan from running inside itself.
      let busy = false;
      const look = () => {
        if (busy) return;
        busy = true;
        try {
          while (scanned < this.transcript.length) {
            const e = this.transcript[scanned++];
            if (e.dir === "in" && pred(e)) {
              this.waiters.delete(look);
              resolve(e);
              return;
            }
          }
          if (this.exited) {
            this.waiters.delete(look);
            reject(new Failure(`the agent exited (${JSON.stringify(this.exitInfo)}) before ${what}`));
          }
        } finally {
          busy = false;
        }
      };
      this.waiters.add(look);
      look();
    });
  }

  waitResponse(id) {
    const key = JSON.stringify(id);
    return this.waitFor((e) => e.kind === "response" && JSON.stringify(e.msg.id) === key, 0, `the answer to request ${key}`);
  }

  async call(method, params) {
    const id = this.request(method, params);
    return (await this.waitResponse(id)).msg;
  }

  // quiet waits the quiet period, then a round trip (an unknown extension
  // request and its answer): what the agent was going to send by then has
  // arrived. It returns the transcript length before the round trip.
  async quiet() {
    await new Promise((r) => setTimeout(r, opts.quietMs));
    if (this.exited) return this.transcript.length;
    const id = this.request("_conformance/barrier", {});
    await this.waitResponse(id);
    return this.transcript.length;
  }

  async close() {
    if (!this.exited) this.child.stdin.end();
    const exited = new Promise((resolve) => {
      const look = () => {
        if (this.exited) {
          this.waiters.delete(look);
          resolve(true);
        }
      };
      this.waiters.add(look);
      look();
    });
    const grace = new Promise((r) => setTimeout(() => r(false), 10_000).unref());
    const byItself = await Promise.race([exited, grace]);
    if (!byItself) {
      this.child.kill("SIGTERM");
      const t = setTimeout(() => this.child.kill("SIGKILL"), 5_000).unref();
      await exited;
      clearTimeout(t);
    }
    return byItself;
  }

  stderrText() {
    return Buffer.concat(this.stderr).toString("utf8").slice(-20_000);
  }
}

// ---------------------------------------------------------------- helpers

let initResult = null; // the first handshake's initialize result

async function handshake(agent, clientCapabilities = {}) {
  const r = await agent.call("initialize", { protocolVersion: 1, clientCapabilities });
  check(isObject(r.result), `initialize failed: ${JSON.stringify(r)}`);
  if (initResult === null) initResult = r.result;
  return r.result;
}

async function newSession(agent, cwd, extra = {}) {
  const r = await agent.call("session/new", { cwd, mcpServers: [], ...extra });
  if (r.error?.code === -32000 && (initResult?.authMethods ?? []).length > 0) {
    skip("AUTH-GATED: session/new answered -32000 (authentication required)");
  }
  check(isObject(r.result), `session/new did not return a result object: ${JSON.stringify(r)}`);
  check(typeof r.result.sessionId === "string" && r.result.sessionId !== "", `session/new has no sessionId: ${JSON.stringify(r.result)}`);
  return r.result;
}

// prompt runs one turn to its answer. With onFirstUpdate, that function
// runs at the turn's first session/update (not after the answer).
async function prompt(agent, sessionId, blocks, { onFirstUpdate, extra } = {}) {
  const from = agent.transcript.length;
  const id = agent.request("session/prompt", { sessionId, prompt: blocks, ...extra });
  const key = JSON.stringify(id);
  let acted = false;
  let actionIndex = null;
  const answer = await agent.waitFor(
    (e) => {
      if (e.kind === "response" && JSON.stringify(e.msg.id) === key) return true;
      if (onFirstUpdate && !acted && e.kind === "notification" && e.method === "session/update" && e.msg.params?.sessionId === sessionId) {
        acted = true;
        actionIndex = agent.transcript.length;
        onFirstUpdate();
      }
      return false;
    },
    from,
    "the prompt's answer",
  );
  const updates = agent.transcript
    .slice(from, answer.index)
    .filter((e) => e.kind === "notification" && e.method === "session/update");
  return { answer, msg: answer.msg, updates, acted, actionIndex };
}

function hello() {
  return [{ type: "text", text: "hello" }];
}

function capabilityAt(result, dotted) {
  let v = result;
  for (const k of dotted.split(".")) {
    if (!isObject(v)) return undefined;
    v = v[k];
  }
  return v;
}

// ---------------------------------------------------------------- the tests

// Each test runs on an agent of its own; reqs are the requirements it
// bears on; cap, when set, is the capability it needs (boolean true, or
// present and not null).
const TESTS = [];
function test(name, reqs, fn, cap = null) {
  TESTS.push({ name, reqs, fn, cap });
}

test("full exchange validates", ["ACP-SCHEMA-001", "ACP-TRANSPORT-001", "ACP-TRANSPORT-002", "ACP-INIT-001", "ACP-STDERR-001"], async (a, t) => {
  const r = await a.call("initialize", { protocolVersion: 1, clientCapabilities: {} });
  check(isObject(r.result), `initialize failed: ${JSON.stringify(r)}`);
  check(Number.isInteger(r.result.protocolVersion), `protocolVersion is not an integer: ${r.result.protocolVersion}`);
  const s = await newSession(a, t.dir);
  const turn = await prompt(a, s.sessionId, hello());
  check(isObject(turn.msg.result), `prompt failed: ${JSON.stringify(turn.msg)}`);
  await a.quiet();
  t.note(`stderr ${a.stderrBytes} bytes`);
});

test("initialize version 1", ["ACP-INIT-002", "ACP-INIT-004", "ACP-AUTH-001"], async (a, t) => {
  const r = await a.call("initialize", { protocolVersion: 1, clientCapabilities: {} });
  check(r.result?.protocolVersion === 1, `asked for 1, answered ${JSON.stringify(r.result?.protocolVersion)}`);
  const info = r.result.agentInfo;
  t.advise("ACP-INIT-004", isObject(info) && typeof info.name === "string" && typeof info.version === "string", `agentInfo: ${JSON.stringify(info)}`);
  const ids = (r.result.authMethods ?? []).map((m) => m.id);
  t.advise("ACP-AUTH-001", new Set(ids).size === ids.length, `authMethods ids repeat: ${ids}`);
});

test("initialize unsupported version", ["ACP-INIT-003"], async (a) => {
  const v1 = await a.call("initialize", { protocolVersion: 1, clientCapabilities: {} });
  const r = await a.call("initialize", {
    protocolVersion: 65535,
    clientCapabilities: {},
    info: { name: "conformance", version: "1.0.0" },
  });
  const got = r.result?.protocolVersion;
  check(Number.isInteger(got), `asked for 65535: ${JSON.stringify(r)}`);
  check(got !== 65535, "asked for 65535, the agent echoed it");
  check(got >= v1.result?.protocolVersion, `asked for 65535, answered ${got}, below its v1 answer`);
});

test("jsonrpc ids echo", ["ACP-JSONRPC-001", "ACP-JSONRPC-002"], async (a) => {
  a.request("initialize", { protocolVersion: 1, clientCapabilities: {} }, 7);
  await a.waitResponse(7);
  const sid = "conformance-string-id";
  a.request("session/list", {}, sid);
  const r = await a.waitResponse(sid);
  check(r.msg.id === sid, `string id came back as ${JSON.stringify(r.msg.id)}`);
  const bad = await a.call("_conformance/unknown", {});
  const n = ["result", "error"].filter((k) => Object.hasOwn(bad, k)).length;
  check(n === 1, `a response with ${n} of result/error`);
  if (bad.error) {
    check(Number.isInteger(bad.error.code) && typeof bad.error.message === "string", `error shape: ${JSON.stringify(bad.error)}`);
  }
});

test("notifications get no response", ["ACP-JSONRPC-003"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const from = a.transcript.length;
  a.notify("session/cancel", { sessionId: s.sessionId });
  a.notify("_conformance/notice", {});
  await a.quiet();
  const stray = a.transcript.slice(from).filter((e) => e.kind === "response" && !a.pending.has(JSON.stringify(e.msg.id)));
  check(stray.length === 0, `a notification got a response: ${stray.map((e) => e.text).join(" ")}`);
});

test("unknown method", ["ACP-JSONRPC-004", "ACP-JSONRPC-005", "ACP-EXT-001", "ACP-ERROR-001"], async (a, t) => {
  await handshake(a);
  const r = await a.call("not/a_method", {});
  t.advise("ACP-JSONRPC-004", r.error?.code === -32601, `unknown method answered ${JSON.stringify(r)}`);
  const ext = await a.call("_conformance/custom", {});
  check(Object.hasOwn(ext, "result") || Object.hasOwn(ext, "error"), "no response to a custom request");
  const bad = await a.call("session/new", { cwd: 42 });
  const s = await a.call("session/new", { cwd: t.dir, mcpServers: [] });
  t.advise("ACP-JSONRPC-005", isObject(s.result), `after an error, session/new failed: ${JSON.stringify(s)}`);
  for (const m of [r, ext, bad]) {
    if (m.error) {
      const msg = m.error.message;
      t.advise("ACP-ERROR-001", typeof msg === "string" && msg !== "" && !msg.includes("\n"), `error message ${JSON.stringify(msg)}`);
    }
  }
});

test("session/new", ["ACP-SESSION-001", "ACP-SESSION-002", "ACP-MODES-001", "ACP-CONFIG-001", "ACP-CONFIG-003", "ACP-AUTH-002", "ACP-AUTH-005"], async (a, t) => {
  const init = await handshake(a);
  const terminalAuth = (init.authMethods ?? []).filter((m) => m.type === "terminal");
  t.mandatory("ACP-AUTH-002", terminalAuth.length === 0, `terminal auth methods without auth.terminal: ${JSON.stringify(terminalAuth)}`);
  const first = await a.call("session/new", { cwd: t.dir, mcpServers: [] });
  if ((init.authMethods ?? []).length === 0) t.advise("ACP-AUTH-005", first.error?.code !== -32000, "-32000 without authMethods");
  check(typeof first.result?.sessionId === "string" && first.result.sessionId !== "", `session/new: ${JSON.stringify(first)}`);
  const second = await newSession(a, t.dir);
  check(second.sessionId !== first.result.sessionId, `two session/new answered the same id ${second.sessionId}`);
  const s = first.result;
  if (s.modes != null) {
    const ids = (s.modes.availableModes ?? []).map((m) => m.id);
    t.cap("ACP-MODES-001", ids.includes(s.modes.currentModeId), `currentModeId ${s.modes.currentModeId} not in ${ids}`);
  } else t.skipReq("ACP-MODES-001", "session/new returned no modes");
  const options = s.configOptions ?? [];
  if (s.configOptions != null) {
    for (const o of options) {
      if (o.type === "boolean") t.cap("ACP-CONFIG-001", typeof o.currentValue === "boolean", `${o.id}: ${o.currentValue}`);
      if (o.type === "select") {
        const values = (o.options ?? []).flatMap((x) => (Array.isArray(x.options) ? x.options : [x])).map((x) => x.value);
        t.cap("ACP-CONFIG-001", values.includes(o.currentValue), `${o.id}: ${o.currentValue} not among ${values}`);
      }
    }
  } else t.skipReq("ACP-CONFIG-001", "session/new returned no configOptions");
  const bools = options.filter((o) => o.type === "boolean");
  t.mandatory("ACP-CONFIG-003", bools.length === 0, `boolean config options without the client capability: ${bools.map((o) => o.id)}`);
});

test("prompt", ["ACP-PROMPT-001", "ACP-PROMPT-002", "ACP-CLIENTCAP-001", "ACP-CLIENTCAP-002", "ACP-CLIENTCAP-003"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const turn = await prompt(a, s.sessionId, hello());
  check(STOP_REASONS.has(turn.msg.result?.stopReason), `prompt answered ${JSON.stringify(turn.msg)}`);
  const foreign = turn.updates.filter((e) => e.msg.params?.sessionId !== s.sessionId);
  check(foreign.length === 0, `updates of another session: ${foreign.map((e) => e.text)}`);
  const calls = (prefix) => a.clientRequests.filter((e) => e.method.startsWith(prefix)).map((e) => e.method);
  t.mandatory("ACP-CLIENTCAP-001", calls("fs/").length === 0, `fs requests: ${calls("fs/")}`);
  t.mandatory("ACP-CLIENTCAP-002", calls("terminal/").length === 0, `terminal requests: ${calls("terminal/")}`);
  t.mandatory("ACP-CLIENTCAP-003", calls("elicitation/").length === 0, `elicitation requests: ${calls("elicitation/")}`);
});

test("prompt with a resource_link", ["ACP-PROMPT-003"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const turn = await prompt(a, s.sessionId, [...hello(), { type: "resource_link", uri: "file:///tmp/conformance.txt", name: "conformance.txt" }]);
  t.advise("ACP-PROMPT-003", STOP_REASONS.has(turn.msg.result?.stopReason), `answered ${JSON.stringify(turn.msg)}`);
});

test("prompt with _meta", ["ACP-META-001"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const turn = await prompt(a, s.sessionId, hello(), {
    extra: { _meta: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" } },
  });
  t.advise("ACP-META-001", STOP_REASONS.has(turn.msg.result?.stopReason), `answered ${JSON.stringify(turn.msg)}`);
});

function cancelText() {
  return [{ type: "text", text: opts.cancelPrompt ?? "Count from 1 to 500, one number a line." }];
}

test("cancel", ["ACP-CANCEL-001", "ACP-CANCEL-002"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const turn = await prompt(a, s.sessionId, cancelText(), {
    onFirstUpdate: () => {
      a.cancelled.add(s.sessionId);
      a.notify("session/cancel", { sessionId: s.sessionId });
    },
  });
  if (!turn.acted) skip("cancellation not exercised: the turn ended before any update");
  check(turn.msg.result?.stopReason === "cancelled", `after session/cancel the prompt answered ${JSON.stringify(turn.msg)}`);
  const at = turn.answer.index;
  await a.quiet();
  const late = a.transcript.slice(at + 1).filter((e) => e.kind === "notification" && e.method === "session/update" && e.msg.params?.sessionId === s.sessionId);
  t.mandatory("ACP-CANCEL-002", late.length === 0, `updates after the cancelled prompt's answer: ${late.map((e) => e.text).join(" ")}`);
});

test("session/load", ["ACP-LOAD-001", "ACP-LOAD-002"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  await prompt(a, s.sessionId, hello());
  const id = a.request("session/load", { sessionId: s.sessionId, cwd: t.dir, mcpServers: [] });
  const r = await a.waitResponse(id);
  check(Object.hasOwn(r.msg, "result"), `session/load did not succeed: ${r.text}`);
  const issues = zodIssues(schemas.zLoadSessionResponse, r.msg.result);
  check(issues.length === 0, `session/load result: ${issues}`);
  await a.quiet();
  const late = a.transcript.slice(r.index + 1).filter((e) => e.kind === "notification" && e.method === "session/update" && e.msg.params?.sessionId === s.sessionId);
  t.cap("ACP-LOAD-002", late.length === 0, `updates after session/load's answer: ${late.map((e) => e.text).join(" ")}`);
}, "agentCapabilities.loadSession");

test("session/load answers an object", ["ACP-LOAD-003"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const r = await a.call("session/load", { sessionId: s.sessionId, cwd: t.dir, mcpServers: [] });
  t.advise("ACP-LOAD-003", isObject(r.result), `session/load answered ${JSON.stringify(r)}`);
}, "agentCapabilities.loadSession");

test("session/resume", ["ACP-RESUME-001"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const r = await a.call("session/resume", { sessionId: s.sessionId, cwd: t.dir });
  check(Object.hasOwn(r, "result"), `session/resume did not succeed: ${JSON.stringify(r)}`);
  const issues = zodIssues(schemas.zResumeSessionResponse, r.result);
  check(issues.length === 0, `session/resume result: ${issues}`);
}, "agentCapabilities.sessionCapabilities.resume");

test("session/resume sends no history", ["ACP-RESUME-002"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  await prompt(a, s.sessionId, hello());
  const from = a.transcript.length;
  const id = a.request("session/resume", { sessionId: s.sessionId, cwd: t.dir });
  const r = await a.waitResponse(id);
  check(Object.hasOwn(r.msg, "result"), `session/resume did not succeed: ${r.text}`);
  const history = a.transcript
    .slice(from, r.index)
    .filter((e) => e.kind === "notification" && e.method === "session/update" && e.msg.params?.sessionId === s.sessionId && HISTORY_KINDS.has(e.msg.params?.update?.sessionUpdate));
  check(history.length === 0, `session/resume replayed history: ${history.map((e) => e.text).join(" ")}`);
}, "agentCapabilities.sessionCapabilities.resume");

test("session/list", ["ACP-LIST-001", "ACP-LIST-002"], async (a, t) => {
  await handshake(a);
  await newSession(a, t.dir);
  const r = await a.call("session/list", {});
  check(Object.hasOwn(r, "result"), `session/list did not succeed: ${JSON.stringify(r)}`);
  check(Array.isArray(r.result.sessions), `sessions is not an array: ${JSON.stringify(r.result)}`);
  const empty = path.join(t.dir, "no-session-here");
  mkdirSync(empty);
  const e = await a.call("session/list", { cwd: empty });
  t.cap("ACP-LIST-002", Array.isArray(e.result?.sessions) && e.result.sessions.length === 0, `session/list of an unused cwd: ${JSON.stringify(e)}`);
}, "agentCapabilities.sessionCapabilities.list");

test("session/delete", ["ACP-DELETE-001"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const r = await a.call("session/delete", { sessionId: s.sessionId });
  check(Object.hasOwn(r, "result"), `session/delete did not succeed: ${JSON.stringify(r)}`);
  const issues = zodIssues(schemas.zDeleteSessionResponse, r.result);
  check(issues.length === 0, `session/delete result: ${issues}`);
}, "agentCapabilities.sessionCapabilities.delete");

test("session/delete of an unknown session", ["ACP-DELETE-002"], async (a, t) => {
  await handshake(a);
  const r = await a.call("session/delete", { sessionId: "conformance-never-created-session" });
  t.advise("ACP-DELETE-002", Object.hasOwn(r, "result"), `deleting an unknown session answered ${JSON.stringify(r)}`);
}, "agentCapabilities.sessionCapabilities.delete");

test("session/close", ["ACP-CLOSE-001"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const r = await a.call("session/close", { sessionId: s.sessionId });
  check(Object.hasOwn(r, "result"), `session/close did not succeed: ${JSON.stringify(r)}`);
  const issues = zodIssues(schemas.zCloseSessionResponse, r.result);
  check(issues.length === 0, `session/close result: ${issues}`);
}, "agentCapabilities.sessionCapabilities.close");

test("session/close during a prompt", ["ACP-CLOSE-002"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  let closeId = null;
  const turn = await prompt(a, s.sessionId, cancelText(), {
    onFirstUpdate: () => {
      a.cancelled.add(s.sessionId);
      closeId = a.request("session/close", { sessionId: s.sessionId }, "conformance-close");
    },
  });
  if (!turn.acted) skip("close-cancellation not exercised: the turn ended before any update");
  const closed = await a.waitResponse(closeId);
  if (!Object.hasOwn(closed.msg, "result")) skip("session/close did not succeed (see ACP-CLOSE-001)");
  check(turn.msg.result?.stopReason === "cancelled", `after session/close the prompt answered ${JSON.stringify(turn.msg)}`);
}, "agentCapabilities.sessionCapabilities.close");

test("additionalDirectories", ["ACP-ADDDIRS-001"], async (a, t) => {
  await handshake(a);
  const extra = path.join(t.dir, "extra");
  mkdirSync(extra);
  const r = await a.call("session/new", { cwd: t.dir, mcpServers: [], additionalDirectories: [extra] });
  check(typeof r.result?.sessionId === "string", `session/new with additionalDirectories: ${JSON.stringify(r)}`);
}, "agentCapabilities.sessionCapabilities.additionalDirectories");

test("session/set_mode", ["ACP-MODES-002"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const modes = s.modes?.availableModes ?? [];
  const other = modes.find((m) => m.id !== s.modes?.currentModeId);
  if (!other) skip("session/new returned no modes, or only one");
  const from = a.transcript.length;
  const r = await a.call("session/set_mode", { sessionId: s.sessionId, modeId: other.id });
  check(Object.hasOwn(r, "result"), `session/set_mode failed: ${JSON.stringify(r)}`);
  await a.quiet();
  const echo = a.transcript
    .slice(from)
    .filter((e) => e.kind === "notification" && e.msg.params?.update?.sessionUpdate === "current_mode_update");
  for (const e of echo) check(typeof e.msg.params.update.currentModeId === "string", `current_mode_update without currentModeId: ${e.text}`);
});

test("session/set_config_option", ["ACP-CONFIG-002"], async (a, t) => {
  await handshake(a);
  const s = await newSession(a, t.dir);
  const options = s.configOptions ?? [];
  let target = null;
  let value = null;
  for (const o of options) {
    if (o.type !== "select") continue;
    const values = (o.options ?? []).flatMap((x) => (Array.isArray(x.options) ? x.options : [x])).map((x) => x.value);
    const v = values.find((x) => x !== o.currentValue);
    if (v !== undefined) {
      target = o;
      value = v;
      break;
    }
  }
  if (!target) skip("session/new returned no select option with a second value");
  const r = await a.call("session/set_config_option", { sessionId: s.sessionId, configId: target.id, value });
  check(Array.isArray(r.result?.configOptions), `session/set_config_option: ${JSON.stringify(r)}`);
  const got = new Map(r.result.configOptions.map((o) => [o.id, o]));
  const missing = options.filter((o) => !got.has(o.id)).map((o) => o.id);
  check(missing.length === 0, `the answer lacks options ${missing}`);
  check(got.get(target.id).currentValue === value, `${target.id} is ${got.get(target.id).currentValue}, set to ${value}`);
});

const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";
for (const [req, cap, block] of [
  ["ACP-PROMPTCAP-001", "agentCapabilities.promptCapabilities.image", { type: "image", data: PNG, mimeType: "image/png" }],
  ["ACP-PROMPTCAP-002", "agentCapabilities.promptCapabilities.audio", { type: "audio", data: WAV, mimeType: "audio/wav" }],
  [
    "ACP-PROMPTCAP-003",
    "agentCapabilities.promptCapabilities.embeddedContext",
    { type: "resource", resource: { uri: "file:///tmp/conformance-notes.txt", mimeType: "text/plain", text: "notes" } },
  ],
]) {
  test(`prompt with ${block.type}`, [req], async (a, t) => {
    await handshake(a);
    const s = await newSession(a, t.dir);
    const turn = await prompt(a, s.sessionId, [...hello(), block]);
    check(STOP_REASONS.has(turn.msg.result?.stopReason), `answered ${JSON.stringify(turn.msg)}`);
  }, cap);
}

test("authenticate", ["ACP-AUTH-003"], async () => {
  skip("no --auth-method: the method id to authenticate with is the operator's to give");
});

test("logout", ["ACP-AUTH-004"], async () => {
  skip("logout may end the operator's own login: not exercised");
});

test("shutdown", ["ACP-SHUTDOWN-001"], async (a, t) => {
  await handshake(a);
  await newSession(a, t.dir);
  t.closeBy = true;
});

test("malformed line", ["ACP-INFO-PARSE-001"], async (a, t) => {
  await handshake(a);
  const from = a.transcript.length;
  a.writeRaw("{this is not json");
  const after = await a.call("session/new", { cwd: t.dir, mcpServers: [] });
  const replies = a.transcript.slice(from).filter((e) => e.kind === "response" && e.msg.id === null);
  t.note(`${replies.length ? `replied ${JSON.stringify(replies[0].msg.error)}` : "silent"}; conn after: ${after.result ? "usable" : "unusable"}`);
});

test("not JSON-RPC", ["ACP-INFO-INVALIDREQ-001"], async (a, t) => {
  await handshake(a);
  const from = a.transcript.length;
  a.writeRaw('{"foo": "bar"}');
  const after = await a.call("session/new", { cwd: t.dir, mcpServers: [] });
  const replies = a.transcript.slice(from).filter((e) => e.kind === "response" && e.msg.id === null);
  t.note(`${replies.length ? `replied ${JSON.stringify(replies[0].msg.error)}` : "silent"}; conn after: ${after.result ? "usable" : "unusable"}`);
});

test("unknown session", ["ACP-INFO-UNKNOWNSESSION-001"], async (a, t) => {
  await handshake(a);
  await newSession(a, t.dir);
  const r = await a.call("session/prompt", { sessionId: "conformance-never-created", prompt: hello() });
  t.note(r.error ? `error ${r.error.code}` : `result ${JSON.stringify(r.result)}`);
});

// ---------------------------------------------------------------- running

// outcomes: requirement id -> [{test, status, message}]
const outcomes = new Map(REQUIREMENTS.map(([id]) => [id, []]));
function record(id, testName, status, message = "") {
  outcomes.get(id).push({ test: testName, status, message });
}

const rank = { FAIL: 3, PASS: 2, SKIPPED: 1 };

async function runTest(tc) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "acp-conformance-"));
  const agent = new Agent(dir);
  // Sub-results of requirements a test checks beside its main one.
  const marks = new Map();
  const notes = [];
  const mark = (id, status, msg) => {
    const prev = marks.get(id);
    if (!prev || rank[status] > rank[prev.status]) marks.set(id, { status, message: msg });
  };
  const t = {
    dir,
    closeBy: false,
    note: (m) => notes.push(m),
    advise: (id, ok, msg) => mark(id, ok ? "PASS" : "FAIL", ok ? "" : msg),
    cap: (id, ok, msg) => mark(id, ok ? "PASS" : "FAIL", ok ? "" : msg),
    mandatory: (id, ok, msg) => mark(id, ok ? "PASS" : "FAIL", ok ? "" : msg),
    skipReq: (id, msg) => mark(id, "SKIPPED", msg),
  };
  let status = "PASS";
  let message = "";
  try {
    if (tc.cap) {
      const v = capabilityAt(initResult ?? {}, tc.cap);
      if (!(v === true || (v !== undefined && v !== null && v !== false))) skip(`${tc.cap} not advertised`);
    }
    await tc.fn(agent, t);
  } catch (err) {
    if (err instanceof Skip) {
      status = "SKIPPED";
      message = err.message;
    } else {
      status = "FAIL";
      message = err instanceof Failure ? err.message : `${err?.stack ?? err}`;
    }
  } finally {
    await finishAgent(agent, tc, t, mark);
  }
  for (const id of tc.reqs) {
    const m = marks.get(id);
    if (m) record(id, tc.name, m.status, m.message);
    else record(id, tc.name, status, message);
  }
  // Notes are what an informational requirement records.
  for (const id of tc.reqs.filter((r) => REQ.get(r).tier === INFORMATIONAL)) {
    for (const o of outcomes.get(id)) if (o.test === tc.name && !o.message) o.message = notes.join("; ");
  }
  if (opts.verbose) process.stderr.write(`conformance: ${tc.name}: ${status}${message ? ` (${message})` : ""}\n`);
  if (status === "FAIL") {
    failures.push({ test: tc.name, message, transcript: agent.transcript.map((e) => `${e.dir === "in" ? "<-" : "->"} ${e.text}`), stderr: agent.stderrText() });
  }
  rmSync(dir, { recursive: true, force: true });
}

// finishAgent closes the agent and checks what every test checks: the
// transport, the schema, and unknown keys (ACP-SCHEMA-002).
async function finishAgent(agent, tc, t, mark) {
  const byItself = await agent.close();
  if (t.closeBy) mark("ACP-SHUTDOWN-001", byItself ? "PASS" : "FAIL", byItself ? "" : "the agent did not exit after stdin closed");
  record("ACP-TRANSPORT-001", tc.name, agent.transportIssues.length ? "FAIL" : "PASS", agent.transportIssues.slice(0, 3).join("; "));
  record("ACP-SCHEMA-001", tc.name, agent.schemaIssues.length ? "FAIL" : "PASS", agent.schemaIssues.slice(0, 3).join("; "));
  record("ACP-SCHEMA-002", tc.name, agent.extraKeys.length ? "FAIL" : "PASS", [...new Set(agent.extraKeys)].slice(0, 3).join("; "));
  const utf8 = agent.transcript.some((e) => e.kind === "bad-utf8");
  record("ACP-TRANSPORT-002", tc.name, utf8 ? "FAIL" : "PASS", utf8 ? "a line that is not UTF-8" : "");
}

const failures = [];
// The capabilities the tests are gated on: one handshake first, as the kit
// caches it.
{
  const probe = new Agent(mkdtempSync(path.join(os.tmpdir(), "acp-conformance-")));
  try {
    await handshake(probe);
  } catch (err) {
    process.stderr.write(`conformance: the first initialize failed: ${err.message}\n`);
  }
  await probe.close();
  rmSync(probe.workdir, { recursive: true, force: true });
}
const selected = TESTS.filter((tc) => !opts.filter || tc.name.includes(opts.filter) || tc.reqs.some((r) => r.includes(opts.filter)));
const started = new Date();
for (const tc of selected) await runTest(tc);

// ---------------------------------------------------------------- report

const results = REQUIREMENTS.map(([id, tier, capability, text]) => {
  const list = outcomes.get(id);
  let status = "NOT_TESTED";
  if (list.length) status = list.reduce((w, o) => (rank[o.status] > rank[w] ? o.status : w), "SKIPPED");
  const worst = list.find((o) => o.status === status && o.message) ?? list.find((o) => o.message);
  return { id, tier, capability, text, status, message: worst?.message ?? "", outcomes: list };
});
const counts = {};
for (const r of results) {
  counts[r.tier] ??= {};
  counts[r.tier][r.status] = (counts[r.tier][r.status] ?? 0) + 1;
}
const blockers = results.filter(
  (r) => (r.tier === MANDATORY && (r.status === "FAIL" || r.status === "NOT_TESTED")) || (r.tier === CAPABILITY && r.status === "FAIL"),
);
const authGated = results.some((r) => r.outcomes.some((o) => o.message.startsWith("AUTH-GATED")));
const conformant = !opts.filter && blockers.length === 0 && !authGated;

for (const tier of [MANDATORY, CAPABILITY, ADVISORY, INFORMATIONAL]) {
  console.log(`${tier}`);
  for (const r of results.filter((x) => x.tier === tier && (!opts.filter || x.status !== "NOT_TESTED"))) {
    console.log(`  ${r.id.padEnd(28)} ${r.status.padEnd(10)}${r.message ? ` (${r.message.replace(/\s+/g, " ").slice(0, 300)})` : ""}`);
  }
}
console.log(
  Object.entries(counts)
    .map(([tier, c]) => `${tier}: ${Object.entries(c).map(([s, n]) => `${n} ${s}`).join(", ")}`)
    .join("; "),
);
let verdict = "CONFORMANT";
if (!conformant) {
  const why = blockers.map((r) => `${r.id} ${r.status}`);
  if (authGated) why.push("blocked by authentication");
  if (opts.filter) why.push("only part of the suite ran (-k)");
  verdict = `NOT CONFORMANT (${why.join(", ")})`;
}
console.log(`VERDICT: ${verdict}`);

if (opts.report) {
  const report = {
    agent_command: agentArgv,
    agent_info: initResult?.agentInfo ?? null,
    agent_capabilities: initResult?.agentCapabilities ?? null,
    protocol_version: initResult?.protocolVersion ?? null,
    sdk_version: sdkPkg.version,
    started_at: started.toISOString(),
    finished_at: new Date().toISOString(),
    requirements: results,
    failures,
    verdict: { conformant, verdict, blocked_by_auth: authGated, tier_counts: counts },
  };
  writeFileSync(opts.report, JSON.stringify(report, null, 2) + "\n");
}
process.exit(conformant ? 0 : 1);
