package export

import (
	"strings"

	"spbridge/internal/archive"
	"spbridge/internal/clis"
	"spbridge/internal/itemmap"
)

// view is what an item shows, whatever the format: the parts a page
// writes for it, each "" or nil when the item has none.
type view struct {
	kind  string // user, assistant, thinking, tool, notice, failure, questions, plan, approval, webSearch, other
	label string // "You", "Assistant", a tool's name, …
	title string // one line after the label: a tool's summary, a search's query
	// command is set when title is a command line (a shell tool's).
	command    bool
	status     string // a tool's or search's status
	statusText string
	// markdown is text rendered as Markdown (a message, a thought, a
	// plan); plain is text shown as it is (a notice, a failure).
	markdown, plain string
	desc            string              // what a call is for
	todo            []itemmap.PlanEntry // a plan that is a todo list
	diffs           []fileDiff          // an edit's changes
	output          string              // what a call returned
	args            string              // a call's input, when no diff says it
	detail          string              // more, shown folded (a failure's, an approval's)
	questions       []question          // a questions item's
	decision        string              // how an approval was answered
	results         []link              // a web search's results, an item's citations
	images          []Image             // a user message's images, or those a tool returned
	other           map[string]any      // a host's item: its fields
}

type question struct {
	text    string
	options []string
	answer  string
}

type link struct {
	title, url string
}

// itemView is how item it shows; images are those its message was sent
// with (a user item's) or its call returned (a tool item's), cards the approval cards by item id, before the items before it in
// its turn (for an approval's decision when no card says it).
func itemView(it archive.Item, images []Image, cards map[string]any, before []archive.Item) view {
	v := view{kind: it.Type()}
	switch it.Type() {
	case archive.TypeUser:
		v.label, v.markdown, v.images = "You", it.String("text"), images
		if len(images) == 0 && it.Bool("hasImage") {
			v.images = []Image{{}}
		}
	case archive.TypeAssistant:
		v.label, v.markdown = "Assistant", it.String("text")
	case archive.TypeThinking:
		v.label, v.markdown = "Thinking", it.String("text")
	case archive.TypeTool:
		toolView(&v, it)
		v.images = images
	case archive.TypeNotice:
		v.label, v.plain = "Notice", it.String("text")
	case archive.TypeFailure:
		v.label, v.plain, v.detail = "Failure", it.String("text"), it.String("detail")
	case archive.TypeQuestions:
		v.label = "Questions"
		list, _ := it.Get("questions").([]any)
		for _, x := range list {
			m, _ := x.(map[string]any)
			q := question{}
			q.text, _ = m["question"].(string)
			q.answer, _ = m["answer"].(string)
			opts, _ := m["options"].([]any)
			for _, o := range opts {
				switch o := o.(type) {
				case string:
					q.options = append(q.options, o)
				case map[string]any:
					if s, _ := o["label"].(string); s != "" {
						q.options = append(q.options, s)
					}
				}
			}
			v.questions = append(v.questions, q)
		}
	case archive.TypeDirections:
		v.kind, v.label = "plan", "Plan"
		text := it.String("text")
		if entries, todo := todoEntries(text); todo {
			v.todo = entries
		} else {
			v.markdown = text
		}
	case archive.TypeToolApproval:
		v.kind, v.label = "approval", "Approval"
		v.title = strings.TrimSpace(it.String("name") + ": " + it.String("summary"))
		v.title = strings.TrimSuffix(v.title, ":")
		v.detail = it.String("detail")
		v.decision = decision(it, cards, before)
	case archive.TypeWebSearch:
		v.label, v.title = "Web search", it.String("query")
		v.status = it.String("status")
		results, _ := it.Get("results").([]any)
		v.results = links(results)
	default:
		v.kind, v.label = "other", it.Type()
		v.plain = it.String("text")
		v.other = it.Map()
	}
	if c, ok := it.Get("citations").([]any); ok {
		v.results = append(v.results, links(c)...)
	}
	return v
}

// toolView fills v from a tool item: its name, summary and status, the
// diffs its detail holds (an edit's input, a patch's changes), its output.
func toolView(v *view, it archive.Item) {
	name := it.String("name")
	v.label, v.title = name, it.String("summary")
	if v.label == "" {
		v.label = "Tool"
	}
	v.command = clis.ToolKind(name) == itemmap.KindExecute
	v.status, v.statusText = it.String("status"), it.String("statusText")
	v.desc = itemmap.DetailDescription(name, it.String("detail"))
	detail := it.String("detail")
	if changes, ok := strings.CutPrefix(detail, "changes:\n"); ok {
		v.diffs = patchDiffs(changes, v.title)
		return
	}
	args := ""
	if a, ok := strings.CutPrefix(detail, "arguments:\n"); ok {
		args, _, _ = strings.Cut(a, "\n\n")
	}
	if args != "" {
		v.diffs = editDiffs(name, args)
		if len(v.diffs) == 0 && !v.command {
			v.args = args
		}
	}
	if text, _ := itemmap.DetailOutput(detail); text != "" {
		v.output = text
	}
}

// todoEntries reads a plan as a todo list: one entry a line, "[x] step"
// completed, "[ ] step" pending; todo is false when any line is not one.
func todoEntries(text string) (entries []itemmap.PlanEntry, todo bool) {
	todo = true
	for line := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		e := itemmap.PlanEntry{Content: line, Status: itemmap.PlanPending}
		if rest, ok := strings.CutPrefix(line, "[x] "); ok {
			e.Content, e.Status = rest, itemmap.PlanCompleted
		} else if rest, ok := strings.CutPrefix(line, "[ ] "); ok {
			e.Content = rest
		} else {
			todo = false
		}
		entries = append(entries, e)
	}
	return entries, todo && len(entries) > 0
}

// Approval card states (approvalCards' "state"), as said on a page.
var cardText = map[string]string{
	"allowed":        "Allowed once",
	"allowedAlways":  "Allowed always",
	"rejected":       "Rejected",
	"rejectedAlways": "Rejected always",
	"cancelled":      "Cancelled",
}

// decision says how an approval was answered: by its card, else by the
// status of the call it asked about (the last tool item before it of the
// same name and summary), else that no answer is recorded.
func decision(it archive.Item, cards map[string]any, before []archive.Item) string {
	if card, ok := cards[it.ID()].(map[string]any); ok {
		state, _ := card["state"].(string)
		if t, ok := cardText[state]; ok {
			return t
		}
		if state != "" {
			return state
		}
	}
	for i := len(before) - 1; i >= 0; i-- {
		b := before[i]
		if b.Type() != archive.TypeTool || b.String("name") != it.String("name") || b.String("summary") != it.String("summary") {
			continue
		}
		switch b.String("status") {
		case archive.StatusDenied:
			return "Denied"
		case archive.StatusSucceeded, archive.StatusFailed:
			return "Allowed"
		case archive.StatusCancelled:
			return "Cancelled"
		}
		break
	}
	return "No answer recorded"
}

// links reads a list of {title, url}.
func links(list []any) []link {
	var out []link
	for _, x := range list {
		m, _ := x.(map[string]any)
		l := link{}
		l.title, _ = m["title"].(string)
		l.url, _ = m["url"].(string)
		if l.title != "" || l.url != "" {
			out = append(out, l)
		}
	}
	return out
}
