# ctxlab: the two set-up commands are `make run` and `make test`.
CARGO ?= cargo
LAB = $(CARGO) run --quiet --release --bin lab --

.PHONY: calibration ci bench-build run build test lint fmt bench readme schemas memtools exec-examples reports reports-check selftest replay

## build: the release binary, with cargo's progress (the first build takes a while)
build:
	$(CARGO) build --release --locked --bin lab

## run: every experiment of the registry, then the self-check of their expectations
run: build
	$(LAB) break all
	$(LAB) selftest

## test: the whole test suite (snapshots are compared, never rewritten)
test:
	INSTA_UPDATE=no $(CARGO) test --workspace --all-targets --locked
	$(CARGO) test --workspace --doc --locked

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps --locked --quiet

fmt:
	$(CARGO) fmt --all

## bench: speed figures (see GUIDE.md "Benchmarks")
bench:
	$(CARGO) bench --locked --bench pipeline
	$(CARGO) bench --locked --bench import
	$(CARGO) bench --locked --bench corpus
	$(CARGO) bench --locked --bench exec
	$(CARGO) bench --locked --bench optimal
	$(CARGO) bench --locked --bench horizon
	$(CARGO) bench --locked --bench closed_loop
	sh scripts/bench_stream_memory.sh
	sh scripts/bench_build.sh

## bench-build: clean build time of the workspace's crates, and the rebuild after touching one zoo port (names the crates it rebuilt; fails if one below the zoo was)
bench-build:
	sh scripts/bench_stream_memory.sh
	sh scripts/bench_build.sh

## ci: what .ci/run runs once its tools are installed: lint, the tests, every scenario, the reports check, the self-check
ci: lint test
	$(LAB) run scenarios/*.json scenarios/hunt/*.json scenarios/memory/*.json > /dev/null
	$(LAB) reports --check reports/
	$(LAB) selftest

## schemas: regenerate lab/schemas/NAME.schema.json, the JSON Schemas of the JSON outputs, from the types
schemas:
	@for n in $$($(CARGO) run --quiet --bin lab -- schema); do \
	  n=$${n%,}; $(CARGO) run --quiet --bin lab -- schema $$n > lab/schemas/$$n.schema.json.tmp && mv lab/schemas/$$n.schema.json.tmp lab/schemas/$$n.schema.json; done

## readme: regenerate the experiment and policy tables of the guide (docs/src/experiments.md, docs/src/policy-table.md) from the registry and the policy list
readme:
	$(CARGO) run --quiet --bin lab -- readme --write docs/src/experiments.md
	$(CARGO) run --quiet --bin lab -- readme --write docs/src/policy-table.md

selftest:
	$(LAB) selftest

## exec-examples: install LangChain and the AI SDK at pinned versions (target/exec-examples) for the live external-policy examples and their tests; .ci/run calls it
exec-examples:
	sh scripts/exec_examples.sh

## memtools: install the third-party memory-tool implementations at pinned versions (target/memtools, needs PyPI) and record their lab memcheck cards in lab/course/memory/tool/recorded.json; never run by CI
memtools: build
	LAB=target/release/lab sh scripts/memtools.sh

## reports: regenerate reports/ (tables as Markdown, CSV, JSON, LaTeX; SVG plots; index.html, the HTML report of the frontier session) from the code
reports: build
	$(LAB) reports --out reports/

## reports-check: exit 1, naming the files, when the checked-in reports/ differ from what the code produces
reports-check:
	$(LAB) reports --check reports/

TRANSCRIPTS ?= ../shared/transcripts
## calibration: reports/closed_loop_calibration.{md,json}: at every real compaction of the shared transcripts, the product port's predicted re-fetches (closed loop) against what the agent used again (tests/replay/calibration.rs pins them)
calibration:
	@test -d $(TRANSCRIPTS) || { echo "no transcripts at $(TRANSCRIPTS): set TRANSCRIPTS=DIR" >&2; exit 2; }
	$(LAB) calibrate $(TRANSCRIPTS) --format markdown > reports/closed_loop_calibration.md
	$(LAB) calibrate $(TRANSCRIPTS) --format json > reports/closed_loop_calibration.json
# frozen.md: each design beside its frozen variant (projecting designs first, then rewriting ones)
FROZEN_POLICIES = anthropic-clear-tool-uses langchain-clear-tool-uses swe-agent-mask-5 openhands-observation-masking gemini-cli-mask claude-code-time-mc claude-code-api-mc codex-cli langchain-summarization aider-chat-summary openhands-llm-summarizing
# gate.md: each design beside its gated variant, per price sheet (SHEET/CACHE-MODEL)
GATE_POLICIES = $(FROZEN_POLICIES) course-main
GATE_SHEETS = claude-sonnet-4.5-5m/anthropic claude-sonnet-4.5-1h/anthropic1h gpt-5/openai gemini-2.5-pro/gemini
## replay: every real transcript under every profile and policy -> reports/replay/ (tables; products.md: every real compaction beside the product policy; frozen.md: each design beside frozen:P; gate.md: gated:P per price sheet; per file a context-size plot and a cumulative-dollars plot per policy)
replay:
	@test -d $(TRANSCRIPTS) || { echo "no transcripts at $(TRANSCRIPTS): set TRANSCRIPTS=DIR" >&2; exit 2; }
	mkdir -p reports/replay
	$(LAB) replay $(TRANSCRIPTS)/claude_code/* $(TRANSCRIPTS)/openai_format/* --format markdown > reports/replay/README.md
	$(LAB) replay $(TRANSCRIPTS)/claude_code/* $(TRANSCRIPTS)/openai_format/* --policy all --retention --cost --optimal --format markdown > reports/replay/policies.md
	$(LAB) replay $(TRANSCRIPTS)/claude_code/* --policy claude-code --tokens claude --format markdown > reports/replay/products.md
	{ echo; echo "## aider: its own \`> Tokens: N sent\` beside aider-chat-summary"; echo; \
	  $(LAB) replay $(TRANSCRIPTS)/aider/* --policy aider-chat-summary --format markdown; } >> reports/replay/products.md
	$(LAB) replay $(TRANSCRIPTS)/claude_code/* $(TRANSCRIPTS)/openai_format/* $(foreach p,$(FROZEN_POLICIES),--policy $(p) --policy frozen:$(p)) --retention --cost --format markdown > reports/replay/frozen.md
	{ echo "# The break-even gate per price sheet"; echo; \
	  for sc in $(GATE_SHEETS); do sheet=$${sc%%/*}; cache=$${sc##*/}; \
	    echo; echo "## $$sheet (cache model $$cache)"; echo; \
	    $(LAB) replay $(TRANSCRIPTS)/claude_code/* $(TRANSCRIPTS)/openai_format/* $(foreach p,$(GATE_POLICIES),--policy $(p) --policy gated:$(p)) --cost --sheet $$sheet --cache $$cache --format markdown || exit 1; \
	  done; } > reports/replay/gate.md
	for f in $(TRANSCRIPTS)/claude_code/* $(TRANSCRIPTS)/openai_format/*; do \
	  name=$$(basename "$$f" | sed 's/[^A-Za-z0-9._-]/_/g'); \
	  $(LAB) replay "$$f" --plot "reports/replay/$$name.svg" > /dev/null 2>&1 || exit 1; \
	  $(LAB) replay "$$f" --policy all --cost --plot "reports/replay/$$name.dollars.svg" > /dev/null 2>&1 || exit 1; \
	done
