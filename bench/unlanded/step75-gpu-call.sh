#!/usr/bin/env bash
# Step 75's GPU call (any card): step 75's A/B (main's bench against step 75's, interleaved twice,
# total variation; every other kernel is the same SASS), then the GPU test suite without the
# streamed and deferred forward rows' plan tests and the 2^31-element tvd_prob test (the kernels
# step 75 does not touch; with the device's exhaustive check of math::FixedTermSum) and the
# 1000-case cuda gate of total variation on step 75's bundle.
#   Bundles, made on the development machine (the carry is .bundle/gpu7375.tar.xz):
#     git checkout main && BUILD_DIR=build/gpu-bundle JOBS=2 scripts/gpu-bundle .bundle/gpu73
#     git checkout -b step75-fixed-terms && git am bench/unlanded/step75-fixed-terms.patch &&
#       BUILD_DIR=build/gpu-bundle JOBS=2 scripts/gpu-bundle .bundle/gpu75
#     tar cf - .bundle/gpu73 .bundle/gpu75 | xz -T2 --lzma2=preset=9e,dict=192MiB > .bundle/gpu7375.tar.xz
set -u
O=$OUT
[ -d .bundle/gpu75 ] || xz -dc .bundle/gpu7375.tar.xz | tar xf -
nvidia-smi -L > "$O/card.txt" 2>&1; cat "$O/card.txt"
F=total_variation
mkdir -p "$O/ab" "$O/tests"
( export BUNDLE=.bundle/gpu75 SKIP_TESTS=1 SKIP_GATE=1 SKIP_BENCH=1 OUT=$O/ab
  export AB1_FILTER=$F AB1_BUNDLE=.bundle/gpu73 AB2_FILTER=$F AB3_FILTER=$F AB3_BUNDLE=.bundle/gpu73 AB4_FILTER=$F
  bash scripts/gpu-session > "$O/ab/session.log" 2>&1
  R=$(mktemp -d); tar xzf "$O/ab/results.tgz" -C "$R"
  python3 bench/ab_compare.py --base "$R/ab1.json" "$R/ab3.json" --new "$R/ab2.json" "$R/ab4.json" > "$O/ab75.txt" 2>&1 )
cat "$O/ab75.txt"
( export BUNDLE=.bundle/gpu75 SKIP_BENCH=1 GATE_CASES=1000 OUT=$O/tests GATE_ARGS="--divergence total_variation"
  export GTEST_FILTER="-GpuPlans.Streamed*:GpuPlans.DeferredForward*:GpuLargeIndex.TvdProb*"
  bash scripts/gpu-session > "$O/tests/session.log" 2>&1 )
cat "$O/tests/summary.txt"; tail -4 "$O/tests/session.log"
