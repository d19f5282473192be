package fakeapi

import "bytes"

// HoldText is the prompt text whose turn does not end by itself: a turn
// request carrying it takes a reply of HoldReplies or HoldResponses, which
// streams its first words and then holds until the CLI goes away (a
// cancel) or the server closes. Conformance runs send it as their
// cancellation prompt.
const HoldText = "spbridge-fakeapi-hold-until-cancelled"

// holding reports whether a request body is a turn of a conversation whose
// text carries HoldText: a model call that offers tools, as the CLIs' turn
// requests do and their side requests (titles, checks) do not.
func holding(body []byte) bool {
	return bytes.Contains(body, []byte(HoldText)) && bytes.Contains(body, []byte(`"tools"`))
}

// HoldReplies are n Anthropic replies for turns that carry HoldText, each
// held after its first words (Reply.Hold) until the client goes away.
func HoldReplies(n int) []Reply {
	never := make(chan struct{})
	out := make([]Reply, n)
	for i := range out {
		out[i] = Reply{Blocks: []Block{{Text: "Working on it, slowly"}}, Hold: never, Match: holding}
	}
	return out
}

// HoldResponses are n Responses API replies for turns that carry
// HoldText, each held after its first delta (ResponsesReply.Hold).
func HoldResponses(n int) []ResponsesReply {
	out := make([]ResponsesReply, n)
	for i := range out {
		out[i] = ResponsesReply{Items: []OutputItem{MessageItem("Working on it, slowly")}, Hold: true, Match: holding}
	}
	return out
}
