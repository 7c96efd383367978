#!/bin/sh
# Build-time bench: a clean release build of the `lab` binary, then the
# rebuild after touching one zoo port, naming every crate the rebuild
# compiled. Only `ctxlab-zoo` and `ctxlab` (the binary crate) may appear:
# the measures and everything below them do not depend on the ports
# (ARCHITECTURE.md). Run by `make bench-build`; uses its own target
# directory so it never disturbs the working one.
set -eu
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
dir=$(mktemp -d "${TMPDIR:-/tmp}/ctxlab-bench-build.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
export CARGO_TARGET_DIR="$dir/target"
port=lab/zoo/goose.rs

now() { date +%s.%N; }

# Dependencies first, so the clean figure is the workspace's own crates.
$CARGO build --release --locked --bin lab -p ctxlab-core >/dev/null 2>&1 || true
$CARGO clean --release -p ctxlab-core -p ctxlab-import -p ctxlab-course -p ctxlab-policy \
    -p ctxlab-zoo -p ctxlab-measure -p ctxlab >/dev/null 2>&1
t0=$(now)
$CARGO build --release --locked --bin lab 2>"$dir/clean.log"
t1=$(now)

cp "$port" "$dir/port.rs"
restore() { cp "$dir/port.rs" "$port"; rm -rf "$dir"; }
trap restore EXIT INT TERM
printf '\n// bench_build: touched\n' >>"$port"
t2=$(now)
$CARGO build --release --locked --bin lab 2>"$dir/touch.log"
t3=$(now)
cp "$dir/port.rs" "$port"

rebuilt=$(sed -n 's/^ *Compiling \([a-z0-9_-]*\) .*/\1/p' "$dir/touch.log" | sort | tr '\n' ' ')
secs() { awk "BEGIN { printf \"%.1f\", $2 - $1 }"; }
echo "clean build of the workspace crates (release, deps cached): $(secs "$t0" "$t1") s"
echo "rebuild after touching $port: $(secs "$t2" "$t3") s"
printf 'crates rebuilt: %s\n' "$rebuilt"
case " $rebuilt" in
*ctxlab-core* | *ctxlab-import* | *ctxlab-course* | *ctxlab-policy* | *ctxlab-measure*)
    echo "FAIL: a crate below the zoo was rebuilt" >&2
    exit 1
    ;;
esac
