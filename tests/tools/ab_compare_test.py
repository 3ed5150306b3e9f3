#!/usr/bin/env python3
"""Tests of bench/ab_compare.py (path in argv[1]) on small Google Benchmark JSON files."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../bench/ab_compare.py")


def bench_file(directory, name, times, errors=(), gpu=None):
    path = os.path.join(directory, name)
    benchmarks = [{"name": f"{n}/manual_time", "real_time": t} for n, t in times.items()]
    benchmarks += [{"name": f"{n}/manual_time", "real_time": 0.0, "error_occurred": True} for n in errors]
    with open(path, "w") as f:
        json.dump({"context": {"gpu_name": gpu} if gpu else {}, "benchmarks": benchmarks}, f)
    return path


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


class AbCompare(unittest.TestCase):
    def test_ratio_is_base_mean_over_new_mean_with_each_spread(self):
        with tempfile.TemporaryDirectory() as d:
            b1 = bench_file(d, "b1.json", {"kl/bf16/8x128/fwd": 2.0})
            b2 = bench_file(d, "b2.json", {"kl/bf16/8x128/fwd": 2.2})
            n1 = bench_file(d, "n1.json", {"kl/bf16/8x128/fwd": 1.0})
            n2 = bench_file(d, "n2.json", {"kl/bf16/8x128/fwd": 1.1})
            r = run("--base", b1, b2, "--new", n1, n2)
            self.assertEqual(r.returncode, 0, r.stderr)
            row = [line for line in r.stdout.splitlines() if line.startswith("| kl/bf16/8x128/fwd |")]
            self.assertEqual(len(row), 1, r.stdout)
            # (2.0 + 2.2) / 2 = 2.1 over (1.0 + 1.1) / 2 = 1.05: 2.000x; spreads 10.0% each.
            self.assertIn("| 2.000 2.200 | 1.000 1.100 | 2.000x | 10.0% | 10.0% |", row[0])

    def test_a_benchmark_missing_or_failed_in_one_file_is_listed_not_dropped(self):
        with tempfile.TemporaryDirectory() as d:
            b = bench_file(d, "b.json", {"a/f32/1x8/fwd": 1.0, "b/f32/1x8/fwd": 1.0})
            n = bench_file(d, "n.json", {"a/f32/1x8/fwd": 0.5}, errors=["b/f32/1x8/fwd"])
            r = run("--base", b, "--new", n)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("| a/f32/1x8/fwd | 1.000 | 0.500 | 2.000x |", r.stdout)
            self.assertIn("(not in every file: b/f32/1x8/fwd)", r.stdout)

    def test_no_common_benchmark_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            b = bench_file(d, "b.json", {"a/f32/1x8/fwd": 1.0})
            n = bench_file(d, "n.json", {"c/f32/1x8/fwd": 1.0})
            r = run("--base", b, "--new", n)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("no benchmark is in every file", r.stderr)

    def test_files_of_different_gpus_are_an_error_naming_both(self):
        with tempfile.TemporaryDirectory() as d:
            b = bench_file(d, "b.json", {"a/f32/1x8/fwd": 1.0}, gpu="NVIDIA H100 80GB HBM3")
            n = bench_file(d, "n.json", {"a/f32/1x8/fwd": 0.7}, gpu="NVIDIA H200")
            r = run("--base", b, "--new", n)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("different GPUs", r.stderr)
            self.assertIn("NVIDIA H100 80GB HBM3", r.stderr)
            self.assertIn("NVIDIA H200", r.stderr)
            self.assertNotIn("| a/f32/1x8/fwd |", r.stdout)
            r = run("--base", b, "--new", n, "--across-devices")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("Device: NVIDIA H100 80GB HBM3 / NVIDIA H200 (across devices)", r.stdout)
            self.assertIn("| a/f32/1x8/fwd | 1.000 | 0.700 | 1.429x |", r.stdout)

    def test_one_gpu_is_named_and_files_without_one_are_listed(self):
        with tempfile.TemporaryDirectory() as d:
            b = bench_file(d, "b.json", {"a/f32/1x8/fwd": 1.0}, gpu="NVIDIA H200")
            n1 = bench_file(d, "n1.json", {"a/f32/1x8/fwd": 0.5}, gpu="NVIDIA H200")
            n2 = bench_file(d, "n2.json", {"a/f32/1x8/fwd": 0.5})
            r = run("--base", b, "--new", n1, n2)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("Device: NVIDIA H200\n", r.stdout)
            self.assertIn(f"(no GPU named in {n2})", r.stdout)
            self.assertNotIn(f"(no GPU named in {n1})", r.stdout)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
