# The test command the README gives and .ci/run runs.
.PHONY: test test-plugin test-chaos
test:
	go test -race -count=1 -timeout 30m ./...
	$(MAKE) test-plugin
	$(MAKE) test-chaos

# The OpenClaw plugin's tests (Node >= 22, its package.json engines, and npm) against a real `clawmem up` built from this tree; npm's
# cache stays inside the repository.
test-plugin:
	cd integrations/openclaw && export npm_config_cache="$(CURDIR)/integrations/.cache/npm" npm_config_update_notifier=false && \
		npm ci --no-audit --no-fund && npm test

# The fault harness's short profile (issue 19): kill loop, provider faults, hostile input and a 60 s soak against
# real `clawmem up` processes built from this tree; about 3 minutes.
test-chaos:
	go run ./cmd/clawmem chaos --quick
