package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/canonjson"
	"spbridge/internal/money"
	"spbridge/internal/regfile"
	"spbridge/internal/session"
)

// auditCommands returns the subcommands of "spbridge audit".
func auditCommands() []command {
	return []command{
		{"verify", "check that a conversation's audit log is whole and untouched", runAuditVerify},
		{"show", "print a conversation's audit log, turn by turn", runAuditShow},
		{"export", "export a conversation's audit log as an HTML page or Markdown, verified", runAuditExport},
		{"head", "print each audit log's head, to keep outside the state folder", runAuditHead},
	}
}

func runAudit(ctx context.Context, st stdio, args []string) error {
	return runGroup(ctx, st, args, "audit",
		"Read the audit log spbridge keeps of every turn: one append-only file per\n"+
			"document in the state folder, named by the id of its conversation's first\n"+
			"item; a copied package gets one of its own at its first turn after the copy\n"+
			"(its first record names the log and head it was copied from), a moved one\n"+
			"keeps its log.\n\n"+
			stateDirHelp, auditCommands())
}

// auditLogPath finds the audit log of the conversation in PKG, or of --id,
// and the package that holds it ("" with --id): PKG, or for a plain folder
// the package in the state folder keeping its conversation.
func auditLogPath(f *flagSet, id string) (path, pkg string, err error) {
	if id == "" {
		if pkg, err = f.onePackage(); err != nil {
			return "", "", err
		}
		if pkg, err = conversationPackage(pkg); err != nil {
			return "", "", err
		}
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil {
			return "", "", err
		}
		if p.Unreadable != "" {
			return "", "", fmt.Errorf("the conversation of %s cannot be read (%s); name its log with --id", pkg, p.Unreadable)
		}
		if id = p.Conv.AuditLog(); id == "" {
			return "", "", fmt.Errorf("%s holds no conversation; name a log with --id", pkg)
		}
	} else if f.NArg() > 0 {
		return "", "", usagef(f.cmd, "give a package or --id, not both")
	}
	dir, err := audit.StateDir()
	if err != nil {
		return "", "", err
	}
	path, err = audit.Path(dir, id)
	return path, pkg, err
}

// auditProves is what a verified audit log shows, and what it cannot.
const auditProves = "A keyed log that verifies shows that no record was edited, removed, reordered\n" +
	"or inserted, and that the log was not deleted, by anyone who does not hold the\n" +
	"key ($SPBRIDGE_STATE_DIR/audit.key). It shows nothing against someone who holds\n" +
	"the key (they can sign records anew), nor against someone who deletes the key,\n" +
	"the index and the log together. Unkeyed records (a plain SHA-256 chain written\n" +
	"by an earlier spbridge) show only that they agree with one another: anyone who\n" +
	"edits them can recompute the hashes.\n\n" +
	"Without a head kept outside the state folder, a rollback of the state folder's\n" +
	"files to an earlier copy (the index, a log and its head put back together; no\n" +
	"key is needed) cannot be told from that earlier state: the records written\n" +
	"since are gone unseen. Keep the output of spbridge audit head elsewhere (after\n" +
	"each session, or with your logs) and check against it with --heads FILE."

// rollbackLimit is said after a verification without kept heads.
const rollbackLimit = "without a head kept outside the state folder (spbridge audit head), a rollback of the state folder's files to an earlier copy cannot be told from that earlier state"

func runAuditVerify(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("audit verify", "PKG | --id ID | --heads FILE [PKG | --id ID]",
		"Check the audit log of the conversation in PKG: exit 0 and print the count\n"+
			"of records when every record is as written and in its place; exit 1 naming\n"+
			"the first record that was edited, removed, reordered or inserted, a log that\n"+
			"is missing although the index counted its records, or an index that was\n"+
			"edited or removed. A torn last line (a write cut short by a crash) is\n"+
			"reported, not counted as tampering.\n\n"+
			"With --heads FILE (the output of spbridge audit head, kept earlier, in either\n"+
			"form; heads appended one after another are all checked), the log is also\n"+
			"checked against its kept heads: fewer records than a kept head counts read as\n"+
			"\"N records missing since the kept head\", another record at a kept head's\n"+
			"count as \"the record at the kept head differs\", a log gone as missing.\n"+
			"With --heads and neither PKG nor --id, every log is checked: those in the\n"+
			"state folder, those the index knows and those FILE names; one line a log.\n\n"+auditProves)
	id := f.String("id", "", "the conversation's `ID` (the id of its first item) instead of PKG")
	headsFile := f.String("heads", "", "check against the heads kept in `FILE` (spbridge audit head's output); alone, check every log")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	withHeads := f.Changed("heads")
	var kept []audit.Head
	if withHeads {
		if *headsFile == "" {
			return usagef(f.cmd, "--heads needs a file")
		}
		var err error
		if kept, err = readHeads(*headsFile); err != nil {
			return err
		}
		if *id == "" && f.NArg() == 0 {
			return verifyAllLogs(st, kept, *headsFile)
		}
	}
	path, _, err := auditLogPath(f, *id)
	if err != nil {
		return err
	}
	r, err := audit.VerifyKept(path, kept)
	if errors.Is(err, audit.ErrNoLog) {
		return fmt.Errorf("%w (no turn of this conversation was audited: none ran, they ran with --no-audit, or the index was started after the log was deleted)", err)
	}
	if err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(st.err, "spbridge: note: %s\n", n)
	}
	lines, problems := verifyText(r, path, *headsFile, withHeads)
	if len(problems) > 0 {
		return errors.Join(problems...)
	}
	for _, l := range lines {
		fmt.Fprintln(st.out, l)
	}
	return nil
}

// verifyText is what audit verify says of the log at path, checked
// against the heads kept in headsFile when withHeads: the lines it prints
// for a log that verifies, else the problems found.
func verifyText(r *audit.Report, path, headsFile string, withHeads bool) (lines []string, problems []error) {
	if r.IndexProblem != "" {
		problems = append(problems, fmt.Errorf("audit index: %s", r.IndexProblem))
	}
	for _, p := range logProblems(r) {
		problems = append(problems, fmt.Errorf("audit log %s: %s", path, p))
	}
	if len(problems) > 0 {
		return nil, problems
	}
	if r.Pruned != "" {
		return []string{fmt.Sprintf("pruned: the log was removed by spbridge state prune on %s", r.Pruned)}, nil
	}
	parent, err := verifyParent(path)
	if err != nil {
		return nil, []error{err}
	}
	lines = append(lines, fmt.Sprintf("ok: %s", recordsSummary(r)))
	if parent != "" {
		lines = append(lines, parent)
	}
	if withHeads {
		switch r.KeptHeads {
		case 0:
			lines = append(lines, fmt.Sprintf("no head of this log is kept in %s: it was checked without one", headsFile))
		case 1:
			lines = append(lines, fmt.Sprintf("the log holds the head kept in %s: its first %d records are as they were when it was kept", headsFile, r.KeptRecords))
		default:
			lines = append(lines, fmt.Sprintf("the log holds the %d heads kept in %s: its first %d records are as they were when the last of them was kept", r.KeptHeads, headsFile, r.KeptRecords))
		}
	}
	if r.Torn {
		lines = append(lines, "the last line is torn: a write was cut short (a crash); the next turn's record replaces it")
	}
	if r.HeadBehind {
		lines = append(lines, fmt.Sprintf("the index (or the head kept beside the log) counts %s fewer than the log: a crash between the writes leaves it so, and so does an earlier copy of the index put back", records(r.Behind)))
	}
	switch {
	case r.KeptHeads > 0:
		lines = append(lines, keptAnchors)
	case r.Keyed > 0:
		lines = append(lines, keyedLimit)
	default:
		lines = append(lines, rollbackLimit)
	}
	return lines, nil
}

// verifyParent checks the log a copy's log at path was copied from (its
// first record's audit.FieldCopiedFrom) against the head it names: "" for
// a log that is no copy, else a line saying what was found; an error when
// that log does not hold that head (edited, cut, rolled back) or is
// missing.
func verifyParent(path string) (string, error) {
	recs, err := audit.Read(path)
	if err != nil || len(recs) == 0 {
		return "", nil
	}
	p, ok := audit.ParentOf(recs[0])
	if !ok {
		return "", nil
	}
	ppath, err := audit.Path(filepath.Dir(filepath.Dir(path)), p.ID)
	if err != nil {
		return "", err
	}
	r, err := audit.VerifyKept(ppath, []audit.Head{p.Head})
	if errors.Is(err, audit.ErrNoLog) {
		return "", fmt.Errorf("audit log %s: the log it was copied from, %s, is missing", path, p.ID)
	}
	if err != nil {
		return "", fmt.Errorf("audit log %s: the log it was copied from: %w", path, err)
	}
	if r.Pruned != "" {
		return fmt.Sprintf("copied from log %s at record %d, which spbridge state prune removed on %s", p.ID, p.Records, r.Pruned), nil
	}
	var problems []error
	if r.IndexProblem != "" {
		problems = append(problems, fmt.Errorf("audit index: %s", r.IndexProblem))
	}
	for _, pr := range logProblems(r) {
		problems = append(problems, fmt.Errorf("audit log %s, which %s was copied from: %s", ppath, path, pr))
	}
	if len(problems) > 0 {
		return "", errors.Join(problems...)
	}
	return fmt.Sprintf("copied from log %s at record %d: that log holds that head", p.ID, p.Records), nil
}

// keyedLimit is what keyed records with no kept head do not prove, on
// one line (--help says it whole).
const keyedLimit = "limits: a rollback of the state folder goes unseen without a head kept elsewhere (spbridge audit head), and the key's holder can sign records anew (spbridge audit verify --help)"

// keptAnchors is what a kept head adds, and what it does not.
const keptAnchors = "a kept head vouches for its log's records up to it, also against someone who holds the key (every tag after an edited record changes); records after it prove nothing against someone who holds the key"

// readHeads reads the heads kept in the file at path.
func readHeads(path string) ([]audit.Head, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("heads file: %w", err)
	}
	defer f.Close()
	heads, err := audit.ParseHeads(f)
	if err != nil {
		return nil, fmt.Errorf("heads file %s: %w", path, err)
	}
	return heads, nil
}

// logProblems is what a report finds wrong with its log (not the index),
// one sentence each.
func logProblems(r *audit.Report) []string {
	var ps []string
	switch {
	case r.Missing:
		ps = append(ps, r.Problem)
	case r.Bad != 0:
		ps = append(ps, fmt.Sprintf("record %d: %s", r.Bad, r.Problem))
	}
	if r.KeptProblem != "" {
		ps = append(ps, r.KeptProblem)
	}
	return ps
}

// recordsSummary says how many records a log that verifies holds, and how
// they are signed.
func recordsSummary(r *audit.Report) string {
	switch {
	case r.Unkeyed == 0:
		return fmt.Sprintf("%d records, keyed (HMAC-SHA-256)", r.Records)
	case r.Keyed == 0:
		return fmt.Sprintf("%d records, unkeyed (a plain SHA-256 chain from an earlier spbridge: anyone who edits it can recompute it)", r.Records)
	default:
		return fmt.Sprintf("%d records: %d unkeyed (a plain SHA-256 chain from an earlier spbridge: anyone who edits them can recompute it), then %d keyed (HMAC-SHA-256)", r.Records, r.Unkeyed, r.Keyed)
	}
}

// verifyAllLogs checks every log of the state folder against the heads
// kept in headsFile: one line a log on stdout, its problems or "ok".
func verifyAllLogs(st stdio, kept []audit.Head, headsFile string) error {
	dir, err := audit.StateDir()
	if err != nil {
		return err
	}
	all, err := audit.VerifyAll(dir, kept)
	if err != nil {
		return err
	}
	for _, n := range all.Notes {
		fmt.Fprintf(st.err, "spbridge: note: %s\n", n)
	}
	if all.IndexProblem != "" {
		fmt.Fprintf(st.out, "audit index: %s\n", all.IndexProblem)
	}
	failed, unkept, unkeptKeyed := 0, 0, false
	for _, l := range all.Logs {
		if ps := logProblems(l.Report); len(ps) > 0 {
			failed++
			for _, p := range ps {
				fmt.Fprintf(st.out, "%s: %s\n", l.ID, p)
			}
			continue
		}
		if l.Pruned != "" {
			fmt.Fprintf(st.out, "%s: pruned: the log was removed by spbridge state prune on %s\n", l.ID, l.Pruned)
			continue
		}
		line := l.ID + ": ok: " + recordsSummary(l.Report)
		switch l.KeptHeads {
		case 0:
			line += "; no head kept"
			unkept++
			unkeptKeyed = unkeptKeyed || l.Keyed > 0
		case 1:
			line += fmt.Sprintf("; holds its kept head (record %d)", l.KeptRecords)
		default:
			line += fmt.Sprintf("; holds its %d kept heads (the last at record %d)", l.KeptHeads, l.KeptRecords)
		}
		if l.Torn {
			line += "; the last line is torn (a crash)"
		}
		if l.HeadBehind {
			line += "; the index counts " + records(l.Behind) + " fewer (a crash, or an earlier copy of the index)"
		}
		fmt.Fprintln(st.out, line)
	}
	switch {
	case failed > 0 && all.IndexProblem != "":
		return fmt.Errorf("%d of %d audit logs do not verify, and the audit index cannot be trusted", failed, len(all.Logs))
	case failed > 0:
		return fmt.Errorf("%d of %d audit logs do not verify against %s", failed, len(all.Logs), headsFile)
	case all.IndexProblem != "":
		return errors.New("the audit index cannot be trusted")
	}
	if len(all.Logs) == 0 {
		fmt.Fprintf(st.out, "ok: no audit logs in %s\n", dir)
		return nil
	}
	fmt.Fprintf(st.out, "ok: %d audit logs\n", len(all.Logs))
	if unkept < len(all.Logs) {
		fmt.Fprintln(st.out, keptAnchors)
	}
	switch {
	case unkeptKeyed:
		fmt.Fprintf(st.out, "for the %d logs with no head kept, %s\n", unkept, keyedLimit)
	case unkept > 0:
		fmt.Fprintf(st.out, "for the %d logs with no head kept: %s\n", unkept, rollbackLimit)
	}
	return nil
}

func runAuditHead(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("audit head", "[--json]",
		"Print the head of every audit log in the state folder, one line a log, sorted\n"+
			"by identity: the conversation's identity (the id of its first item), the\n"+
			"log's count of records and the tag (hmac) of its last record, separated by\n"+
			"a space. With --json, each line is a JSON object instead:\n"+
			"{\"id\":…,\"last\":…,\"records\":…}. A head says where a log ended, not that\n"+
			"it is untouched (spbridge audit verify checks that).\n\n"+
			"Keep the output outside the state folder (append it to a file, hand it to a\n"+
			"log shipper); spbridge audit verify --heads FILE then catches a rollback of\n"+
			"the state folder's files to an earlier copy, which nothing inside the state\n"+
			"folder can tell from that earlier state.")
	asJSON := f.Bool("json", false, "print each head as a JSON object, one a line")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	if err := f.noArgs(); err != nil {
		return err
	}
	dir, err := audit.StateDir()
	if err != nil {
		return err
	}
	heads, err := audit.Heads(dir)
	for _, h := range heads {
		if *asJSON {
			fmt.Fprintf(st.out, "%s\n", h.JSON())
		} else {
			fmt.Fprintln(st.out, h.String())
		}
	}
	return err
}

func runAuditShow(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("audit show", "PKG | --id ID [--json] [--ancestry]",
		"Print the audit log of the conversation in PKG, turn by turn; with --json,\n"+
			"its records as JSON lines. A copied package has a log of its own from its\n"+
			"first turn after the copy: PKG's turns only; --ancestry prints first the\n"+
			"turns of the logs it was copied from, up to the copy. Turns that copies ran in\n"+
			"a log they shared before spbridge kept a log per copy (their records name\n"+
			"another package that still exists) are left out, and counted on standard\n"+
			"error; --id ID shows a log whole.")
	id := f.String("id", "", "the log's id (the conversation's identity, the id of its first item, or a copy's own log) instead of PKG")
	asJSON := f.Bool("json", false, "print the records as JSON lines")
	ancestry := f.Bool("ancestry", false, "print the turns of the logs PKG's was copied from first, up to the copy")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	path, pkg, err := auditLogPath(f, *id)
	if err != nil {
		return err
	}
	// own leaves out, for PKG, the turns of other packages in its log.
	own := func(recs []map[string]any) []map[string]any { return recs }
	if *id == "" {
		pkg, _ := filepath.Abs(pkg)
		own = func(recs []map[string]any) []map[string]any {
			kept, n := audit.OwnRecords(recs, pkg)
			if n > 0 {
				fmt.Fprintf(st.err, "spbridge: left out %d %s that copies of this package ran in its log before each copy got a log of its own (--id %s shows the log whole)\n",
					n, plural(n, "turn", "turns"), strings.TrimSuffix(filepath.Base(path), ".jsonl"))
			}
			return kept
		}
	}
	if !*ancestry {
		recs, err := audit.Read(path)
		if err != nil {
			return err
		}
		return showRecords(st, own(recs), *asJSON)
	}
	line, err := audit.ReadAncestry(path)
	if err != nil {
		return err
	}
	line[len(line)-1].Records = own(line[len(line)-1].Records)
	for i, seg := range line {
		if !*asJSON {
			if i > 0 {
				fmt.Fprintln(st.out)
			}
			switch {
			case seg.Err != nil:
				fmt.Fprintf(st.out, "== log %s, which it was copied from: %v\n", seg.ID, seg.Err)
				continue
			case i == len(line)-1:
				fmt.Fprintf(st.out, "== log %s, this package's\n", seg.ID)
			default:
				fmt.Fprintf(st.out, "== log %s, which it was copied from (up to record %d)\n", seg.ID, len(seg.Records))
			}
		}
		if err := showRecords(st, seg.Records, *asJSON); err != nil {
			return err
		}
	}
	return nil
}

// showRecords prints audit records as text, or as JSON lines.
func showRecords(st stdio, recs []map[string]any, asJSON bool) error {
	for i, rec := range recs {
		if asJSON {
			line, err := canonjson.EncodeCompact(rec)
			if err != nil {
				return err
			}
			fmt.Fprintf(st.out, "%s\n", line)
			continue
		}
		if i > 0 {
			fmt.Fprintln(st.out)
		}
		fmt.Fprint(st.out, auditText(rec))
	}
	return nil
}

// auditText is one record as readable text.
func auditText(rec map[string]any) string {
	str := func(k string) string { s, _ := rec[k].(string); return s }
	var b strings.Builder
	fmt.Fprintf(&b, "Turn %v, %s: %s", rec["seq"], str("time"), str("status"))
	if c := rec["costUSD"]; c != nil {
		b.WriteString(", " + money.Text(numberText(c)))
	}
	fmt.Fprintf(&b, "\n  %s %s (%s), model %s\n  in %s\n", str("backend"), str("programVersion"), str("program"), str("model"), str("cwd"))
	if p, ok := audit.ParentOf(rec); ok {
		fmt.Fprintf(&b, "  the first turn of a copy: its log goes on from log %s at record %d (%s)\n", p.ID, p.Records, p.Package)
	}
	if e := str("exitStatus"); e != "" {
		fmt.Fprintf(&b, "  the CLI ended: %s\n", e)
	}
	if str("origin") == session.OriginCLI {
		b.WriteString("  a turn the CLI ran on its own (a background subagent's report)\n")
	}
	items, _ := rec["items"].([]any)
	for _, x := range items {
		m, _ := x.(map[string]any)
		if m == nil {
			continue
		}
		text := itemText(archive.ItemFromMap(m))
		b.WriteString("  " + strings.ReplaceAll(text, "\n", "\n  ") + "\n")
	}
	return b.String()
}

// numberText is a number of a decoded record as its JSON text.
func numberText(v any) json.Number {
	switch n := v.(type) {
	case json.Number:
		return n
	case float64:
		return json.Number(strconv.FormatFloat(n, 'g', -1, 64))
	case string:
		return json.Number(n)
	}
	return json.Number(fmt.Sprint(v))
}

// records is "1 record" or "N records".
func records(n int64) string {
	if n == 1 {
		return "1 record"
	}
	return fmt.Sprintf("%d records", n)
}
