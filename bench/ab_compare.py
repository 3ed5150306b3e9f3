#!/usr/bin/env python3
"""Same-call A/B of divcheck_bench runs (scripts/gpu-session's abK.json files).

usage: ab_compare.py --base a1.json [a2.json ...] --new b1.json [b2.json ...]

For every benchmark present in all files: each run's time (Google Benchmark real_time, ms), the
mean of the base runs over the mean of the new runs (> 1: the new binary is faster), and the
spread of each side (max/min - 1) so that a gain can be told from noise. Benchmarks missing
from a file are listed, never silently dropped. The files must name one GPU (the JSON's context
gpu_name, recorded since 2026-12-06): files of different GPUs are an error unless
--across-devices is given, and files that name none are listed.
"""
import argparse
import json
import sys


def load(path):
    """The file's times by benchmark name, and its GPU's name (None when the file names none)."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for b in doc.get("benchmarks", []):
        if b.get("error_occurred"):
            continue
        name = b["name"].removesuffix("/manual_time")
        out[name] = float(b["real_time"])
    return out, (doc.get("context") or {}).get("gpu_name") or None


def check_devices(paths, gpus, across_devices):
    """One GPU for every file that names one; prints it (or the mix, with --across-devices)."""
    named = {p: g for p, g in zip(paths, gpus) if g}
    unnamed = [p for p, g in zip(paths, gpus) if not g]
    cards = sorted(set(named.values()))
    if len(cards) > 1 and not across_devices:
        listing = "; ".join(f"{p}: {g}" for p, g in named.items())
        sys.exit(f"ab_compare: the files were measured on different GPUs ({listing}); a same-call A/B "
                 "compares kernels on one card (--across-devices to compare anyway)")
    if cards:
        print(f"Device: {' / '.join(cards)}" + (" (across devices)" if len(cards) > 1 else "") + "\n")
    for p in unnamed:
        print(f"(no GPU named in {p})")
    if unnamed:
        print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", nargs="+", required=True)
    ap.add_argument("--new", nargs="+", required=True)
    ap.add_argument("--across-devices", action="store_true",
                    help="allow files of different GPUs (the ratio is then the cards' as much as the kernels')")
    args = ap.parse_args()
    loaded = [load(p) for p in args.base + args.new]
    check_devices(args.base + args.new, [g for _, g in loaded], args.across_devices)
    base = [t for t, _ in loaded[:len(args.base)]]
    new = [t for t, _ in loaded[len(args.base):]]
    names = [n for n in base[0] if all(n in r for r in base + new)]
    missing = sorted(set().union(*base, *new) - set(names))
    if not names:
        sys.exit("ab_compare: no benchmark is in every file")
    print(f"| benchmark | base ms | new ms | base/new | base spread | new spread |")
    print("|---|---|---|---|---|---|")
    for n in names:
        b = [r[n] for r in base]
        w = [r[n] for r in new]
        mb, mw = sum(b) / len(b), sum(w) / len(w)
        print(f"| {n} | {' '.join(f'{x:.3f}' for x in b)} | {' '.join(f'{x:.3f}' for x in w)} | "
              f"{mb / mw:.3f}x | {max(b) / min(b) - 1:.1%} | {max(w) / min(w) - 1:.1%} |")
    for n in missing:
        print(f"(not in every file: {n})")


if __name__ == "__main__":
    main()
