#!/usr/bin/env python3
"""Tests of bench/quack_baseline.py (path in argv[1]) without PyTorch or quack: its table from
small measurement files, and its argument checks."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../bench/quack_baseline.py")


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


def write(d, name, doc):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


ENV = {"quack": "0.6.5", "cutlass_dsl": "4.8.1", "torch": "t", "device": "dev", "yardstick": "cudaMemcpyAsync (CuPy)"}


def measured(kernel, ms, frac, **extra):
    e = {"kernel": kernel, "dtype": "bf16", "shape": "8x128", "bytes": 4000, "ms": ms, "copy_GB/s": 2.0,
         "GB/s": 1.0, "frac_of_copy": frac}
    e.update(extra)
    return e


def line(stdout, kernel):
    lines = [x for x in stdout.splitlines() if x.startswith(f"| {kernel} |")]
    assert len(lines) == 1, stdout
    return [c.strip() for c in lines[0].split("|")[1:-1]]


class Table(unittest.TestCase):
    def test_rows_carry_the_fraction_the_checks_and_divcheck_analogue_of_the_same_configuration(self):
        with tempfile.TemporaryDirectory() as d:
            doc = {"env": ENV, "iters": 3, "results": [
                measured("ce_fwd_bwd", 0.004, 0.8123, loss_max_rel_diff=2e-7, dx_max_abs_diff=3.9e-3),
                measured("softmax_fwd", 0.002, 0.93, y_max_abs_diff=1e-3)]}
            ours = {"benchmarks": [
                {"name": "masked_cross_entropy/bf16/8x128/fwd_bwd/manual_time", "frac_of_copy": 0.7612},
                {"name": "masked_cross_entropy/bf16/8x128/fwd/manual_time", "frac_of_copy": 0.9},
                {"name": "masked_cross_entropy/f32/8x128/fwd_bwd/manual_time", "frac_of_copy": 0.1}]}
            r = run("--table", write(d, "q.json", doc), "--divcheck", write(d, "b.json", ours))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("quack 0.6.5 (CUTLASS DSL 4.8.1)", r.stdout)
            self.assertIn("yardstick cudaMemcpyAsync (CuPy)", r.stdout)
            self.assertEqual(line(r.stdout, "ce_fwd_bwd"),
                             ["ce_fwd_bwd", "bf16", "8x128", "0.004", "0.81", "2",
                              "loss rel_diff 2.0e-07, dx abs_diff 3.9e-03", "masked_cross_entropy fwd_bwd 0.76"])
            # the softmax has no divcheck analogue
            self.assertEqual(line(r.stdout, "softmax_fwd")[-2:], ["y abs_diff 1.0e-03", "—"])

    def test_skipped_and_failed_entries_say_so_and_a_file_without_quack_is_not_a_table(self):
        with tempfile.TemporaryDirectory() as d:
            doc = {"env": ENV, "iters": 3, "results": [
                {"kernel": "ce_fwd", "dtype": "f32", "shape": "8x128", "skipped": "time budget of 1 s spent"},
                {"kernel": "ce_bwd", "dtype": "f32", "shape": "8x128", "error": "AssertionError: N too large"}]}
            r = run("--table", write(d, "q.json", doc))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(line(r.stdout, "ce_fwd")[4], "not run")
            self.assertEqual(line(r.stdout, "ce_bwd")[4], "error: AssertionError: N too large")
            r = run("--table", write(d, "none.json", {"env": {"quack_error": "ImportError: x"}, "iters": 3,
                                                      "results": []}))
            self.assertEqual(r.returncode, 1)
            self.assertIn("quack was not measured: ImportError: x", r.stdout)


class Arguments(unittest.TestCase):
    def test_bad_arguments_are_named(self):
        r = run("--kernels", "ce_fwd,nope", "--table", "x")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--kernels: unknown or empty ['nope']", r.stderr)
        r = run("--iters", "0", "--out", "x")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--iters: must be >= 1, got 0", r.stderr)
        r = run()
        self.assertEqual(r.returncode, 2)
        self.assertIn("give --out (measure) or --table (print)", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
