package codex

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tidwall/gjson"

	"spbridge/internal/itemmap"
	"spbridge/internal/jsonline"
	"spbridge/internal/regfile"
)

// rolloutTail is how much of the end of codex's session log is read for
// its last token count.
const rolloutTail = 256 << 10

// execLastRound completes the end of a codex exec turn with what exec's
// JSON does not say: the usage of the turn's last request (exec reports
// only the turn's total) and the model's context window. codex writes both
// in its own log of the thread (CODEX_HOME/sessions/…/rollout-…-THREAD.jsonl,
// a token_count event after each request); end is left as it is when that
// log cannot be found or read.
func (b *Backend) execLastRound(end *itemmap.TurnEnd) {
	thread := b.Thread()
	if end == nil || end.NotStarted || thread == "" {
		return
	}
	info, ok := lastTokenCount(b.codexHomeDir(), thread)
	if !ok {
		return
	}
	if last := info.Get("last_token_usage"); last.IsObject() {
		end.LastRound = itemmap.CodexTokens([]byte(last.Raw))
	}
	if w := info.Get("model_context_window").Int(); w > 0 && end.ContextWindow == 0 {
		end.ContextWindow = w
	}
}

// codexHomeDir is the CODEX_HOME codex runs with: Options.CodexHome, the
// environment's, else ~/.codex.
func (b *Backend) codexHomeDir() string {
	env := b.env()
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "CODEX_HOME="); ok && v != "" {
			return v
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".codex")
}

// lastTokenCount returns the info of the last token_count event in the
// thread's session log (the newest, when codex wrote more than one).
func lastTokenCount(codexHome, thread string) (gjson.Result, bool) {
	data, ok := rolloutTailOf(codexHome, thread, rolloutTail)
	if !ok {
		return gjson.Result{}, false
	}
	lines := bytes.Split(data, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if !bytes.Contains(l, []byte(`"token_count"`)) || jsonline.TooDeep(l) || !gjson.ValidBytes(l) {
			continue
		}
		v := gjson.ParseBytes(l)
		if v.Get("payload.type").String() == "token_count" && v.Get("payload.info").IsObject() {
			return v.Get("payload.info"), true
		}
	}
	return gjson.Result{}, false
}

// rolloutTailOf returns the last n bytes of the thread's session log (the
// newest, when codex wrote more than one); false when there is none or it
// cannot be read.
func rolloutTailOf(codexHome, thread string, n int64) ([]byte, bool) {
	newest, info := rolloutPath(codexHome, thread)
	if newest == "" {
		return nil, false
	}
	return readRollout(newest, max(info.Size()-n, 0), info.Size())
}

// rolloutPath returns the path of the thread's session log (the newest,
// when codex wrote more than one) and what Lstat said of it; "" when
// there is none.
func rolloutPath(codexHome, thread string) (string, os.FileInfo) {
	if codexHome == "" || thread == "" || strings.ContainsAny(thread, `/\*?[`) {
		return "", nil
	}
	// The thread's first file, and the files it went on in after a
	// revert (rollout-…-THREAD_ROLLOUT.jsonl).
	paths, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	pages, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+thread+"_*.jsonl"))
	paths = append(paths, pages...)
	var newest string
	var newestInfo os.FileInfo
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if newestInfo == nil || fi.ModTime().After(newestInfo.ModTime()) {
			newest, newestInfo = p, fi
		}
	}
	return newest, newestInfo
}

// readRollout reads the bytes from to end of the session log at path.
func readRollout(path string, from, end int64) ([]byte, bool) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.NewSectionReader(f, from, end-from))
	if err != nil {
		return nil, false
	}
	return data, true
}
