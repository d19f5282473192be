package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/checkpoint"
	"spbridge/internal/export"
	"spbridge/internal/holdexit"
)

// exportAbout is what export and audit export say of the page.
const exportAbout = "The HTML page is one self-contained file: its style inline, the conversation's\n" +
	"images embedded, nothing loaded when it is opened, no script; everything the\n" +
	"conversation holds is shown as text (Markdown rendered, raw HTML shown as\n" +
	"written, links only for http, https and mailto, images of URLs never loaded).\n" +
	"Light or dark as the viewer prefers, printable, readable on a phone. Long\n" +
	"outputs are folded; a text over 256 KiB is cut on the page with a note, and\n" +
	"--format md keeps it whole.\n\n" +
	"Without -o the page goes to standard output. -o FILE never replaces a file\n" +
	"that exists unless --force is given; a failed export leaves no FILE behind."

// exportFlags are the output flags export and audit export share.
type exportFlags struct {
	out    *string
	format *string
	force  *bool
}

func addExportFlags(f *flagSet) exportFlags {
	return exportFlags{
		out:    f.StringP("output", "o", "", "write the page to `FILE` instead of standard output"),
		format: f.String("format", export.HTML, "the page's `FORMAT`: html or md (Markdown)"),
		force:  f.Bool("force", false, "with -o, replace FILE when it exists"),
	}
}

// check reports a bad flag value as a usage error, before anything is
// read.
func (e exportFlags) check(f *flagSet) error {
	if *e.format != export.HTML && *e.format != export.Markdown {
		return usagef(f.cmd, "--format is html or md, not %q", *e.format)
	}
	if *e.force && *e.out == "" {
		return usagef(f.cmd, "--force goes with -o FILE")
	}
	if f.Changed("output") && *e.out == "" {
		return usagef(f.cmd, "-o needs a file")
	}
	if *e.out != "" && !*e.force {
		if _, err := os.Lstat(*e.out); err == nil {
			return fmt.Errorf("%s exists: give --force to replace it, or leave out -o to write to standard output", *e.out)
		}
	}
	return nil
}

// write runs page with the page's output: standard output, or FILE
// through a temporary file beside it, synced and then put in place (only
// where nothing is, unless --force).
func (e exportFlags) write(st stdio, page func(w io.Writer) error) error {
	if *e.out == "" {
		return page(st.out)
	}
	path := *e.out
	defer holdexit.Hold()() // a signal's exit waits for the file
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone once linked or renamed; else the partial page
	err = page(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if *e.force {
		return os.Rename(tmp, path)
	}
	// A hard link puts the file in place only where nothing is, even if
	// something appeared since the check.
	switch err := os.Link(tmp, path); {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s exists: give --force to replace it, or leave out -o to write to standard output", path)
	}
	// A file system without hard links.
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s exists: give --force to replace it, or leave out -o to write to standard output", path)
	}
	return os.Rename(tmp, path)
}

func runExport(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("export", "PKG [-o FILE] [--format html|md] [--force]",
		"Export a package's conversation as a page to look at and share: each turn's\n"+
			"messages with their Markdown rendered, thinking folded, tool calls with their\n"+
			"command, output and status, diffs coloured, plans, questions and their\n"+
			"answers, approvals and how they were answered, notices and failures, web\n"+
			"searches, images; each turn's usage and cost where the audit log recorded\n"+
			"them, what each turn changed in the files where its checkpoints recorded\n"+
			"it, and the totals. The journal is applied, as conversation show does.\n"+
			"Takes no lock and changes nothing in the package.\n\n"+exportAbout)
	ef := addExportFlags(f)
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	pkg, err := f.onePackage()
	if err != nil {
		return err
	}
	if err := ef.check(f); err != nil {
		return err
	}
	given := pkg
	if pkg, err = conversationPackage(pkg); err != nil {
		return err
	}
	paceGC() // the conversation is held whole while the page is written
	p, err := archive.Open(pkg, archive.KindDocument, true)
	if err != nil {
		return err
	}
	if err := hasConversation(p); err != nil {
		return err
	}
	page, opt := conversationPage(pkg, p.Conv)
	if pkg != given {
		// A plain folder's conversation, kept in the state folder: the
		// page is the folder's.
		if abs, err := filepath.Abs(given); err == nil {
			page.Title = filepath.Base(abs)
		}
		for i := range page.Fields {
			if page.Fields[i].Label == "Package" {
				page.Fields[i] = export.Field{Label: "Folder", Value: given}
				page.Fields = slices.Insert(page.Fields, i+1, export.Field{Label: "Conversation kept in", Value: pkg})
				break
			}
		}
	}
	return ef.write(st, func(w io.Writer) error {
		return export.Conversation(w, *ef.format, page, p.Conv, opt)
	})
}

// conversationPage is what a conversation's page says besides its items,
// and each turn's usage from the conversation's audit log, when there is
// one.
func conversationPage(pkg string, conv *archive.Conversation) (*export.Page, export.Options) {
	abs, err := filepath.Abs(pkg)
	if err != nil {
		abs = pkg
	}
	page := &export.Page{Title: filepath.Base(abs)}
	add := func(label, value string) {
		if value != "" {
			page.Fields = append(page.Fields, export.Field{Label: label, Value: value})
		}
	}
	add("Package", pkg)
	model := conv.Model
	if conv.Provider != "" {
		model = conv.Provider + " / " + conv.Model
	}
	add("Model", model)
	add("Items", strconv.Itoa(len(conv.Items)))
	var opt export.Options
	usage := auditUsage(conv.AuditLog())
	if usage == nil {
		add("Per-turn usage", "not recorded (no audit log of this conversation here)")
	} else {
		add("Per-turn usage", "from the audit log")
		opt.TurnUsage = func(id string) (export.TurnUsage, bool) {
			u, ok := usage[id]
			return u, ok
		}
	}
	opt.TurnChanges = checkpointChanges(pkg)
	return page, opt
}

// auditUsage reads each turn's usage and cost from the audit log of the
// conversation with this identity, by the id of the turn's last item; nil
// when there is no log (or it cannot be read: the export goes on without).
func auditUsage(identity string) map[string]export.TurnUsage {
	if identity == "" {
		return nil
	}
	dir, err := audit.StateDir()
	if err != nil {
		return nil
	}
	path, err := audit.Path(dir, identity)
	if err != nil {
		return nil
	}
	// A copy's turns from before the copy are in the logs it was copied
	// from.
	line, err := audit.ReadAncestry(path)
	if err != nil {
		return nil
	}
	var recs []map[string]any
	for _, seg := range line {
		recs = append(recs, seg.Records...)
	}
	if len(recs) == 0 {
		return nil
	}
	out := make(map[string]export.TurnUsage, len(recs))
	for _, rec := range recs {
		items, _ := rec["items"].([]any)
		if len(items) == 0 {
			continue
		}
		last, _ := items[len(items)-1].(map[string]any)
		id, _ := last["id"].(string)
		if id == "" {
			continue
		}
		out[id] = recordUsage(rec)
	}
	return out
}

// recordUsage is an audit record's usage and cost.
func recordUsage(rec map[string]any) export.TurnUsage {
	u, _ := rec["usage"].(map[string]any)
	num := func(k string) json.Number {
		if v, ok := u[k]; ok && v != nil {
			return numberText(v)
		}
		return ""
	}
	tu := export.TurnUsage{Usage: archive.Usage{
		Input: num("input"), Output: num("output"), CacheRead: num("cacheRead"),
		CacheWrite: num("cacheWrite"), WebSearchRequests: num("webSearchRequests"),
	}}
	if c, ok := rec["costUSD"]; ok && c != nil {
		tu.Cost = numberText(c)
	}
	return tu
}

// checkpointChanges returns what each turn changed in the files, as the
// package's checkpoints (agent/checkpoints) recorded it: by the notice
// that ends the turn, else by its user item. Nil when the package has no
// checkpoints, or they cannot be read (the export goes on without).
func checkpointChanges(pkg string) func(items []archive.Item) []export.FileChange {
	st, err := checkpoint.Open(pkg, checkpoint.Policy{})
	if err != nil {
		return nil
	}
	entries, err := st.Entries()
	if err != nil || len(entries) == 0 {
		return nil
	}
	byKey := make(map[string]*checkpoint.Entry, len(entries))
	byUser := make(map[string]*checkpoint.Entry, len(entries))
	first := ""
	for i := range entries {
		e := &entries[i]
		if e.Kind != checkpoint.EntryTurn {
			continue
		}
		byKey[e.Key] = e
		if e.UserItem != "" {
			byUser[e.UserItem] = e
		}
		if first == "" && len(e.Files) > 0 {
			first = e.Files[0].Root
		}
	}
	return func(items []archive.Item) []export.FileChange {
		var e *checkpoint.Entry
		for _, it := range items {
			if x, ok := byKey[it.ID()]; ok {
				e = x
				break
			}
		}
		if e == nil && len(items) > 0 {
			e = byUser[items[0].ID()]
		}
		if e == nil {
			return nil
		}
		path := func(root, p string) string {
			if root != first && root != "" {
				return filepath.Join(root, checkpoint.Display(p))
			}
			return checkpoint.Display(p)
		}
		var out []export.FileChange
		for _, f := range e.Files {
			out = append(out, pageFileChange(path(f.Root, f.Path), string(f.Change), f.Added, f.Removed, f.Binary))
		}
		for _, s := range e.Skipped {
			out = append(out, export.FileChange{Path: path(s.Root, s.Path), Op: "changed, not kept: " + s.Reason})
		}
		return out
	}
}

// pageFileChange is a file a turn changed, as a page shows it.
func pageFileChange(path, change string, added, removed int, binary bool) export.FileChange {
	c := export.FileChange{Path: path, Op: change}
	switch {
	case binary:
		c.Stat = "binary"
	case change == string(checkpoint.Modified):
		c.Stat = fmt.Sprintf("+%d −%d", added, removed)
	case change == string(checkpoint.Created) && added > 0:
		c.Stat = fmt.Sprintf("+%d", added)
	}
	return c
}
