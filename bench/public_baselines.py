#!/usr/bin/env python3
"""Public baselines beside divcheck_bench: the same rows, shapes, dtypes and data, computed the
ways an engineer maintaining LLM losses would otherwise compute them, timed by divcheck_bench's
method, so that bench/RESULTS.md can say how divcheck's kernels compare.

Implementations (each where it exists for the row):
  eager    PyTorch eager formulas of SPEC.md (log_softmax in float32, then the row's terms);
  compile  the same function through torch.compile (Inductor's generated Triton kernels;
           fullgraph, static shapes; compiled during the warm-up, which is not timed);
  liger    Liger-Kernel's Triton kernels: LigerKLDIVLoss (log_target, batchmean) and LigerJSD
           (beta 0.5) on float32 log-softmax inputs, and LigerTVDLoss (batchmean) for tvd_prob.
           Liger's KL and JSD differentiate their first argument only (the student, q), so in
           the fwd_bwd mode they write one gradient where the row asks for two: such a result is
           marked `partial_gradients` and its fraction is an upper bound for the row's whole task;
           in the fwd_bwd_student mode (the q side's gradient only, the distillation case, as
           divcheck_bench's mode of that name) they do the whole task.

Data and shapes as divcheck_bench (bench/bench_runner.cpp): B = 8 sequences of rows/8 positions,
every position valid (a uint8 mask), logits uniform in [-8, 8), tvd_prob's probability rows
uniform in [0, 2/V); temperature rows at T = 2; upstream gradient 1.

Timing as divcheck_bench: a CUDA event pair around one computation (forward: the loss; forward +
backward: the loss and torch.autograd.grad of every gradient the row has, or of the q side's
only in fwd_bwd_student), the L2 flushed before
each (a 256 MiB memset), two warm-up computations (three for compile), then the mean of
--iters timed ones. Minimal bytes as divcheck_bench: both inputs read once, the mask (logit rows),
each gradient written once; the yardstick is a device-to-device copy of half those bytes, timed
the same way in the same process; `frac_of_copy` = (bytes / time) / copy bandwidth.

Extra memory: the peak allocated during one computation above what was allocated before it,
minus the results (loss, gradients): the temporaries an implementation needs. divcheck's figure
is its workspace (divcheck_bench's `workspace_bytes` counter).

A sanity check, not a verdict: every implementation's loss is compared with the eager one (same
inputs; relative difference recorded, flagged above 1e-3). divcheck's correctness is the gate's.

    usage: public_baselines.py --out baselines.json [--iters 10] [--time-budget 300]
                               [--only compile,liger] [--rows masked_kl_divergence,...]
           public_baselines.py --table baselines.json [--divcheck bench.json]
           public_baselines.py --verify CASE.safetensors ...   (then divcheck verify-results)
"""
import argparse
import json
import math
import sys
import time

ROWS = [  # (registry id, kind): the order of divcheck_bench
    ("masked_kl_divergence", "logit"),
    ("masked_jefferys_divergence", "logit"),
    ("masked_cross_entropy", "logit"),
    ("jefferys_divergence", "logit"),
    ("jensen_shannon_divergence", "logit"),
    ("squared_hellinger_distance", "logit"),
    ("total_variation", "logit"),
    ("temperature_scaled_masked_kl_divergence", "logit"),
    ("temperature_scaled_masked_jefferys_divergence", "logit"),
    ("tvd_prob", "prob"),
]
SHAPES = [(8192, 128256), (4096, 256000)]
DTYPES = ["bf16", "f32"]
MODES = ["fwd", "fwd_bwd", "fwd_bwd_student"]  # the last: the q side's gradient only (logit rows)
SEQUENCES = 8
TEMPERATURE = 2.0
FLUSH_BYTES = 256 << 20
DEVICE = "cuda"  # --smoke on a machine without a GPU: "cpu" (wall-clock timing, no memory figures)


def formulas(torch):
    """The rows' losses in PyTorch as SPEC.md writes them, as an engineer would write them:
    fn(p, q, mask, opts) with p the target/clean/teacher side, q the input/noisy/student side,
    mask (B, T) and opts {temperature, support (B, T, V) or None, reduction "mean" | "none",
    max_loss, scaling_factor}. The logs are float32 log-softmax (masked_jefferys' probability
    path is the same function). No edge-case selects (0 log 0, padded columns): the benchmark's
    logits are finite; `--verify` checks these formulas against divcheck's reference on its
    random_logits cases."""
    F = torch.nn.functional
    LN2 = math.log(2.0)

    def logs(p, q, opts):
        t = opts.get("temperature", 1.0)
        if t != 1.0:
            p, q = p.float() / t, q.float() / t
        return F.log_softmax(p, -1, dtype=torch.float32), F.log_softmax(q, -1, dtype=torch.float32)

    def row_sum(terms, opts):
        s = opts.get("support")
        return (terms if s is None else torch.where(s != 0, terms, 0.0)).sum(-1)

    def seq_mean(ell, mask, opts):  # per-sequence masked mean; then the batch mean, or the vector
        m = mask != 0
        per_seq = torch.where(m, ell, 0.0).sum(1) / m.sum(1).clamp_min(1).to(torch.float32)
        return per_seq if opts.get("reduction", "mean") == "none" else per_seq.mean()

    def token_mean(ell, mask, opts):
        m = mask != 0
        return torch.where(m, ell, 0.0).sum() / m.sum().clamp_min(1).to(torch.float32)

    def kl_terms(p, q, opts):
        lp, lq = logs(p, q, opts)
        return F.kl_div(lq, lp, reduction="none", log_target=True)

    def jefferys_terms(p, q, opts):
        lp, lq = logs(p, q, opts)
        return (lp.exp() - lq.exp()) * (lp - lq)

    def kl(p, q, mask, opts):
        return seq_mean(row_sum(kl_terms(p, q, opts), opts), mask, opts)

    def jefferys(p, q, mask, opts):
        return seq_mean(row_sum(jefferys_terms(p, q, opts), opts), mask, opts)

    def ce(p, q, mask, opts):
        lp, lq = logs(p, q, opts)
        ell = row_sum(-(lp.exp() * lq), opts)
        if opts.get("max_loss") is not None:
            ell = opts["max_loss"] * torch.tanh(opts.get("scaling_factor", 1.0) * ell / opts["max_loss"])
        return seq_mean(ell, mask, opts)

    def js(p, q, mask, opts):
        lp, lq = logs(p, q, opts)
        lm = torch.logaddexp(lp, lq) - LN2
        return seq_mean(row_sum(0.5 * (lp.exp() * (lp - lm) + lq.exp() * (lq - lm)), opts), mask, opts)

    def hellinger(p, q, mask, opts):
        lp, lq = logs(p, q, opts)
        return seq_mean(0.5 * row_sum((torch.exp(0.5 * lp) - torch.exp(0.5 * lq)) ** 2, opts), mask, opts)

    def tv(p, q, mask, opts):
        lp, lq = logs(p, q, opts)
        return seq_mean(0.5 * row_sum((lp.exp() - lq.exp()).abs(), opts), mask, opts)

    def ts_kl(p, q, mask, opts):
        return token_mean(row_sum(kl_terms(p, q, opts), opts), mask, opts)

    def ts_jefferys(p, q, mask, opts):
        return token_mean(row_sum(jefferys_terms(p, q, opts), opts), mask, opts)

    def tvd_prob(p, q, mask, opts):  # (N, V) probability rows, batchmean
        return 0.5 * (p.float() - q.float()).abs().sum() / p.shape[0]

    return {
        "masked_kl_divergence": kl,
        "masked_jefferys_divergence": jefferys,
        "masked_cross_entropy": ce,
        "jefferys_divergence": jefferys,
        "jensen_shannon_divergence": js,
        "squared_hellinger_distance": hellinger,
        "total_variation": tv,
        "temperature_scaled_masked_kl_divergence": ts_kl,
        "temperature_scaled_masked_jefferys_divergence": ts_jefferys,
        "tvd_prob": tvd_prob,
    }


def bench_opts(row):
    """The options divcheck_bench runs each row with (registry defaults; T = 2)."""
    return {"temperature": TEMPERATURE} if row.startswith("temperature_scaled") else {}


def liger_formulas(torch):
    """Liger-Kernel's counterparts, or {} when it is not importable (recorded, not an error)."""
    try:
        from liger_kernel.transformers import LigerJSD, LigerKLDIVLoss, LigerTVDLoss
    except Exception as e:  # noqa: BLE001 - any import failure means "not available"
        return {}, f"{type(e).__name__}: {e}"
    F = torch.nn.functional
    kl_loss = LigerKLDIVLoss(reduction="batchmean", log_target=True)
    jsd_loss = LigerJSD(beta=0.5)
    tvd_loss = LigerTVDLoss(reduction="batchmean")

    def flat_logs(p, q):
        v = p.shape[-1]
        return (F.log_softmax(p, -1, dtype=torch.float32).reshape(-1, v),
                F.log_softmax(q, -1, dtype=torch.float32).reshape(-1, v))

    def kl(p, q, mask, opts):  # every position valid: batchmean over rows = the per-sequence mean's mean
        lp, lq = flat_logs(p, q)
        return kl_loss(lq, lp)

    def js(p, q, mask, opts):  # LigerJSD(log_q = student, log_p = teacher); beta 0.5 is SPEC's JS
        lp, lq = flat_logs(p, q)
        return jsd_loss(lq, lp)

    def tvd(p, q, mask, opts):
        return tvd_loss(p, q)

    # the gradients each one writes: Liger's KL and JSD differentiate their input (q) only
    return {
        "masked_kl_divergence": (kl, ("q",)),
        "jensen_shannon_divergence": (js, ("q",)),
        "tvd_prob": (tvd, ("p",)),
    }, None


class Timer:
    def __init__(self, torch):
        self.cuda = DEVICE == "cuda"
        self.flush = torch.empty(FLUSH_BYTES if self.cuda else 1, dtype=torch.uint8, device=DEVICE)
        if self.cuda:
            self.start = torch.cuda.Event(enable_timing=True)
            self.stop = torch.cuda.Event(enable_timing=True)
        self.k = 0

    def time_ms(self, fn, iters):
        out = []
        for _ in range(iters):
            self.k += 1
            self.flush.fill_(self.k & 0xFF)
            if not self.cuda:
                t = time.perf_counter()
                fn()
                out.append((time.perf_counter() - t) * 1e3)
                continue
            self.start.record()
            fn()
            self.stop.record()
            self.stop.synchronize()
            out.append(self.start.elapsed_time(self.stop))
        return out


def make_inputs(torch, rows, vocab, dtype, kind):
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    g = torch.Generator(device=DEVICE)
    g.manual_seed(1)
    shape = (rows, vocab) if kind == "prob" else (SEQUENCES, rows // SEQUENCES, vocab)
    lo, hi = (0.0, 2.0 / vocab) if kind == "prob" else (-8.0, 8.0)
    p = torch.empty(shape, dtype=dt, device=DEVICE).uniform_(lo, hi, generator=g)
    q = torch.empty(shape, dtype=dt, device=DEVICE).uniform_(lo, hi, generator=g)
    mask = torch.ones((SEQUENCES, rows // SEQUENCES), dtype=torch.uint8, device=DEVICE)
    return p, q, mask


def minimal_bytes(p, kind, mode):
    tensor = p.numel() * p.element_size()
    reads = 2 * tensor + (0 if kind == "prob" else p.numel() // p.shape[-1])
    writes = 0 if mode == "fwd" else (1 if kind == "prob" or mode == "fwd_bwd_student" else 2) * tensor
    return reads + writes


def run(args):
    import torch

    # one compiled function per row and mode serves 2 shapes x 2 dtypes (a recompile each; the
    # functions share their code objects, whose default limit of 8 recompiles would be reached)
    torch._dynamo.config.cache_size_limit = 64
    eager = formulas(torch)
    liger, liger_error = liger_formulas(torch) if "liger" in args.only else ({}, "not requested")
    timer = Timer(torch)
    rows = [r for r in ROWS if not args.rows or r[0] in args.rows]
    t0 = time.time()
    results = []
    env = {"torch": torch.__version__, "liger": None,
           "device": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (smoke run)"}
    try:
        import liger_kernel  # noqa: F401
        from importlib.metadata import version

        env["liger"] = version("liger-kernel")
    except Exception:  # noqa: BLE001
        env["liger_error"] = liger_error
    try:
        import triton

        env["triton"] = triton.__version__
    except Exception:  # noqa: BLE001
        pass
    compiled = {}
    for rows_n, vocab in args.shapes:
        for dtype in DTYPES:
            for row, kind in rows:
                p0, q0, mask = make_inputs(torch, rows_n, vocab, dtype, kind)
                reference = {}
                for mode in MODES:
                    if mode == "fwd_bwd_student" and kind == "prob":
                        continue  # tvd_prob has one gradient
                    nbytes = minimal_bytes(p0, kind, mode)
                    copy_elems = nbytes // 2 // 16 * 16
                    src = torch.empty(copy_elems, dtype=torch.uint8, device=DEVICE)
                    dst = torch.empty_like(src)
                    dst.copy_(src)  # untimed first copy, as divcheck_bench's yardstick (bench_runner.cpp)
                    copy_ms = timer.time_ms(lambda: dst.copy_(src), max(5, args.iters))
                    del src, dst
                    copy_gbps = 2 * copy_elems / (sum(copy_ms) / len(copy_ms) * 1e-3) / 1e9
                    whole = ("p",) if kind == "prob" else ("q",) if mode == "fwd_bwd_student" else ("p", "q")
                    variants = [("eager", eager[row], whole)]
                    if "compile" in args.only:
                        key = (row, mode)
                        if key not in compiled:
                            compiled[key] = torch.compile(eager[row], fullgraph=True, dynamic=False)
                        variants.append(("compile", compiled[key], variants[0][2]))
                    if row in liger:
                        variants.append(("liger", *liger[row]))
                    for impl, fn, grad_sides in variants:
                        entry = {"row": row, "dtype": dtype, "shape": f"{rows_n}x{vocab}", "mode": mode,
                                 "impl": impl, "bytes": nbytes, "copy_GB/s": copy_gbps}
                        if time.time() - t0 > args.time_budget:
                            entry["skipped"] = f"time budget of {args.time_budget} s spent"
                            results.append(entry)
                            continue
                        entry["partial_gradients"] = mode != "fwd" and set(grad_sides) != set(whole)
                        try:
                            entry.update(measure(torch, timer, fn, p0, q0, mask, bench_opts(row), mode, grad_sides,
                                                 args.iters, 3 if impl == "compile" else 2))
                        except Exception as e:  # noqa: BLE001 - e.g. out of memory: recorded per entry
                            entry["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                            if DEVICE == "cuda":
                                torch.cuda.empty_cache()
                            results.append(entry)
                            continue
                        entry["GB/s"] = nbytes / (entry["ms"] * 1e-3) / 1e9
                        entry["frac_of_copy"] = entry["GB/s"] / copy_gbps
                        if impl == "eager":
                            reference[mode] = entry["loss"]
                        elif mode in reference and reference[mode] != 0:
                            entry["loss_rel_diff_vs_eager"] = abs(entry["loss"] - reference[mode]) / abs(reference[mode])
                        results.append(entry)
                        print(f"{row:46s} {dtype:4s} {rows_n}x{vocab} {mode:15s} {impl:8s} "
                              f"{entry['ms']:8.3f} ms  {entry['frac_of_copy']:.2f} of copy  "
                              f"extra {(entry['extra_bytes'] or 0) / 2**30:6.2f} GiB  +{time.time() - t0:.0f} s",
                              flush=True)
                del p0, q0, mask
                if DEVICE == "cuda":
                    torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump({"env": env, "iters": args.iters, "results": results}, f, indent=1)


def measure(torch, timer, fn, p0, q0, mask, opts, mode, grad_sides, iters, warmups):
    if mode == "fwd":
        def once():
            with torch.no_grad():
                return (fn(p0, q0, mask, opts),)
    else:
        p = p0.detach().requires_grad_("p" in grad_sides)
        q = q0.detach().requires_grad_("q" in grad_sides)
        wrt = [t for t, side in ((p, "p"), (q, "q")) if side in grad_sides]

        def once():
            loss = fn(p, q, mask, opts)
            return (loss, *torch.autograd.grad(loss, wrt))
    for _ in range(warmups):
        out = once()
    loss = float(out[0])
    del out
    extra = None
    if DEVICE == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = once()
        torch.cuda.synchronize()
        extra = torch.cuda.max_memory_allocated() - before - sum(t.numel() * t.element_size() for t in out)
        del out
    ms = timer.time_ms(once, iters)
    return {"ms": sum(ms) / len(ms), "ms_min": min(ms), "ms_max": max(ms), "loss": loss, "extra_bytes": extra}


P_ROLES = ("target_logits", "clean_logits", "teacher_logits")
Q_ROLES = ("input_logits", "noisy_logits", "student_logits")


def verify(args):
    """Computes each divcheck case file (`divcheck export-case`) with the eager formulas, writes a
    results file beside it for `divcheck verify-results` (the loss, and each wanted gradient for
    the case's upstream gradient, in its input's dtype): the check that the timed functions are
    the rows' functions. Logit rows only (tvd_prob's formula is one line)."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    eager = formulas(torch)
    for path in args.verify:
        with safe_open(path, "pt") as f:
            meta = f.metadata()
        t = load_file(path)
        row = meta["divergence"]
        if row not in eager or row == "tvd_prob":
            raise SystemExit(f"--verify: {path}: divergence {row!r} is not a logit row of this script")
        params = json.loads(meta.get("params", "{}"))
        wants = json.loads(meta.get("wants_grad", "[]"))
        p_role = next(r for r in P_ROLES if r in t)
        q_role = next(r for r in Q_ROLES if r in t)
        mask_role = next((r for r in ("attention_mask", "position_mask") if r in t), None)
        p = t[p_role].detach().requires_grad_(p_role in wants)
        q = t[q_role].detach().requires_grad_(q_role in wants)
        mask = t[mask_role] if mask_role else torch.ones(p.shape[:2], dtype=torch.uint8)
        opts = {"temperature": float(params.get("temperature", 1.0)), "support": t.get("support_mask"),
                "reduction": params.get("reduction", "mean"), "max_loss": params.get("max_loss"),
                "scaling_factor": float(params.get("scaling_factor", 1.0))}
        loss = eager[row](p, q, mask, opts)
        out = {"loss": loss.detach().to(torch.float32).contiguous()}
        wrt = [(role, x) for role, x in ((p_role, p), (q_role, q)) if role in wants]
        if wrt:
            g = t["grad_output"].to(torch.float32)
            grads = torch.autograd.grad(loss, [x for _, x in wrt], grad_outputs=g.expand_as(loss))
            for (role, x), gr in zip(wrt, grads):
                out[f"grad.{role}"] = gr.to(x.dtype).contiguous()
        dst = path.removesuffix(".safetensors") + ".results.safetensors"
        save_file(out, dst, metadata={"divergence": row})
        print(dst)


def divcheck_benchmarks(path):
    """A divcheck_bench JSON's measured benchmarks by (row, dtype, shape, mode); {} for no path."""
    ours = {}
    if path:
        with open(path) as f:
            for b in json.load(f).get("benchmarks", []):
                if b.get("error_occurred") or b.get("run_type") == "aggregate":
                    continue
                row, dtype, shape, mode = b["name"].split("/")[:4]
                ours[(row, dtype, shape, mode)] = b
    return ours


def table(args):
    with open(args.table) as f:
        doc = json.load(f)
    ours = divcheck_benchmarks(args.divcheck)
    env = doc["env"]
    print(f"PyTorch {env.get('torch')}, Triton {env.get('triton')}, Liger-Kernel {env.get('liger') or 'absent'}"
          f" on {env.get('device')}; {doc['iters']} timed runs each.\n")
    by = {}
    for e in doc["results"]:
        by.setdefault((e["shape"], e["dtype"]), {}).setdefault((e["row"], e["mode"]), {})[e["impl"]] = e

    def cell(e, d):
        if e is None:
            return "—"
        if "skipped" in e:
            return "not run"
        if "error" in e:
            return "error"
        # against divcheck_bench's yardstick (cudaMemcpyAsync) where the file has it, so that
        # every column of a line shares one copy figure; else the script's own (torch copy_)
        frac = e["GB/s"] / d["copy_GB/s"] if d else e["frac_of_copy"]
        s = f"{frac:.2f}"
        if e.get("partial_gradients"):
            s += "†"
        if e.get("loss_rel_diff_vs_eager", 0) > 1e-3:
            s += " (loss differs)"
        return s

    for (shape, dtype), entries in by.items():
        copies = sorted({round(b["copy_GB/s"]) for (r, dt, sh, m), b in ours.items() if dt == dtype and sh == shape})
        yard = (f"divcheck_bench's copy, {copies[0]}-{copies[-1]} GB/s" if copies
                else "this script's copy (torch copy_)")
        print(f"### {shape}, {dtype}: fraction of the copy ({yard}); extra memory\n")
        print("| row | mode | divcheck | eager | compile | liger | divcheck / best public "
              "| extra: divcheck MiB | eager GiB | compile GiB | liger GiB |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for (row, mode), impls in entries.items():
            d = ours.get((row, dtype, shape, mode))
            public = [e for e in impls.values() if "ms" in e and not e.get("partial_gradients")]
            best = min((e["ms"] for e in public), default=None)
            ratio = f"{best / (d['real_time']):.2f}x" if d and best else "—"
            dcell = f"{d['frac_of_copy']:.2f}" if d else "—"
            dmem = f"{d['workspace_bytes'] / 2**20:.2f}" if d and "workspace_bytes" in d else "—"

            def mem(e):
                return f"{e['extra_bytes'] / 2**30:.2f}" if e and e.get("extra_bytes") is not None else "—"
            print(f"| {row} | {mode} | {dcell} | {cell(impls.get('eager'), d)} | {cell(impls.get('compile'), d)} | "
                  f"{cell(impls.get('liger'), d)} | {ratio} | {dmem} | {mem(impls.get('eager'))} | "
                  f"{mem(impls.get('compile'))} | {mem(impls.get('liger'))} |")
        print()
    print("divcheck / best public: the fastest public implementation's mean time over divcheck's "
          "(> 1: divcheck is faster).")
    print("† writes the student's gradient only (Liger's KL and JSD differentiate their input alone): "
          "an upper bound for the row's task, left out of the best-public ratio.")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the measurements (JSON) here")
    ap.add_argument("--iters", type=int, default=10, help="timed computations per entry (>= 1)")
    ap.add_argument("--time-budget", type=float, default=300.0,
                    help="seconds; entries not started by then are recorded as not run")
    ap.add_argument("--only", default="eager,compile,liger", help="which public implementations (eager always runs)")
    ap.add_argument("--rows", default="", help="comma-separated registry ids (default: all ten)")
    ap.add_argument("--smoke", action="store_true",
                    help="one small shape (64 x 1000), on the CPU where no GPU is: the script's own check")
    ap.add_argument("--table", help="print the Markdown tables of a measurement file")
    ap.add_argument("--divcheck", help="with --table: a divcheck_bench JSON of the same call")
    ap.add_argument("--verify", nargs="+", metavar="CASE",
                    help="compute divcheck case files with the eager formulas (CASE.results.safetensors)")
    args = ap.parse_args()
    args.only = set(filter(None, args.only.split(",")))
    unknown = args.only - {"eager", "compile", "liger"}
    if unknown:
        ap.error(f"--only: unknown implementation(s) {sorted(unknown)}; choose from eager, compile, liger")
    args.rows = set(filter(None, args.rows.split(",")))
    known = {r for r, _ in ROWS}
    if args.rows - known:
        ap.error(f"--rows: unknown row(s) {sorted(args.rows - known)}")
    if args.iters < 1:
        ap.error(f"--iters: must be >= 1, got {args.iters}")
    args.shapes = SHAPES
    if args.smoke:
        global DEVICE
        import torch

        DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
        args.shapes = [(64, 1000)]
    if args.verify:
        verify(args)
    elif args.table:
        table(args)
    elif args.out:
        run(args)
    else:
        ap.error("give --out (measure) or --table (print)")


if __name__ == "__main__":
    sys.exit(main())
