package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/export"
	"spbridge/internal/money"
	"spbridge/internal/session"
)

func runAuditExport(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("audit export", "PKG | --id ID [-o FILE] [--format html|md] [--force]",
		"Export the audit log of the conversation in PKG as a page, the result of\n"+
			"spbridge audit verify at its top (a log that does not verify is still\n"+
			"exported, saying so first, and the command exits 1), then each record as a turn: when, the CLI and\n"+
			"its version, the model, the user's message, every item as it ended (shown as\n"+
			"spbridge export shows them), the files the turn changed, its usage and cost,\n"+
			"the folder, how the CLI ended and the last lines it wrote to standard error;\n"+
			"the totals at the end. The images of the user's messages are shown from the\n"+
			"package when it still holds them.\n\n"+exportAbout)
	id := f.String("id", "", "the conversation's identity (the id of its first item) instead of PKG")
	ef := addExportFlags(f)
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if err := ef.check(f); err != nil {
		return err
	}
	path, _, err := auditLogPath(f, *id)
	if err != nil {
		return err
	}
	r, err := audit.VerifyKept(path, nil)
	if errors.Is(err, audit.ErrNoLog) {
		return fmt.Errorf("%w (no turn of this conversation was audited: none ran, they ran with --no-audit, or the index was started after the log was deleted)", err)
	}
	if err != nil {
		return err
	}
	paceGC() // the log's records are held whole while the page is written
	recs, err := audit.Read(path)
	if err != nil && !r.Missing {
		return err
	}
	v := &export.Verification{Lines: r.Notes}
	lines, problems := verifyText(r, path, "", false)
	v.OK = len(problems) == 0
	for _, p := range problems {
		v.Lines = append(v.Lines, p.Error())
	}
	v.Lines = append(v.Lines, lines...)
	identity := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	page := &export.Page{Title: "Audit log of " + identity, Verification: v,
		Fields: []export.Field{{Label: "Conversation", Value: identity}, {Label: "Log", Value: path},
			{Label: "Records", Value: strconv.Itoa(len(recs))}}}
	pkg := ""
	if *id == "" {
		pkg = f.Arg(0)
		page.Fields = append(page.Fields, export.Field{Label: "Package", Value: pkg})
	}
	totals := &export.Totals{}
	costs := 0
	for _, rec := range recs {
		u := recordUsage(rec)
		totals.Usage = totals.Usage.Add(u.Usage)
		if u.Cost != "" {
			costs++
			totals.Cost.Dollars = archive.AddNumbers(totals.Cost.Dollars, u.Cost)
		}
	}
	switch {
	case costs == len(recs) && costs > 0:
		totals.Cost.Kind = archive.CostReported
	case costs > 0:
		totals.Cost.Kind = archive.CostReported
		page.Fields = append(page.Fields, export.Field{Label: "Cost", Value: fmt.Sprintf("%d of %d turns reported a cost: the total is theirs", costs, len(recs))})
	}
	turns := func(yield func(*export.Turn) bool) {
		for i, rec := range recs {
			if !yield(recordTurn(i+1, rec, pkg)) {
				return
			}
		}
	}
	err = ef.write(st, func(w io.Writer) error {
		return export.Write(w, *ef.format, page, turns, totals)
	})
	if err == nil && !v.OK {
		err = fmt.Errorf("the audit log %s does not verify: the page says why, first", path)
	}
	return err
}

// recordTurn is an audit record as a turn of a page: the user's message
// and the items the record keeps, and the facts of the turn around them.
// pkg, when not "", is the package whose images the user's message may
// still find.
func recordTurn(n int, rec map[string]any, pkg string) *export.Turn {
	str := func(k string) string { s, _ := rec[k].(string); return s }
	t := &export.Turn{N: n}
	head := []string{str("time"), strings.TrimSpace(str("backend") + " " + str("programVersion")), str("model"), str("status")}
	var parts []string
	for _, h := range head {
		if h != "" {
			parts = append(parts, h)
		}
	}
	t.Heading = strings.Join(parts, " · ")
	user := map[string]any{"id": "", "type": archive.TypeUser, "text": str("user")}
	images, _ := rec["images"].([]any)
	if len(images) > 0 {
		user["hasImage"] = true
		for _, x := range images {
			m, _ := x.(map[string]any)
			mime, _ := m["mimeType"].(string)
			sha, _ := m["sha256"].(string)
			t.Images = map[int][]export.Image{0: append(t.Images[0], export.Image{MimeType: mime, Data: packageImage(pkg, mime, sha)})}
		}
	}
	t.Items = append(t.Items, archive.ItemFromMap(user))
	items, _ := rec["items"].([]any)
	for _, x := range items {
		if m, ok := x.(map[string]any); ok {
			t.Items = append(t.Items, archive.ItemFromMap(m))
		}
	}
	u := recordUsage(rec)
	t.Usage = &u
	t.Changes = recordChanges(rec)
	add := func(label, value string) {
		if value != "" {
			t.Fields = append(t.Fields, export.Field{Label: label, Value: value})
		}
	}
	add("Folder", str("cwd"))
	add("Program", str("program"))
	add("CLI session", str("sessionID"))
	add("The CLI ended", str("exitStatus"))
	if str("origin") == session.OriginCLI {
		add("Begun by", "the CLI on its own (a background subagent's report)")
	}
	if c := rec["costUSD"]; c != nil {
		add("Cost", money.Text(numberText(c)))
	}
	if s := str("stderrTail"); strings.TrimSpace(s) != "" {
		t.Folded = append(t.Folded, export.Field{Label: "Standard error (last lines)", Value: s})
	}
	return t
}

// packageImage is the image sha of type mime as the package at pkg holds
// it, nil when it does not (or its bytes are not that image's).
func packageImage(pkg, mime, sha string) []byte {
	ext := map[string]string{"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}[mime]
	if pkg == "" || ext == "" || len(sha) != 64 || strings.ContainsAny(sha, `/\.`) {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(pkg, archive.AgentDir, "images", sha+"."+ext))
	if err != nil || hexSHA256(data) != sha {
		return nil
	}
	return data
}

// recordChanges are the files an audit record says its turn changed.
func recordChanges(rec map[string]any) []export.FileChange {
	ch, _ := rec["changes"].(map[string]any)
	if ch == nil {
		return nil
	}
	num := func(v any) int {
		n, _ := strconv.Atoi(string(numberText(v)))
		return n
	}
	var out []export.FileChange
	files, _ := ch["files"].([]any)
	for _, x := range files {
		m, _ := x.(map[string]any)
		p, _ := m["path"].(string)
		change, _ := m["change"].(string)
		binary, _ := m["binary"].(bool)
		out = append(out, pageFileChange(p, change, num(m["added"]), num(m["removed"]), binary))
	}
	skipped, _ := ch["skipped"].([]any)
	for _, x := range skipped {
		m, _ := x.(map[string]any)
		p, _ := m["path"].(string)
		reason, _ := m["reason"].(string)
		out = append(out, export.FileChange{Path: p, Op: "changed, not kept: " + reason})
	}
	return out
}

func hexSHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
