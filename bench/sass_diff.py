#!/usr/bin/env python3
"""Compares the device code of two builds function by function: which CUDA kernels kept exactly
their SASS, which changed (instructions, registers, stack frame, local-memory loads and stores,
the static sizes of their inner loops) and which are new or gone. bench/RESULTS.md's method
rests on such comparisons: a step that should touch only some kernels is checked to leave every
other one SASS-identical before it is measured (steps 47, 51, 72), and a change in registers or
a new stack frame is the first suspect when a kernel slows down (steps 15, 18, 46, 70).

usage:
  sass_diff.py snapshot BINARY -o SNAPSHOT.json     record a build (before changing the code)
  sass_diff.py compare BASE NEW [--filter RE] [--expect-identical RE] [--loop-limit L]

BINARY is anything cuobjdump reads (an executable, an object, a static library, a cubin); BASE
and NEW are binaries or snapshots. --filter keeps the functions whose mangled or demangled name
matches RE; --expect-identical RE exits with status 1 when a matching function changed or is
gone (a check for a change that must not touch those kernels). Two functions are identical when
their instruction texts are, addresses aside (branch targets are offsets inside the function).
A loop is a backward branch whose body has at most L instructions (default 800, as
bench/ncu_summary.py), nested ones merged; its size is static, not executed, instructions.

cuobjdump: --cuobjdump PATH, else $CUOBJDUMP, else on PATH, in /usr/local/cuda/bin, or from the
pip wheels (`pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`: cuobjdump -sass runs
nvdisasm), which is how the development machine, whose CUDA toolkit lacks both, gets them. Exit status: 0 done (1 with
--expect-identical and a difference), 2 bad input (a file that cannot be read, a snapshot that is
not one, no cuobjdump).
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_summary import loops_of  # noqa: E402  (the same loop rule as the profiles' pages)

SNAPSHOT_FORMAT = "divcheck-sass-snapshot-1"
FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
INSTRUCTION = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
RESOURCES_NAME = re.compile(r"^\s*Function\s+(\S+?):\s*$")
RESOURCES = re.compile(r"\bREG:(\d+)\s+STACK:(\d+)\b")
LOCAL_LOAD = re.compile(r"\bLDL\b")
LOCAL_STORE = re.compile(r"\bSTL\b")


class InputError(Exception):
    pass


def find_cuobjdump(explicit):
    if explicit:  # the one named, or none
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise InputError(f"--cuobjdump {explicit}: not an executable file")
    candidates = [os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump"), "/usr/local/cuda/bin/cuobjdump"]
    for site in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        candidates += sorted(glob.glob(os.path.join(site, "nvidia", "cu*", "bin", "cuobjdump")), reverse=True)
        candidates += glob.glob(os.path.join(site, "nvidia", "cuda_cuobjdump", "bin", "cuobjdump"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise InputError("cuobjdump not found (--cuobjdump, $CUOBJDUMP, PATH, /usr/local/cuda/bin, the pip wheel "
                     "nvidia-cuda-cuobjdump): install it with `pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`")


def run_cuobjdump(tool, option, path):
    # cuobjdump -sass runs nvdisasm: the one beside it (the pip wheels put both in one folder).
    env = dict(os.environ)
    if os.path.isfile(os.path.join(os.path.dirname(tool), "nvdisasm")):
        env["NVDISASM_PATH"] = os.path.dirname(tool)
    r = subprocess.run([tool, option, path], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise InputError(f"{path}: cuobjdump {option} failed (exit {r.returncode}): {r.stderr.strip()[:300]}")
    return r.stdout


def unique(name, seen):
    """The same kernel can sit in several fatbin sections (one per translation unit): the second
    copy of a name is NAME#2, and so on, in the file's order."""
    seen[name] = seen.get(name, 0) + 1
    return name if seen[name] == 1 else f"{name}#{seen[name]}"


def parse_sass(text, loop_limit):
    functions, seen = {}, {}
    name, body = None, []

    def flush():
        if name is None:
            return
        instructions = [{"address": a, "source": s} for a, s in body]
        digest = hashlib.sha256("\n".join(s for _, s in body).encode()).hexdigest()
        loops = loops_of(instructions, loop_limit)
        functions[unique(name, seen)] = {
            "hash": digest,
            "instructions": len(body),
            "local_loads": sum(1 for _, s in body if LOCAL_LOAD.search(s)),
            "local_stores": sum(1 for _, s in body if LOCAL_STORE.search(s)),
            "loops": [last - first + 1 for first, last in loops],
        }

    for line in text.splitlines():
        m = FUNCTION.match(line)
        if m:
            flush()
            name, body = m.group(1), []
            continue
        m = INSTRUCTION.match(line)
        if m and name is not None:
            body.append((int(m.group(1), 16), m.group(2)))
    flush()
    return functions


def parse_resources(text):
    resources, seen, name = {}, {}, None
    for line in text.splitlines():
        m = RESOURCES_NAME.match(line)
        if m:
            name = unique(m.group(1), seen)
            continue
        m = RESOURCES.search(line)
        if m and name is not None:
            resources[name] = {"registers": int(m.group(1)), "stack": int(m.group(2))}
            name = None
    return resources


def snapshot_of_binary(path, tool, loop_limit):
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    functions = parse_sass(run_cuobjdump(tool, "-sass", path), loop_limit)
    if not functions:
        raise InputError(f"{path}: cuobjdump found no device functions (is it a CUDA build's binary?)")
    for name, res in parse_resources(run_cuobjdump(tool, "-res-usage", path)).items():
        if name in functions:
            functions[name].update(res)
    return {"format": SNAPSHOT_FORMAT, "source": os.path.abspath(path), "loop_limit": loop_limit,
            "functions": functions}


def read_snapshot(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: cannot read a snapshot: {e}")
    if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
        raise InputError(f"{path}: not a snapshot of sass_diff.py (\"format\" must be \"{SNAPSHOT_FORMAT}\")")
    functions = data.get("functions")
    if not isinstance(functions, dict) or not functions:
        raise InputError(f"{path}: \"functions\" must be a non-empty object")
    for name, f in functions.items():
        ok = (isinstance(f, dict) and isinstance(f.get("hash"), str)
              and all(isinstance(f.get(k), int) and f[k] >= 0 for k in ("instructions", "local_loads", "local_stores"))
              and isinstance(f.get("loops"), list) and all(isinstance(n, int) and n > 0 for n in f["loops"])
              and all(isinstance(f.get(k, 0), int) and f.get(k, 0) >= 0 for k in ("registers", "stack")))
        if not ok:
            raise InputError(f"{path}: function {name!r}: malformed record")
    return data


def load(path, tool_arg, loop_limit):
    """A snapshot from a snapshot file or a binary (binaries need cuobjdump)."""
    if path.endswith(".json"):
        return read_snapshot(path)
    return snapshot_of_binary(path, find_cuobjdump(tool_arg), loop_limit)


def demangle(names):
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    bare = [n.split("#")[0] for n in names]
    r = subprocess.run([tool], input="\n".join(bare), capture_output=True, text=True)
    lines = r.stdout.splitlines() if r.returncode == 0 else bare
    if len(lines) != len(names):
        return {n: n for n in names}
    out = {}
    for n, d in zip(names, lines):
        d = d.replace("divcheck::cuda::", "").replace("(RowKernelParams)", "").replace("void ", "", 1)
        d = re.sub(r"\(RowPaths\)(\d+)", r"RowPaths \1", d)
        out[n] = d + (f" #{n.split('#')[1]}" if "#" in n else "")
    return out


def arrow(a, b):
    return f"{a}" if a == b else f"{a} -> {b}"


def loop_change(a, b):
    """The loops that differ, by their index in the function's order (static sizes)."""
    if a == b:
        return f"loops the same ({len(a)})"
    if len(a) != len(b):
        return f"loops {a} -> {b}"
    return "loops " + ", ".join(f"#{i} {x} -> {y}" for i, (x, y) in enumerate(zip(a, b)) if x != y)


def compare(base, new, name_filter, expect_identical):
    shown = demangle(sorted(set(base["functions"]) | set(new["functions"])))
    keep = lambda n: name_filter is None or name_filter.search(n) or name_filter.search(shown[n])
    b = {n: f for n, f in base["functions"].items() if keep(n)}
    a = {n: f for n, f in new["functions"].items() if keep(n)}
    same = sorted(n for n in b if n in a and b[n]["hash"] == a[n]["hash"])
    changed = sorted(n for n in b if n in a and b[n]["hash"] != a[n]["hash"])
    added = sorted(n for n in a if n not in b)
    removed = sorted(n for n in b if n not in a)
    print(f"functions: {len(same)} identical, {len(changed)} changed, {len(added)} new, {len(removed)} gone"
          + (f" (of those matching {name_filter.pattern!r})" if name_filter else ""))
    if changed:
        print("\nchanged (base -> new): instructions; registers; stack bytes; local loads/stores; loop sizes")
        for n in changed:
            x, y = b[n], a[n]
            print(f"  {arrow(x['instructions'], y['instructions'])} instr; {arrow(x.get('registers', '?'), y.get('registers', '?'))} regs; "
                  f"{arrow(x.get('stack', '?'), y.get('stack', '?'))} stack; "
                  f"{arrow(str(x['local_loads']) + '/' + str(x['local_stores']), str(y['local_loads']) + '/' + str(y['local_stores']))} local; "
                  f"{loop_change(x['loops'], y['loops'])}: {shown[n]}")
    for title, names, side in (("new", added, a), ("gone", removed, b)):
        if names:
            print(f"\n{title}:")
            for n in names:
                f = side[n]
                print(f"  {f['instructions']} instr; {f.get('registers', '?')} regs; {f.get('stack', '?')} stack; "
                      f"{f['local_loads']}/{f['local_stores']} local: {shown[n]}")
    if expect_identical is not None:
        broken = [n for n in changed + removed if expect_identical.search(n) or expect_identical.search(shown[n])]
        if broken:
            print(f"\nexpected identical ({expect_identical.pattern!r}), but changed or gone: {len(broken)}")
            return 1
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description="Device code of two builds, function by function.")
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot", help="record a build's functions")
    snap.add_argument("binary")
    snap.add_argument("-o", "--output", required=True)
    cmp_ = sub.add_parser("compare", help="compare two builds or snapshots")
    cmp_.add_argument("base")
    cmp_.add_argument("new")
    cmp_.add_argument("--filter")
    cmp_.add_argument("--expect-identical")
    for p in (snap, cmp_):
        p.add_argument("--cuobjdump")
        p.add_argument("--loop-limit", type=int, default=800)
    args = parser.parse_args(argv)
    if args.loop_limit < 2:
        parser.error(f"--loop-limit must be at least 2, got {args.loop_limit}")
    try:
        if args.command == "snapshot":
            data = snapshot_of_binary(args.binary, find_cuobjdump(args.cuobjdump), args.loop_limit)
            with open(args.output, "w") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            print(f"{args.output}: {len(data['functions'])} functions of {args.binary}")
            return 0
        regexes = {}
        for opt in ("filter", "expect_identical"):
            text = getattr(args, opt)
            try:
                regexes[opt] = re.compile(text) if text is not None else None
            except re.error as e:
                raise InputError(f"--{opt.replace('_', '-')} {text!r}: not a regular expression: {e}")
        base = load(args.base, args.cuobjdump, args.loop_limit)
        new = load(args.new, args.cuobjdump, args.loop_limit)
        return compare(base, new, regexes["filter"], regexes["expect_identical"])
    except InputError as e:
        print(f"sass_diff.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
