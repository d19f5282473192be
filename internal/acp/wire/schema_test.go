package wire

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// capabilityPaths lists the dotted paths of the client capabilities t
// reads (its json names, down to each leaf).
func capabilityPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		path := prefix + name
		if f.Type.Kind() == reflect.Struct {
			out = append(out, capabilityPaths(f.Type, path+".")...)
		} else {
			out = append(out, path)
		}
	}
	return out
}

// inSchema reports whether the ACP JSON schema (its $defs) defines the
// client capability at path, from ClientCapabilities down.
func inSchema(defs map[string]any, path string) bool {
	def, _ := defs["ClientCapabilities"].(map[string]any)
	for _, name := range strings.Split(path, ".") {
		props, _ := def["properties"].(map[string]any)
		prop, ok := props[name].(map[string]any)
		if !ok {
			return false
		}
		def = resolve(defs, prop)
	}
	return true
}

// resolve follows a property's $ref, or the first $ref among its anyOf,
// oneOf or allOf (an optional capability is anyOf [$ref, null]).
func resolve(defs map[string]any, prop map[string]any) map[string]any {
	if ref, ok := prop["$ref"].(string); ok {
		d, _ := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		return d
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		list, _ := prop[k].([]any)
		for _, alt := range list {
			if m, ok := alt.(map[string]any); ok && m["$ref"] != nil {
				return resolve(defs, m)
			}
		}
	}
	return prop
}

// TestCapabilitiesInSchema: every client capability spbridge reads is one
// the newest ACP schema defines (the official TypeScript library's
// schema/v1, stable or unstable part), or an extension under _meta.
func TestCapabilitiesInSchema(t *testing.T) {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.mod above the test")
		}
		dir = filepath.Dir(dir)
	}
	schemas := filepath.Join(dir, ".tools", "npm", "node_modules", "@agentclientprotocol", "sdk", "schema", "v1")
	var parts []map[string]any
	for _, name := range []string{"schema.json", "schema.unstable.json"} {
		data, err := os.ReadFile(filepath.Join(schemas, name))
		if err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("the ACP schema: %v", err)
			}
			t.Skipf("the ACP schema is not installed (run bash scripts/install-clis): %v", err)
		}
		var s struct {
			Defs map[string]any `json:"$defs"`
		}
		if err := json.Unmarshal(data, &s); err != nil || s.Defs["ClientCapabilities"] == nil {
			t.Fatalf("%s: %v", name, err)
		}
		parts = append(parts, s.Defs)
	}
	paths := capabilityPaths(reflect.TypeFor[Capabilities](), "")
	if len(paths) < 7 {
		t.Fatalf("read %v", paths)
	}
	for _, p := range paths {
		if strings.HasPrefix(p, "_meta.") {
			continue // an extension, where the protocol puts them
		}
		if !inSchema(parts[0], p) && !inSchema(parts[1], p) {
			t.Errorf("clientCapabilities.%s is not in the ACP schema (stable or unstable): move it under _meta", p)
		}
	}
	// The check tells a capability the schema lacks.
	for _, p := range []string{"session.bogus", "auth.terminal.more", "steering"} {
		if inSchema(parts[0], p) || inSchema(parts[1], p) {
			t.Errorf("%s passes as defined", p)
		}
	}
}
