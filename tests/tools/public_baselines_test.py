#!/usr/bin/env python3
"""Tests of bench/public_baselines.py (path in argv[1]) without PyTorch: its tables from small
measurement files, and its argument checks."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../bench/public_baselines.py")
KEY = {"row": "masked_kl_divergence", "dtype": "bf16", "shape": "8x128", "mode": "fwd_bwd", "bytes": 8000}


def entry(impl, ms, **extra):
    e = dict(KEY, impl=impl, ms=ms, **{"GB/s": KEY["bytes"] / (ms * 1e-3) / 1e9, "copy_GB/s": 1.0},
             frac_of_copy=0.0, extra_bytes=2**30, loss=1.0)
    e.update(extra)
    return e


def files(d, results, divcheck_ms=None):
    base = os.path.join(d, "baselines.json")
    with open(base, "w") as f:
        json.dump({"env": {"torch": "t", "triton": "tr", "liger": "l", "device": "dev"}, "iters": 3,
                   "results": results}, f)
    if divcheck_ms is None:
        return base, None
    ours = os.path.join(d, "bench.json")
    with open(ours, "w") as f:
        json.dump({"benchmarks": [{"name": "masked_kl_divergence/bf16/8x128/fwd_bwd/manual_time",
                                   "real_time": divcheck_ms, "frac_of_copy": 0.5, "copy_GB/s": 0.016,
                                   "workspace_bytes": 2**20}]}, f)
    return base, ours


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


def table_line(stdout):
    lines = [line for line in stdout.splitlines() if line.startswith("| masked_kl_divergence | fwd_bwd |")]
    assert len(lines) == 1, stdout
    return [c.strip() for c in lines[0].split("|")[1:-1]]


class Table(unittest.TestCase):
    def test_ratio_is_the_fastest_whole_task_public_time_over_divcheck_and_fractions_share_its_copy(self):
        with tempfile.TemporaryDirectory() as d:
            # liger is faster but writes one gradient of two: left out of the ratio, marked.
            results = [entry("eager", 4.0), entry("compile", 2.0), entry("liger", 0.5, partial_gradients=True)]
            base, ours = files(d, results, divcheck_ms=1.0)
            r = run("--table", base, "--divcheck", ours)
            self.assertEqual(r.returncode, 0, r.stderr)
            cells = table_line(r.stdout)
            # 8000 bytes in 2 ms = 0.004 GB/s over divcheck's copy of 0.016 GB/s: 0.25
            self.assertEqual(cells[2:7], ["0.50", "0.12", "0.25", "1.00†", "2.00x"])
            self.assertEqual(cells[7:], ["1.00", "1.00", "1.00", "1.00"])  # MiB, then GiB

    def test_skipped_failed_and_disagreeing_entries_say_so(self):
        with tempfile.TemporaryDirectory() as d:
            results = [entry("eager", 4.0), dict(KEY, impl="compile", skipped="time budget of 1 s spent"),
                       entry("liger", 1.0, loss_rel_diff_vs_eager=0.01)]
            base, _ = files(d, results)
            r = run("--table", base)
            self.assertEqual(r.returncode, 0, r.stderr)
            cells = table_line(r.stdout)
            self.assertEqual(cells[3], "0.00")  # no divcheck file: the entry's own fraction
            self.assertEqual(cells[4], "not run")
            self.assertIn("(loss differs)", cells[5])
            self.assertEqual(cells[2], "—")  # no divcheck file: no divcheck column, no ratio
            self.assertEqual(cells[6], "—")


class Arguments(unittest.TestCase):
    def test_bad_values_are_errors_naming_the_argument_and_value(self):
        for args, text in ((["--out", "x.json", "--only", "eager,jax"], "--only: unknown implementation(s) ['jax']"),
                           (["--out", "x.json", "--rows", "kl"], "--rows: unknown row(s) ['kl']"),
                           (["--out", "x.json", "--iters", "0"], "--iters: must be >= 1, got 0"),
                           ([], "give --out (measure) or --table (print)")):
            r = run(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(text, r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
