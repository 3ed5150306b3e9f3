#!/usr/bin/env python3
"""Tests of bench/ncu_summary.py (path in argv[1]) on small hand-made ncu source pages."""
import csv
import gzip
import os
import subprocess
import sys
import tempfile
import unittest

TOOL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../bench/ncu_summary.py")
HEADER = ["Address", "Source", "# Samples", "Instructions Executed", "stall_barrier", "stall_wait",
          "stall_barrier (Not Issued)"]
BASE = 0x7f0000000000


def page(directory, name, lines, zipped=False, kernel="k"):
    """lines: (source, samples, executed, barrier, wait); address BASE + 16 i."""
    path = os.path.join(directory, name)
    opener = gzip.open if zipped else open
    with opener(path, "wt", newline="") as f:
        w = csv.writer(f, quoting=csv.QUOTE_ALL)
        w.writerow(["Kernel Name", kernel])
        w.writerow(HEADER)
        for i, (src, samples, executed, barrier, wait) in enumerate(lines):
            w.writerow([hex(BASE + 16 * i), src, samples, executed, barrier, wait, barrier])  # not issued <= all
    return path


# A kernel of 8 instructions: a prologue (0-1), a loop over 2-5 (the branch at 5 goes back to 2),
# and the rest (6-7). Samples: 10 + 60 + 30 = 100; executed: 2 + 400 + 98 = 500.
KERNEL = [
    ("LDC R1, c[0x0][0x28]", 4, 1, 0, 4),
    ("S2R R0, SR_TID.X", 6, 1, 0, 6),
    ("LDS.128 R4, [R2]", 20, 100, 0, 20),
    ("MUFU.EX2 R5, R5", 25, 100, 0, 25),
    ("FADD R6, R6, R5", 5, 100, 0, 5),
    ("@P0 BRA " + hex(BASE + 16 * 2), 10, 100, 0, 10),
    ("BAR.SYNC.DEFER_BLOCKING 0x0", 0, 49, 0, 0),
    ("UMOV UR33, 0x400", 30, 49, 30, 0),
]


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


class NcuSummary(unittest.TestCase):
    def test_totals_reasons_top_and_the_loop_split(self):
        with tempfile.TemporaryDirectory() as d:
            for zipped in (False, True):
                p = page(d, "k.sass.csv" + (".gz" if zipped else ""), KERNEL, zipped)
                r = run(p, "--top", "2", "--columns", "3200")
                self.assertEqual(r.returncode, 0, r.stderr)
                out = r.stdout
                self.assertIn("warp instructions executed: 500, stall samples: 100", out)
                self.assertIn("thread instructions per column: 5.0 (3200 columns)", out)  # 32 * 500 / 3200
                # Reasons: barrier 30 of 100 samples, wait 70; the Not Issued column is not a reason.
                self.assertRegex(out, r"wait\s+70\.0%")
                self.assertRegex(out, r"barrier\s+30\.0%")
                self.assertNotIn("Not Issued", out)
                # The top two: the UMOV behind the barrier (30%) and the MUFU (25%), in index order.
                top = [l for l in out.splitlines() if "%  " in l and ("UMOV" in l or "MUFU" in l or "LDS" in l)]
                self.assertEqual(len(top), 2, out)
                self.assertIn("MUFU.EX2", top[0])
                self.assertIn("UMOV", top[1])
                self.assertIn("barrier", top[1])
                # The loop [2, 5]: 400 of 500 executed (80%, 4.0 per column), 60 of 100 samples.
                self.assertIn("[2, 5]    4 instructions:  80.0% of the executed, 4.0 per column,  60.0% of the samples",
                              out)
                self.assertIn("outside them:  20.0% of the executed, 1.0 per column,  40.0% of the samples", out)

    def test_a_branch_over_more_than_the_limit_is_not_a_loop(self):
        with tempfile.TemporaryDirectory() as d:
            r = run(page(d, "k.csv", KERNEL), "--loop-limit", "3")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("outside them: 100.0% of the executed", r.stdout)

    def assert_refused(self, path, *fragments):
        r = run(path)
        self.assertEqual(r.returncode, 1, r.stdout)
        for fragment in fragments:
            self.assertIn(fragment, r.stderr)

    def test_malformed_input_is_an_error_naming_the_place(self):
        with tempfile.TemporaryDirectory() as d:
            self.assert_refused(page(d, "bad.csv", [("FADD R1, R1, R2", "many", 1, 0, 0)]), "line 3", "# Samples",
                                "'many'")
            self.assert_refused(page(d, "neg.csv", [("FADD R1, R1, R2", -4, 1, 0, 0)]), "negative")
            texts = {"other.csv": ("a,b\n1,2\n3,4\n", "Kernel Name"),
                     "short.csv": ('"Kernel Name","k"\n"Address","Source"\n"0x10","NOP"\n', "# Samples")}
            for name, (text, fragment) in texts.items():
                path = os.path.join(d, name)
                with open(path, "w") as f:
                    f.write(text)
                self.assert_refused(path, fragment)
            self.assert_refused(os.path.join(d, "absent.csv"), "cannot read")

    def test_bad_options_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            p = page(d, "k.csv", KERNEL)
            for args in (["--top", "0"], ["--loop-limit", "0"], ["--columns", "-1"], ["--min-share", "101"]):
                r = run(p, *args)
                self.assertEqual(r.returncode, 2, args)
                self.assertIn(args[0], r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
