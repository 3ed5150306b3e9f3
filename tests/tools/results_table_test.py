#!/usr/bin/env python3
"""Tests of bench/results_table.py (path in argv[1]) on small divcheck_bench JSON files: the
columns of each mode, the student-gradient columns only where that mode was run, errors shown
in place of numbers, and --summary's count against the target (the student mode not counted)."""
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


def run(benchmarks, *options, context=None):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench.json")
        with open(path, "w") as f:
            json.dump({"context": context or {}, "benchmarks": benchmarks}, f)
        return subprocess.run([sys.executable, TOOL, *options, path], capture_output=True, text=True)


def table(benchmarks):
    r = run(benchmarks)
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


def named(row, dtype, shape, mode, frac):
    b = bench(mode, 1.0, frac)
    b["name"] = f"{row}/{dtype}/{shape}/{mode}/manual_time"
    return b


class Summary(unittest.TestCase):
    BENCHMARKS = [named("kl", "bf16", "8x128", "fwd", 0.90), named("kl", "bf16", "8x128", "fwd_bwd", 0.84),
                  named("kl", "bf16", "8x128", "fwd_bwd_student", 0.99), named("kl", "f32", "8x128", "fwd", 0.85),
                  named("kl", "f32", "8x128", "fwd_bwd", 0.60), named("js", "bf16", "8x128", "fwd", 0.30)]

    def test_counts_the_target_modes_at_or_above_the_target_and_lists_the_misses_closest_first(self):
        r = run(self.BENCHMARKS, "--summary")
        self.assertEqual(r.returncode, 0, r.stderr)
        # fwd and fwd_bwd only: the student's 0.99 is not a configuration of the target.
        self.assertIn("At >= 0.85 of the copy: 2 of 5 measured configurations", r.stdout)
        kl = [line for line in r.stdout.splitlines() if line.startswith("| kl |")]
        self.assertEqual(kl, ["| kl | **0.90** | 0.84 | **0.85** | 0.60 |"])
        js = [line for line in r.stdout.splitlines() if line.startswith("| js |")]
        self.assertEqual(js, ["| js | 0.30 | - | - | - |"])  # not measured: a dash, not counted
        misses = [line for line in r.stdout.splitlines() if line.startswith("- ")]
        self.assertEqual(misses, ["- 0.840 kl bf16 8x128 fwd+bwd", "- 0.600 kl f32 8x128 fwd+bwd",
                                  "- 0.300 js bf16 8x128 fwd"])

    def test_the_target_is_an_option_and_a_failed_run_is_reported_not_counted(self):
        failed = {"name": "js/bf16/8x128/fwd_bwd/manual_time", "run_type": "iteration", "error_occurred": True,
                  "error_message": "cuda backend: out of memory"}
        r = run(self.BENCHMARKS + [failed], "--summary", "--target", "0.6")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("At >= 0.60 of the copy: 4 of 5 measured configurations** (1 failed to run)", r.stdout)
        self.assertIn("- failed: js bf16 8x128 fwd_bwd: cuda backend: out of memory", r.stdout)

    def test_a_target_out_of_range_is_refused_with_its_value(self):
        r = run(self.BENCHMARKS, "--summary", "--target", "0")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--target must be in (0, 2], got 0.0", r.stderr)

    def test_the_first_line_names_the_gpu_and_the_revision_both_in_tables_and_summary(self):
        ctx = {"date": "2026-12-06T16:09:05+00:00", "host_name": "vm", "gpu_name": "NVIDIA H200",
               "gpu_sm_count": "132", "gpu_max_sm_clock_mhz": "1980", "nvidia_driver": "580.159.04",
               "divcheck_git_sha": "cdd3a8a61663347453f97a43561d6cb13b09b2dc-dirty"}
        expected = ("Measured 2026-12-06T16:09:05+00:00 on NVIDIA H200 (132 SMs; max SM clock 1980 MHz; "
                    "driver 580.159.04; host vm; divcheck cdd3a8a61663-dirty).")
        for options in ((), ("--summary",)):
            r = run([bench("fwd", 1.0, 0.9), bench("fwd_bwd", 2.0, 0.75)], *options, context=ctx)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.splitlines()[0], expected)

    def test_a_json_that_names_no_gpu_says_so(self):
        r = run([bench("fwd", 1.0, 0.9)], "--summary", context={"date": "d", "host_name": "vm"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("on host vm (this JSON names no GPU", r.stdout.splitlines()[0])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
