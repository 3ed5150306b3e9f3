#!/usr/bin/env bash
# The GPU calls owed by step 80 (bench/RESULTS.md: masked_jefferys' probability path and squared
# Hellinger onto the centred streamed forward) and by step 79 (no H200 has benchmarked it), made
# for the device tool from the repository root with the bundle of main carried:
#   here:   BUILD_DIR=build/gpu-bundle JOBS=2 scripts/gpu-bundle .bundle/c5
#           tar cf - .bundle/c5 | xz -9 > .bundle/c5.tar.xz        (~17 MB; -9 single-threaded:
#           its 64 MB window shares the three executables' identical device code, -T2 does not)
#   device: bash bench/calls/step80.sh bench     (carry .bundle/c5.tar.xz; ~6-8 min)
#           bash bench/calls/step80.sh check     (the GPU suite, then the cuda gate in what is left)
#           bash bench/calls/step80.sh auto      (bench on an H200, check on any other card)
#           bash bench/calls/step80.sh profile   (ncu of the bf16 centred forwards, Jefferys and
#                                                 Hellinger: where their 16-bit time goes, the next lever)
# bench: the full benchmark, then the centred rows' forward A/B, interleaved twice: the cluster
# kernel (DIVCHECK_BENCH_STREAM=1, the kernels before steps 79-80) against the automatic plan;
# compare with python3 bench/ab_compare.py --base ab1.json ab3.json --new ab2.json ab4.json.
# Where the archive also holds .bundle/s81 (divcheck_bench with bench/unlanded/step81-cached-centres.patch
# applied, built as RESULTS.md step 81 says), bench then runs step 81's A/B as well, main against it on
# the bf16 forwards of the centred rows, interleaved twice (ab5-ab8: --base ab5 ab7 --new ab6 ab8).
#   env: LIMIT_S (default 570: the call's limit less ~30 s), ARCHIVE (default .bundle/c5.tar.xz), BUNDLE_NAME (the folder inside it, default c5)
set -u
: "${OUT:?OUT, the result folder of the device tool, is not set}"
mode=${1:?"usage: step80.sh bench|check|profile|auto"}
case $mode in bench | check | profile | auto) ;; *) echo "step80.sh: mode $mode is not bench, check, profile or auto" >&2; exit 2 ;; esac
L=${LIMIT_S:-570}  # the seconds this call may take (less where the device time left is less)
mkdir -p /tmp/u && xz -dc "${ARCHIVE:-.bundle/c5.tar.xz}" | tar xf - -C /tmp/u
nvidia-smi -L >"$OUT/gpu.txt"
# auto: the benchmark where the card is the target's (an H200), else the check (the suite and the
# gate judge the same sm_90 code on any Hopper card; the H100's speed is already recorded).
if [ "$mode" = auto ]; then
  if grep -q H200 "$OUT/gpu.txt"; then mode=bench; else mode=check; fi
  echo "step80.sh auto: $mode on $(head -1 "$OUT/gpu.txt")"
fi
export BUNDLE=/tmp/u/.bundle/${BUNDLE_NAME:-c5}
if [ "$mode" = bench ]; then
  F='(jefferys|hellinger).*/fwd/'
  export SKIP_TESTS=1 SKIP_GATE=1
  export AB1_FILTER=$F AB1_ENV=DIVCHECK_BENCH_STREAM=1 AB2_FILTER=$F
  export AB3_FILTER=$F AB3_ENV=DIVCHECK_BENCH_STREAM=1 AB4_FILTER=$F
  if [ -x /tmp/u/.bundle/s81/run ]; then
    G='(jefferys|hellinger).*/bf16/.*/fwd/'
    export AB5_FILTER=$G AB6_FILTER=$G AB6_BUNDLE=/tmp/u/.bundle/s81
    export AB7_FILTER=$G AB8_FILTER=$G AB8_BUNDLE=/tmp/u/.bundle/s81
  fi
  timeout "$L" scripts/gpu-session
elif [ "$mode" = check ]; then
  export SKIP_BENCH=1 GATE_CASES=1000 CALL_LIMIT_S=$L
  timeout $((L + 10)) scripts/gpu-session
else
  export SKIP_TESTS=1 SKIP_GATE=1 SKIP_BENCH=1
  export PROFILES="jefferys_bf16_fwd=^jefferys_divergence/bf16/8192x128256/fwd/ hellinger_bf16_fwd=^squared_hellinger_distance/bf16/8192x128256/fwd/"
  timeout "$L" scripts/gpu-session
fi
