package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"spbridge/internal/archive"
	"spbridge/internal/canonjson"
	"spbridge/internal/money"
)

func runConversationList(_ context.Context, st stdio, args []string) error {
	f := newFlagSet("conversation list", "[DIR] [--json]",
		"List the packages under DIR (default the current folder) that hold a saved\n"+
			"conversation, one a line: path, items, provider/model, cost and when the\n"+
			"conversation was last written (UTC). With --json, one JSON object a line.\n"+
			"With --cli, the sessions the CLIs keep themselves instead (see\n"+
			"spbridge conversation list --cli --help).")
	asJSON := f.Bool("json", false, "print one JSON object a line")
	// --cli is taken before these flags are parsed (runConversationListAll):
	// declared here for the help and completion.
	f.Bool("cli", false, "list the sessions the CLIs keep themselves instead")
	if done, err := f.parse(args, st.out); done || err != nil {
		return err
	}
	dir := "."
	switch f.NArg() {
	case 0:
	case 1:
		dir = f.Arg(0)
	default:
		return usagef(f.cmd, "conversation list takes at most one folder, got %d arguments: %s", f.NArg(), strings.Join(f.Args(), " "))
	}
	list, err := archive.List(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, s := range list {
		if *asJSON {
			line, err := canonjson.EncodeCompact(summaryValue(s))
			if err != nil {
				return fmt.Errorf("encode summary of %s: %w", s.Path, err)
			}
			b.Write(line)
			b.WriteByte('\n')
			continue
		}
		b.WriteString(summaryText(s))
		b.WriteByte('\n')
	}
	_, err = fmt.Fprint(st.out, b.String())
	return err
}

// summaryText is one package as a tab-separated line.
func summaryText(s archive.Summary) string {
	modified := s.Modified.UTC().Format(time.RFC3339)
	if s.Unreadable != "" {
		return strings.Join([]string{s.Path, "unreadable: " + s.Unreadable, modified}, "\t")
	}
	who := "-"
	if s.Provider != "" || s.Model != "" {
		who = s.Provider + "/" + s.Model
	}
	return strings.Join([]string{s.Path, strconv.Itoa(s.Items) + " items", who, costText(s.Cost), modified}, "\t")
}

// costText is a cost as a person reads it, e.g. "$0.02134 estimated".
func costText(c archive.Cost) string {
	switch c.Kind {
	case archive.CostEstimated, archive.CostReported:
		if c.Dollars == "" {
			return c.Kind
		}
		return money.Text(c.Dollars) + " " + c.Kind
	case archive.CostNotBilled:
		return "not billed"
	case "", archive.CostUnknown:
		return "unknown"
	default:
		return c.Kind
	}
}

// summaryValue is one package as a JSON object.
func summaryValue(s archive.Summary) map[string]any {
	kind := s.Cost.Kind
	if kind == "" {
		kind = archive.CostUnknown
	}
	cost := map[string]any{"kind": kind}
	if s.Cost.Dollars != "" {
		cost["dollars"] = money.JSON(s.Cost.Dollars)
	}
	v := map[string]any{
		"path":     s.Path,
		"items":    s.Items,
		"provider": s.Provider,
		"model":    s.Model,
		"cost":     cost,
		"modified": s.Modified.UTC().Format(time.RFC3339),
	}
	if s.Unreadable != "" {
		v["unreadable"] = s.Unreadable
	}
	return v
}
