module spbridge

go 1.26.0

require (
	github.com/rogpeppe/go-internal v1.16.0
	github.com/spf13/pflag v1.1.0
	golang.org/x/sys v0.50.0
)

require golang.org/x/tools v0.26.0 // indirect
