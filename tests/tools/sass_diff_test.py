#!/usr/bin/env python3
"""Tests of bench/sass_diff.py (path in argv[1]) with a stand-in cuobjdump that prints canned
SASS and resource usage: identical functions whatever their addresses and encodings, a changed
loop, registers and stack frames, new and gone functions, a kernel present twice, snapshots,
--filter and --expect-identical, and bad input refused with exit status 2."""
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

TOOL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../../bench/sass_diff.py")

FAKE = """#!/usr/bin/env python3
import sys
option, path = sys.argv[1], sys.argv[2]
with open(path + (".sass" if option == "-sass" else ".res")) as f:
    sys.stdout.write(f.read())
"""


def sass(functions):
    """cuobjdump -sass text: functions is [(name, [instruction, ...])]; each instruction gets an
    address and an encoding line, as cuobjdump prints them."""
    out = ["\tcode for sm_90"]
    for name, body in functions:
        out.append(f"\t\tFunction : {name}")
        out.append("\t.headerflags\t@\"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)\"")
        for i, ins in enumerate(body):
            out.append(f"        /*{16 * i:04x}*/                   {ins} ;   /* 0x000fe20000000f00 */")
            out.append(f"                                                    /* 0x{i:016x} */")
        out.append("\t\t..........")
    return "\n".join(out) + "\n"


def res(functions):
    out = ["Resource usage:", " Common:", "  GLOBAL:0"]
    for name, regs, stack in functions:
        out.append(f" Function {name}:")
        out.append(f"  REG:{regs} STACK:{stack} SHARED:0 LOCAL:0 CONSTANT[0]:600 TEXTURE:0 SURFACE:0 SAMPLER:0")
    return "\n".join(out) + "\n"


LOOP = ["MOV R1, c[0x0][0x28]", "FADD R2, R2, R3", "FMUL R2, R2, R4", "@P0 BRA 0x10", "EXIT"]
LONGER_LOOP = ["MOV R1, c[0x0][0x28]", "FADD R2, R2, R3", "FMUL R2, R2, R4", "FADD R2, R2, R5", "@P0 BRA 0x10",
               "EXIT"]
SPILL = ["MOV R1, c[0x0][0x28]", "STL [R1], R2", "LDL R2, [R1]", "EXIT"]


class SassDiff(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.fake = os.path.join(self.dir.name, "cuobjdump")
        with open(self.fake, "w") as f:
            f.write(FAKE)
        os.chmod(self.fake, os.stat(self.fake).st_mode | stat.S_IEXEC)

    def tearDown(self):
        self.dir.cleanup()

    def binary(self, name, functions, resources, shift=0):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write("not really an ELF")
        text = sass(functions)
        if shift:  # other addresses and encodings, the same instructions
            text = text.replace("/* 0x000fe20000000f00 */", "/* 0x000fc40000000a00 */").replace("/*0010*/", "/*0010*/ ")
        with open(path + ".sass", "w") as f:
            f.write(text)
        with open(path + ".res", "w") as f:
            f.write(res(resources))
        return path

    def run_tool(self, *args):
        return subprocess.run([sys.executable, TOOL, *args, "--cuobjdump", self.fake], capture_output=True, text=True)

    def test_addresses_and_encodings_aside_the_same_instructions_are_identical(self):
        a = self.binary("a", [("_Z1kv", LOOP)], [("_Z1kv", 40, 0)])
        b = self.binary("b", [("_Z1kv", LOOP)], [("_Z1kv", 40, 0)], shift=1)
        r = self.run_tool("compare", a, b, "--expect-identical", ".")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("functions: 1 identical, 0 changed, 0 new, 0 gone", r.stdout)

    def test_a_change_shows_instructions_registers_stack_spills_and_the_loop_that_grew(self):
        a = self.binary("a", [("_Z1kv", LOOP), ("_Z1gv", LOOP), ("_Z1hv", LOOP)],
                        [("_Z1kv", 40, 0), ("_Z1gv", 40, 0), ("_Z1hv", 40, 0)])
        b = self.binary("b", [("_Z1kv", LONGER_LOOP), ("_Z1hv", LOOP), ("_Z1nv", SPILL)],
                        [("_Z1kv", 48, 16), ("_Z1hv", 40, 0), ("_Z1nv", 80, 8)])
        r = self.run_tool("compare", a, b)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("functions: 1 identical, 1 changed, 1 new, 1 gone", r.stdout)
        changed = [line for line in r.stdout.splitlines() if line.strip().startswith("5 -> 6 instr")]
        self.assertEqual(len(changed), 1, r.stdout)
        self.assertIn("40 -> 48 regs; 0 -> 16 stack; 0/0 local; loops #0 3 -> 4:", changed[0])
        self.assertIn("new:\n  4 instr; 80 regs; 8 stack; 1/1 local:", r.stdout)
        self.assertIn("gone:\n  5 instr; 40 regs; 0 stack; 0/0 local:", r.stdout)

    def test_expect_identical_fails_only_for_the_matching_functions_and_filter_narrows_the_count(self):
        a = self.binary("a", [("_Z4keepv", LOOP), ("_Z4editv", LOOP)], [("_Z4keepv", 40, 0), ("_Z4editv", 40, 0)])
        b = self.binary("b", [("_Z4keepv", LOOP), ("_Z4editv", LONGER_LOOP)], [("_Z4keepv", 40, 0), ("_Z4editv", 40, 0)])
        self.assertEqual(self.run_tool("compare", a, b, "--expect-identical", "keep").returncode, 0)
        r = self.run_tool("compare", a, b, "--expect-identical", "edit|keep")
        self.assertEqual(r.returncode, 1)
        self.assertIn("expected identical ('edit|keep'), but changed or gone: 1", r.stdout)
        r = self.run_tool("compare", a, b, "--filter", "keep")
        self.assertIn("functions: 1 identical, 0 changed, 0 new, 0 gone (of those matching 'keep')", r.stdout)

    def test_a_kernel_in_two_sections_is_compared_copy_by_copy(self):
        a = self.binary("a", [("_Z1kv", LOOP), ("_Z1kv", LOOP)], [("_Z1kv", 40, 0), ("_Z1kv", 40, 0)])
        b = self.binary("b", [("_Z1kv", LOOP), ("_Z1kv", LONGER_LOOP)], [("_Z1kv", 40, 0), ("_Z1kv", 40, 0)])
        r = self.run_tool("compare", a, b)
        self.assertIn("functions: 1 identical, 1 changed, 0 new, 0 gone", r.stdout)
        self.assertIn("#2", r.stdout)

    def test_a_snapshot_compares_like_its_binary(self):
        a = self.binary("a", [("_Z1kv", LOOP)], [("_Z1kv", 40, 0)])
        b = self.binary("b", [("_Z1kv", LONGER_LOOP)], [("_Z1kv", 40, 0)])
        snap = os.path.join(self.dir.name, "a.json")
        r = self.run_tool("snapshot", a, "-o", snap)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(snap) as f:
            data = json.load(f)
        self.assertEqual(data["functions"]["_Z1kv"]["loops"], [3])
        self.assertEqual(data["functions"]["_Z1kv"]["registers"], 40)
        self.assertEqual(self.run_tool("compare", snap, b).stdout, self.run_tool("compare", a, b).stdout)

    def test_bad_input_is_refused_with_its_name_and_exit_status_2(self):
        a = self.binary("a", [("_Z1kv", LOOP)], [("_Z1kv", 40, 0)])
        bad = os.path.join(self.dir.name, "bad.json")
        with open(bad, "w") as f:
            json.dump({"format": "divcheck-sass-snapshot-1", "functions": {"_Z1kv": {"hash": "x"}}}, f)
        cases = [
            (("compare", bad, a), "function '_Z1kv': malformed record"),
            (("compare", os.path.join(self.dir.name, "none"), a), "no such file"),
            (("compare", a, a, "--filter", "("), "--filter '(': not a regular expression"),
        ]
        for args, message in cases:
            r = self.run_tool(*args)
            self.assertEqual(r.returncode, 2, (args, r.stdout))
            self.assertIn(message, r.stderr)
        empty = self.binary("empty", [], [])
        r = self.run_tool("compare", empty, a)
        self.assertEqual(r.returncode, 2)
        self.assertIn("cuobjdump found no device functions", r.stderr)
        r = subprocess.run([sys.executable, TOOL, "compare", a, a, "--cuobjdump", os.path.join(self.dir.name, "nope")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("nope: not an executable file", r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
