package export

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// stylesheet is the page's whole style: light and dark by the viewer's
// preference, readable on a phone (nothing makes the page wider than the
// screen: long lines wrap, or scroll inside their own box), and printable
// (folded parts open, colours kept light).
const stylesheet = `
:root{--bg:#fff;--fg:#1f2328;--mute:#59636e;--line:#d1d9e0;--box:#f6f8fa;--user:#ddf4ff;--add:#dafbe1;--addfg:#116329;--del:#ffebe9;--delfg:#a40e26;--hunk:#ddf4ff;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--link:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#9198a1;--line:#3d444d;--box:#151b23;--user:#0c2d6b;--add:#12361f;--addfg:#7ee787;--del:#3e1418;--delfg:#ffa198;--hunk:#0c2d6b;--ok:#3fb950;--bad:#f85149;--warn:#d29922;--link:#4493f8}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;overflow-wrap:anywhere}
main{max-width:56rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0}
h2{font-size:1.1rem;margin:0 0 .5rem}
h2 a{color:inherit;text-decoration:none}
h3{font-size:1rem;margin:.5rem 0}
a{color:var(--link)}
.sub,.url,.status,.label,.usage,.stat{color:var(--mute);font-size:.85rem}
.fields{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;margin:.5rem 0;font-size:.9rem}
.fields dt{color:var(--mute)}
.fields dd{margin:0;min-width:0}
.verify{border:2px solid var(--ok);border-radius:8px;padding:.5rem 1rem;margin:1rem 0}
.verify.bad{border-color:var(--bad)}
.verify h2{color:var(--ok)}
.verify.bad h2{color:var(--bad)}
.verify p{margin:.25rem 0}
.turn{border-top:1px solid var(--line);padding:1rem 0;content-visibility:auto;contain-intrinsic-size:auto 30rem}
.item{margin:.6rem 0;padding:.5rem .75rem;border:1px solid var(--line);border-radius:8px;background:var(--bg);contain:content;overflow:hidden;min-width:0}
.item.user{background:var(--user);border-color:transparent}
.item.assistant{border-color:transparent;padding-left:0;padding-right:0}
.item.thinking{color:var(--mute);font-style:italic}
.item.thinking summary{cursor:pointer}
.item.notice{background:var(--box);font-size:.9rem}
.item.failure{border-color:var(--bad)}
.item.failure .who{color:var(--bad)}
.item.approval{border-style:dashed}
.head{display:flex;flex-wrap:wrap;gap:.25rem .5rem;align-items:baseline}
.who{font-weight:600}
.title{min-width:0}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
code.cmd{background:var(--box);padding:0 .3rem;border-radius:4px;white-space:pre-wrap}
.s-succeeded .status{color:var(--ok)}
.s-failed .status{color:var(--bad)}
.s-denied .status,.s-cancelled .status{color:var(--warn)}
.decision{font-weight:600;font-size:.85rem;padding:0 .4rem;border-radius:4px;border:1px solid currentColor}
.d-allowed-once,.d-allowed-always,.d-allowed{color:var(--ok)}
.d-rejected,.d-rejected-always,.d-denied{color:var(--bad)}
.d-cancelled,.d-no-answer-recorded{color:var(--warn)}
.desc{margin:.25rem 0;color:var(--mute)}
.md>:first-child{margin-top:.25rem}
.md>:last-child{margin-bottom:.25rem}
.md pre,pre.out,pre.args,pre.diff,pre.rawhtml{background:var(--box);padding:.5rem;border-radius:6px;overflow:auto;max-width:100%;max-height:40rem;white-space:pre}
.md code{background:var(--box);padding:0 .2rem;border-radius:4px}
.md pre code{background:none;padding:0}
.md table{display:block;overflow:auto;border-collapse:collapse}
.md td,.md th{border:1px solid var(--line);padding:.2rem .5rem}
.md blockquote{margin:.5rem 0;padding-left:.75rem;border-left:3px solid var(--line);color:var(--mute)}
.md img{display:none}
.plain{white-space:pre-wrap;margin:.25rem 0}
.block{margin:.4rem 0}
.block pre{margin:.2rem 0}
.block details summary,.diff summary{cursor:pointer;color:var(--mute);font-size:.85rem}
pre.preview{margin-bottom:.2rem;max-height:12rem}
.diff{margin:.4rem 0}
.diff .path{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:var(--fg)}
pre.diff{padding:.25rem 0}
pre.diff span{display:block;padding:0 .5rem;min-width:max-content}
pre.diff .a{background:var(--add);color:var(--addfg)}
pre.diff .d{background:var(--del);color:var(--delfg)}
pre.diff .h{background:var(--hunk);color:var(--mute)}
.stat .a{color:var(--ok)}
.stat .d{color:var(--bad)}
.todo{list-style:none;padding-left:.25rem}
.todo .completed{color:var(--mute);text-decoration:line-through}
.question p{margin:.25rem 0}
.opts{display:flex;flex-wrap:wrap;gap:.3rem;list-style:none;padding:0;margin:.25rem 0}
.opts li{border:1px solid var(--line);border-radius:999px;padding:0 .6rem;font-size:.9rem}
.opts li.chosen{border-color:var(--ok);color:var(--ok);font-weight:600}
.answer{font-weight:600}
.answer.none{color:var(--warn);font-weight:400}
.links{padding-left:1.2rem;margin:.25rem 0}
.images{display:flex;flex-wrap:wrap;gap:.5rem;margin-top:.4rem}
.images img{max-width:100%;max-height:20rem;height:auto;border-radius:6px;border:1px solid var(--line)}
.noimg,.rimg,.cutnote{color:var(--mute);font-style:italic}
.facts{margin:.5rem 0}
.changes{border:1px solid var(--line);border-radius:8px;padding:.25rem .75rem;margin:.6rem 0}
.files{padding-left:1.2rem;margin:.25rem 0}
.usage{margin:.4rem 0 0}
.totals{border-top:2px solid var(--line);padding:1rem 0}
@media (max-width:600px){body{font-size:14px}main{padding:.5rem}.fields{grid-template-columns:1fr}.fields dt{margin-top:.25rem}}
@media print{
:root{--bg:#fff;--fg:#000;--box:#f6f8fa;--user:#eef6ff}
body{font-size:11pt}
main{max-width:none;padding:0}
.turn{content-visibility:visible;break-inside:auto}
.item{break-inside:avoid}
details::details-content{content-visibility:visible;display:block}
details>summary{list-style:none}
pre.preview{display:none}
.md pre,pre.out,pre.args,pre.diff{max-height:none;white-space:pre-wrap}
a{color:inherit}
}
`

// otherFields is a host item's fields but its id, type and text, as JSON.
func otherFields(m map[string]any) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "id" || k == "type" || k == "text" {
			continue
		}
		v, err := json.Marshal(m[k])
		if err != nil {
			continue
		}
		b.WriteString(k + ": " + string(v) + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonNumber is a number's text as a json.Number.
func jsonNumber(s string) json.Number { return json.Number(s) }
