#!/usr/bin/env python3
"""The first-order error budget of a candidate Jensen-Shannon log-ratio, e = ln 2 + lp - log(p + q)
(one fast log per column instead of an exponential and a log), against what c = 8 times the
reference's scale allows for the loss term p e (docs/tolerances.md, "c per row"). Units of u.

Larger side (p >= q), a = lp - lq >= 0, L = |lp|, w = e^-a, s = 1 + w, e = ln 2 - ln s:
  the kernel spends   eta_p e + err(e) + e          (p's error times e, e's error, the product)
  with  err(e) = delta_p + (eta_p + w eta_q)/s + 1 + flog + (L + 0.7) + e
        delta_p = 2L + E + 1 (lp = t - log S), eta = 3|l| + 4 + E (p = exp(lp), the kernels' ex2),
        flog = 3.48 on [1/2, 2], else 5 |ln(p + q)| (f_fast_log, kernels/math/hd.hpp)
  the bound allows    8 ((a_p + 1) e + scale(e) + e),  scale(e) = (w e_a + 1 - w)/s + e,
        a_p = 2 + 2L + E, a_q = 2 + 2(L + a) + E, e_a = a_p + a_q + a.
Smaller side: e_q = e - a, adding a's error (delta_p + delta_q + a) and one rounding; the bound
adds e_a and the rounding (the reference's "e - a" carries both once).
Prints the worst ratio spent / allowed by the largest |lp|; above 1 the form does not fit.
bench/RESULTS.md ("The two-pass rows' forward, profiled") quotes the result: 0.93 up to |lp| = 8,
1.03 at 16, 1.14 at 76 (the tame rows' reach); the smaller side 0.33.
"""
import math

LN2 = math.log(2.0)


def ratios(L, a, E):
    w = math.exp(-a)
    s = 1.0 + w
    e = LN2 - math.log(s)
    Lq = L + a
    ap, aq = 2 + 2 * L + E, 2 + 2 * Lq + E
    ea = ap + aq + a
    eta_p, eta_q = 3 * L + 4 + E, 3 * Lq + 4 + E
    delta_p, delta_q = 2 * L + E + 1, 2 * Lq + E + 1
    ln_pq = abs(math.log(math.exp(-L) + math.exp(-Lq)))
    flog = 3.48 if math.exp(-L) * s >= 0.5 else 5 * ln_pq
    err_e = delta_p + (eta_p + w * eta_q) / s + 1 + flog + (L + 0.7) + e
    scale_e = (w * ea + 1 - w) / s + e
    big = (eta_p * e + err_e + e) / (8 * ((ap + 1) * e + scale_e + e))
    eq = abs(e - a)
    err_a = delta_p + delta_q + a
    small = (eta_q * eq + err_e + err_a + 2 * eq) / (8 * ((aq + 1) * eq + scale_e + ea + 2 * eq))
    return big, small


def main():
    for l_max in (8, 16, 32, 48, 64, 76):
        big = small = 0.0
        for E in (0.0, 1.0, 5.0, 20.0):
            for i in range(0, int(l_max * 4) + 1):
                for j in range(1, 801):
                    b, s = ratios(i * 0.25, j * 0.1, E)
                    big, small = max(big, b), max(small, s)
        print(f"|lp| <= {l_max:2d}: worst spent/allowed, larger side {big:.3f}, smaller side {small:.3f}")


if __name__ == "__main__":
    main()
