#!/usr/bin/env bash
# Fuzzes the parsers that read bytes from the network (Sources/FuzzTargets) with libFuzzer.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Builds the `fuzz` executable with -sanitize=fuzzer,address (in .build-fuzz), then runs each target (all of
# them when none is named) for SECONDS (default 60) each, one after the other; FUZZ_PARALLEL=1 runs them all at
# once, niced. Each run starts from the seed corpus (Tests/Fuzz/Corpus/<target>) and the regression inputs
# (Tests/Fuzz/Regressions/<target>); the inputs it finds go to .build-fuzz/fuzz-out/corpus/<target>, never into
# the repository. Memory is bounded (-rss_limit_mb, -malloc_limit_mb) and so is the time per input (-timeout).
# A crash, a leak, a timeout, an out-of-memory or a property that fails stops that target, saves the input
# under .build-fuzz/fuzz-out/artifacts/<target>/, and makes the script fail. Logs: .build-fuzz/fuzz-out/logs.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
[[ $# -gt 0 ]] && shift
scratch=${FUZZ_SCRATCH:-.build-fuzz}
out=${FUZZ_OUT:-$scratch/fuzz-out}
rss_limit_mb=${FUZZ_RSS_LIMIT_MB:-2048}
malloc_limit_mb=${FUZZ_MALLOC_LIMIT_MB:-1024}
timeout_per_input=${FUZZ_TIMEOUT:-25}

# SwiftPM links the executable's top-level code as `main` (libFuzzer's is not used): the code starts
# libFuzzer's driver, which it finds through the dynamic symbol table, hence --export-dynamic.
# FUZZ_BINARY: a fuzz build to run as it is (a copy, say, for a long campaign while the tree is rebuilt).
binary=${FUZZ_BINARY:-}
if [[ -z $binary ]]; then
    swift build -c release --product fuzz --scratch-path "$scratch" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xlinker --export-dynamic >&2
    binary=$scratch/release/fuzz
fi

# Swift's backtracer would take the crash signals from libFuzzer and AddressSanitizer.
export SWIFT_BACKTRACE=enable=no
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}

declare -A max_length
while read -r name length; do max_length[$name]=$length; done < <("$binary" --list)
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    while read -r name _; do targets+=("$name"); done < <("$binary" --list)
fi
for target in "${targets[@]}"; do
    [[ -n ${max_length[$target]:-} ]] || { echo "fuzz.sh: no target '$target' (targets: ${!max_length[*]})" >&2; exit 2; }
done

run_target() {
    local target=$1
    mkdir -p "$out/corpus/$target" "$out/artifacts/$target" "$out/logs"
    local seeds=()
    for dir in "Tests/Fuzz/Corpus/$target" "Tests/Fuzz/Regressions/$target"; do
        [[ -d $dir ]] && seeds+=("$dir")
    done
    "$binary" --target "$target" \
        -max_total_time="$seconds" -max_len="${max_length[$target]}" -timeout="$timeout_per_input" \
        -rss_limit_mb="$rss_limit_mb" -malloc_limit_mb="$malloc_limit_mb" \
        -artifact_prefix="$out/artifacts/$target/" -print_final_stats=1 \
        "$out/corpus/$target" "${seeds[@]}" > "$out/logs/$target.log" 2>&1
}

summary() {
    local target=$1 status=$2 log=$out/logs/$1.log
    local execs cov
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | grep -o '[0-9]*$' || true)
    cov=$(grep -oE '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED).*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1 \
          | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
    printf '%-24s %-6s execs %-10s %s  corpus %s\n' "$target" "$status" "${execs:-?}" "${cov:-}" \
        "$(ls "$out/corpus/$target" | wc -l)"
}

failed=0
declare -A pids status
if [[ ${FUZZ_PARALLEL:-0} == 1 ]]; then
    for target in "${targets[@]}"; do
        run_target "$target" &
        pids[$target]=$!
        renice -n 10 -p "${pids[$target]}" > /dev/null || true
    done
    for target in "${targets[@]}"; do
        if wait "${pids[$target]}"; then status[$target]=ok; else status[$target]=FAILED; failed=1; fi
    done
else
    for target in "${targets[@]}"; do
        if run_target "$target"; then status[$target]=ok; else status[$target]=FAILED; failed=1; fi
    done
fi

for target in "${targets[@]}"; do
    summary "$target" "${status[$target]}"
    if [[ ${status[$target]} != ok ]]; then
        grep -E 'ERROR|property failed|SUMMARY|Test unit written' "$out/logs/$target.log" | head -5 | sed 's/^/    /'
    fi
done
if [[ $failed != 0 ]]; then
    echo "fuzz.sh: a target failed; its input is under $out/artifacts/<target>/. Replay it with" \
         "'swift run fuzz <target> <file>', add it to Tests/Fuzz/Regressions/<target>/ (see docs/hostile-clients.md)." >&2
    exit 1
fi
