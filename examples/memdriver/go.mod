module github.com/syncstore/syncstore/examples/memdriver

go 1.26.0

require github.com/syncstore/syncstore v0.0.0

require (
	github.com/cenkalti/backoff/v5 v5.0.3 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/syncstore/syncstore => ../..
