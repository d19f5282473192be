#!/usr/bin/env bash
# Self-test of client.mjs against fake-agent.mjs, without spbridge:
#
#   bash scripts/install-clis              (installs the ACP SDK into .tools/npm)
#   bash testdata/acp-client/selftest.sh
#
# It runs three scenarios and checks the client's JSON lines with node:
#   ok          every op (signal excepted), permissions, async prompt + cancel,
#               extension request/notification, load, raw bad line; exit 0
#   misbehave   the agent sends schema-breaking messages: "invalid" events,
#               then the signal op; exit 1
#   gone        a waitFor whose message never comes, then a request, after
#   gone2       the agent exited: a "fail" event (nothing waits for a
#               time); exit 1
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
sdk=${ACP_SDK_DIR:-$root/.tools/npm/node_modules/@agentclientprotocol/sdk}
[ -f "$sdk/package.json" ] || {
  echo "selftest: no ACP SDK at $sdk: run bash scripts/install-clis" >&2
  exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A 1x1 PNG for the image prompt.
node -e 'process.stdout.write(Buffer.from(process.argv[1], "base64"))' \
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==' >"$tmp/dot.png"

agent="$here/fake-agent.mjs"

cat >"$tmp/ok.json" <<EOF
{"command": ["node", "$agent"], "env": {"FAKE_AGENT": "1"}, "cwd": "$tmp",
 "permissions": ["allow_once", "reject_once"],
 "steps": [
  {"op": "initialize"},
  {"op": "newSession", "cwd": "$tmp", "meta": {"x": 1}, "saveAs": "s1"},
  {"op": "newSession", "cwd": "$tmp", "meta": {"prev": "\$s1"}},
  {"op": "prompt", "session": "s1", "text": "hello", "images": [{"path": "$tmp/dot.png", "mimeType": "image/png"}]},
  {"op": "prompt", "session": "s1", "text": "please wait", "async": true, "name": "p1"},
  {"op": "waitFor", "method": "session/update", "sessionUpdate": "agent_message_chunk"},
  {"op": "waitFor", "method": "_spbridge/item", "session": "s1"},
  {"op": "cancel", "session": "s1"},
  {"op": "await", "name": "p1"},
  {"op": "ext", "method": "_spbridge/save", "params": {"sessionId": "\$s1", "prompt": [{"type": "text", "text": "later"}]}},
  {"op": "ext", "method": "_spbridge/nope", "params": {"sessionId": "\$s1"}, "async": true, "name": "e1"},
  {"op": "await", "name": "e1"},
  {"op": "loadSession", "sessionId": "\$s1", "cwd": "$tmp", "saveAs": "s2"},
  {"op": "waitFor", "method": "session/update", "sessionUpdate": "user_message_chunk", "session": "s2"},
  {"op": "loadSession", "sessionId": "no-such-session", "cwd": "$tmp"},
  {"op": "extNotify", "method": "_spbridge/whatever", "params": {"sessionId": "\$s1"}},
  {"op": "raw", "line": "{not json"},
  {"op": "waitFor", "stray": true, "errorCode": -32700},
  {"op": "sleep", "ms": 50},
  {"op": "closeStdin"}
 ]}
EOF

cat >"$tmp/misbehave.json" <<EOF
{"command": ["node", "$agent"],
 "steps": [
  {"op": "initialize"},
  {"op": "newSession", "cwd": "$tmp", "saveAs": "s1"},
  {"op": "ext", "method": "_fake/misbehave", "params": {}},
  {"op": "signal", "signal": "SIGTERM"}
 ]}
EOF

# A waitFor whose message never comes fails when the agent exits (a time
# limit, from earlier versions, is ignored); so does a request to an agent
# that is gone.
cat >"$tmp/gone.json" <<EOF
{"command": ["node", "$agent"], "timeoutMs": 300,
 "steps": [
  {"op": "initialize"},
  {"op": "newSession", "cwd": "$tmp", "saveAs": "s1"},
  {"op": "prompt", "session": "s1", "text": "wait", "async": true, "name": "p1"},
  {"op": "waitFor", "method": "_spbridge/item", "session": "s1"},
  {"op": "signal", "signal": "SIGTERM"},
  {"op": "waitFor", "method": "_spbridge/never", "timeoutMs": 300},
  {"op": "initialize"}
 ]}
EOF
cat >"$tmp/gone2.json" <<EOF
{"command": ["node", "$agent"],
 "steps": [
  {"op": "initialize"},
  {"op": "signal", "signal": "SIGTERM"},
  {"op": "initialize"},
  {"op": "initialize"}
 ]}
EOF

# run NAME WANT_RC: runs a scenario, keeping stdout and stderr.
run() {
  local rc=0
  node "$here/client.mjs" "$tmp/$1.json" >"$tmp/$1.out" 2>"$tmp/$1.err" || rc=$?
  if [ "$rc" != "$2" ]; then
    echo "selftest: $1: client exited $rc, want $2" >&2
    sed 's/^/  out: /' "$tmp/$1.out" >&2
    sed 's/^/  err: /' "$tmp/$1.err" >&2
    exit 1
  fi
}

run ok 0
run misbehave 1
run gone 1
run gone2 1

node --input-type=module - "$tmp" <<'EOF'
import { readFileSync } from "node:fs";
const dir = process.argv[2];
let failures = 0;
function load(name) {
  return readFileSync(`${dir}/${name}.out`, "utf8").trim().split("\n").map((l) => JSON.parse(l));
}
function expect(name, cond, what, events) {
  if (!cond) {
    failures++;
    console.error(`selftest: ${name}: ${what}`);
    if (events) for (const e of events) console.error("  " + JSON.stringify(e));
  }
}
const is = (e, props) => Object.entries(props).every(([k, v]) => e[k] === v);

{
  const ev = load("ok");
  const x = (what, cond) => expect("ok", cond, what, ev);
  const resp = (step) => ev.find((e) => e.event === "response" && e.step === step);
  const err = (step) => ev.find((e) => e.event === "error" && e.step === step);
  const updates = (kind) => ev.filter((e) => e.event === "notification" && e.params?.update?.sessionUpdate === kind);
  x("no invalid or fail events", !ev.some((e) => e.event === "invalid" || e.event === "fail"));
  x("initialize answered protocolVersion 1", resp(0)?.result?.protocolVersion === 1);
  x("session/new returned fake-1 and saw _meta", resp(1)?.result?.sessionId === "fake-1" && resp(1)?.result?._meta?.received?.x === 1);
  x("$s1 was substituted in _meta", resp(2)?.result?._meta?.received?.prev === "fake-1");
  x("first prompt ended end_turn", resp(3)?.result?.stopReason === "end_turn");
  x("async prompt ended cancelled after session/cancel", resp(4)?.result?.stopReason === "cancelled");
  x("the image reached the agent", updates("agent_thought_chunk")[0]?.params.update.content.text.includes("1 image(s)"));
  x("four agent_message_chunk updates", updates("agent_message_chunk").length === 4);
  x("plan, tool_call, tool_call_update, user_message_chunk arrived",
    ["plan", "tool_call", "tool_call_update", "user_message_chunk"].every((k) => updates(k).length > 0));
  const perms = ev.filter((e) => e.event === "request" && e.method === "session/request_permission");
  x("two permission requests answered allow_once then reject_once",
    perms.length === 2 &&
      perms[0].answer.outcome.optionId === "allow" &&
      perms[1].answer.outcome.optionId === "reject" &&
      perms[0].params.options.map((o) => o.kind).join() === "allow_once,allow_always,reject_once");
  x("_spbridge/item notifications arrived", ev.filter((e) => e.event === "notification" && e.method === "_spbridge/item").length === 2);
  x("_spbridge/save returned {}", JSON.stringify(resp(9)?.result) === "{}");
  x("_spbridge/nope failed with -32601", err(10)?.error?.code === -32601);
  x("session/load of fake-1 returned {}", JSON.stringify(resp(12)?.result) === "{}");
  x("session/load of an unknown session failed with -32002", err(14)?.error?.code === -32002);
  x("the raw bad line was answered with a -32700 parse error (id null)",
    ev.some((e) => e.event === "stray" && e.message.id === null && e.message.error?.code === -32700));
  x("every step ran", ev.filter((e) => e.event === "step").length === 20);
  x("agent exited 0 after closeStdin", ev.some((e) => is(e, { event: "exit", code: 0, signal: null })));
  x("done code 0 is last", is(ev.at(-1), { event: "done", code: 0 }));
  const err0 = readFileSync(`${dir}/ok.err`, "utf8");
  expect("ok", err0.includes("fake-agent: started"), "agent stderr passed through");
}

{
  const ev = load("misbehave");
  const x = (what, cond) => expect("misbehave", cond, what, ev);
  const inv = ev.filter((e) => e.event === "invalid");
  x("six invalid events", inv.length === 6);
  x("missing content is a schema error", inv.some((e) => e.issues.some((i) => i.code === "invalid_type" && i.path.join(".") === "update.content")));
  x("unknown field is flagged", inv.some((e) => e.issues.some((i) => i.code === "strict_dropped" && i.path.join(".") === "update.bogus")));
  x("invalid tool kind is flagged", inv.some((e) => e.issues.some((i) => i.code === "strict_dropped" && i.path.join(".") === "update.kind")));
  x("unknown session is flagged", inv.some((e) => e.params === undefined && e.message?.params?.sessionId === "nope"));
  x("_spbridge/item without sessionId is flagged", inv.some((e) => e.method === "_spbridge/item"));
  x("non-JSON line is flagged", inv.some((e) => e.kind === "line" && e.message === "{oops"));
  x("agent killed by SIGTERM", ev.some((e) => is(e, { event: "exit", code: null, signal: "SIGTERM" })));
  x("done code 1, 6 invalid, not failed", is(ev.at(-1), { event: "done", code: 1, invalid: 6, failed: false }));
}

{
  const ev = load("gone");
  const x = (what, cond) => expect("gone", cond, what, ev);
  x("waitFor failed at step 5, as the agent had exited",
    ev.some((e) => e.event === "fail" && e.step === 5 && e.message.includes("agent exited")));
  x("step 6 did not run", !ev.some((e) => e.event === "step" && e.step === 6));
  x("agent ended by SIGTERM", ev.some((e) => is(e, { event: "exit", code: null, signal: "SIGTERM" })));
  x("done code 1, failed", is(ev.at(-1), { event: "done", code: 1, failed: true }));
}

{
  const ev = load("gone2");
  const x = (what, cond) => expect("gone2", cond, what, ev);
  x("the request to the exited agent failed at step 2", ev.some((e) => e.event === "fail" && e.step === 2));
  x("step 3 did not run", !ev.some((e) => e.event === "step" && e.step === 3));
  x("done code 1, failed", is(ev.at(-1), { event: "done", code: 1, failed: true }));
}

if (failures > 0) process.exit(1);
console.log("selftest: ok (4 scenarios)");
EOF
