# The test command the README gives and .ci/run runs.
.PHONY: test test-plugin
test:
	go test -race -count=1 ./...
	$(MAKE) test-plugin

# The OpenClaw plugin's tests (Node >= 20 and npm) against a real `clawmem up` built from this tree; npm's
# cache stays inside the repository.
test-plugin:
	cd integrations/openclaw && export npm_config_cache="$(CURDIR)/integrations/.cache/npm" npm_config_update_notifier=false && \
		npm ci --no-audit --no-fund && npm test
