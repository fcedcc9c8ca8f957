#!/usr/bin/env bash
# Runs each permission fuzz target for FUZZ_SECONDS (default 30) and fails on any crash,
# panic, timeout or out-of-memory. Needs cargo-fuzz (`cargo install cargo-fuzz`).
# Only a stable toolchain is available, so nightly features are unlocked with
# RUSTC_BOOTSTRAP=1 and sanitizers are off (`-s none`): libFuzzer still finds panics,
# overflows and hangs.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${FUZZ_SECONDS:-30}"
for target in pattern policy; do
    echo "fuzzing $target for ${seconds}s"
    RUSTC_BOOTSTRAP=1 cargo fuzz run -s none "$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096
done
echo "fuzz: all targets ran ${seconds}s without a failure"
