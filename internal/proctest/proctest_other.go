//go:build !linux

package proctest

import "bytes"

func find(string, func([]byte) bool) ([]Proc, error) { return nil, ErrUnsupported }

func argv(raw []byte) []byte { return raw }

func splitNUL(b []byte) [][]byte { return bytes.Split(b, []byte{0}) }

func contains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }

func started(int) (string, bool) { return "", false }
