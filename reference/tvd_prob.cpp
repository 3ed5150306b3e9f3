// Reference for tvd_prob (SPEC.md "tvd_prob"): total variation on probability rows, as in the
// public LigerTVDLoss. Per valid row l = 1/2 sum_v |p - q|; reduction batchmean (k = 1/n_valid),
// mean (k = 1/(n_valid V)), sum (k = 1), or none ((N, V) elementwise 1/2 |p - q|). Gradient to p:
// 1/2 sgn(p - q) k g with sgn(0) = 0. Rows labelled ignore_index are inert; no valid row gives
// 0 everywhere. The sign is exact: p - q of two exact inputs in R is zero only when p == q.
// Elementwise NaN rule of docs/semantics.md: a NaN (or inf - inf) in p - q makes that term and
// that gradient element NaN.
#include <cmath>
#include <string>

#include "reference/real_engine.hpp"
#include "reference/running_error.hpp"

namespace divcheck::ref {
template <class R>
RealResult<R> tvd_prob_real(const RealInputs<R>& in) {
  const Case& c = *in.c;
  const RoleView<R> pv = in.view("p"), qv = in.view("q");
  const Tensor* labels = c.input("labels");
  const std::int64_t N = pv.tensor->dim(0), V = pv.tensor->dim(1);
  const std::string red = effective_reduction(c);
  const bool none = red == "none";
  const bool want = c.wants("p");

  std::vector<std::uint8_t> valid(static_cast<std::size_t>(N));
  std::int64_t n_valid = 0;
  for (std::int64_t n = 0; n < N; ++n) {
    valid[n] = !labels || static_cast<std::int64_t>(labels->get(n)) != c.params.ignore_index;
    n_valid += valid[n];
  }

  RealResult<R> res;
  res.loss.resize(none ? N * V : 1);
  RealTensor<R>* g_out = want ? &res.grads["p"] : nullptr;
  if (g_out) g_out->resize(N * V);
  if (n_valid == 0) return res;  // loss 0, gradients 0

  // k and its float32 error: batchmean 1 / n_valid, mean 1 / (n_valid V), sum and none 1.
  R k = 1;
  Err K = exact(1.0);
  if (red == "batchmean") {
    k = R(1) / R(n_valid);
    K = param_err(1.0 / static_cast<double>(n_valid));
  } else if (red == "mean") {
    k = R(1) / (R(n_valid) * R(V));
    K = div(exact(1.0), param_err(static_cast<double>(n_valid) * static_cast<double>(V)));
  }

  R total = 0;
  ErrSum total_err;
  for (std::int64_t n = 0; n < N; ++n) {
    if (!valid[n]) continue;  // inert
    for (std::int64_t v = 0; v < V; ++v) {
      const std::int64_t i = n * V + v;
      const R p = pv.at(i), q = qv.at(i);
      const R diff = p - q;
      const bool nan = is_nan(diff);
      const R term = nan ? r_nan<R>() : R(abs(diff) / 2);
      const Err TERM = nan ? Err{} : scaled_exact(absolute(sub(exact(to_double(p)), exact(to_double(q)))), 0.5);
      if (none) {
        res.loss.value[i] = term;
        res.loss.scale[i] = TERM.e;
      } else {
        total += term;
        total_err.add(TERM);
      }
      if (!g_out) continue;
      const double g = c.grad_output.get(none ? i : 0);
      if (nan) {
        g_out->value[i] = r_nan<R>();
        continue;
      }
      const int sg = diff > 0 ? 1 : (diff < 0 ? -1 : 0);
      g_out->value[i] = k * R(g) * sg / 2;
      const Err KG = K.e == 0.0 && K.v == 1.0 ? exact(g) : mul(K, exact(g));
      g_out->scale[i] = scaled_exact(KG, 0.5 * sg).e;
    }
  }
  if (!none) {
    res.loss.value[0] = k * total;
    const Err SUM = total_err.get();
    res.loss.scale[0] = (K.e == 0.0 && K.v == 1.0) ? SUM.e : mul(K, SUM).e;
  }
  return res;
}

template RealResult<Float128> tvd_prob_real(const RealInputs<Float128>&);
template RealResult<Mpfr50> tvd_prob_real(const RealInputs<Mpfr50>&);

}  // namespace divcheck::ref
