#!/usr/bin/env bash
# Step 74's GPU call (any card): step 74's A/B first (step 73's bench
# against step 74's, POW2=1, interleaved twice, the temperature KL row; on an H200 also step 74's
# POW2=0 against =1, step 73's A/B), then the whole GPU test suite and the 1000-case cuda gate of the
# two temperature rows on step 74's bundle. Each part's results are packed as it ends.
#   Bundles, made on the development machine (the carry is .bundle/gpu7374.tar.xz and this script):
#     git checkout main && BUILD_DIR=build/gpu-bundle JOBS=2 scripts/gpu-bundle .bundle/gpu73
#     git checkout -b step74-grad-fold && git am bench/unlanded/step74-grad-fold.patch &&
#       BUILD_DIR=build/gpu-bundle JOBS=2 scripts/gpu-bundle .bundle/gpu74
#     tar cf - .bundle/gpu73 .bundle/gpu74 | xz -T1 --lzma2=preset=9e,dict=192MiB > .bundle/gpu7374.tar.xz
#   (27 MB for both: the three executables of a bundle carry the same compressed fatbin, which xz
#   finds again only with a dictionary as large as the bundle; -6's 8 MiB made 47 MB per bundle.) On the GPU machine: bash bench/unlanded/step74-gpu-call.sh
#   Without a time limit, follow it with the full benchmark (scripts/gpu-session, BUNDLE=.bundle/gpu74).
set -u
O=$OUT  # the subshells below set OUT to their own folder
[ -d .bundle/gpu74 ] || xz -dc .bundle/gpu7374.tar.xz | tar xf -
nvidia-smi -L > "$O/card.txt" 2>&1; cat "$O/card.txt"
F=temperature_scaled_masked_kl
mkdir -p "$O/ab" "$O/tests"
( export BUNDLE=.bundle/gpu74 SKIP_TESTS=1 SKIP_GATE=1 SKIP_BENCH=1 OUT=$O/ab
  export AB1_FILTER=$F AB1_BUNDLE=.bundle/gpu73 AB1_ENV=DIVCHECK_BENCH_POW2=1
  export AB2_FILTER=$F AB2_ENV=DIVCHECK_BENCH_POW2=1
  export AB3_FILTER=$F AB3_BUNDLE=.bundle/gpu73 AB3_ENV=DIVCHECK_BENCH_POW2=1
  export AB4_FILTER=$F AB4_ENV=DIVCHECK_BENCH_POW2=1
  if grep -q H200 "$O/card.txt"; then
    export AB5_FILTER=$F AB5_ENV=DIVCHECK_BENCH_POW2=0 AB6_FILTER=$F AB6_ENV=DIVCHECK_BENCH_POW2=1
    export AB7_FILTER=$F AB7_ENV=DIVCHECK_BENCH_POW2=0 AB8_FILTER=$F AB8_ENV=DIVCHECK_BENCH_POW2=1
  fi
  bash scripts/gpu-session > "$O/ab/session.log" 2>&1
  R=$(mktemp -d); tar xzf "$O/ab/results.tgz" -C "$R"
  python3 bench/ab_compare.py --base "$R/ab1.json" "$R/ab3.json" --new "$R/ab2.json" "$R/ab4.json" > "$O/ab74.txt" 2>&1
  [ -f "$R/ab8.json" ] && python3 bench/ab_compare.py --base "$R/ab5.json" "$R/ab7.json" --new "$R/ab6.json" "$R/ab8.json" > "$O/ab73.txt" 2>&1 )
cat "$O/ab74.txt" "$O/ab73.txt" 2>/dev/null
( export BUNDLE=.bundle/gpu74 SKIP_BENCH=1 GATE_CASES=1000 OUT=$O/tests
  export GATE_ARGS="--divergence temperature_scaled_masked_kl_divergence,temperature_scaled_masked_jefferys_divergence"
  bash scripts/gpu-session > "$O/tests/session.log" 2>&1 )
cat "$O/tests/summary.txt"; tail -6 "$O/tests/session.log"
