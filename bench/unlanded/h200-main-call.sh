#!/usr/bin/env bash
# The H200 call the thirty-fifth session prepared and never got a card for (2026-12-06: of eleven tries, eight
# got no machine and three an H100),
# most needed first: main's GPU suite and full 1000-case cuda gate, main's full benchmark
# (.bundle/ctx: main's binaries, whose JSON names the GPU), then the A/Bs of steps 73 (POW2=0 vs 1,
# one binary) and 74 (main vs .bundle/s74), interleaved twice (on an H100 the suite and gate
# took 219 s, the benchmark 135 s; the A/Bs, not timed, add 8 runs of 12 benchmarks). On another card it
# only checks the benchmark JSON's device context (main's H100 suite, gate and benchmark: 2026-12-06
# 16:05-16:09 UTC, bench/RESULTS.md).
#   Bundles, made on the development machine:
#     BUILD_DIR=build/gpu-bundle JOBS=2 scripts/gpu-bundle .bundle/ctx            (on main)
#     git checkout -b s74 && git am bench/unlanded/step74-grad-fold.patch &&
#       BUILD_DIR=build/gpu-bundle JOBS=2 scripts/gpu-bundle .bundle/s74 && git checkout main
#     tar cf - .bundle/ctx .bundle/s74 | xz -T2 --lzma2=preset=9e,dict=192MiB > .bundle/c74.tar.xz  (27 MB)
#   Carry .bundle/c74.tar.xz; on the GPU machine: bash bench/unlanded/h200-main-call.sh
set -u
O=$OUT
nvidia-smi -L > "$O/card.txt" 2>&1; cat "$O/card.txt"
[ -d .bundle/s74 ] || xz -dc .bundle/c74.tar.xz | tar xf -
.bundle/ctx/run divcheck_bench --smoke --benchmark_filter=^tvd_prob/bf16/.*/fwd/ --benchmark_format=json > "$O/context.json" 2>&1
grep -q H200 "$O/card.txt" || exit 0
mkdir -p "$O/bench" "$O/tests"
( export BUNDLE=.bundle/ctx SKIP_BENCH=1 GATE_CASES=1000 OUT=$O/tests
  bash scripts/gpu-session > "$O/tests/session.log" 2>&1
  R=$(mktemp -d); tar xzf "$O/tests/results.tgz" -C "$R"; grep -A14 "^divergence  " "$R/gate.log" > "$O/gate_table.txt" )
cat "$O/tests/summary.txt" "$O/gate_table.txt"
F=temperature_scaled_masked_kl
( export BUNDLE=.bundle/ctx SKIP_TESTS=1 SKIP_GATE=1 OUT=$O/bench
  export AB1_FILTER=$F AB1_ENV=DIVCHECK_BENCH_POW2=0 AB2_FILTER=$F AB2_ENV=DIVCHECK_BENCH_POW2=1
  export AB3_FILTER=$F AB3_ENV=DIVCHECK_BENCH_POW2=0 AB4_FILTER=$F AB4_ENV=DIVCHECK_BENCH_POW2=1
  export AB5_FILTER=$F AB6_FILTER=$F AB6_BUNDLE=.bundle/s74 AB7_FILTER=$F AB8_FILTER=$F AB8_BUNDLE=.bundle/s74
  bash scripts/gpu-session > "$O/bench/session.log" 2>&1
  R=$(mktemp -d); tar xzf "$O/bench/results.tgz" -C "$R"
  python3 bench/ab_compare.py --base "$R/ab1.json" "$R/ab3.json" --new "$R/ab2.json" "$R/ab4.json" > "$O/ab73.txt" 2>&1
  python3 bench/ab_compare.py --base "$R/ab5.json" "$R/ab7.json" --new "$R/ab6.json" "$R/ab8.json" > "$O/ab74.txt" 2>&1 )
cat "$O/bench/summary.txt" "$O/bench/target.txt" "$O/ab73.txt" "$O/ab74.txt"
