#!/usr/bin/env node
// A tiny ACP v1 agent on the official SDK's agent app (the successor of
// AgentSideConnection), for selftest.sh: it lets client.mjs be tested without
// spbridge.
//
//   initialize                  protocolVersion 1, loadSession true
//   session/new                 sessionId "fake-1"; _meta.received echoes the request's _meta
//   session/load                "fake-1" only: replays one user_message_chunk, returns {}
//   session/prompt              agent_thought_chunk, plan, two agent_message_chunk, tool_call,
//                               session/request_permission (allow_once, allow_always,
//                               reject_once), tool_call_update, _spbridge/item; then, if the
//                               prompt text contains "wait", waits for session/cancel; returns
//                               stopReason "cancelled" after session/cancel, else "end_turn"
//   session/cancel              marks the session's running prompt cancelled
//   _spbridge/save              returns {}
//   _fake/misbehave             sends messages that break the schema, then returns {}
//
// It exits when its stdin ends.

import { Readable, Writable } from "node:stream";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const sdkDir = process.env.ACP_SDK_DIR
  ? path.resolve(process.env.ACP_SDK_DIR)
  : path.resolve(here, "../../.tools/npm/node_modules/@agentclientprotocol/sdk");
const sdkPkg = JSON.parse(readFileSync(path.join(sdkDir, "package.json"), "utf8"));
const acp = await import(pathToFileURL(path.join(sdkDir, sdkPkg.exports["."].import)).href);
const { methods, RequestError } = acp;

const SESSION = "fake-1";
const running = new Map(); // sessionId -> {cancelled, wake}

function update(client, sessionId, u) {
  return client.notify(methods.client.session.update, { sessionId, update: u });
}

const app = acp
  .agent({ name: "fake-agent" })
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: true,
      promptCapabilities: { image: true, audio: false, embeddedContext: false },
    },
    authMethods: [],
    agentInfo: { name: "fake-agent", version: "0.0.1" },
  }))
  .onRequest(methods.agent.session.new, ({ params }) => ({
    sessionId: SESSION,
    _meta: { received: params._meta ?? null },
  }))
  .onRequest(methods.agent.session.load, async ({ params, client }) => {
    if (params.sessionId !== SESSION) throw RequestError.sessionNotFound(params.sessionId);
    await update(client, SESSION, {
      sessionUpdate: "user_message_chunk",
      content: { type: "text", text: "an earlier prompt" },
    });
    return {};
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const sid = params.sessionId;
    if (sid !== SESSION) throw RequestError.sessionNotFound(sid);
    const state = { cancelled: false, wake: () => {} };
    running.set(sid, state);
    try {
      const text = params.prompt
        .filter((b) => b.type === "text")
        .map((b) => b.text)
        .join(" ");
      const images = params.prompt.filter((b) => b.type === "image").length;
      await update(client, sid, {
        sessionUpdate: "agent_thought_chunk",
        content: { type: "text", text: `thinking about ${JSON.stringify(text)} and ${images} image(s)` },
      });
      await update(client, sid, {
        sessionUpdate: "plan",
        entries: [{ content: "say hello", priority: "high", status: "in_progress" }],
      });
      await update(client, sid, {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: "Hello" },
      });
      await update(client, sid, {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: ", world" },
      });
      await update(client, sid, {
        sessionUpdate: "tool_call",
        toolCallId: "call-1",
        title: "Write hello.txt",
        kind: "edit",
        status: "pending",
        locations: [{ path: "/tmp/hello.txt" }],
        rawInput: { path: "/tmp/hello.txt", content: "hello" },
      });
      const permission = await client.request(methods.client.session.requestPermission, {
        sessionId: sid,
        toolCall: { toolCallId: "call-1", title: "Write hello.txt", kind: "edit", status: "pending" },
        options: [
          { optionId: "allow", name: "Allow once", kind: "allow_once" },
          { optionId: "always", name: "Always allow", kind: "allow_always" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ],
      });
      const allowed =
        permission.outcome.outcome === "selected" && permission.outcome.optionId !== "reject";
      await update(client, sid, {
        sessionUpdate: "tool_call_update",
        toolCallId: "call-1",
        status: allowed ? "completed" : "failed",
      });
      await client.notify("_spbridge/item", {
        sessionId: sid,
        item: { type: "permission", outcome: permission.outcome },
      });
      if (text.includes("wait") && !state.cancelled) {
        await new Promise((resolve) => {
          state.wake = resolve; // session/cancel; the end of stdin ends the process
        });
      }
      return { stopReason: state.cancelled ? "cancelled" : "end_turn" };
    } finally {
      running.delete(sid);
    }
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    const state = running.get(params.sessionId);
    if (state) {
      state.cancelled = true;
      state.wake();
    }
  })
  .onRequest("_spbridge/save", (p) => p, () => ({}))
  .onRequest("_fake/misbehave", (p) => p, async ({ client }) => {
    // agent_message_chunk without its required content
    await update(client, SESSION, { sessionUpdate: "agent_message_chunk" });
    // a field the schema does not know, and an invalid tool kind
    await update(client, SESSION, {
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: "x" },
      bogus: 1,
    });
    await update(client, SESSION, { sessionUpdate: "tool_call", toolCallId: "c", title: "t", kind: "hack" });
    // a session this connection never created
    await update(client, "nope", { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x" } });
    // an _spbridge notification without sessionId
    await client.notify("_spbridge/item", { item: {} });
    // a line that is not JSON (written between the SDK's own lines)
    await new Promise((resolve) => process.stdout.write("{oops\n", resolve));
    return {};
  });

process.stderr.write("fake-agent: started\n");
const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
process.stderr.write("fake-agent: stdin closed, exiting\n");
process.exit(0);
