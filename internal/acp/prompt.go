package acp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"spbridge/internal/backend"
	"spbridge/internal/itemmap"
	"spbridge/internal/jsonrpc"
	"spbridge/internal/session"
)

// This file holds a prompt: its content read (text, links, embedded
// resources, images), handed to the conversation, and how its turn ends
// in ACP's words.

// promptOf reads the prompt of a session/prompt or _spbridge/queue
// (promptContent).
func promptOf(j *job) (string, []backend.Image, error) {
	var p struct {
		Prompt json.RawMessage `json:"prompt"`
	}
	if err := jsonrpc.DecodeParams(j.m.Params, &p); err != nil {
		return "", nil, err
	}
	return promptContent(p.Prompt)
}

// promptContent reads an ACP prompt: its text blocks, links and embedded
// resources joined by newlines, and its images. A link is `[name](uri)`;
// an embedded text resource (a file the editor attached, perhaps unsaved)
// is its link followed by `<context ref="uri">` and the text, so the model
// knows where the text comes from; an embedded image is an image, any
// other binary resource its link alone.
func promptContent(raw json.RawMessage) (string, []backend.Image, error) {
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

// CodeNotStarted is the error of a prompt whose turn never started (the
// CLI missing, its folder missing, the CLI failing before it took the
// message): the conversation was left as it was.
const CodeNotStarted = -32003

func (ss *acpSession) prompt(j *job) (any, error) {
	text, images, err := promptOf(j)
	if err != nil {
		return nil, err
	}
	if j.ctx.Err() != nil {
		return cancelledResponse(), nil
	}
	if name := ownCommand(text); name != "" && len(images) == 0 {
		return ss.runOwnCommand(j, name)
	}
	if _, err := ss.submit(session.Request{Text: text, Images: images, Ctx: j.ctx, Tag: j}, false); err != nil {
		if errors.Is(err, session.ErrCancelled) {
			return cancelledResponse(), nil
		}
		return nil, err
	}
	return answeredLater{}, nil
}

// submit hands a prompt (or, with queue, a message the user queued) to
// the conversation: it starts a turn, or waits behind the running one
// (queued). The session's worker calls it: what came after the prompt
// waits until it is started or queued.
func (ss *acpSession) submit(r session.Request, queue bool) (queued bool, err error) {
	conv, err := ss.live()
	if err != nil {
		return false, err
	}
	stopping := ss.work.stopped()
	if !stopping {
		if queue {
			queued, err = conv.Queue(turns{ss}, r)
		} else {
			queued, err = conv.Prompt(turns{ss}, r)
		}
	}
	if stopping || errors.Is(err, session.ErrClosed) {
		return false, jsonrpc.Errorf(CodeNotFound, "session %q is closing", ss.id)
	}
	return queued, err
}

// cancelledResponse answers a prompt cancelled before its turn began.
func cancelledResponse() map[string]any {
	return map[string]any{"stopReason": "cancelled", "_meta": map[string]any{"spbridge": map[string]any{"status": itemmap.TurnInterrupted}}}
}

// stopResponse maps how a turn ended to ACP: a failed turn has no stop
// reason of its own, so it ends its turn with the exact state in _meta (the
// failure item itself went out as _spbridge/item). A turn the client
// cancelled is cancelled, however the CLI ended it, as ACP asks of an
// agent told session/cancel: also when the CLI finished the reply before
// it heard the interrupt (what it said is kept; _meta says it completed).
// The turn's tokens go in usage (promptUsage).
func stopResponse(end *itemmap.TurnEnd, cancelled bool) map[string]any {
	reason := "end_turn"
	if end.Status == itemmap.TurnInterrupted || cancelled {
		reason = "cancelled"
	}
	r := map[string]any{"stopReason": reason, "_meta": map[string]any{"spbridge": map[string]any{"status": end.Status}}}
	if u := promptUsage(end.Usage); u != nil {
		r["usage"] = u
	}
	return r
}

func (ss *acpSession) queueMessage(j *job) (any, error) {
	text, images, err := promptOf(j)
	if err != nil {
		return nil, err
	}
	queued, err := ss.submit(session.Request{Text: text, Images: images}, true)
	if err != nil {
		return nil, err
	}
	if queued {
		return map[string]any{"queued": true}, nil
	}
	// Nothing ran: the message is the next turn now.
	return map[string]any{"queued": false}, nil
}
