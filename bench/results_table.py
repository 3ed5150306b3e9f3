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
    usage: python3 bench/results_table.py OUT/bench.json
"""
import json
import sys
from collections import OrderedDict


def main(path):
    with open(path) as f:
        data = json.load(f)
    ctx = data.get("context", {})
    print(f"Measured {ctx.get('date', '?')} on {ctx.get('host_name', '?')}.\n")
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
    if len(sys.argv) != 2:
        sys.exit("usage: results_table.py BENCH_JSON")
    main(sys.argv[1])
