#!/usr/bin/env python3
"""Dao-AILab/quack's row kernels timed by divcheck_bench's method on divcheck_bench's shapes: what
the public state of the art reaches, as a fraction of the copy, on the card where issue 3's
speed target is set (bench/RESULTS.md "How divcheck compares with public implementations").

quack (CuTe DSL kernels that split a row over a thread-block cluster, keep it on chip and read
HBM once) is the implementation the issue's target cites: "~90% of HBM on H100 for
cross-entropy". Its kernels are not divcheck's rows. Its cross-entropy takes one logit tensor and
integer targets (hard labels); divcheck's masked_cross_entropy takes two logit tensors (soft
targets) and writes both gradients. So every fraction here is over the kernel's own minimal
bytes, and what compares is how close each kernel gets to the copy, not times:

  kernel       launch (quack's API, preallocated outputs)      minimal bytes
  ce_fwd       cross_entropy_fwd_out(x, target, loss, lse)     x, target (int64), loss and lse (f32)
  ce_fwd_bwd   cross_entropy_fwd_out(..., dx): one launch       x, dx, target, loss, lse
               of the loss and dx (the upstream gradient 1)
  ce_bwd       cross_entropy_bwd_out(x, target, dloss, lse, dx) x, dx, target, dloss, lse
  softmax_fwd  _softmax_fwd(x, y)                               x, y
  softmax_bwd  _softmax_backward(dy, y, dx)                     dy, y, dx

Per column, ce_fwd_bwd does about half of what one side of divcheck's masked_cross_entropy
forward + backward does (the same maximum, exponential sums and gradient store, for one logit
tensor), over half the bytes: the closest public analogue of that row's launch.

Data as divcheck_bench: logits uniform in [-8, 8) (a fixed generator seed), targets uniform in
[0, V), softmax_bwd's dy uniform in [-1, 1). Timing as divcheck_bench and public_baselines.py
(whose Timer this uses): a CUDA event pair around one launch after a 256 MiB L2 flush; the first
launch compiles (CuTe DSL's JIT, untimed), then two warm-ups and the mean of --iters timed launches.
The yardstick is a device-to-device cudaMemcpyAsync (through CuPy's runtime binding: the call
divcheck_bench makes) of half the minimal bytes, one untimed copy first, then timed the same way
in the same process; `frac_of_copy` = (bytes / time) / copy bandwidth. A file whose yardstick
fell back to torch's copy_ (no CuPy) says so in `yardstick`.

A sanity check, not a verdict: the loss against torch's float32 cross-entropy (largest relative
difference), dx against softmax - one-hot and y against torch.softmax (largest absolute
difference), recorded per entry.

    usage: quack_baseline.py --out quack.json [--iters 10] [--time-budget 240]
           quack_baseline.py --table quack.json [--divcheck bench.json]

quack is not on the GPU machine's image: scripts/quack-pack packs it to be carried, and says how
to unpack it there and set PYTHONPATH.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# divcheck_bench's timing method and the reading of its JSON, shared (no PyTorch at import)
from public_baselines import Timer, divcheck_benchmarks  # noqa: E402

# in the order measured: the cross-entropy launches first (the comparison the target cites), so
# that a time budget spent early leaves out the softmax's
KERNELS = ["ce_fwd_bwd", "ce_fwd", "softmax_fwd", "ce_bwd", "softmax_bwd"]
SHAPES = [(8192, 128256), (4096, 256000)]
DTYPES = ["bf16", "f32"]
# divcheck_bench's configuration each kernel is read beside in --table (its row and mode)
DIVCHECK_ANALOGUE = {"ce_fwd": ("masked_cross_entropy", "fwd"), "ce_fwd_bwd": ("masked_cross_entropy", "fwd_bwd")}


def copier(torch):
    """A device-to-device copy of n bytes on the current stream, and the name of the call."""
    try:
        import cupy

        rt = cupy.cuda.runtime

        def copy(dst, src, n):
            rt.memcpyAsync(dst.data_ptr(), src.data_ptr(), n, rt.memcpyDeviceToDevice,
                           torch.cuda.current_stream().cuda_stream)
        return copy, "cudaMemcpyAsync (CuPy)"
    except Exception as e:  # noqa: BLE001 - recorded: the fallback reads ~10% lower (RESULTS.md)
        def copy(dst, src, n):
            dst[:n].copy_(src[:n])
        return copy, f"torch copy_ (CuPy unavailable: {type(e).__name__})"


def launches(torch, quack_ce, quack_sm, x, target):
    """{kernel: (prepare, launch, minimal bytes, check)} for one input: prepare() makes the
    launch's other inputs (lse, y: a forward launch, untimed); check() the sanity figures."""
    F = torch.nn.functional
    rows, vocab = x.shape
    xb = x.numel() * x.element_size()
    small = rows * (8 + 4 + 4)  # target (int64), loss, lse (f32)
    loss = torch.empty(rows, dtype=torch.float32, device="cuda")
    lse = torch.empty_like(loss)
    dx = torch.empty_like(x)
    dloss = torch.ones_like(loss)
    y = torch.empty_like(x)
    dy = torch.empty_like(x)  # filled by softmax_bwd's prepare only (the other kernels do not read it)

    def ce_checks(with_dx):
        ref = F.cross_entropy(x.float(), target, reduction="none")
        out = {"loss_max_rel_diff": float(((loss - ref).abs() / ref.abs()).max())}
        if with_dx:
            want = torch.softmax(x.float(), dim=-1)
            want[torch.arange(rows, device="cuda"), target] -= 1.0
            out["dx_max_abs_diff"] = float((dx.float() - want).abs().max())
        return out

    def sm_check():
        return {"y_max_abs_diff": float((y.float() - torch.softmax(x.float(), dim=-1)).abs().max())}

    def sm_bwd_check():
        yf, dyf = y.float(), dy.float()
        want = yf * (dyf - (yf * dyf).sum(-1, keepdim=True))
        return {"dx_max_abs_diff": float((dx.float() - want).abs().max())}

    def ce_fwd():
        quack_ce.cross_entropy_fwd_out(x, target, None, loss, lse, None, None)

    def sm_fwd():
        quack_sm._softmax_fwd(x, y)

    def sm_bwd_inputs():
        sm_fwd()
        g = torch.Generator(device="cuda")
        g.manual_seed(2)
        dy.uniform_(-1.0, 1.0, generator=g)

    def nothing():
        pass

    return {
        "ce_fwd_bwd": (nothing, lambda: quack_ce.cross_entropy_fwd_out(x, target, None, loss, lse, dx, None),
                       2 * xb + small, lambda: ce_checks(True)),
        "ce_fwd": (nothing, ce_fwd, xb + small, lambda: ce_checks(False)),
        "softmax_fwd": (nothing, sm_fwd, 2 * xb, sm_check),
        "ce_bwd": (ce_fwd, lambda: quack_ce.cross_entropy_bwd_out(x, target, dloss, lse, dx),
                   2 * xb + small, lambda: ce_checks(True)),
        "softmax_bwd": (sm_bwd_inputs, lambda: quack_sm._softmax_backward(dy, y, dx), 3 * xb, sm_bwd_check),
    }


def measure(torch, timer, copy, quack_ce, quack_sm, entry, rows, vocab, dtype, iters):
    """Time one kernel on one input into entry (ms, the yardstick, the checks, or an error)."""
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    g = torch.Generator(device="cuda")
    g.manual_seed(1)
    x = torch.empty((rows, vocab), dtype=dt, device="cuda").uniform_(-8.0, 8.0, generator=g)
    target = torch.randint(0, vocab, (rows,), device="cuda", generator=g)
    prepare, launch, nbytes, check = launches(torch, quack_ce, quack_sm, x, target)[entry["kernel"]]
    entry["bytes"] = nbytes
    try:
        prepare()
        c0 = time.time()
        launch()  # the first launch compiles (prepare's forward launch compiled its own kernel)
        torch.cuda.synchronize()
        entry["compile_s"] = time.time() - c0
        for _ in range(2):
            launch()
        ms = timer.time_ms(launch, iters)
        entry.update(check())
    except Exception as e:  # noqa: BLE001 - e.g. a shape quack does not take: recorded per entry
        entry["error"] = f"{type(e).__name__}: {str(e)[:400]}"
        return
    entry.update(ms=sum(ms) / len(ms), ms_min=min(ms), ms_max=max(ms))
    copy_bytes = nbytes // 2 // 16 * 16
    src = torch.empty(copy_bytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy(dst, src, copy_bytes)  # untimed first copy, as divcheck_bench's yardstick
    copy_ms = timer.time_ms(lambda: copy(dst, src, copy_bytes), max(5, iters))
    entry["copy_GB/s"] = 2 * copy_bytes / (sum(copy_ms) / len(copy_ms) * 1e-3) / 1e9
    entry["GB/s"] = nbytes / (entry["ms"] * 1e-3) / 1e9
    entry["frac_of_copy"] = entry["GB/s"] / entry["copy_GB/s"]


def run(args):
    import torch

    env = {"torch": torch.__version__, "device": torch.cuda.get_device_name()}
    try:
        from importlib.metadata import version

        import importlib

        # the modules by name: quack/__init__.py binds quack.cross_entropy and quack.softmax to
        # functions of the same names, which `import quack.softmax as m` would return
        quack_ce = importlib.import_module("quack.cross_entropy")
        quack_sm = importlib.import_module("quack.softmax")

        env["quack"] = version("quack-kernels")
        env["cutlass_dsl"] = version("nvidia-cutlass-dsl")
    except Exception as e:  # noqa: BLE001 - the file says why nothing was measured
        env["quack_error"] = f"{type(e).__name__}: {str(e)[:400]}"
        with open(args.out, "w") as f:
            json.dump({"env": env, "iters": args.iters, "results": []}, f, indent=1)
        print(f"quack_baseline: quack unavailable: {env['quack_error']}", file=sys.stderr)
        return 1
    copy, env["yardstick"] = copier(torch)
    timer = Timer(torch)
    t0 = time.time()
    results = []
    for kernel in args.kernels:
        for rows, vocab in args.shapes:
            for dtype in DTYPES:
                entry = {"kernel": kernel, "dtype": dtype, "shape": f"{rows}x{vocab}"}
                results.append(entry)
                if time.time() - t0 > args.time_budget:
                    entry["skipped"] = f"time budget of {args.time_budget} s spent"
                    continue
                measure(torch, timer, copy, quack_ce, quack_sm, entry, rows, vocab, dtype, args.iters)
                if "ms" in entry:
                    print(f"{kernel:12s} {dtype:4s} {rows}x{vocab} {entry['ms']:8.3f} ms  "
                          f"{entry['frac_of_copy']:.3f} of copy ({entry['copy_GB/s']:.0f} GB/s)  "
                          f"compile {entry['compile_s']:.1f} s  +{time.time() - t0:.0f} s", flush=True)
                else:
                    print(f"{kernel:12s} {dtype:4s} {rows}x{vocab} {entry['error']}", flush=True)
                torch.cuda.empty_cache()
                with open(args.out, "w") as f:  # after every entry: a call cut off keeps what finished
                    json.dump({"env": env, "iters": args.iters, "results": results}, f, indent=1)
    return 0


def table(args):
    with open(args.table) as f:
        doc = json.load(f)
    env = doc["env"]
    if "quack_error" in env:
        print(f"quack was not measured: {env['quack_error']}")
        return 1
    ours = divcheck_benchmarks(args.divcheck)
    print(f"quack {env.get('quack')} (CUTLASS DSL {env.get('cutlass_dsl')}), PyTorch {env.get('torch')} on "
          f"{env.get('device')}; yardstick {env.get('yardstick')}; {doc['iters']} timed launches each.\n")
    print("| kernel | dtype | shape | ms | fraction of the copy | copy GB/s | check | divcheck analogue |")
    print("|---|---|---|---|---|---|---|---|")
    for e in doc["results"]:
        if "skipped" in e or "error" in e:
            why = "not run" if "skipped" in e else f"error: {e['error'][:80]}"
            print(f"| {e['kernel']} | {e['dtype']} | {e['shape']} | — | {why} | — | — | — |")
            continue
        checks = ", ".join(f"{k.replace('_max_', ' ')} {v:.1e}" for k, v in e.items() if "_max_" in k)
        analogue = "—"
        if e["kernel"] in DIVCHECK_ANALOGUE:
            row, mode = DIVCHECK_ANALOGUE[e["kernel"]]
            d = ours.get((row, e["dtype"], e["shape"], mode))
            if d:
                analogue = f"{row} {mode} {d['frac_of_copy']:.2f}"
        print(f"| {e['kernel']} | {e['dtype']} | {e['shape']} | {e['ms']:.3f} | {e['frac_of_copy']:.2f} | "
              f"{e['copy_GB/s']:.0f} | {checks} | {analogue} |")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the measurements (JSON) here")
    ap.add_argument("--iters", type=int, default=10, help="timed launches per entry (>= 1)")
    ap.add_argument("--time-budget", type=float, default=240.0,
                    help="seconds; entries not started by then are recorded as not run")
    ap.add_argument("--kernels", default=",".join(KERNELS), help=f"comma-separated, of {', '.join(KERNELS)}")
    ap.add_argument("--table", help="print the Markdown table of a measurement file")
    ap.add_argument("--divcheck", help="with --table: a divcheck_bench JSON of the same card")
    args = ap.parse_args()
    args.kernels = [k for k in args.kernels.split(",") if k]
    unknown = sorted(set(args.kernels) - set(KERNELS))
    if unknown or not args.kernels:
        ap.error(f"--kernels: unknown or empty {unknown}; choose from {', '.join(KERNELS)}")
    if args.iters < 1:
        ap.error(f"--iters: must be >= 1, got {args.iters}")
    args.shapes = SHAPES
    if args.table:
        return table(args)
    if args.out:
        return run(args)
    ap.error("give --out (measure) or --table (print)")


if __name__ == "__main__":
    sys.exit(main())
