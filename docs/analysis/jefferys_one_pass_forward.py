#!/usr/bin/env python3
"""Could the Jefferys rows' forward take its loss from one-pass sums, with a fallback to the
statistics pass where the one-pass result is not accurate enough? (bench/RESULTS.md, "Reading the
misses": "A one-pass forward for the Jefferys rows, checked on paper".)

One pass gives J1 = A_p/S_y + A_q/S_x with A_p = sum e_y (t_y - t_x), A_q = sum e_x (t_x - t_y)
(the K_p + K_q of JefferysGradOnePass: the log S terms cancel). Its first-order error (units of
u = 2^-24), per side, with delta = t_y - t_x, the kernels' ex2 of relative error |t| + 4 on a t
that carries its own rounding |t|, and the kernels' summation depth s_k = ceil(V/2048) + 16:
    err_p = sum p [|delta| (2|t_y| + 6) + |t_y| + |t_x|]      (the terms)
          + s_k sum p |delta|                                 (the sum A_p)
          + |sum p delta| (sum p (2|t_y| + 4) + s_k + 1)       (S_y, the division)
A fallback test needs an upper bound of err_p computed in the kernel: either these per-column
sums (four more per side: ~6-8 instructions per column) or the row's ranges R (|t| <= R, |delta|
<= max R: no per-column cost). Against it, what the verdict allows: (c + s(V) + s(BT)) u scale(J)
with the reference's first-order scale (docs/tolerances.md, "Logit rows: building blocks":
sum |d| (P + Q) + |p - q| (a_p + a_q + |d|) + |(p - q) d|; the kernel cannot compute it, and any
test it can compute is smaller). Prints err / allowed for the benchmark's inputs (logits uniform
in [-8, 8], independent) and for distillation-like pairs (student = teacher + noise): a one-pass
forward is usable only where this ratio sits well below 1 with the test the kernel can afford.
"""
import math
import random


def sigma(n):
    return math.ceil(n / 1024) + 16


def study(y, x, rows_bt=8192, c=8):
    V = len(y)
    sk = math.ceil(V / 2048) + 16
    my, mx = max(y), max(x)
    ty, tx = [v - my for v in y], [v - mx for v in x]
    Sy, Sx = math.fsum(math.exp(t) for t in ty), math.fsum(math.exp(t) for t in tx)
    lSy, lSx = math.log(Sy), math.log(Sx)
    p, q = [math.exp(t - lSy) for t in ty], [math.exp(t - lSx) for t in tx]
    lp, lq = [t - lSy for t in ty], [t - lSx for t in tx]
    d = [a - b for a, b in zip(lp, lq)]
    delta = [a - b for a, b in zip(ty, tx)]
    J = math.fsum((a - b) * e for a, b, e in zip(p, q, d))
    # the reference's scale of J (first order)
    Ep = math.fsum(a * abs(t) for a, t in zip(p, ty))
    Eq = math.fsum(a * abs(t) for a, t in zip(q, tx))
    scale = 0.0
    for v in range(V):
        ap, aq = 2 + 2 * abs(lp[v]) + Ep, 2 + 2 * abs(lq[v]) + Eq
        scale += (abs(d[v]) * (p[v] * (ap + 1) + q[v] * (aq + 1)) + abs(p[v] - q[v]) * (ap + aq + abs(d[v])) +
                  abs((p[v] - q[v]) * d[v]))
    allowed = (c + sigma(V) + sigma(rows_bt)) * scale

    def side(w, tw, to, sgn):
        terms = math.fsum(w[v] * (abs(delta[v]) * (2 * abs(tw[v]) + 6) + abs(tw[v]) + abs(to[v])) for v in range(V))
        absd = math.fsum(w[v] * abs(delta[v]) for v in range(V))
        k = math.fsum(w[v] * sgn * delta[v] for v in range(V))
        e = math.fsum(w[v] * (2 * abs(tw[v]) + 4) for v in range(V))
        return terms + sk * absd + abs(k) * (e + sk + 1), k

    err_p, kp = side(p, ty, tx, 1)
    err_q, kq = side(q, tx, ty, -1)
    err = err_p + err_q + abs(J)
    Ry, Rx = -min(ty), -min(tx)
    R = max(Ry, Rx)

    def side_r(Rw, Ro, k):
        return R * (2 * Rw + 6) + Rw + Ro + sk * R + abs(k) * (2 * Rw + 4 + sk + 1)

    err_r = side_r(Ry, Rx, kp) + side_r(Rx, Ry, kq) + abs(J)
    lower = (c + sigma(V) + sigma(rows_bt)) * 3 * J  # scale >= 3 sum |d| (p + q) >= 3 J
    return J, err / allowed, err_r / allowed, err / lower


def main():
    rng = random.Random(1)
    V = 128256
    print("inputs (V = 128256)                       J      err/allowed  range-based  err/lower")
    y = [rng.uniform(-8, 8) for _ in range(V)]
    x = [rng.uniform(-8, 8) for _ in range(V)]
    J, r, rr, rl = study(y, x)
    print(f"benchmark: uniform [-8, 8], independent  {J:9.3g}  {r:10.3f}  {rr:10.3f}  {rl:10.3f}")
    for scale_t in (2.0, 4.0):
        teacher = [rng.gauss(0, scale_t) for _ in range(V)]
        for noise in (1.0, 0.3, 0.1, 0.03, 0.01):
            student = [t + rng.gauss(0, noise) for t in teacher]
            J, r, rr, rl = study(teacher, student)
            print(f"teacher N(0, {scale_t:g}^2) + noise {noise:<5g}      {J:9.3g}  {r:10.3f}  {rr:10.3f}  {rl:10.3f}")


if __name__ == "__main__":
    main()
