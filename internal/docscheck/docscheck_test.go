package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepository: the repository's own README.md and docs/ have no broken
// link and name no path outside the repository.
func TestRepository(t *testing.T) {
	docs, err := Documents("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 2 {
		t.Fatalf("documents %v: want README.md and docs/*.md", docs)
	}
	problems, err := Check("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	// The check does look at the links: the README links to docs/.
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range Links(string(data)) {
		if strings.HasPrefix(l.Target, "docs/") {
			n++
		}
	}
	if n == 0 {
		t.Error("README.md has no link into docs/ that the check sees")
	}
}

// writeTree writes files (slash-separated path → content) under a new
// temporary folder and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const goodReadme = "# Project\n\n" +
	"See [the guide](docs/guide.md), [its setup](docs/guide.md#set-it-up-on-macos), " +
	"[below](#where-things-are-kept), [the licence](LICENSE), [a folder](docs/) and [a site](https://example.com/x/../y).\n\n" +
	"## Where things are kept\n\n" +
	"Code is not checked: `[x](nowhere.md)`, and\n\n" +
	"```\n[y](missing.md) docs/../LICENSE\n```\n\n" +
	"    [z](missing-too.md)\n"

const goodGuide = "# Guide\n\n" +
	"## Set it up on macOS\n\n## Set it up on macOS\n\n" +
	"### `session/request_permission` (to the client)\n\n" +
	"Back to the [README](../README.md#project), [twice](#set-it-up-on-macos-1), " +
	"[a method](#sessionrequest_permission-to-the-client), and [an id](#kept).\n\n" +
	"<a id=\"kept\"></a>\n"

// TestGoodTree: a tree whose links all resolve has no problem.
func TestGoodTree(t *testing.T) {
	root := writeTree(t, map[string]string{
		"README.md":     goodReadme,
		"LICENSE":       "licence\n",
		"docs/guide.md": goodGuide,
	})
	problems, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestBrokenTree: each kind of broken link, and each path outside the
// repository, is a problem naming its file and line.
func TestBrokenTree(t *testing.T) {
	tests := []struct {
		name, file, text, want string
	}{
		{"missing file", "README.md", "[g](docs/gone.md)", "no such file docs/gone.md"},
		{"missing anchor", "README.md", "[g](docs/guide.md#nothing-here)", "has no heading with the anchor #nothing-here"},
		{"missing anchor here", "docs/guide.md", "[g](#set-it-up)", "has no heading with the anchor #set-it-up"},
		{"third heading", "docs/guide.md", "[g](#set-it-up-on-macos-2)", "anchor #set-it-up-on-macos-2"},
		{"anchor in a non-document", "README.md", "[l](LICENSE#top)", "not a Markdown document"},
		{"link out of the repository", "docs/guide.md", "[o](../../other/README.md)", "leads out of the repository"},
		{"path out of the repository", "README.md", "run `../perf/compare` first", `"../perf/compare", outside the repository`},
		{"path out in code", "docs/guide.md", "```\ncd ../../x\n```", `"../../x", outside the repository`},
		{"the shared folder", "docs/guide.md", "the harness in ../shared/perf", `"../shared", outside the repository`},
		{"/work/", "README.md", "    cd /work/main", `"/work/", outside the repository`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"README.md": goodReadme, "LICENSE": "licence\n", "docs/guide.md": goodGuide}
			files[tt.file] += "\nLast line:\n\n" + tt.text + "\n"
			root := writeTree(t, files)
			problems, err := Check(root)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) == 0 {
				t.Fatal("no problem found")
			}
			// Every problem is on the added line (a link out of the
			// repository is also a path outside it), and one says what
			// is wrong.
			lines := strings.Split(files[tt.file], "\n")
			said := false
			for _, p := range problems {
				if p.File != tt.file || p.Line < 1 || p.Line > len(lines) || !strings.Contains(strings.Join(lines[p.Line-1:], "\n"), strings.Split(tt.text, "\n")[0]) {
					t.Errorf("problem %v, want one on the added line of %s", p, tt.file)
				}
				said = said || strings.Contains(p.Text, tt.want)
			}
			if !said {
				t.Errorf("problems %v, want one that says %q", problems, tt.want)
			}
		})
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Where a thread's conversation is kept":        "where-a-threads-conversation-is-kept",
		"`session/request_permission` (to the client)": "sessionrequest_permission-to-the-client",
		"`$/cancel_request`":                           "cancel_request",
		"Permissions in a terminal (`spbridge run`)":   "permissions-in-a-terminal-spbridge-run",
		"Once spbridge is released: the shortest path": "once-spbridge-is-released-the-shortest-path",
		"Checking it: `audit verify`, `audit head`":    "checking-it-audit-verify-audit-head",
		"**Bold** and _emphasis_ and snake_case":       "bold-and-emphasis-and-snake_case",
		"Notification `_spbridge/item`":                "notification-_spbridgeitem",
		"A [link](https://example.com) in a heading":   "a-link-in-a-heading",
		"Format 1 and canonical JSON — in short":       "format-1-and-canonical-json--in-short",
		"Übersicht": "übersicht",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
