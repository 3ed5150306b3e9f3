#!/usr/bin/env python3
"""Tests of bench/results_table.py (path in argv[1]) on small divcheck_bench JSON files: the
columns of each mode, the student-gradient columns only where that mode was run, and errors
shown in place of numbers."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../bench/results_table.py")


def bench(mode, ms, frac, **extra):
    b = {"name": f"masked_kl_divergence/bf16/8x128/{mode}/manual_time", "run_type": "iteration", "real_time": ms,
         "GB/s": 100.0 * frac, "copy_GB/s": 100.0, "frac_of_copy": frac, "ctas": 8, "threads": 256, "staged": 1,
         "staged_fraction": 1.0}
    b.update(extra)
    return b


def table(benchmarks):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench.json")
        with open(path, "w") as f:
            json.dump({"context": {}, "benchmarks": benchmarks}, f)
        r = subprocess.run([sys.executable, TOOL, path], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    header = [line for line in r.stdout.splitlines() if line.startswith("| row |")]
    rows = [line for line in r.stdout.splitlines() if line.startswith("| masked_kl_divergence |")]
    assert len(header) == 1 and len(rows) == 1, r.stdout
    split = lambda line: [c.strip() for c in line.split("|")[1:-1]]
    return split(header[0]), split(rows[0])


class ResultsTable(unittest.TestCase):
    def test_student_columns_appear_with_that_mode_and_hold_its_time_and_fraction(self):
        header, row = table([bench("fwd", 1.0, 0.9), bench("fwd_bwd", 2.0, 0.75), bench("fwd_bwd_student", 1.9, 0.6)])
        self.assertEqual(header[-2:], ["student grad ms", "student grad frac"])
        self.assertEqual(len(row), len(header))
        self.assertEqual(row[1:7], ["1.000", "90", "0.90", "2.000", "75", "0.75"])
        self.assertEqual(row[7:9], ["8 x 256, staged", "8 x 256, staged"])
        self.assertEqual(row[-2:], ["1.900", "0.60"])

    def test_without_the_student_mode_the_table_keeps_its_nine_columns(self):
        header, row = table([bench("fwd", 1.0, 0.9), bench("fwd_bwd", 2.0, 0.75)])
        self.assertEqual(len(header), 9)
        self.assertEqual(len(row), 9)

    def test_a_failed_benchmark_shows_its_error_not_a_number(self):
        failed = {"name": "masked_kl_divergence/bf16/8x128/fwd_bwd_student/manual_time", "run_type": "iteration",
                  "error_occurred": True, "error_message": "cuda backend: out of memory"}
        header, row = table([bench("fwd", 1.0, 0.9), bench("fwd_bwd", 2.0, 0.75), failed])
        self.assertEqual(row[-2], "error: cuda backend: out of memory")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
