package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"spbridge/internal/backend"
	"spbridge/internal/jsonrpc"
)

// This file holds what a client's requests say, read into spbridge's
// values: a prompt's content, an open's MCP servers and additional
// folders. What is not understood is invalid params.

// Prompt reads an ACP prompt: its text blocks, links and embedded
// resources joined by newlines, and its images. A link is `[name](uri)`;
// an embedded text resource (a file the editor attached, perhaps unsaved)
// is its link followed by `<context ref="uri">` and the text, so the model
// knows where the text comes from; an embedded image is an image, any
// other binary resource its link alone.
func Prompt(raw json.RawMessage) (string, []backend.Image, error) {
	var blocks []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
		URI      string `json:"uri"`
		Name     string `json:"name"`
		Resource *struct {
			URI      string  `json:"uri"`
			Text     *string `json:"text"`
			Blob     string  `json:"blob"`
			MimeType string  `json:"mimeType"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: prompt: %v", err)
	}
	var texts []string
	var images []backend.Image
	for i, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image":
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: prompt[%d]: image data is not base64", i)
			}
			images = append(images, backend.Image{MimeType: b.MimeType, Data: data})
		case "resource_link":
			name := b.Name
			if name == "" {
				name = b.URI
			}
			texts = append(texts, fmt.Sprintf("[%s](%s)", name, b.URI))
		case "resource":
			r := b.Resource
			switch {
			case r == nil:
				return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: prompt[%d]: a resource block without its resource", i)
			case r.Text != nil:
				texts = append(texts, fmt.Sprintf("[%s](%s)\n<context ref=%q>\n%s\n</context>", resourceName(r.URI), r.URI, r.URI, *r.Text))
			case strings.HasPrefix(r.MimeType, "image/"):
				data, err := base64.StdEncoding.DecodeString(r.Blob)
				if err != nil {
					return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: prompt[%d]: the resource's blob is not base64", i)
				}
				images = append(images, backend.Image{MimeType: r.MimeType, Data: data})
			default:
				texts = append(texts, fmt.Sprintf("[%s](%s)", resourceName(r.URI), r.URI))
			}
		default:
			return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: prompt[%d]: %q content is not supported", i, b.Type)
		}
	}
	text := strings.Join(texts, "\n")
	if strings.TrimSpace(text) == "" && len(images) == 0 {
		return "", nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: the prompt is empty")
	}
	return text, images, nil
}

// resourceName is the name a link to uri shows: its last path element
// ("app.go" for file:///src/app.go), or uri itself.
func resourceName(uri string) string {
	name := uri
	if i := strings.LastIndexAny(strings.TrimRight(uri, "/"), "/"); i >= 0 && i < len(uri)-1 {
		name = strings.TrimRight(uri[i+1:], "/")
	}
	if name == "" {
		return uri
	}
	return name
}

// AddDirs checks a request's additionalDirectories: each an absolute
// path. They come back clean, each once, in their order.
func AddDirs(dirs []string) ([]string, error) {
	var out []string
	for i, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: additionalDirectories[%d] %q must be an absolute path", i, d)
		}
		if d = filepath.Clean(d); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// MCPServers reads ACP's mcpServers (stdio, http, sse) into the
// backends' neutral form. A missing or null list is none.
func MCPServers(raw json.RawMessage) ([]backend.MCPServer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []struct {
		Type    string                         `json:"type"`
		Name    string                         `json:"name"`
		Command string                         `json:"command"`
		Args    []string                       `json:"args"`
		Env     []struct{ Name, Value string } `json:"env"`
		URL     string                         `json:"url"`
		Headers []struct{ Name, Value string } `json:"headers"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: mcpServers: %v", err)
	}
	var out []backend.MCPServer
	for i, s := range list {
		if s.Name == "" {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: mcpServers[%d]: name is required", i)
		}
		m := backend.MCPServer{Name: s.Name}
		switch s.Type {
		case "", backend.MCPStdio:
			if s.Command == "" {
				return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: mcpServers[%d]: command is required", i)
			}
			m.Transport, m.Command, m.Args = backend.MCPStdio, s.Command, s.Args
			for _, e := range s.Env {
				m.Env = append(m.Env, backend.NameValue{Name: e.Name, Value: e.Value})
			}
		case backend.MCPHTTP, backend.MCPSSE:
			if s.URL == "" {
				return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: mcpServers[%d]: url is required", i)
			}
			m.Transport, m.URL = s.Type, s.URL
			for _, h := range s.Headers {
				m.Headers = append(m.Headers, backend.NameValue{Name: h.Name, Value: h.Value})
			}
		default:
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: mcpServers[%d]: unknown type %q", i, s.Type)
		}
		out = append(out, m)
	}
	return out, nil
}
