package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"spbridge/internal/fakeapi"
)

// TestE2EConformance runs the ACP v1 conformance requirements (the
// protocol's conformance kit's list, testdata/acp-conformance) against
// spbridge serve with the real claude and codex, and asserts the
// CONFORMANT verdict, with the requirements the kit once failed passing:
// load and resume of a session open on the connection, delete of an open,
// unknown or deleted session, and no update after a load's answer.
func TestE2EConformance(t *testing.T) {
	t.Parallel()
	for _, cli := range []string{"claude", "codex"} {
		t.Run(cli, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			var env []string
			if cli == "claude" {
				path := fakeapi.ClaudePath(t)
				srv, err := fakeapi.NewAnthropic(fakeapi.HoldReplies(8)...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Close)
				home := filepath.Join(root, "home")
				os.MkdirAll(filepath.Join(home, "tmp"), 0o700)
				env = append(srv.ClaudeEnv(home), "SPBRIDGE_CLAUDE="+path)
			} else {
				path := fakeapi.CodexPath(t)
				srv, err := fakeapi.NewOpenAI(fakeapi.HoldResponses(8)...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(srv.Close)
				env = append(srv.CodexEnv(t, root), "SPBRIDGE_CODEX="+path)
			}
			env = append(env, "SPBRIDGE_STATE_DIR="+filepath.Join(root, "state"))
			report := runConformance(t, env, spbridgeBin(t), "serve", "--backend", cli)

			if !report.Verdict.Conformant {
				t.Errorf("verdict: %s", report.Verdict.Verdict)
			}
			status := map[string]string{}
			for _, r := range report.Requirements {
				status[r.ID] = r.Status
				if r.Status == "FAIL" {
					t.Errorf("%s (%s) FAIL: %s", r.ID, r.Tier, r.Message)
				}
			}
			for _, id := range []string{"ACP-SCHEMA-001", "ACP-CANCEL-001", "ACP-CANCEL-002", "ACP-LOAD-001", "ACP-LOAD-002", "ACP-LOAD-003",
				"ACP-RESUME-001", "ACP-RESUME-002", "ACP-DELETE-001", "ACP-DELETE-002", "ACP-CLOSE-002"} {
				if status[id] != "PASS" {
					t.Errorf("%s: %s, want PASS", id, status[id])
				}
			}
			for _, f := range report.Failures {
				t.Logf("failed test %s: %s\n%s\nstderr:\n%s", f.Test, f.Message, strings.Join(f.Transcript, "\n"), f.Stderr)
			}
		})
	}
}

// conformanceReport is what testdata/acp-conformance/conformance.mjs
// writes with --report-json.
type conformanceReport struct {
	Requirements []struct {
		ID      string `json:"id"`
		Tier    string `json:"tier"`
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"requirements"`
	Failures []struct {
		Test       string   `json:"test"`
		Message    string   `json:"message"`
		Transcript []string `json:"transcript"`
		Stderr     string   `json:"stderr"`
	} `json:"failures"`
	Verdict struct {
		Conformant bool   `json:"conformant"`
		Verdict    string `json:"verdict"`
	} `json:"verdict"`
}

// runConformance runs the conformance runner against the agent command
// with env as the agent's environment and returns its report. Without the
// ACP SDK the test is skipped, or fails under CI.
func runConformance(t *testing.T, env []string, agent ...string) conformanceReport {
	t.Helper()
	root, err := fakeapi.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	sdk := filepath.Join(root, ".tools", "npm", "node_modules", "@agentclientprotocol", "sdk")
	if _, err := os.Stat(sdk); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the ACP SDK is not installed: %v", err)
		}
		t.Skipf("the ACP SDK is not installed (run bash scripts/install-clis): %v", err)
	}
	file := filepath.Join(t.TempDir(), "report.json")
	args := []string{filepath.Join(root, "testdata", "acp-conformance", "conformance.mjs"),
		"--cancel-prompt", fakeapi.HoldText, "--report-json", file}
	for _, kv := range env {
		args = append(args, "--agent-env", kv)
	}
	cmd := exec.Command("node", append(append(args, "--"), agent...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the conformance run wrote no report (%v): %v\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.String(), stderr.String())
	}
	var report conformanceReport
	if err := json.Unmarshal(data, &report); err != nil {
		t.Fatalf("the report: %v", err)
	}
	t.Logf("%s", stdout.String())
	return report
}
