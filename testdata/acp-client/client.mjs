#!/usr/bin/env node
// ACP v1 test client for spbridge's end-to-end tests, built on the official
// ACP TypeScript library (@agentclientprotocol/sdk, pinned by
// scripts/install-clis). See README.md next to this file.
//
//   node testdata/acp-client/client.mjs SCENARIO.json
//
// It spawns the scenario's agent command, connects to it as an ACP client over
// the child's stdin/stdout, runs the scenario's steps in order and writes one
// JSON line per event to stdout. Every line the agent writes is validated
// against the library's schemas before the SDK sees it. Exit status: 0 when
// every step ran and nothing was invalid, 1 otherwise, 2 on usage errors.
//
// Nothing here waits for a time: each step waits for its event (a response,
// a message, the agent's exit), and a step fails when the agent has gone and
// the event can no longer come. A run that hangs is ended by the caller's own
// timeout (go test's -timeout).

import { spawn, spawnSync } from "node:child_process";
import { readFileSync, existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const SDK_VERSION = "2.4.0";
const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.ACP_SDK_DIR
  ? path.resolve(process.env.ACP_SDK_DIR)
  : path.resolve(here, "../../.tools/npm/node_modules/@agentclientprotocol/sdk");

function usage(message) {
  process.stderr.write(`acp-client: ${message}\n`);
  process.exit(2);
}

if (process.argv.length !== 3) {
  usage("usage: node client.mjs SCENARIO.json | --serve");
}
if (!existsSync(path.join(sdkDir, "package.json"))) {
  usage(`no ACP SDK at ${sdkDir}: run bash scripts/install-clis, or set ACP_SDK_DIR`);
}
const sdkPkg = JSON.parse(readFileSync(path.join(sdkDir, "package.json"), "utf8"));
if (sdkPkg.version !== SDK_VERSION) {
  process.stderr.write(
    `acp-client: warning: ${sdkDir} is version ${sdkPkg.version}, this client was written for ${SDK_VERSION}\n`,
  );
}
// The package entry point (stable ACP v1: app builders, ndJsonStream,
// RequestError, methods) and its generated zod schemas, which the package
// does not export by name; they are the same modules the SDK validates with.
const acp = await import(pathToFileURL(path.join(sdkDir, sdkPkg.exports["."].import)).href);
const schemas = await import(pathToFileURL(path.join(sdkDir, "dist/v1/schema/zod.gen.js")).href);
// The unstable methods' schemas (session/fork), as the SDK's
// unstable_forkSession validates with.
const unstableSchemas = await import(pathToFileURL(path.join(sdkDir, "dist/v1/unstable/schema/zod.gen.js")).href);

// UsageError is a scenario the client cannot run (exit status 2).
class UsageError extends Error {}

// runScenario runs the scenario in scenarioFile and returns the exit
// status: io.out gets the JSON lines, io.err the agent's stderr, and the
// agent starts in io.cwd (when the scenario names none) with io.env and
// the scenario's env. Each run keeps its own state, so runs may overlap
// (--serve).
async function runScenario(scenarioFile, io) {
  let scenario;
  try {
    scenario = JSON.parse(readFileSync(scenarioFile, "utf8"));
  } catch (err) {
    throw new UsageError(`reading ${scenarioFile}: ${err.message}`);
  }
  if (!Array.isArray(scenario.command) || scenario.command.length === 0) {
    throw new UsageError("scenario.command must be a non-empty array");
  }
  if (!Array.isArray(scenario.steps)) {
    throw new UsageError("scenario.steps must be an array");
  }
  const strict = scenario.strict !== false;
  // timeoutMs and stepTimeoutMs (the run's and the steps' time limits of
  // earlier versions) are accepted and ignored.

  // ---------------------------------------------------------------- output

  let invalidCount = 0;
  let failed = false;

  function emit(event) {
    io.out.write(JSON.stringify(event) + "\n");
  }

  function invalid(kind, method, issues, message, extra = {}) {
    invalidCount++;
    emit({ event: "invalid", kind, method: method ?? null, ...extra, issues, message });
  }

  function fail(step, message) {
    failed = true;
    emit({ event: "fail", step, message });
  }

  // ---------------------------------------------------------------- validation

  function isObject(v) {
    return typeof v === "object" && v !== null && !Array.isArray(v);
  }

  function issue(message, pathParts = [], code = "custom") {
    return { path: pathParts, code, message };
  }

  // flattenIssues turns zod issues into a flat list. For a union it keeps only
  // the most plausible variant: the ones whose discriminator matched (no
  // top-level invalid_value issue), then the one with the fewest issues.
  function flattenIssues(issues, base = []) {
    const out = [];
    const seen = new Set();
    const add = (i) => {
      const key = JSON.stringify([i.path, i.message]);
      if (!seen.has(key)) {
        seen.add(key);
        out.push(i);
      }
    };
    for (const i of issues) {
      const p = [...base, ...(i.path ?? [])];
      if (i.code === "invalid_union" && Array.isArray(i.errors) && i.errors.length > 0) {
        const branches = i.errors.map((errs) => flattenIssues(errs, p));
        const tagged = i.errors
          .map((errs, n) => ({ errs, n }))
          .filter(({ errs }) => !errs.some((e) => e.code === "invalid_value" && (e.path ?? []).length === 1));
        const candidates = tagged.length > 0 ? tagged.map(({ n }) => branches[n]) : branches;
        candidates.sort((a, b) => a.length - b.length);
        if (tagged.length === 0 && branches.length > 1) {
          add(issue(`no variant of the union matched (${i.message})`, p, "invalid_union"));
        }
        for (const b of candidates[0]) add(b);
      } else {
        add({ path: p, code: i.code, message: i.message });
      }
    }
    return out;
  }

  // lossless compares the raw value with what the SDK's schema made of it. The
  // SDK's schemas are lenient: they strip unknown fields, skip invalid array
  // items and replace invalid optional values with defaults. In strict mode any
  // such loss is an issue, so a misspelled or mistyped field does not pass.
  function lossless(raw, parsed, p = [], out = []) {
    if (Array.isArray(raw)) {
      if (!Array.isArray(parsed)) {
        out.push(issue("value was replaced by the schema's default (invalid value)", p, "strict_changed"));
      } else if (parsed.length !== raw.length) {
        out.push(
          issue(`${raw.length - parsed.length} invalid array item(s) were skipped by the schema`, p, "strict_items_dropped"),
        );
      } else {
        raw.forEach((v, n) => lossless(v, parsed[n], [...p, n], out));
      }
    } else if (isObject(raw)) {
      if (!isObject(parsed)) {
        out.push(issue("value was replaced by the schema's default (invalid value)", p, "strict_changed"));
        return out;
      }
      for (const [k, v] of Object.entries(raw)) {
        if (!Object.hasOwn(parsed, k) || parsed[k] === undefined) {
          out.push(
            issue(`field ${JSON.stringify(k)} was dropped by the schema (unknown field, or invalid value of an optional field)`, [...p, k], "strict_dropped"),
          );
        } else {
          lossless(v, parsed[k], [...p, k], out);
        }
      }
    } else if (raw !== parsed) {
      out.push(issue(`value ${JSON.stringify(raw)} was replaced by ${JSON.stringify(parsed)} (invalid value)`, p, "strict_changed"));
    }
    return out;
  }

  // check validates value with a zod schema from the SDK and returns issues.
  function check(schema, value) {
    const r = schema.safeParse(value);
    if (!r.success) return flattenIssues(r.error.issues);
    return strict ? lossless(value, r.data) : [];
  }

  // checkNewest validates value with the stable schema of that name and,
  // when that finds issues, with the unstable one (the newest ACP v1, its
  // unstable parts included, such as sessionCapabilities.fork): a value
  // either accepts whole is valid. Else the stable schema's issues (the
  // unstable one's for a schema only it has).
  function checkNewest(name, value) {
    const stable = schemas[name];
    const issues = stable ? check(stable, value) : null;
    if (issues !== null && issues.length === 0) return issues;
    const unstable = unstableSchemas[name];
    if (!unstable) return issues ?? [issue(`no schema ${name}`)];
    const u = check(unstable, value);
    return u.length === 0 || issues === null ? u : issues;
  }

  const responseSchemas = {
    initialize: "zInitializeResponse",
    authenticate: "zAuthenticateResponse",
    logout: "zLogoutResponse",
    "session/new": "zNewSessionResponse",
    "session/load": "zLoadSessionResponse",
    "session/list": "zListSessionsResponse",
    "session/delete": "zDeleteSessionResponse",
    "session/fork": "zForkSessionResponse",
    "session/resume": "zResumeSessionResponse",
    "session/close": "zCloseSessionResponse",
    "session/set_mode": "zSetSessionModeResponse",
    "session/set_config_option": "zSetSessionConfigOptionResponse",
    "session/prompt": "zPromptResponse",
  };

  // Client methods an agent may only call when the client advertised them.
  const capabilityMethods = {
    "fs/read_text_file": (c) => c?.fs?.readTextFile === true,
    "fs/write_text_file": (c) => c?.fs?.writeTextFile === true,
    "terminal/create": (c) => c?.terminal === true,
    "terminal/output": (c) => c?.terminal === true,
    "terminal/release": (c) => c?.terminal === true,
    "terminal/wait_for_exit": (c) => c?.terminal === true,
    "terminal/kill": (c) => c?.terminal === true,
    "elicitation/create": (c) => c?.elicitation != null,
    "elicitation/complete": (c) => c?.elicitation != null,
  };

  let clientCapabilities = null; // as sent in initialize
  const knownSessions = new Set();

  function checkSessionId(params, issues) {
    if (strict && isObject(params) && typeof params.sessionId === "string" && !knownSessions.has(params.sessionId)) {
      issues.push(issue(`unknown sessionId ${JSON.stringify(params.sessionId)} (not created or loaded on this connection)`, ["sessionId"]));
    }
  }

  // ---------------------------------------------------------------- state

  const saved = new Map(); // saveAs name -> session id
  const outgoing = new Map(); // JSON id -> {method, answered, rec}
  const callQueue = []; // records of calls not yet written, in call order
  const rawRequests = new Map(); // JSON id of an incoming request -> raw params
  const inbox = []; // incoming requests, notifications and stray responses, in order
  const waiters = new Set();
  let child;
  let childExited = false;
  let exitInfo = null;
  let exitEmitted = false;
  let exitPromiseResolve;
  const exitPromise = new Promise((r) => (exitPromiseResolve = r));

  function wake() {
    for (const w of [...waiters]) w();
  }

  // waitUntil resolves when pred() holds; it re-checks whenever something
  // arrives or the agent exits.
  function waitUntil(pred) {
    return new Promise((resolve) => {
      if (pred()) return resolve();
      const w = () => {
        if (pred()) {
          waiters.delete(w);
          resolve();
        }
      };
      waiters.add(w);
    });
  }

  // ---------------------------------------------------------------- incoming tap

  function handleLine(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch (err) {
      invalid("line", null, [issue(`not JSON: ${err.message}`)], line);
      return;
    }
    if (!isObject(msg)) {
      invalid("line", null, [issue("a JSON-RPC message must be a JSON object")], msg);
      return;
    }
    const env = [];
    if (msg.jsonrpc !== "2.0") env.push(issue('"jsonrpc" must be "2.0"', ["jsonrpc"]));
    const hasId = Object.hasOwn(msg, "id");
    if (typeof msg.method === "string") {
      if (hasId) handleRequest(msg, env);
      else handleNotification(msg, env);
    } else if (hasId && !Object.hasOwn(msg, "method")) {
      handleResponse(msg, env);
    } else {
      invalid("line", null, [...env, issue("neither a request, a notification nor a response")], msg);
    }
  }

  function handleRequest(msg, issues) {
    const { method, params, id } = msg;
    if (!(typeof id === "string" || (typeof id === "number" && Number.isInteger(id)))) {
      issues.push(issue("request id must be a string or an integer", ["id"]));
    }
    rawRequests.set(JSON.stringify(id), params);
    if (method === "session/request_permission") {
      issues.push(...check(schemas.zRequestPermissionRequest, params));
      checkSessionId(params, issues);
    } else if (method === "elicitation/create") {
      if (!capabilityMethods[method](clientCapabilities)) {
        issues.push(issue(`agent called ${method}, which the client did not advertise in clientCapabilities`));
      }
      issues.push(...check(schemas.zCreateElicitationRequest, params));
      checkSessionId(params, issues);
    } else if (method in capabilityMethods) {
      if (!capabilityMethods[method](clientCapabilities)) {
        issues.push(issue(`agent called ${method}, which the client did not advertise in clientCapabilities`));
      }
    } else if (method.startsWith("_")) {
      if (params !== undefined && !isObject(params)) issues.push(issue("extension request params must be a JSON object", ["params"]));
    } else {
      issues.push(issue(`${method} is not an ACP v1 client method`));
    }
    if (issues.length > 0) invalid("request", method, issues, msg, { id });
    inbox.push({ kind: "request", method, params, id });
    wake();
  }

  function handleNotification(msg, issues) {
    const { method, params } = msg;
    if (method === "session/update") {
      issues.push(...check(schemas.zSessionNotification, params));
      checkSessionId(params, issues);
    } else if (method === "$/cancel_request") {
      issues.push(...check(schemas.zCancelRequestNotification, params));
    } else if (method in capabilityMethods) {
      if (!capabilityMethods[method](clientCapabilities)) {
        issues.push(issue(`agent sent ${method}, which the client did not advertise in clientCapabilities`));
      }
    } else if (method.startsWith("_spbridge/")) {
      if (!isObject(params)) {
        issues.push(issue("_spbridge notification params must be a JSON object", ["params"]));
      } else if (typeof params.sessionId !== "string") {
        issues.push(issue("_spbridge notification params must have a string sessionId", ["sessionId"]));
      } else {
        checkSessionId(params, issues);
      }
    } else if (method.startsWith("_")) {
      if (params !== undefined && !isObject(params)) issues.push(issue("extension notification params must be a JSON object", ["params"]));
    } else {
      issues.push(issue(`${method} is not an ACP v1 client notification`));
    }
    emit({ event: "notification", method, params });
    if (issues.length > 0) invalid("notification", method, issues, msg);
    inbox.push({ kind: "notification", method, params });
    wake();
  }

  function handleResponse(msg, issues) {
    const hasResult = Object.hasOwn(msg, "result");
    const hasError = Object.hasOwn(msg, "error");
    if (hasResult === hasError) issues.push(issue('a response must have exactly one of "result" and "error"'));
    const key = JSON.stringify(msg.id);
    const req = outgoing.get(key);
    if (!req || req.answered) {
      // Not an answer to one of our requests: an error for a line the agent
      // could not read (id null) is expected after a raw step.
      if (msg.id !== null) issues.push(issue(req ? `second response to request id ${key}` : `response to unknown request id ${key}`, ["id"]));
      if (hasError) issues.push(...flattenIssues(schemas.zError.safeParse(msg.error).error?.issues ?? [], ["error"]));
      emit({ event: "stray", message: msg });
      if (issues.length > 0) invalid("response", null, issues, msg, { id: msg.id });
      inbox.push({ kind: "stray", message: msg });
      wake();
      return;
    }
    req.answered = true;
    if ((req.method === "session/new" || req.method === "session/fork") && hasResult && typeof msg.result?.sessionId === "string") {
      // Known as the response is read: the agent's next line may already be
      // about it, before the SDK hands the result over.
      knownSessions.add(msg.result.sessionId);
    }
    if (req.rec && hasResult) {
      req.rec.hasWire = true;
      req.rec.wireResult = msg.result;
    }
    if (hasError) {
      issues.push(...check(schemas.zError, msg.error).map((i) => ({ ...i, path: ["error", ...i.path] })));
    } else if (hasResult && responseSchemas[req.method]) {
      issues.push(...checkNewest(responseSchemas[req.method], msg.result).map((i) => ({ ...i, path: ["result", ...i.path] })));
    }
    if (issues.length > 0) invalid("response", req.method, issues, msg, { id: msg.id });
  }

  // ---------------------------------------------------------------- agent process

  const cwd = scenario.cwd ? path.resolve(scenario.cwd) : io.cwd;
  const env = { ...io.env };
  for (const [k, v] of Object.entries(scenario.env ?? {})) {
    if (v === null) delete env[k];
    else env[k] = String(v);
  }

  child = spawn(scenario.command[0], scenario.command.slice(1), { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
  child.stderr.pipe(io.err, { end: false });
  child.stdin.on("error", () => {}); // EPIPE after the agent exits
  child.on("error", (err) => {
    fail(null, `spawning ${scenario.command[0]}: ${err.message}`);
    childExited = true;
    exitInfo = { code: null, signal: null };
    emitExit();
  });

  function emitExit() {
    if (exitEmitted) return;
    exitEmitted = true;
    emit({ event: "exit", code: exitInfo.code, signal: exitInfo.signal });
    exitPromiseResolve();
    wake();
  }
  child.on("exit", (code, signal) => {
    childExited = true;
    exitInfo = { code, signal };
    wake();
    // The exit event is written at 'close', once stdout and stderr are
    // drained: every line the agent wrote is in before it.
  });
  child.on("close", (code, signal) => {
    childExited = true;
    exitInfo ??= { code, signal };
    emitExit();
  });

  function stdinOpen() {
    return !child.stdin.destroyed && !child.stdin.writableEnded;
  }

  function writeToChild(bytes) {
    if (stdinOpen()) child.stdin.write(bytes);
  }

  // Bytes from the agent: split into lines, validate each, then hand the same
  // bytes to the SDK's ndJsonStream.
  let inputController;
  const agentOutput = new ReadableStream({
    start(c) {
      inputController = c;
    },
  });
  let pending = Buffer.alloc(0);
  function feedLine(buf) {
    const line = buf.toString("utf8");
    if (line.trim() !== "") handleLine(line.trim());
    inputController.enqueue(new Uint8Array(Buffer.concat([buf, Buffer.from("\n")])));
  }
  child.stdout.on("data", (chunk) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    let nl;
    while ((nl = pending.indexOf(0x0a)) !== -1) {
      feedLine(pending.subarray(0, nl));
      pending = pending.subarray(nl + 1);
    }
  });
  child.stdout.on("end", () => {
    if (pending.length > 0) feedLine(pending);
    pending = Buffer.alloc(0);
    try {
      inputController.close();
    } catch {
      // already closed
    }
  });

  // The SDK's writes go straight to the agent's stdin: the sink hands each
  // chunk to child.stdin.write at once, so every message the connection has
  // queued reaches the pipe within the same event-loop turn.
  const agentInput = new WritableStream({
    write(chunk) {
      writeToChild(chunk);
    },
  });

  const nd = acp.ndJsonStream(agentInput, agentOutput);
  const ndWriter = nd.writable.getWriter();
  const stream = {
    readable: nd.readable,
    writable: new WritableStream({
      write(msg) {
        if (isObject(msg) && typeof msg.method === "string" && Object.hasOwn(msg, "id")) {
          // Only call() sends requests, and the connection writes them in call
          // order, so the oldest unwritten call is this one.
          outgoing.set(JSON.stringify(msg.id), { method: msg.method, answered: false, rec: callQueue.shift() });
        }
        return ndWriter.write(msg);
      },
    }),
  };

  // flushWrites lets the event loop turn so that every message the connection
  // has already queued has been written to the agent's stdin.
  async function flushWrites() {
    for (let n = 0; n < 3; n++) await new Promise((r) => setImmediate(r));
  }

  // ---------------------------------------------------------------- client app

  const permissionAnswers = [...(scenario.permissions ?? [])];
  // Forms (elicitation/create) the agent asked and no elicit step answered
  // yet, oldest first: {id, params, resolve}.
  const openForms = [];

  const app = acp
    .client({ name: "spbridge-acp-client" })
    .onRequest(acp.methods.client.session.requestPermission, async (ctx) => {
      const params = rawRequests.get(JSON.stringify(ctx.requestId)) ?? ctx.params;
      let answer = { outcome: { outcome: "cancelled" } };
      const want = permissionAnswers.shift();
      if (want !== undefined && want !== "cancelled") {
        const option = isObject(want)
          ? ctx.params.options.find((o) => o.optionId === want.optionId)
          : ctx.params.options.find((o) => o.kind === want);
        if (option) answer = { outcome: { outcome: "selected", optionId: option.optionId } };
      }
      emit({ event: "request", method: ctx.method, params, answer });
      return answer;
    })
    .onRequest(acp.methods.client.elicitation.create, (ctx) => {
      // Answered by an elicit step; a request the agent takes back
      // ($/cancel_request) ends unanswered.
      const params = rawRequests.get(JSON.stringify(ctx.requestId)) ?? ctx.params;
      return new Promise((resolve, reject) => {
        const form = { id: ctx.requestId, params, resolve };
        openForms.push(form);
        ctx.signal?.addEventListener("abort", () => {
          const n = openForms.indexOf(form);
          if (n >= 0) openForms.splice(n, 1);
          emit({ event: "request", method: ctx.method, params, answer: null, cancelled: true });
          reject(ctx.signal.reason);
          wake();
        });
        wake();
      });
    })
    .onNotification(acp.methods.client.session.update, () => {})
    .onRequest("*", (ctx) => {
      const params = rawRequests.get(JSON.stringify(ctx.requestId)) ?? ctx.params;
      const err = acp.RequestError.methodNotFound(ctx.method);
      emit({ event: "request", method: ctx.method, params, answer: { error: err.toErrorResponse() } });
      throw err;
    })
    .onNotification("*", () => {});

  const conn = app.connect(stream);
  const agent = conn.agent;

  // ---------------------------------------------------------------- steps

  function subst(v) {
    if (typeof v === "string" && v.startsWith("$") && saved.has(v.slice(1))) return saved.get(v.slice(1));
    if (Array.isArray(v)) return v.map(subst);
    if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, subst(x)]));
    return v;
  }

  function sessionOf(name) {
    if (typeof name !== "string") throw new Error("step needs a session");
    return saved.get(name) ?? name;
  }

  function errorObject(err) {
    if (err instanceof acp.RequestError) return { code: err.code, message: err.message, data: err.data ?? null };
    return { code: null, message: String(err?.message ?? err), data: null };
  }

  const asyncCalls = new Map(); // name -> {promise, settled, outcome}

  // call sends a request and returns a record whose promise resolves to
  // {ok, result} or {ok:false, error, transport}; the response or error event
  // is written when it arrives.
  function call(stepIndex, method, params, onResult) {
    const rec = { settled: false };
    callQueue.push(rec);
    rec.promise = agent.request(method, params).then(
      (sdkResult) => {
        rec.settled = true;
        // The result as it was on the wire (the SDK maps a null result of some
        // methods, such as session/load, to {}).
        const result = rec.hasWire ? rec.wireResult : sdkResult;
        onResult?.(result);
        emit({ event: "response", step: stepIndex, method, result });
        return { ok: true, result };
      },
      (err) => {
        rec.settled = true;
        emit({ event: "error", step: stepIndex, method, error: errorObject(err) });
        return { ok: false, error: err, transport: !(err instanceof acp.RequestError) };
      },
    );
    return rec;
  }

  // settle waits for the response to a request step. An agent that is gone
  // answers none: when its output ends the SDK closes the connection, which
  // rejects every pending request (a transport error, so a failure).
  async function settle(stepIndex, rec, what) {
    const done = await rec.promise;
    if (!done.ok && done.transport) throw new StepFailure(`${what}: ${done.error?.message ?? done.error}`);
    return done;
  }

  class StepFailure extends Error {}

  // checkSteering checks a _session/steering answer: {outcome, reason?},
  // outcome one of the adapters' (injected, startedNewTurn, promptRequired,
  // failed) or spbridge's queued, and a reason with promptRequired, queued
  // and failed.
  const steeringOutcomes = ["injected", "startedNewTurn", "promptRequired", "queued", "failed"];
  function checkSteering(result) {
    const issues = [];
    if (!isObject(result)) {
      issues.push({ path: [], code: "invalid_type", message: "the answer is not an object" });
    } else {
      if (!steeringOutcomes.includes(result.outcome)) {
        issues.push({ path: ["outcome"], code: "invalid_value", message: `outcome ${JSON.stringify(result.outcome)}` });
      }
      if (result.reason !== undefined && typeof result.reason !== "string") {
        issues.push({ path: ["reason"], code: "invalid_type", message: "reason is not a string" });
      }
      if (["promptRequired", "queued", "failed"].includes(result.outcome) && typeof result.reason !== "string") {
        issues.push({ path: ["reason"], code: "invalid_type", message: `no reason with ${result.outcome}` });
      }
      for (const k of Object.keys(result)) {
        if (k !== "outcome" && k !== "reason" && k !== "_meta") {
          issues.push({ path: [k], code: "unrecognized_keys", message: `unknown field ${k}` });
        }
      }
    }
    if (issues.length > 0) invalid("response", "_session/steering", issues, "invalid _session/steering answer");
  }

  async function request(stepIndex, step, method, params, onResult) {
    const rec = call(stepIndex, method, params, onResult);
    if (step.async) {
      if (!step.name) throw new StepFailure("an async step needs a name");
      asyncCalls.set(step.name, rec);
      return;
    }
    await settle(stepIndex, rec, method);
  }

  function promptBlocks(step) {
    if (Array.isArray(step.prompt)) return step.prompt;
    const blocks = [];
    if (typeof step.text === "string") blocks.push({ type: "text", text: step.text });
    for (const img of step.images ?? []) {
      const data = img.data ?? readFileSync(img.path).toString("base64");
      const block = { type: "image", mimeType: img.mimeType, data };
      if (img.uri) block.uri = img.uri;
      blocks.push(block);
    }
    return blocks;
  }

  function matches(entry, step) {
    if (step.stray) {
      if (entry.kind !== "stray") return false;
      if (step.errorCode !== undefined && entry.message?.error?.code !== step.errorCode) return false;
      return true;
    }
    if (entry.kind === "stray") return false;
    if (step.method !== undefined && entry.method !== step.method) return false;
    if (step.sessionUpdate !== undefined && entry.params?.update?.sessionUpdate !== step.sessionUpdate) return false;
    if (step.session !== undefined && entry.params?.sessionId !== sessionOf(step.session)) return false;
    // contains: a text the message's params must hold (as JSON), e.g. a
    // command's name in an available_commands_update.
    if (step.contains !== undefined && !JSON.stringify(entry.params ?? null).includes(step.contains)) return false;
    return true;
  }

  // waitExit waits for the agent to exit and its output to be read to the
  // end.
  async function waitExit() {
    await exitPromise;
  }

  let lastMatch = -1;

  async function runStep(i, step, prevStart) {
    switch (step.op) {
      case "initialize": {
        clientCapabilities = step.clientCapabilities ?? {
          fs: { readTextFile: false, writeTextFile: false },
          terminal: false,
        };
        if (step.elicitation) clientCapabilities = { ...clientCapabilities, elicitation: { form: {} } };
        const params = {
          protocolVersion: step.protocolVersion ?? acp.PROTOCOL_VERSION,
          clientCapabilities,
          clientInfo: step.clientInfo ?? { name: "spbridge-acp-client", version: "1.0.0" },
        };
        if (step.meta !== undefined) params._meta = step.meta;
        return request(i, step, "initialize", params);
      }
      case "newSession": {
        const params = { cwd: path.resolve(step.cwd ?? cwd), mcpServers: step.mcpServers ?? [] };
        if (step.additionalDirectories !== undefined) params.additionalDirectories = step.additionalDirectories;
        if (step.meta !== undefined) params._meta = step.meta;
        return request(i, step, "session/new", params, (result) => {
          if (isObject(result) && typeof result.sessionId === "string") {
            knownSessions.add(result.sessionId);
            if (step.saveAs) saved.set(step.saveAs, result.sessionId);
          }
        });
      }
      case "loadSession": {
        const sessionId = sessionOf(step.sessionId);
        const params = { sessionId, cwd: path.resolve(step.cwd ?? cwd), mcpServers: step.mcpServers ?? [] };
        if (step.additionalDirectories !== undefined) params.additionalDirectories = step.additionalDirectories;
        if (step.meta !== undefined) params._meta = step.meta;
        knownSessions.add(sessionId); // history replay arrives before the response
        return request(i, step, "session/load", params, () => {
          if (step.saveAs) saved.set(step.saveAs, sessionId);
        });
      }
      case "forkSession": {
        // ACP's unstable session/fork (the SDK's unstable_forkSession): a new
        // session, known once its answer is read.
        const params = { sessionId: sessionOf(step.sessionId), cwd: path.resolve(step.cwd ?? cwd), mcpServers: step.mcpServers ?? [] };
        if (step.meta !== undefined) params._meta = step.meta;
        const bad = check(unstableSchemas.zForkSessionRequest, params);
        if (bad.length > 0) throw new StepFailure(`forkSession: invalid request ${JSON.stringify(bad)}`);
        return request(i, step, "session/fork", params, (result) => {
          if (isObject(result) && typeof result.sessionId === "string") {
            knownSessions.add(result.sessionId);
            if (step.saveAs) saved.set(step.saveAs, result.sessionId);
          }
        });
      }
      case "prompt": {
        const params = { sessionId: sessionOf(step.session), prompt: promptBlocks(step) };
        if (step.meta !== undefined) params._meta = step.meta;
        return request(i, step, "session/prompt", params);
      }
      case "steer": {
        // _session/steering, the adapters' extension for a message typed
        // while the agent works: its answer is checked here, the SDK having
        // no schema for it.
        const params = { sessionId: sessionOf(step.session), prompt: promptBlocks(step) };
        const meta = { ...(step.meta ?? {}) };
        if (step.idleBehavior !== undefined) meta.steering = { idleBehavior: step.idleBehavior };
        if (Object.keys(meta).length > 0) params._meta = meta;
        return request(i, step, "_session/steering", params, checkSteering);
      }
      case "ext":
        if (step.method === "session/resume" && typeof step.params?.sessionId === "string") {
          knownSessions.add(step.params.sessionId); // updates may come before the response
        }
        return request(i, step, step.method, step.params ?? {});
      case "cancel": {
        const params = { sessionId: sessionOf(step.session) };
        if (step.meta !== undefined) params._meta = step.meta;
        await agent.notify("session/cancel", params);
        return;
      }
      case "extNotify":
        await agent.notify(step.method, step.params ?? {});
        return;
      case "await": {
        const rec = asyncCalls.get(step.name);
        if (!rec) throw new StepFailure(`no async step named ${JSON.stringify(step.name)}`);
        await settle(i, rec, `await ${step.name}`);
        return;
      }
      case "waitFor": {
        const count = step.count ?? 1;
        const from = Math.max(prevStart, lastMatch + 1);
        let found = -1;
        const scan = () => {
          let n = 0;
          for (let k = from; k < inbox.length; k++) {
            if (matches(inbox[k], step) && ++n === count) {
              found = k;
              return true;
            }
          }
          return childExited && exitEmitted; // nothing more can arrive
        };
        await waitUntil(scan);
        if (found < 0) {
          const what = JSON.stringify({ method: step.method, sessionUpdate: step.sessionUpdate, stray: step.stray, count });
          throw new StepFailure(`waitFor ${what}: the agent exited`);
        }
        lastMatch = found;
        return;
      }
      case "elicit": {
        // Answers the oldest form the agent asked and no elicit step
        // answered, waiting for one: with `answer` as it is (an
        // elicitation/create result).
        // before: the name of an async step whose answer must not come
        // first (the form will not come once the prompt is answered).
        const before = step.before !== undefined ? asyncCalls.get(step.before) : undefined;
        if (step.before !== undefined && !before) throw new StepFailure(`no async step named ${JSON.stringify(step.before)}`);
        let settled = false;
        before?.promise.then(() => {
          settled = true;
          wake();
        });
        await waitUntil(() => openForms.length > 0 || settled || (childExited && exitEmitted));
        const form = openForms.shift();
        if (!form && settled) throw new StepFailure(`elicit: ${step.before} was answered without a form`);
        if (!form) throw new StepFailure("elicit: the agent exited without asking a form");
        const answer = step.answer ?? { action: "cancel" };
        emit({ event: "request", step: i, method: "elicitation/create", params: form.params, answer });
        form.resolve(answer);
        return;
      }
      case "raw":
        await flushWrites();
        writeToChild(step.line + (step.newline === false ? "" : "\n"));
        return;
      case "sleep":
        await new Promise((r) => setTimeout(r, step.ms ?? 0));
        return;
      case "exec": {
        // Runs a command to its end while the agent runs (with the scenario's
        // environment and cwd), e.g. another program that needs what the
        // agent should have released.
        if (!Array.isArray(step.command) || step.command.length === 0) throw new StepFailure("exec needs a command");
        const r = spawnSync(step.command[0], step.command.slice(1), { cwd: step.cwd ?? cwd, env, encoding: "utf8" });
        emit({ event: "exec", step: i, code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr, error: r.error?.message ?? null });
        return;
      }
      case "children":
        emit({ event: "children", step: i, children: childrenOf(child.pid) });
        return;
      case "closeStdin":
        await flushWrites();
        child.stdin.end();
        await waitExit();
        return;
      case "signal":
        if (!childExited) child.kill(step.signal ?? "SIGTERM");
        await waitExit();
        return;
      default:
        throw new StepFailure(`unknown op ${JSON.stringify(step.op)}`);
    }
  }

  // childrenOf lists the live processes whose parent is pid, as
  // {pid, command} (Linux /proc; elsewhere an empty list).
  function childrenOf(pid) {
    const out = [];
    let entries = [];
    try {
      entries = readdirSync("/proc");
    } catch {
      return out;
    }
    for (const e of entries) {
      if (!/^[0-9]+$/.test(e)) continue;
      try {
        const stat = readFileSync(`/proc/${e}/stat`, "utf8");
        const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        // fields[0] is the state, fields[1] the parent; a zombie is gone.
        if (Number(fields[1]) !== pid || fields[0] === "Z") continue;
        const command = readFileSync(`/proc/${e}/cmdline`, "utf8").split("\0").filter(Boolean);
        out.push({ pid: Number(e), command });
      } catch {
        // the process ended while it was read
      }
    }
    return out;
  }

  // shutdown ends the agent's stdin and waits for it to exit, as an agent
  // does at the end of its input. After a failed step (the agent may be in
  // the middle of something) it is killed instead.
  async function shutdown() {
    // A form no step answered is cancelled, so that nothing waits on it.
    for (const form of openForms.splice(0)) form.resolve({ action: "cancel" });
    if (!childExited) {
      await flushWrites();
      if (stdinOpen()) child.stdin.end();
      if (failed) child.kill("SIGKILL");
    }
    await exitPromise;
    conn.close();
  }

  let finished = false;
  function finish() {
    if (finished) return;
    finished = true;
    const code = failed || invalidCount > 0 ? 1 : 0;
    emit({ event: "done", code, invalid: invalidCount, failed });
    return code;
  }

  let prevStart = 0;
  for (let i = 0; i < scenario.steps.length && !failed; i++) {
    const step = subst(scenario.steps[i]);
    const start = inbox.length;
    emit({ event: "step", step: i, op: step.op });
    try {
      await runStep(i, step, prevStart);
    } catch (err) {
      fail(i, err instanceof StepFailure ? err.message : `${err?.message ?? err}`);
    }
    prevStart = start;
  }
  await shutdown();
  return finish();
}

// serve runs the scenarios its standard input names, one JSON object a
// line ({"scenario", "events", "stderr", "env", "cwd"}: the files for the
// JSON lines and the agent's stderr, the environment as NAME=value
// strings), side by side, and writes {"events", "code"} when one is done
// and both files are written: a test binary starts one client for all
// its scenarios rather than Node.js and the SDK for each. It ends once its
// input has ended and the runs it started are done.
async function serve() {
  const { createInterface } = await import("node:readline");
  const { createWriteStream } = await import("node:fs");
  const running = new Set();
  const closed = (s) => new Promise((resolve) => s.end(resolve));
  const one = async (req) => {
    const out = createWriteStream(req.events);
    const err = createWriteStream(req.stderr);
    const env = {};
    for (const kv of req.env ?? []) {
      const i = kv.indexOf("=");
      if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
    }
    let code;
    try {
      code = await runScenario(req.scenario, { out, err, env, cwd: req.cwd ?? process.cwd() });
    } catch (e) {
      err.write(`acp-client: ${e instanceof UsageError ? "" : "internal error: "}${e?.stack ?? e}\n`);
      code = 2;
    }
    await Promise.all([closed(out), closed(err)]);
    process.stdout.write(JSON.stringify({ events: req.events, code }) + "\n");
  };
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() === "") continue;
    const run = one(JSON.parse(line)).finally(() => running.delete(run));
    running.add(run);
  }
  await Promise.all(running);
}

if (process.argv[2] === "--serve") {
  await serve();
} else {
  let code;
  try {
    code = await runScenario(process.argv[2], { out: process.stdout, err: process.stderr, env: process.env, cwd: process.cwd() });
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    usage(err.message);
  }
  process.stdout.write("", () => process.exit(code));
}
