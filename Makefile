# Builds the bundled plugins and the test guests from source, and runs the tests.
# Needs: Go, and for C/WAT guests clang-14, lld-14, wasi-libc, libclang-rt-14-dev-wasm32, wabt
# (Debian packages; .ci/run installs them).

GO_WASM   = GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags=-buildid=
# A 32 KiB stack (clang: 64 KiB) fits a C guest in one 64 KiB page: a fresh instance
# costs half the memory and time to create.
C_WASM    = clang-14 --target=wasm32-wasi --sysroot=/usr -O2 -Wall -Wextra -mexec-model=reactor -Wl,--strip-all -Wl,-z,stack-size=32768 -Isdk-guest/c

GO_PLUGINS = plugins/toolbox/toolbox.wasm plugins/web/web.wasm plugins/jobs/jobs.wasm plugins/longrun/longrun.wasm conformance/fixture/fixture.wasm conformance/taskfix/taskfix.wasm conformance/fix2026/fix2026.wasm testdata/wasm/stateful.wasm testdata/wasm/memhog.wasm testdata/wasm/escape.wasm testdata/wasm/fetcher.wasm
C_PLUGINS  = plugins/textkit/textkit.wasm testdata/wasm/asker.wasm testdata/wasm/library.wasm testdata/wasm/cfetch.wasm testdata/wasm/journal.wasm testdata/wasm/isolation.wasm
WAT        = $(patsubst testdata/wat/%.wat,testdata/wasm/%.wasm,$(wildcard testdata/wat/*.wat))
ALL_WASM   = $(GO_PLUGINS) $(C_PLUGINS) $(WAT) testdata/wasm/truncated.wasm

.PHONY: plugins pins test check-wasm interop-deps conformance-deps conformance bench bench-smoke FORCE

# plugins rebuilds every .wasm in the repository from its source and re-pins the
# bundled ones in config.toml.
plugins: $(ALL_WASM) pins

# pins rewrites the sha256 pins of config.toml and conformance/config.toml to the
# files built here.
pins: $(GO_PLUGINS) $(C_PLUGINS)
	scripts/pin.sh config.toml
	scripts/pin.sh conformance/config.toml

plugins/toolbox/toolbox.wasm: FORCE
	$(GO_WASM) -o $@ ./plugins/toolbox
plugins/web/web.wasm: FORCE
	$(GO_WASM) -o $@ ./plugins/web
plugins/jobs/jobs.wasm: FORCE
	$(GO_WASM) -o $@ ./plugins/jobs
plugins/longrun/longrun.wasm: FORCE
	$(GO_WASM) -o $@ ./plugins/longrun
conformance/fixture/fixture.wasm: FORCE
	$(GO_WASM) -o $@ ./conformance/fixture
conformance/taskfix/taskfix.wasm: FORCE
	$(GO_WASM) -o $@ ./conformance/taskfix
conformance/fix2026/fix2026.wasm: FORCE
	$(GO_WASM) -o $@ ./conformance/fix2026
testdata/wasm/%.wasm: testdata/guests/%/main.go FORCE
	$(GO_WASM) -o $@ ./testdata/guests/$*
plugins/textkit/textkit.wasm: plugins/textkit/textkit.c sdk-guest/c/mcpwh.h Makefile
	$(C_WASM) -o $@ plugins/textkit/textkit.c
testdata/wasm/asker.wasm: testdata/c/asker.c sdk-guest/c/mcpwh.h Makefile
	$(C_WASM) -o $@ testdata/c/asker.c
testdata/wasm/library.wasm: testdata/c/library.c sdk-guest/c/mcpwh.h Makefile
	$(C_WASM) -o $@ testdata/c/library.c
testdata/wasm/cfetch.wasm: testdata/c/cfetch.c sdk-guest/c/mcpwh.h Makefile
	$(C_WASM) -o $@ testdata/c/cfetch.c
testdata/wasm/journal.wasm: testdata/c/journal.c sdk-guest/c/mcpwh.h Makefile
	$(C_WASM) -o $@ testdata/c/journal.c
testdata/wasm/isolation.wasm: testdata/c/isolation.c sdk-guest/c/mcpwh.h Makefile
	$(C_WASM) -o $@ testdata/c/isolation.c
testdata/wasm/%.wasm: testdata/wat/%.wat
	wat2wasm $< -o $@
testdata/wasm/truncated.wasm: testdata/wasm/loop.wasm
	head -c 20 $< > $@

# check-wasm fails if a committed .wasm differs from what its source builds.
check-wasm:
	rm -f $(ALL_WASM)
	$(MAKE) plugins
	git diff --exit-code --stat -- '*.wasm' config.toml conformance/config.toml
	@test -z "$$(git status --porcelain -- '*.wasm')" || { git status --porcelain -- '*.wasm'; exit 1; }

interop-deps:
	cd interop && npm ci --no-audit --no-fund
	cd conformance/alpha && npm ci --no-audit --no-fund

conformance-deps:
	cd conformance && npm ci --no-audit --no-fund

# conformance runs the official MCP conformance suite against the real binary over
# HTTP: every server scenario of @modelcontextprotocol/conformance 0.1.16, then of the
# draft 0.2.0-alpha.12 everything MCP 2026-07-28 requires (--requirements 2026-07-28)
# and the task scenarios (tasks-*) on both wires.
conformance: conformance-deps interop-deps
	conformance/run.sh
	conformance/alpha/run.sh

# test runs every test: Go (with the race detector, and the worker memory tests without it), the third-party client interop
# tests and the official conformance suites.
test: interop-deps conformance-deps
	go test -race -count=1 ./...
	# sdk-guest is its own module (no dependencies), outside ./... of this one.
	cd sdk-guest && go vet ./... && go test -race -count=1 ./...
	# The worker memory tests measure RSS and address-space limits, which the race
	# detector's shadow memory distorts: they skip under -race and run here without it.
	go test -count=1 -run 'TestWorkerOutOfMemory|TestMemoryReturnsAfterBurst|TestCallsBeyondThePlanFailAlone' ./worker
	cd interop && node --test --test-concurrency=1
	conformance/run.sh
	conformance/alpha/run.sh

# bench runs every benchmark figure against the real binaries and the native peers
# (bench/peers) and writes docs/BENCHMARKS.md (about 25 minutes on 2 cores).
bench:
	go run ./bench/cmd/benchall -out docs/BENCHMARKS.md

# bench-smoke runs each figure briefly: it fails if any harness step fails and asserts
# nothing about time (CI). The report goes to bench/out/, which git ignores.
bench-smoke:
	go run ./bench/cmd/benchall -smoke -out bench/out/BENCHMARKS-smoke.md
