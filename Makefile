# The test command the README gives and .ci/run runs.
.PHONY: test test-plugin test-mem0 test-chaos
test:
	go test -race -count=1 -timeout 30m ./...
	$(MAKE) test-plugin
	$(MAKE) test-mem0
	$(MAKE) test-chaos

# The OpenClaw plugin's tests (Node >= 22, its package.json engines, and npm) against a real `clawmem up` built from this tree; npm's
# cache stays inside the repository.
test-plugin:
	cd integrations/openclaw && export npm_config_cache="$(CURDIR)/integrations/.cache/npm" npm_config_update_notifier=false && \
		npm ci --no-audit --no-fund && npm test

# mem0's own npm client (mem0ai, pinned in integrations/mem0/package-lock.json), unmodified, against a real
# `clawmem up` built from this tree, and the README's mem0 examples. Offline once the cache holds the packages;
# install scripts are skipped (the client needs none: only mem0's self-hosted mode uses native modules).
test-mem0:
	cd integrations/mem0 && export npm_config_cache="$(CURDIR)/integrations/.cache/npm" npm_config_update_notifier=false && \
		npm ci --no-audit --no-fund --ignore-scripts --prefer-offline && npm test

# The fault harness's short profile (issue 19): kill loop, provider faults, hostile input and a 60 s soak against
# real `clawmem up` processes built from this tree; about 3 minutes.
test-chaos:
	go run ./cmd/clawmem chaos --quick
