#!/usr/bin/env python3
"""Turns a divcheck_bench JSON file (Google Benchmark, --benchmark_out_format=json) into the
Markdown tables of bench/RESULTS.md: one table per (shape, dtype), one line per row of the
registry, forward and forward+backward side by side (ms, GB/s of the minimal traffic, fraction
of the device-to-device copy bandwidth measured in the same run, and each mode's plan: CTAs per
row (a cluster) x threads per CTA, whether the row slices are staged in shared memory and whether
the clusters loop over the rows (persistent, with the grid's cluster count), or for
the streamed kernels of KL and cross-entropy (forward only, and with gradients), tiles per row
x threads per CTA); where the run has the `fwd_bwd_student` mode (the q side's gradient only),
two more columns with its time and fraction.

With --summary it prints instead the state against issue 3's target: how many of the measured
(row, shape, dtype, mode) configurations reach the target fraction of the copy (--target,
default 0.85; modes fwd and fwd_bwd, the target's two; the student mode is not counted), one
line per row with every configuration's fraction (bold at or above the target), and the misses
the twelve closest.
    usage: python3 bench/results_table.py [--summary [--target F]] OUT/bench.json
"""
import argparse
import json
from collections import OrderedDict

TARGET_MODES = ("fwd", "fwd_bwd")  # issue 3's target: forward only, and forward + backward
CLOSEST = 12  # misses listed by --summary


def load(path):
    """The benchmarks of a divcheck_bench JSON file as {(shape, dtype): {row: {mode: entry}}},
    in the file's order; an entry is the benchmark's JSON object or {"error": message}."""
    with open(path) as f:
        data = json.load(f)
    tables = OrderedDict()
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate":
            continue
        row, dtype, shape, mode = b["name"].split("/")[:4]
        entry = tables.setdefault((shape, dtype), OrderedDict()).setdefault(row, {})
        if b.get("error_occurred"):
            entry[mode] = {"error": b.get("error_message", "error")}
        else:
            entry[mode] = b
    return data.get("context", {}), tables


def short_revision(sha):
    """The revision's first 12 hex digits with its suffix kept ("-dirty": the tree had changes)."""
    head, sep, rest = sha.partition("-")
    return head[:12] + sep + rest


def measured_line(ctx):
    """Where and when: the date, the GPU (divcheck_bench records it in the JSON's context since
    2026-12-06, bench/bench_context.hpp), the host and the divcheck revision."""
    host = ctx.get("host_name", "?")
    gpu = ctx.get("gpu_name")
    if not gpu:
        return (f"Measured {ctx.get('date', '?')} on host {host} (this JSON names no GPU: divcheck_bench "
                "recorded none before 2026-12-06).")
    facts = [f"{ctx['gpu_sm_count']} SMs" if ctx.get("gpu_sm_count") else None,
             f"max SM clock {ctx['gpu_max_sm_clock_mhz']} MHz" if ctx.get("gpu_max_sm_clock_mhz") else None,
             f"driver {ctx['nvidia_driver']}" if ctx.get("nvidia_driver") else None,
             f"host {host}",
             f"divcheck {short_revision(ctx['divcheck_git_sha'])}" if ctx.get("divcheck_git_sha") else None]
    return f"Measured {ctx.get('date', '?')} on {gpu} (" + "; ".join(f for f in facts if f) + ")."


def summary(path, target):
    ctx, tables = load(path)
    print(measured_line(ctx) + "\n")
    columns = [(shape, dtype, mode) for (shape, dtype) in tables for mode in TARGET_MODES]
    rows = OrderedDict()
    for (shape, dtype), by_row in tables.items():
        for row in by_row:
            rows.setdefault(row, None)
    reached, measured, misses, failed = 0, 0, [], []
    lines = []
    for row in rows:
        cells = []
        for shape, dtype, mode in columns:
            m = tables[(shape, dtype)].get(row, {}).get(mode)
            if m is None:
                cells.append("-")
            elif "error" in m:
                cells.append("error")
                failed.append(f"{row} {dtype} {shape} {mode}: {m['error']}")
            else:
                frac = m["frac_of_copy"]
                measured += 1
                if frac >= target:
                    reached += 1
                    cells.append(f"**{frac:.2f}**")
                else:
                    misses.append((frac, row, dtype, shape, mode))
                    cells.append(f"{frac:.2f}")
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    print(f"**At >= {target:.2f} of the copy: {reached} of {measured} measured configurations**"
          + (f" ({len(failed)} failed to run)" if failed else "") + ".\n")
    print("| row | " + " | ".join(f"{dtype} {shape} {'fwd' if mode == 'fwd' else 'fwd+bwd'}"
                                  for shape, dtype, mode in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for line in lines:
        print(line)
    if misses:
        print(f"\nBelow the target, the {min(len(misses), CLOSEST)} closest"
              + (f" (of {len(misses)})" if len(misses) > CLOSEST else "") + ":\n")
        for frac, row, dtype, shape, mode in sorted(misses, reverse=True)[:CLOSEST]:
            print(f"- {frac:.3f} {row} {dtype} {shape} {'fwd' if mode == 'fwd' else 'fwd+bwd'}")
    for f in failed:
        print(f"- failed: {f}")


def main(path):
    ctx, tables = load(path)
    print(measured_line(ctx) + "\n")
    for (shape, dtype), rows in tables.items():
        copies = [m["copy_GB/s"] for r in rows.values() for m in r.values() if "copy_GB/s" in m]
        copy = f"{sum(copies) / len(copies):.0f}" if copies else "?"
        print(f"### {shape}, {dtype} (copy yardstick: {copy} GB/s)\n")
        student = any("fwd_bwd_student" in modes for modes in rows.values())
        print("| row | fwd ms | fwd GB/s | fwd frac | fwd+bwd ms | fwd+bwd GB/s | fwd+bwd frac | fwd plan | fwd+bwd plan |"
              + (" student grad ms | student grad frac |" if student else ""))
        print("|---|---|---|---|---|---|---|---|---|" + ("---|---|" if student else ""))
        for row, modes in rows.items():
            cells, plans = [], []
            for mode in ("fwd", "fwd_bwd"):
                m = modes.get(mode)
                if m is None:
                    cells += ["-", "-", "-"]
                    plans.append("")
                elif "error" in m:
                    cells += ["error: " + m["error"][:40], "", ""]
                    plans.append("")
                else:
                    cells += [f"{m['real_time']:.3f}", f"{m['GB/s']:.0f}", f"{m['frac_of_copy']:.2f}"]
                    plans.append(plan_of(m))
            if student:
                m = modes.get("fwd_bwd_student")
                if m is None:
                    plans += ["-", "-"]
                elif "error" in m:
                    plans += ["error: " + m["error"][:40], ""]
                else:
                    plans += [f"{m['real_time']:.3f}", f"{m['frac_of_copy']:.2f}"]
            print(f"| {row} | " + " | ".join(cells + plans) + " |")
        print()


def plan_of(m):
    """A benchmark's plan from its counters (ctas 0: tvd_prob, one CTA per row, no plan)."""
    if not m.get("ctas"):
        return "one CTA per row"
    threads = f" x {m['threads']:.0f}" if m.get("threads") else ""
    if m.get("streamed"):
        regs = f", {m['registers']:.0f} regs" if m.get("registers") else ""
        return f"{m['ctas']:.0f} tiles{threads}, streamed{regs}"
    if not m.get("staged"):
        return f"{m['ctas']:.0f}{threads}, not staged"
    part = m.get("staged_fraction", 1.0)
    # The persistent grid's clusters (the counter since step 68; older files name none).
    grid = ""
    if m.get("persistent"):
        grid = f", persistent ({m['resident_clusters']:.0f} clusters)" if m.get("resident_clusters") else ", persistent"
    return f"{m['ctas']:.0f}{threads}, " + ("staged" if part >= 1.0 else f"{100 * part:.0f}% staged") + grid

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Markdown tables of a divcheck_bench JSON file.")
    parser.add_argument("bench_json")
    parser.add_argument("--summary", action="store_true", help="the state against the target, not the tables")
    parser.add_argument("--target", type=float, default=0.85, help="fraction of the copy (default 0.85)")
    args = parser.parse_args()
    if not 0.0 < args.target <= 2.0:
        parser.error(f"--target must be in (0, 2], got {args.target}")
    if args.summary:
        summary(args.bench_json, args.target)
    else:
        main(args.bench_json)
