# ctxlab: the two set-up commands are `make run` and `make test`.
CARGO ?= cargo
LAB = $(CARGO) run --quiet --release --bin lab --

.PHONY: run test lint fmt bench readme reports reports-check selftest

## run: every experiment of the registry, then the self-check of their expectations
run:
	$(LAB) break all
	$(LAB) selftest

## test: the whole test suite (snapshots are compared, never rewritten)
test:
	INSTA_UPDATE=no $(CARGO) test --all-targets --locked

## lint: formatting and clippy, warnings are errors
lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

fmt:
	$(CARGO) fmt --all

## bench: speed figures (see README "Benchmarks")
bench:
	$(CARGO) bench --locked --bench pipeline

## readme: regenerate the experiment table in README.md from the registry
readme:
	$(CARGO) run --quiet --bin lab -- readme --write README.md

selftest:
	$(LAB) selftest

## reports: regenerate reports/ (tables as Markdown, CSV, JSON, LaTeX; an SVG plot) from the code
reports:
	$(LAB) reports --out reports/

## reports-check: exit 1, naming the files, when the checked-in reports/ differ from what the code produces
reports-check:
	$(LAB) reports --check reports/
