#!/usr/bin/env python3
"""Makes testdata/Hostile.silverpoint: a conversation whose every text tries
to act on a page (script, event handlers, javascript: and data: links, CSS
injection, remote images, a refresh, a huge line, an image whose bytes are
not its type). Run from the repository's root with a built spbridge as
$SPB."""
import hashlib, json, os, shutil, subprocess

spb = os.environ.get("SPB", "spbridge")
out = "internal/export/testdata/Hostile.silverpoint"
X = "https://evil.example"
fake = b"<script>alert('img')</script>"  # stored as a PNG: its bytes are no image
sha = hashlib.sha256(fake).hexdigest()
attack = "\n\n".join([
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "[click me](javascript:alert(3)) [data](data:text/html;base64,PHNjcmlwdD5hbGVydCg0KTwvc2NyaXB0Pg==)",
    "![remote](%s/pixel.png) ![inline](data:image/png;base64,iVBORw0KGgo=)" % X,
    "<style>body{display:none}</style>",
    '<meta http-equiv="refresh" content="0;url=%s">' % X,
    '[ok](https://ok.example/a "t\\" onmouseover=alert(5) x=\\"")',
    "<javascript:alert(6)> <%s/auto> <mailto:a@b.example>" % X,
    '<a href="%s" style="position:fixed;inset:0">cover</a>' % X,
])
items = [
    {"id": "00000001-0000-4000-8000-000000000000", "type": "user", "text": attack, "hasImage": True},
    {"id": "00000001-0000-4000-8000-000000000001", "type": "thinking", "text": "</details><script>alert(7)</script>"},
    {"id": "00000001-0000-4000-8000-000000000002", "type": "assistant",
     "text": "<iframe src=\"%s\"></iframe>\n\n<div onclick=alert(8)>\n\n```html\n</code></pre><script>alert(9)</script>\n```\n\n" % X + attack},
    {"id": "00000001-0000-4000-8000-000000000003", "type": "tool", "name": "<b>Bash</b>",
     "summary": "\"><script>alert(10)</script>", "status": "succeeded", "statusText": "<i>exit 0</i>\" onmouseover=\"alert(11)",
     "detail": "arguments:\n{\"command\": \"</pre><script>alert(12)</script>\"}\n\noutput:\n</pre><style>*{color:red}</style><script>alert(13)</script>\n" + "\n".join("line %d <img src=%s/%d.png>" % (i, X, i) for i in range(40))},
    {"id": "00000001-0000-4000-8000-000000000004", "type": "tool", "name": "Edit", "summary": "<svg onload=alert(14)>", "status": "succeeded",
     "detail": "arguments:\n" + json.dumps({"file_path": "x\" onerror=\"alert(15)", "old_string": "<script>alert(16)</script>", "new_string": "</span></pre><script>alert(17)</script>"})},
    {"id": "00000001-0000-4000-8000-000000000005", "type": "tool", "name": "apply_patch", "summary": "<evil>.txt", "status": "failed",
     "detail": "changes:\nupdate <evil>.txt\n@@ -1 +1 @@\n-</pre>\n+<script>alert(18)</script>"},
    {"id": "00000001-0000-4000-8000-000000000006", "type": "toolApproval", "name": "<script>", "summary": "alert(19)", "detail": "<img src=%s/a.png>" % X},
    {"id": "00000001-0000-4000-8000-000000000007", "type": "questions", "questions": [
        {"question": "<script>alert(20)</script>?", "options": ["<b>yes</b>", "javascript:alert(21)"], "answer": "<b>yes</b>"}]},
    {"id": "00000001-0000-4000-8000-000000000008", "type": "directions", "text": "[x] <script>alert(22)</script>\n[ ] </li></ul><style>*{}</style>"},
    {"id": "00000001-0000-4000-8000-000000000009", "type": "webSearch", "query": "<script>alert(23)</script>", "status": "succeeded",
     "results": [{"title": "<b>evil</b>", "url": "javascript:alert(24)"}, {"title": "data", "url": "data:text/html,<script>alert(25)</script>"},
                 {"title": "fine", "url": "https://ok.example/?q=\"><script>alert(26)</script>"}]},
    {"id": "00000001-0000-4000-8000-00000000000A", "type": "notice", "text": "</style><style>*{display:none}</style>"},
    {"id": "00000001-0000-4000-8000-00000000000B", "type": "failure", "text": "<svg onload=alert(27)>", "detail": "</pre><script>alert(28)</script>"},
    {"id": "00000001-0000-4000-8000-00000000000C", "type": "reportedIssue", "text": "<script>alert(29)</script>", "url": "javascript:alert(30)"},
    {"id": "00000001-0000-4000-8000-00000000000D", "type": "assistant", "text": "A huge line: " + "x<y>&" * 100000,
     "citations": [{"title": "<script>alert(31)</script>", "url": "vbscript:alert(32)"}]},
]
history = [{"role": "user", "content": [{"type": "text", "text": attack}, {"type": "image", "mimeType": "image/png", "sha256": sha}]}]
conv = {"formatVersion": 1, "items": items, "history": history, "approvalCards": {"00000001-0000-4000-8000-000000000006": {"state": "<script>alert(33)</script>"}},
        "estimatedCost": {"kind": "unknown"}, "feedback": {}, "lastRoundUsage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "webSearchRequests": 0},
        "lintRuleCards": {}, "model": "<script>alert(34)</script>", "provider": "</title><script>alert(35)</script>", "queued": [], "resolvedCards": [], "sentFacts": [], "skillCards": {}, "unsent": [],
        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "webSearchRequests": 0}}
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out + "/agent/images")
open(out + "/document.json", "w").write("{}\n")
open(out + "/agent/images/%s.png" % sha, "wb").write(fake)
json.dump(conv, open(out + "/agent/conversation.json", "w"), indent=1, ensure_ascii=False)
subprocess.run([spb, "save", out], check=True)
