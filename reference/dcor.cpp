// Reference for masked_unbiased_dcor (SPEC.md): unbiased distance correlation of the valid
// samples, with gradients to both sample tensors.
//
// Value. X (N x D1), Y (N x D2) are the valid positions in (b, t) order; eps = safety * 2^-23;
// a_ij = sqrt(|x_i - x_j|^2 + eps) (i != j), a_ii = 0; U-centring with row sums r_i (the matrix is
// symmetric, so column sums equal row sums) and total t:
//   A~_ij = a_ij - r_i/(N-2) - r_j/(N-2) + t/((N-1)(N-2)),  A~_ii = 0;
//   V(X,Y) = sum_{i!=j} A~_ij B~_ij / (N(N-3));  R = V(X,Y) / (sqrt(max(V(X,X),0) max(V(Y,Y),0)) + eps);
//   result = clamp(R, 0, 1); 0 when N < 4.
//
// Gradient (derivation). Let P be U-centring as a linear map on symmetric zero-diagonal N x N
// matrices with <A, B> = sum_{i!=j} A_ij B_ij. P is self-adjoint (expanding <P A, B> gives
// sum A B - sum_i r^A_i r^B_i * 2/(N-2) + t^A t^B/((N-1)(N-2)), symmetric in A and B) and
// idempotent (rows of P A sum to zero, so centring again changes nothing): an orthogonal
// projection. Hence <P A, P B> = <A, P B> and, for a symmetric perturbation dA,
//   dV(X,Y) = <dA, B~> / (N(N-3)),   dV(X,X) = 2 <dA, A~> / (N(N-3)).
// With M_X = max(V(X,X), 0), den = sqrt(M_X) sqrt(M_Y) + eps and R = V(X,Y) / den,
//   dR = dV(X,Y)/den - R/den * ( [V(X,X) > 0] sqrt(M_Y) / (2 sqrt(M_X)) dV(X,X) + (Y likewise) ),
// so the coefficient of dA_ij is C^X_ij = (B~_ij - R kX A~_ij) / (N(N-3) den) with
// kX = [V(X,X) > 0] sqrt(M_Y)/sqrt(M_X) (and C^Y with the roles swapped). a_ij and a_ji both move
// with x_i, and d a_ij / d x_i = (x_i - x_j) / a_ij, so
//   d result / d x_i = 2 sum_{j != i} C^X_ij (x_i - x_j) / a_ij     (0 where a_ij = 0: sgn(0) = 0),
// times the upstream g; 0 where the clamp is active (R <= 0 or R >= 1: ties give 0).
//
// Scales: the same formulas in running-error arithmetic (reference/running_error.hpp); products
// of two centred quantities keep the second-order term, because for degenerate samples both
// factors can be pure rounding noise. Allowances (jump): where R is within its own bound of 0 or
// 1 the clamp may go either way in float32, allowance = |unclamped gradient|; where V(X,X) is
// within its bound of 0, allowance = |the kX term| (with sqrt(M_X) replaced by the square root of
// that bound if smaller), Y likewise.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference/real_engine.hpp"
#include "reference/running_error.hpp"

namespace divcheck::ref {
namespace {

// One side's distances and U-centring, in R and in running-error arithmetic.
template <class R>
struct Centred {
  std::int64_t n = 0, d = 0;
  std::vector<R> x;               // n x d samples
  std::vector<double> xd;         // as doubles
  std::vector<R> dist;            // a_ij (n x n)
  std::vector<R> cen;             // A~_ij
  std::vector<Err> dist_err, cen_err;

  void build(const R& eps, double eps_d, double u2) {
    const auto nn = static_cast<std::size_t>(n * n);
    dist.assign(nn, R(0));
    cen.assign(nn, R(0));
    dist_err.assign(nn, Err{});
    cen_err.assign(nn, Err{});
    const Err EPS = param_err(eps_d);
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = i + 1; j < n; ++j) {
        R s = 0;
        ErrSum se;
        for (std::int64_t k = 0; k < d; ++k) {
          const R diff = x[i * d + k] - x[j * d + k];
          s += diff * diff;
          const Err DF = rounded(xd[i * d + k] - xd[j * d + k]);
          se.add(mul(DF, DF));
        }
        const R a = sqrt(s + eps);
        const Err A = sqrt_err(add(se.get(), EPS), u2);
        dist[i * n + j] = dist[j * n + i] = a;
        dist_err[i * n + j] = dist_err[j * n + i] = Err{to_double(a), A.e};
      }
    }
    std::vector<R> r(static_cast<std::size_t>(n), R(0));
    std::vector<ErrSum> re(static_cast<std::size_t>(n));
    R t = 0;
    ErrSum te;
    for (std::int64_t i = 0; i < n; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        r[i] += dist[i * n + j];
        re[i].add(dist_err[i * n + j]);
      }
      t += r[i];
      te.add(re[i].get());
    }
    const R n2 = R(n - 2), n12 = R(n - 1) * R(n - 2);
    const Err N2 = param_err(static_cast<double>(n - 2));
    const Err N12 = param_err(static_cast<double>((n - 1) * (n - 2)));
    const Err TT = div(te.get(), N12);
    for (std::int64_t i = 0; i < n; ++i) {
      const Err RI = div(re[i].get(), N2);
      for (std::int64_t j = 0; j < n; ++j) {
        if (i == j) continue;
        cen[i * n + j] = dist[i * n + j] - r[i] / n2 - r[j] / n2 + t / n12;
        const Err RJ = div(re[j].get(), N2);
        Err C = add(sub(sub(dist_err[i * n + j], RI), RJ), TT);
        C.v = to_double(cen[i * n + j]);
        cen_err[i * n + j] = C;
      }
    }
  }
};

template <class R>
R inner(const Centred<R>& a, const Centred<R>& b) {
  R s = 0;
  for (std::int64_t i = 0; i < a.n * a.n; ++i) s += a.cen[i] * b.cen[i];
  return s;
}
template <class R>
Err inner_err(const Centred<R>& a, const Centred<R>& b, double u2) {
  ErrSum s;
  for (std::int64_t i = 0; i < a.n * a.n; ++i) s.add(mul2(a.cen_err[i], b.cen_err[i], u2));
  return s.get();
}

}  // namespace

template <class R>
RealResult<R> dcor_real(const RealInputs<R>& in) {
  const Case& c = *in.c;
  const RoleView<R> xv = in.view("samples_1"), yv = in.view("samples_2");
  const Tensor* mask = c.input("attention_mask");
  const std::int64_t BT = xv.tensor->dim(0) * xv.tensor->dim(1);
  const std::int64_t D1 = xv.tensor->dim(2), D2 = yv.tensor->dim(2);

  RealResult<R> res;
  res.loss.resize(1);
  const bool want_x = c.wants("samples_1"), want_y = c.wants("samples_2");
  RealTensor<R>* gx = nullptr;
  RealTensor<R>* gy = nullptr;
  if (want_x) (gx = &res.grads["samples_1"])->resize(BT * D1);
  if (want_y) (gy = &res.grads["samples_2"])->resize(BT * D2);
  const double g = (want_x || want_y) ? c.grad_output.get(0) : 0.0;

  std::vector<std::int64_t> idx;
  for (std::int64_t i = 0; i < BT; ++i)
    if (mask->nonzero(i)) idx.push_back(i);
  const auto N = static_cast<std::int64_t>(idx.size());
  if (N < 4) return res;  // 0, gradients 0

  Centred<R> X, Y;
  X.n = Y.n = N;
  X.d = D1;
  Y.d = D2;
  bool finite = true;
  auto load = [&](Centred<R>& s, const RoleView<R>& view) {
    s.x.resize(static_cast<std::size_t>(N * s.d));
    s.xd.resize(static_cast<std::size_t>(N * s.d));
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t k = 0; k < s.d; ++k) {
        s.x[i * s.d + k] = view.at(idx[i] * s.d + k);
        s.xd[i * s.d + k] = view.at_double(idx[i] * s.d + k);
        finite = finite && is_finite(s.x[i * s.d + k]);
      }
  };
  load(X, xv);
  load(Y, yv);
  auto fill_valid = [&](RealTensor<R>* t, std::int64_t d, const R& val) {
    if (!t) return;
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t k = 0; k < d; ++k) t->value[idx[i] * d + k] = val;
  };
  if (!finite) {
    res.loss.value[0] = r_nan<R>();
    fill_valid(gx, D1, r_nan<R>());
    fill_valid(gy, D2, r_nan<R>());
    return res;
  }

  // The verdict's unit for dcor outputs: (c + sigma(N^2) + sigma(D1 + D2)) u (properties'
  // tolerance model); used for second-order terms, square roots near 0 and the allowances.
  const DivergenceInfo& di = info(c.id);
  const double u2 = (di.tolerance.loss_c + summation_depth_of(N * N) + summation_depth_of(D1 + D2)) * kU32;
  const R eps = R(c.params.safety_factor) / R(8388608);  // 2^-23, exact
  const double eps_d = c.params.safety_factor / 8388608.0;
  X.build(eps, eps_d, u2);
  Y.build(eps, eps_d, u2);

  const R norm = R(N) * R(N - 3);
  const Err NORM = param_err(static_cast<double>(N) * static_cast<double>(N - 3));
  const R vxy = inner(X, Y) / norm, vxx = inner(X, X) / norm, vyy = inner(Y, Y) / norm;
  const Err VXY = div(inner_err(X, Y, u2), NORM), VXX = div(inner_err(X, X, u2), NORM),
            VYY = div(inner_err(Y, Y, u2), NORM);
  const R mx = vxx > 0 ? vxx : R(0), my = vyy > 0 ? vyy : R(0);
  const R den = sqrt(mx * my) + eps;
  const R ratio = vxy / den;
  const Err MX{std::max(to_double(vxx), 0.0), VXX.e}, MY{std::max(to_double(vyy), 0.0), VYY.e};
  const Err DEN = add(sqrt_err(mul2(MX, MY, u2), u2), param_err(eps_d));
  const Err RATIO = div(VXY, DEN);

  if (is_nan(ratio)) {  // 0 / 0: only possible with eps = 0 and V(X,X) V(Y,Y) <= 0 and V(X,Y) = 0
    res.loss.value[0] = r_nan<R>();
    fill_valid(gx, D1, r_nan<R>());
    fill_valid(gy, D2, r_nan<R>());
    return res;
  }
  const bool clamped = !(ratio > 0 && ratio < 1);
  res.loss.value[0] = ratio < 0 ? R(0) : (ratio > 1 ? R(1) : ratio);
  res.loss.scale[0] = is_finite(ratio) ? RATIO.e : 0.0;

  const double bound_r = u2 * RATIO.e;
  const double rd = to_double(ratio);
  const bool clamp_ambiguous = is_finite(ratio) && (std::fabs(rd) <= bound_r || std::fabs(rd - 1.0) <= bound_r);
  // A clamp float32 resolves the same way returns exactly 0 or 1: scale 0 (a structural 0).
  if (clamped && !clamp_ambiguous) res.loss.scale[0] = 0.0;
  // A clamp float32 cannot resolve: a 0 here is not an exact zero (float32 may not clamp).
  if (clamped && clamp_ambiguous) res.loss.ambiguous_zero[0] = 1;
  if (!gx && !gy) return res;
  if (clamped && !clamp_ambiguous) return res;  // gradients exactly 0

  // Unclamped gradient of one side (value, scale, and the k-term for the max(.,0) allowance).
  const R k_all = R(1) / (norm * den);
  const Err K_ALL = div(exact(1.0), mul(NORM, DEN));
  const Err SQX = sqrt_err(MX, u2), SQY = sqrt_err(MY, u2);
  auto side = [&](RealTensor<R>* out, const Centred<R>& S, const Centred<R>& O, const R& v_self, const R& m_self,
                  const R& m_other, const Err& V_SELF, const Err& SQ_SELF, const Err& SQ_OTHER) {
    if (!out) return;
    const std::int64_t d = S.d;
    const bool active = v_self > 0;
    const R kappa = active ? R(sqrt(m_other) / sqrt(m_self)) : R(0);
    const Err KAPPA = active ? div(SQ_OTHER, SQ_SELF) : Err{};
    // max(V_self, 0) ambiguity: kappa evaluated at the larger of |V_self| and its bound.
    const double v_bound = u2 * V_SELF.e;
    const bool max_ambiguous = std::fabs(to_double(v_self)) <= v_bound;
    const double kappa_alt =
        max_ambiguous ? std::sqrt(to_double(m_other)) / std::sqrt(std::max(std::fabs(to_double(v_self)), v_bound)) : 0.0;
    const Err RK = mul(RATIO, KAPPA);
    std::vector<R> acc(static_cast<std::size_t>(d));
    std::vector<ErrSum> acc_e(static_cast<std::size_t>(d));
    std::vector<double> kterm(static_cast<std::size_t>(d));
    for (std::int64_t i = 0; i < N; ++i) {
      std::fill(acc.begin(), acc.end(), R(0));
      std::fill(acc_e.begin(), acc_e.end(), ErrSum{});
      std::fill(kterm.begin(), kterm.end(), 0.0);
      for (std::int64_t j = 0; j < N; ++j) {
        if (j == i) continue;
        const std::int64_t ij = i * N + j;
        if (S.dist[ij] == 0) continue;  // coincident samples with eps = 0: sgn(0) = 0
        const R coef = k_all * (O.cen[ij] - ratio * kappa * S.cen[ij]) / S.dist[ij];
        const Err COEF = div(mul(K_ALL, sub(O.cen_err[ij], mul(RK, S.cen_err[ij]))), S.dist_err[ij]);
        const double kcoef = to_double(S.cen[ij]) / to_double(S.dist[ij]);
        for (std::int64_t k = 0; k < d; ++k) {
          const R diff = S.x[i * d + k] - S.x[j * d + k];
          acc[k] += coef * diff;
          acc_e[k].add(mul(COEF, rounded(S.xd[i * d + k] - S.xd[j * d + k])));
          kterm[k] += kcoef * (S.xd[i * d + k] - S.xd[j * d + k]);
        }
      }
      const double kfac = 2.0 * std::fabs(g) * to_double(k_all) * std::fabs(rd) * kappa_alt;
      for (std::int64_t k = 0; k < d; ++k) {
        const std::int64_t o = idx[i] * d + k;
        const R val = 2 * R(g) * acc[k];
        const Err VAL = scaled_exact(mul(exact(g), acc_e[k].get()), 2.0);
        out->value[o] = clamped ? R(0) : val;
        out->scale[o] = VAL.e;  // clamped here means ambiguous: float32 may return the unclamped value
        out->ambiguous_zero[o] = clamped ? 1 : 0;
        double jump = 0.0;
        if (clamp_ambiguous) jump += std::fabs(to_double(val));
        if (max_ambiguous) jump += kfac * std::fabs(kterm[k]);
        out->jump[o] = jump;
      }
    }
  };
  side(gx, X, Y, vxx, mx, my, VXX, SQX, SQY);
  side(gy, Y, X, vyy, my, mx, VYY, SQY, SQX);
  return res;
}

template RealResult<Float128> dcor_real(const RealInputs<Float128>&);
template RealResult<Mpfr50> dcor_real(const RealInputs<Mpfr50>&);

}  // namespace divcheck::ref
