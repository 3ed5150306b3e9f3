#!/usr/bin/env bash
# Step 78's GPU call (any card): main's bench (.bundle/base) against step 78's (.bundle/s78, with step 77) on
# the three Jefferys rows, interleaved twice (bench/ab_compare.py), then the GPU suite and the 1000-case
# cuda gate of the three Jefferys rows on step 78's bundle. Each part's results are packed as it ends.
#   Bundles, made on the development machine: scripts/gpu-bundle (main's binaries: .bundle/base;
#   step 78's tree: .bundle/s78), packed as
#     tar cf - .bundle/base .bundle/s78 | xz -T2 --lzma2=preset=9e,dict=192MiB > .bundle/s78.tar.xz
#   On the GPU machine: bash bench/unlanded/step78-gpu-call.sh
set -u
O=$OUT  # the subshells below set OUT to their own folder
[ -d .bundle/s78 ] || xz -dc .bundle/s78.tar.xz | tar xf -
nvidia-smi -L > "$O/card.txt" 2>&1; cat "$O/card.txt"
F=jefferys
mkdir -p "$O/ab" "$O/tests"
( export BUNDLE=.bundle/s78 SKIP_TESTS=1 SKIP_GATE=1 SKIP_BENCH=1 OUT=$O/ab
  export AB1_FILTER=$F AB1_BUNDLE=.bundle/base AB2_FILTER=$F AB3_FILTER=$F AB3_BUNDLE=.bundle/base AB4_FILTER=$F
  bash scripts/gpu-session > "$O/ab/session.log" 2>&1
  R=$(mktemp -d); tar xzf "$O/ab/results.tgz" -C "$R"
  python3 bench/ab_compare.py --base "$R/ab1.json" "$R/ab3.json" --new "$R/ab2.json" "$R/ab4.json" > "$O/ab78.txt" 2>&1 )
cat "$O/ab78.txt"
( export BUNDLE=.bundle/s78 SKIP_BENCH=1 GATE_CASES=1000 OUT=$O/tests GATE_ARGS="--divergence jefferys_divergence,masked_jefferys_divergence,temperature_scaled_masked_jefferys_divergence"
  export GTEST_FILTER="-GpuPlans.Streamed*:GpuPlans.DeferredForward*:GpuLargeIndex.TvdProb*"
  bash scripts/gpu-session > "$O/tests/session.log" 2>&1 )
cat "$O/tests/summary.txt"; tail -4 "$O/tests/session.log"
grep -h "\[ tame \]" "$O"/tests/*.log 2>/dev/null; R=$(mktemp -d); tar xzf "$O/tests/results.tgz" -C "$R"; grep -h "\[ tame \]" "$R"/gpu_tests.shard-*.log
grep -A5 "^divergence  " "$R/gate.log"
