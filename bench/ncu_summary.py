#!/usr/bin/env python3
"""Summarises an Nsight Compute per-instruction profile of one kernel (scripts/gpu-profile's
NAME.sass.csv: `ncu --page source --csv --print-source sass`, optionally gzipped) in a page of
text, the figures bench/RESULTS.md quotes: where the warps' stall samples go, which instructions
hold them, and how the instructions and samples split between the kernel's inner loops and the
code outside them (the fixed part per CTA-row of the logit kernels).

usage: ncu_summary.py PROFILE.sass.csv[.gz] [--top N] [--loop-limit L] [--columns C] [--min-share P]

  --top N         the N instructions with the most stall samples (default 12), each with its
                  dominant stall reason
  --loop-limit L  a loop is a backward branch whose body has at most L instructions (default
                  800: the column loops; the row loop, which spans the kernel, is not one)
  --columns C     the launch's columns (rows x vocabulary): adds thread instructions per column,
                  of the kernel and of each loop
  --min-share P   list the loops with at least P% of the executed instructions (default 0.5)

Loops nested in a listed loop are merged into it, so every instruction counts once. The input is
checked: a file without the per-instruction columns, or with a malformed number, is an error
naming the file, the line and the field.
"""
import argparse
import csv
import gzip
import re
import sys

REQUIRED = ("Address", "Source", "# Samples", "Instructions Executed")
BRANCH = re.compile(r"\bBRA\b(?:\.\w+)*\s+(?:`?\(?)(0x[0-9a-fA-F]+)")


class ProfileError(Exception):
    pass


def read_rows(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise ProfileError(f"{path}: cannot read: {e}")
    # Line 1: "Kernel Name", name; line 2: the column names; then one line per instruction.
    if len(rows) < 3 or not rows[0] or rows[0][0] != "Kernel Name":
        raise ProfileError(f"{path}: not an ncu source page (line 1 must start with \"Kernel Name\")")
    kernel = rows[0][1] if len(rows[0]) > 1 else ""
    header = rows[1]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ProfileError(f"{path}: line 2 lacks the column(s) {', '.join(missing)}")
    col = {name: i for i, name in enumerate(header)}
    stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    instructions = []
    for n, row in enumerate(rows[2:], start=3):
        if len(row) != len(header):
            raise ProfileError(f"{path}: line {n} has {len(row)} fields, the header {len(header)}")

        def number(name, base=10):
            text = row[col[name]].strip()
            try:
                value = int(text, base) if text not in ("", "-") else 0
            except ValueError:
                raise ProfileError(f"{path}: line {n}, field \"{name}\": not a number: {text!r}")
            if value < 0:
                raise ProfileError(f"{path}: line {n}, field \"{name}\": negative: {text!r}")
            return value

        instructions.append({
            "address": number("Address", 16),
            "source": row[col["Source"]].strip(),
            "samples": number("# Samples"),
            "executed": number("Instructions Executed"),
            "stalls": {s: number(s) for s in stalls},
        })
    if not instructions:
        raise ProfileError(f"{path}: no instruction lines")
    return kernel, stalls, instructions


def loops_of(instructions, limit):
    """Index ranges [first, last] of the backward branches' bodies of at most `limit`
    instructions, nested ones merged into the enclosing listed loop."""
    index = {ins["address"]: i for i, ins in enumerate(instructions)}
    ranges = []
    for i, ins in enumerate(instructions):
        m = BRANCH.search(ins["source"])
        if not m:
            continue
        target = int(m.group(1), 16)
        if target in index and index[target] <= i and i - index[target] + 1 <= limit:
            ranges.append((index[target], i))
    merged = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def pct(part, whole):
    return 100.0 * part / whole if whole else 0.0


def summary(path, top, loop_limit, columns, min_share=0.5):
    kernel, stalls, ins = read_rows(path)
    samples = sum(i["samples"] for i in ins)
    executed = sum(i["executed"] for i in ins)
    out = [f"kernel: {kernel}", f"warp instructions executed: {executed}, stall samples: {samples}"]
    if columns:
        out.append(f"thread instructions per column: {32.0 * executed / columns:.1f} ({columns} columns)")
    totals = {s: sum(i["stalls"][s] for i in ins) for s in stalls}
    stall_sum = sum(totals.values())
    out.append("")
    out.append("stall reasons (share of the samples):")
    for s, v in sorted(totals.items(), key=lambda kv: -kv[1]):
        if v:
            out.append(f"  {s[len('stall_'):]:<20} {pct(v, stall_sum):5.1f}%")
    out.append("")
    out.append(f"the {top} instructions with the most samples (index, address, share, dominant reason, executions):")
    order = sorted(range(len(ins)), key=lambda k: -ins[k]["samples"])[:top]
    for k in sorted(order):
        i = ins[k]
        reason = max(i["stalls"].items(), key=lambda kv: kv[1])[0][len("stall_"):] if stalls else "-"
        out.append(f"  {k:6d}  {i['address'] & 0xfffff:05x}  {pct(i['samples'], samples):5.2f}%  {reason:<16} "
                   f"{i['executed']:>11}  {i['source'][:72]}")
    out.append("")
    loops = loops_of(ins, loop_limit)
    out.append(f"loops (backward branches over at most {loop_limit} instructions, nested ones merged) with at "
               f"least {min_share}% of the executed instructions:")
    per_column = (lambda ex: f", {32.0 * ex / columns:.1f} per column") if columns else (lambda ex: "")
    in_loops_exec = in_loops_samples = quiet = 0
    for first, last in loops:
        body = ins[first:last + 1]
        ex = sum(i["executed"] for i in body)
        sa = sum(i["samples"] for i in body)
        in_loops_exec += ex
        in_loops_samples += sa
        if pct(ex, executed) < min_share:
            quiet += 1
            continue
        out.append(f"  [{first}, {last}] {last - first + 1:4d} instructions: {pct(ex, executed):5.1f}% of the "
                   f"executed{per_column(ex)}, {pct(sa, samples):5.1f}% of the samples")
    if quiet:
        out.append(f"  ({quiet} more below {min_share}%, counted as loops)")
    rest = executed - in_loops_exec
    out.append(f"  outside them: {pct(rest, executed):5.1f}% of the executed{per_column(rest)}, "
               f"{pct(samples - in_loops_samples, samples):5.1f}% of the samples")
    return "\n".join(out)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("profile")
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--loop-limit", type=int, default=800)
    p.add_argument("--columns", type=int, default=0)
    p.add_argument("--min-share", type=float, default=0.5)
    a = p.parse_args(argv)
    for name in ("top", "loop_limit"):
        if getattr(a, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(a, name)}")
    if a.columns < 0:
        p.error(f"--columns must be >= 0, got {a.columns}")
    if not 0.0 <= a.min_share <= 100.0:
        p.error(f"--min-share must be in [0, 100], got {a.min_share}")
    try:
        print(summary(a.profile, a.top, a.loop_limit, a.columns, a.min_share))
    except ProfileError as e:
        print(f"ncu_summary: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
