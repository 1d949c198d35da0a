# The test command the README gives and .ci/run runs.
.PHONY: test
test:
	go test -race -count=1 ./...
