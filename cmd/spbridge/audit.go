package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/audit"
	"spbridge/internal/canonjson"
	"spbridge/internal/session"
)

// auditCommands are the subcommands of "spbridge audit".
var auditCommands = []command{
	{"verify", "check that a conversation's audit log is whole and untouched", runAuditVerify},
	{"show", "print a conversation's audit log, turn by turn", runAuditShow},
}

func runAudit(ctx context.Context, st stdio, args []string) error {
	return runGroup(ctx, st, args, "audit",
		"Read the audit log spbridge keeps of every turn: one append-only file per\n"+
			"conversation in the state folder, named by the id of its first item.\n\n"+
			stateDirHelp, auditCommands)
}

// auditLogPath finds the audit log of the conversation in PKG, or of --id.
func auditLogPath(f *flagSet, id string) (string, error) {
	if id == "" {
		pkg, err := f.onePackage()
		if err != nil {
			return "", err
		}
		p, err := archive.Open(pkg, archive.KindDocument, true)
		if err != nil {
			return "", err
		}
		if p.Unreadable != "" {
			return "", fmt.Errorf("the conversation of %s cannot be read (%s); name its log with --id", pkg, p.Unreadable)
		}
		if id = p.Conv.Identity(); id == "" {
			return "", fmt.Errorf("%s holds no conversation; name a log with --id", pkg)
		}
	} else if f.NArg() > 0 {
		return "", usagef(f.cmd, "give a package or --id, not both")
	}
	dir, err := audit.StateDir()
	if err != nil {
		return "", err
	}
	return audit.Path(dir, id)
}

// auditProves is what a verified audit log shows, and what it cannot.
const auditProves = "A keyed log that verifies shows that no record was edited, removed, reordered\n" +
	"or inserted, and that the log was not deleted, by anyone who does not hold the\n" +
	"key ($SPBRIDGE_STATE_DIR/audit.key). It shows nothing against someone who holds\n" +
	"the key (they can sign records anew), nor against someone who deletes the key,\n" +
	"the index and the log together. Unkeyed records (a plain SHA-256 chain written\n" +
	"by an earlier spbridge) show only that they agree with one another: anyone who\n" +
	"edits them can recompute the hashes."

func runAuditVerify(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("audit verify", "PKG | --id ID",
		"Check the audit log of the conversation in PKG: exit 0 and print the count\n"+
			"of records when every record is as written and in its place; exit 1 naming\n"+
			"the first record that was edited, removed, reordered or inserted, a log that\n"+
			"is missing although the index counted its records, or an index that was\n"+
			"edited or removed. A torn last line (a write cut short by a crash) is\n"+
			"reported, not counted as tampering.\n\n"+auditProves)
	id := f.String("id", "", "the conversation's identity (the id of its first item) instead of PKG")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	path, err := auditLogPath(f, *id)
	if err != nil {
		return err
	}
	r, err := audit.Verify(path)
	if errors.Is(err, audit.ErrNoLog) {
		return fmt.Errorf("%w (no turn of this conversation was audited: none ran, they ran with --no-audit, or the index was started after the log was deleted)", err)
	}
	if err != nil {
		return err
	}
	for _, n := range r.Notes {
		fmt.Fprintf(st.err, "spbridge: note: %s\n", n)
	}
	var problems []error
	if r.IndexProblem != "" {
		problems = append(problems, fmt.Errorf("audit index: %s", r.IndexProblem))
	}
	switch {
	case r.Missing:
		problems = append(problems, fmt.Errorf("audit log %s: %s", path, r.Problem))
	case r.Bad != 0:
		problems = append(problems, fmt.Errorf("audit log %s: record %d: %s", path, r.Bad, r.Problem))
	}
	if len(problems) > 0 {
		return errors.Join(problems...)
	}
	if r.Pruned != "" {
		fmt.Fprintf(st.out, "pruned: the log was removed by spbridge state prune on %s\n", r.Pruned)
		return nil
	}
	switch {
	case r.Unkeyed == 0:
		fmt.Fprintf(st.out, "ok: %d records, keyed (HMAC-SHA-256)\n", r.Records)
	case r.Keyed == 0:
		fmt.Fprintf(st.out, "ok: %d records, unkeyed (a plain SHA-256 chain from an earlier spbridge: anyone who edits it can recompute it)\n", r.Records)
	default:
		fmt.Fprintf(st.out, "ok: %d records: %d unkeyed (a plain SHA-256 chain from an earlier spbridge: anyone who edits them can recompute it), then %d keyed (HMAC-SHA-256)\n", r.Records, r.Unkeyed, r.Keyed)
	}
	if r.Torn {
		fmt.Fprintln(st.out, "the last line is torn: a write was cut short (a crash); the next turn's record replaces it")
	}
	if r.HeadBehind {
		fmt.Fprintln(st.out, "the index (or the head kept beside the log) is behind by a record: a crash came between the writes")
	}
	if r.Keyed > 0 {
		fmt.Fprintln(st.out, "keyed records prove nothing against someone who holds the key, or who deletes the key, the index and the log together")
	}
	return nil
}

func runAuditShow(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("audit show", "PKG | --id ID [--json]",
		"Print the audit log of the conversation in PKG, turn by turn; with --json,\n"+
			"its records as JSON lines.")
	id := f.String("id", "", "the conversation's identity (the id of its first item) instead of PKG")
	asJSON := f.Bool("json", false, "print the records as JSON lines")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	path, err := auditLogPath(f, *id)
	if err != nil {
		return err
	}
	recs, err := audit.Read(path)
	if err != nil {
		return err
	}
	for i, rec := range recs {
		if *asJSON {
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
		fmt.Fprintf(&b, ", $%v", c)
	}
	fmt.Fprintf(&b, "\n  %s %s (%s), model %s\n  in %s\n", str("backend"), str("programVersion"), str("program"), str("model"), str("cwd"))
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
