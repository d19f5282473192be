package history

// munge is the name Claude Code gives the folder of a working folder's
// sessions under its projects/: every character that is not an ASCII
// letter or digit becomes "-".
func munge(dir string) string {
	b := []byte(dir)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}
