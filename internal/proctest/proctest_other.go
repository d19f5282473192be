//go:build !linux

package proctest

import "bytes"

func find(func(env, argv []byte) bool) ([]Proc, error) { return nil, ErrUnsupported }

func splitNUL(b []byte) [][]byte { return bytes.Split(b, []byte{0}) }

func contains(b []byte, s string) bool { return bytes.Contains(b, []byte(s)) }
