#!/usr/bin/env python3
"""Makes testdata/Recorded.silverpoint: turns replayed from the recorded CLI
streams under the repository's testdata/ (spbridge replay), each after the
user's message that began it, with a few fields no recording holds (an
image, a web search, approval cards, an answer, citations; a tool's image
with its history). Run from the
repository's root with a built spbridge as $SPB; then `spbridge save` the
package. Kept so that the package can be made again as the mappers change."""
import base64, hashlib, json, os, shutil, subprocess, sys

spb = os.environ.get("SPB", "spbridge")
out = "internal/export/testdata/Recorded.silverpoint"
turns = [
    ("claude", None, "testdata/claude/tool_edit.stdout.jsonl", "change beta to BETA in notes.txt"),
    ("claude", None, "testdata/claude/tool_write_new_file.stdout.jsonl", "Write sub/new.txt with two lines"),
    ("claude", None, "testdata/claude/tool_bash_multiline.stdout.jsonl", "Print a few lines"),
    ("claude", None, "testdata/claude/tool_exitplanmode.stdout.jsonl", "Plan how to **shorten** the headline"),
    ("codex", "app-server", "testdata/codex/app-server/two_turns.jsonl", "hi"),
    ("codex", "app-server", "testdata/codex/app-server/file_change_two_hunks.jsonl", "Capitalise two and eleven in numbers.txt"),
    ("codex", "app-server", "testdata/codex/app-server/plan_updates.jsonl", "Make a plan"),
    ("codex", "app-server", "testdata/codex/app-server/command_approval_decline.jsonl", "Write in and out"),
    ("codex", "app-server", "testdata/codex/app-server/raw_events.jsonl", "Run odd commands"),
    ("codex", "app-server", "testdata/codex/app-server/request_user_input.jsonl", "Pick a colour"),
    ("codex", "app-server", "testdata/codex/app-server/compact.jsonl", "Compact"),
    ("codex", "app-server", "testdata/codex/app-server/api_error_401.jsonl", "Anything"),
]
items, history, cards = [], [], {}
png = open("testdata/packages/Poster.silverpoint/agent/images/83caf76779373891ebfc9cd602157d32b82b34d926fa14856356a3219ed5fc94.png", "rb").read()
sha = hashlib.sha256(png).hexdigest()
for n, (backend, transport, path, text) in enumerate(turns, 1):
    args = [spb, "replay", "--backend", backend]
    if transport:
        args += ["--codex-transport", transport]
    got = json.loads(subprocess.run(args + [path], check=True, capture_output=True).stdout)
    user = {"id": "%08X-0000-4000-8000-000000000000" % n, "type": "user", "text": text}
    msg = [{"type": "text", "text": text}]
    if n == 1:
        user["hasImage"] = True
        msg.append({"type": "image", "mimeType": "image/png", "sha256": sha})
    items.append(user)
    history.append({"role": "user", "content": msg})
    for i, it in enumerate(got, 1):
        it["id"] = "%08X-0000-4000-8000-%012X" % (n, i)
        if it["type"] == "toolApproval" and n == 1:
            cards[it["id"]] = {"state": "allowedAlways"}
        if it["type"] == "questions":
            it["questions"][0]["answer"] = "Blue"
        items.append(it)
        if it["type"] == "assistant":
            history.append({"role": "assistant", "content": [{"type": "text", "text": it["text"]}]})
n = len(turns) + 1
items.append({"id": "%08X-0000-4000-8000-000000000000" % n, "type": "user", "text": "What is new in Go?"})
history.append({"role": "user", "content": [{"type": "text", "text": "What is new in Go?"}]})
items.append({"id": "%08X-0000-4000-8000-000000000001" % n, "type": "webSearch", "query": "Go release notes", "status": "succeeded",
              "results": [{"title": "Go release notes", "url": "https://go.dev/doc/devel/release"}]})
items.append({"id": "%08X-0000-4000-8000-000000000002" % n, "type": "assistant",
              "text": "The [release notes](https://go.dev/doc/devel/release) list each release.\n\n| release | month |\n|---|---|\n| 1.26 | February |",
              "citations": [{"title": "Release History", "url": "https://go.dev/doc/devel/release"}]})
history.append({"role": "assistant", "content": [{"type": "text", "text": items[-1]["text"]}]})
# A turn whose tool returned an image (Claude's Read of a PNG): the history
# keeps it after the tool's result, in agent/images/ as the user's are.
n += 1
text, path = "Look at red.png", "testdata/claude/tool_read_png.stdout.jsonl"
items.append({"id": "%08X-0000-4000-8000-000000000000" % n, "type": "user", "text": text})
history.append({"role": "user", "content": [{"type": "text", "text": text}]})
got = json.loads(subprocess.run([spb, "replay", "--backend", "claude", path], check=True, capture_output=True).stdout)
for i, it in enumerate(got, 1):
    it["id"] = "%08X-0000-4000-8000-%012X" % (n, i)
    items.append(it)
tool_png = None
for line in open(path):
    ev = json.loads(line)
    if ev.get("type") != "user" or not isinstance(ev["message"]["content"], list):
        continue
    for b in ev["message"]["content"]:
        if b.get("type") == "tool_result":
            call = b["tool_use_id"]
            tool_png = base64.b64decode([c for c in b["content"] if c["type"] == "image"][0]["source"]["data"])
tool_sha = hashlib.sha256(tool_png).hexdigest()
history.append({"role": "assistant", "content": [{"type": "toolCall", "id": call, "name": "Read", "arguments": json.dumps({"file_path": "red.png"})}]})
history.append({"role": "tool", "content": [{"type": "toolResult", "callID": call, "toolName": "Read", "content": "", "isError": False},
                                            {"type": "image", "mimeType": "image/png", "sha256": tool_sha}]})
history.append({"role": "assistant", "content": [{"type": "text", "text": items[-1]["text"]}]})
conv = {"formatVersion": 1, "items": items, "history": history, "approvalCards": cards,
        "estimatedCost": {"kind": "estimated", "dollars": 0.0842}, "feedback": {}, "lastRoundUsage": {"input": 3100, "output": 120, "cacheRead": 2800, "cacheWrite": 0, "webSearchRequests": 0},
        "lintRuleCards": {}, "model": "gpt-5.5-codex", "provider": "codex", "queued": [], "resolvedCards": [], "sentFacts": [], "skillCards": {}, "unsent": [],
        "usage": {"input": 41200, "output": 2310, "cacheRead": 30100, "cacheWrite": 0, "webSearchRequests": 1}}
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out + "/agent/images")
open(out + "/document.json", "w").write("{}\n")
open(out + "/agent/images/%s.png" % sha, "wb").write(png)
open(out + "/agent/images/%s.png" % tool_sha, "wb").write(tool_png)
json.dump(conv, open(out + "/agent/conversation.json", "w"), indent=1, ensure_ascii=False)
subprocess.run([spb, "save", out], check=True)
