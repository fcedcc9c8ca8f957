#!/usr/bin/env bash
# Runs each permission fuzz target for FUZZ_RUNS inputs (default 600000, about 30-40 s)
# from the fixed seed FUZZ_SEED (default 1), at most FUZZ_SECONDS (default 120), and
# fails on any crash, panic, timeout or out-of-memory. The fixed seed makes a CI run
# repeatable: the same inputs every time, so a failure is a change's, not luck's. Explore
# further with another seed or more runs. Needs cargo-fuzz (`cargo install cargo-fuzz`).
# Only a stable toolchain is available, so nightly features are unlocked with
# RUSTC_BOOTSTRAP=1 and sanitizers are off (`-s none`): libFuzzer still finds panics,
# overflows and hangs. libFuzzer's progress lines go to fuzz/target/<target>.log; the log's
# tail is printed when a target fails.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${FUZZ_SECONDS:-120}"
runs="${FUZZ_RUNS:-600000}"
seed="${FUZZ_SEED:-1}"
mkdir -p target
for target in pattern policy; do
    log="target/$target.log"
    echo "fuzzing $target: $runs inputs from seed $seed, at most ${seconds}s (log: fuzz/$log)"
    if ! RUSTC_BOOTSTRAP=1 cargo fuzz run -s none "$target" -- \
        -seed="$seed" -runs="$runs" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=4096 >"$log" 2>&1; then
        tail -n 60 "$log"
        echo "fuzz: $target failed (crash input under fuzz/artifacts/$target/)"
        exit 1
    fi
    grep -E '^Done [0-9]+ runs' "$log" || true
done
echo "fuzz: no target failed (from seed $seed; each ran the count on its Done line above, at most $runs)"

# The generative differential fuzzer: commands built from shell grammar pieces run under
# bash and dash (and zsh and fish for plain text) in the differential test's sandbox,
# PERMFUZZ_COUNT commands (default 15000, about 80-300 s) from the fixed seed PERMFUZZ_SEED
# (default 1): a count, not a time, so every machine runs the same commands. Fails on any
# program that ran but is not named by the command's pattern, or a write not reported.
cd ..
fuzz_count="${PERMFUZZ_COUNT:-15000}"
fuzz_seed="${PERMFUZZ_SEED:-1}"
echo "differential fuzzing: $fuzz_count commands from seed $fuzz_seed"
log=target/permfuzz.log
mkdir -p target
if ! PERMFUZZ_COUNT="$fuzz_count" PERMFUZZ_SEED="$fuzz_seed" cargo test --all-features \
    --test permission_differential generated_commands_run_only_what_the_pattern_names -- --nocapture \
    >"$log" 2>&1; then
    tail -n 80 "$log"
    echo "differential fuzzing found commands that run programs their pattern does not name (see above)"
    exit 1
fi
grep -E '^seed ' "$log" || true
