package statedir

// defaultDir is ~/Library/Application Support/spbridge.
func defaultDir() (string, error) {
	return homeJoin("Library", "Application Support", "spbridge")
}
