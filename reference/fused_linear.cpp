// Reference for fused_linear_masked_kl_divergence (SPEC.md): the projection zs = hs W^T / T,
// zt = ht W^T / T is evaluated in R from the exact inputs (every product of two input values is
// exact in R; the H-term sums carry R's rounding only), then the KL math of the logit rows
// (reference/logit_formulas.hpp). jsd_beta = 0: l = KL(pt || ps), dl/dzs = ps - pt; jsd_beta = 1:
// l = KL(ps || pt), dl/dzs = ps (lps - lpt - l). The teacher side is detached: with
// F = w g / T, d/dhs_h = F sum_v Gz_v W_vh and d/dW_vh = sum_tokens F Gz_v hs_h.
//
// Error model: each logit carries the projection's error unit sum_h |h_h W_vh| / T (the verdict
// multiplies by sigma; docs/tolerances.md) plus 2|z_v| for the division by a T != 1 and T's own
// rounding; it enters the log-softmax blocks as e_v.
//
// A valid position whose student and teacher hidden rows are bitwise identical projects, in any
// implementation, to identical logit rows (same W, same code): KL = 0 and dl/dzs = 0 exactly.
// It is structurally zero (loss term and gradient contributions Err{0, 0}; the hs gradient of
// that position exactly 0 with scale 0), unless its logits are a NaN row.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "reference/logit_formulas.hpp"
#include "reference/real_engine.hpp"
#include "reference/running_error.hpp"
#include "reference/softmax.hpp"

namespace divcheck::ref {
namespace {

// z_v = sum_h h_h W_vh / T for one token, and the error unit of each z_v.
template <class R>
void project(const RoleView<R>& h, std::int64_t h_base, const RoleView<R>& w, std::int64_t V, std::int64_t H,
             const R& temperature, bool scaled, double inv_t, std::vector<R>& z, std::vector<double>& err) {
  const bool exact_products = !h.override_values && !w.override_values;
  for (std::int64_t v = 0; v < V; ++v) {
    R acc = 0;
    double abs_sum = 0.0;
    for (std::int64_t k = 0; k < H; ++k) {
      if (exact_products) {
        // Inputs are float32 / bf16 / f16: a product of two has <= 48 significant bits and
        // stays in the normal double range, so it is exact in double; only the sum is in R.
        const double prod = h.tensor->get(h_base + k) * w.tensor->get(v * H + k);
        acc += R(prod);
        abs_sum += std::fabs(prod);
      } else {
        acc += h.at(h_base + k) * w.at(v * H + k);
        abs_sum += std::fabs(h.at_double(h_base + k) * w.at_double(v * H + k));
      }
    }
    if (scaled) acc /= temperature;
    z[v] = acc;
    err[v] = abs_sum * inv_t + (scaled ? 2.0 * std::fabs(to_double(acc)) : 0.0);
  }
}

}  // namespace

template <class R>
RealResult<R> fused_linear_real(const RealInputs<R>& in) {
  const Case& c = *in.c;
  const RoleView<R> hs = in.view("student_hidden");
  const RoleView<R> ht = in.view("teacher_hidden");
  const RoleView<R> ws = in.view("lm_head_weight");        // student projection (may be overridden)
  const RoleView<R> wt = in.exact_view("lm_head_weight");  // teacher projection: detached
  const Tensor* mask = c.input("attention_mask");
  const std::int64_t B = hs.tensor->dim(0), T = hs.tensor->dim(1), H = hs.tensor->dim(2);
  const std::int64_t V = ws.tensor->dim(0);
  const bool token_mean = effective_reduction(c) == "token_mean";
  const bool reverse = c.params.jsd_beta == 1.0;  // KL(ps || pt)
  const double temperature = c.params.temperature;
  const bool scaled = temperature != 1.0;
  const R temp_r = R(temperature);
  const double inv_t = 1.0 / temperature;
  const Err temp_err = scaled ? param_err(temperature) : exact(1.0);

  // Weights: sequence_mean m / (B n_b), token_mean m / N.
  std::vector<std::uint8_t> valid(static_cast<std::size_t>(B * T));
  std::int64_t n_all = 0;
  for (std::int64_t i = 0; i < B * T; ++i) n_all += (valid[i] = mask ? mask->nonzero(i) : 1);
  std::vector<R> w(static_cast<std::size_t>(B * T), R(0));
  for (std::int64_t b = 0; b < B; ++b) {
    std::int64_t nb = 0;
    for (std::int64_t t = 0; t < T; ++t) nb += valid[b * T + t];
    for (std::int64_t t = 0; t < T; ++t)
      if (valid[b * T + t]) w[b * T + t] = R(1) / (token_mean ? R(n_all) : R(B) * R(nb));
  }

  RealResult<R> res;
  res.loss.resize(1);
  const bool want_h = c.wants("student_hidden"), want_w = c.wants("lm_head_weight");
  RealTensor<R>* gh = nullptr;
  RealTensor<R>* gw = nullptr;
  if (want_h) (gh = &res.grads["student_hidden"])->resize(B * T * H);
  if (want_w) (gw = &res.grads["lm_head_weight"])->resize(V * H);
  const double g = (want_h || want_w) ? c.grad_output.get(0) : 0.0;

  std::vector<R> zs(static_cast<std::size_t>(V)), zt(static_cast<std::size_t>(V));
  std::vector<double> es(static_cast<std::size_t>(V)), et(static_cast<std::size_t>(V));
  std::vector<R> fgz(static_cast<std::size_t>(V));
  std::vector<double> fgz_d(static_cast<std::size_t>(V)), fgz_e(static_cast<std::size_t>(V));
  std::vector<R> hrow(static_cast<std::size_t>(H)), hacc(static_cast<std::size_t>(H));
  std::vector<double> hrow_d(static_cast<std::size_t>(H));
  std::vector<ErrSum> hacc_e(static_cast<std::size_t>(H));
  SoftmaxRow<R> S, Tt;
  PositionScratch<R> ps;
  ps.resize(V);
  ErrSum loss_err;

  const bool exact_inputs = !hs.override_values && !ht.override_values && !ws.override_values;
  const std::size_t hs_es = element_size(hs.tensor->dtype());
  auto identical_hidden = [&](std::int64_t pos) {
    return exact_inputs && hs.tensor->dtype() == ht.tensor->dtype() &&
           std::memcmp(hs.tensor->data() + pos * H * static_cast<std::int64_t>(hs_es),
                       ht.tensor->data() + pos * H * static_cast<std::int64_t>(hs_es),
                       static_cast<std::size_t>(H) * hs_es) == 0;
  };
  const bool zero_on_identical = info(c.id).props.zero_on_identical;

  for (std::int64_t pos = 0; pos < B * T; ++pos) {
    if (!valid[pos]) continue;  // inert
    project(hs, pos * H, ws, V, H, temp_r, scaled, inv_t, zs, es);
    compute_softmax_row<R>(zs.data(), V, nullptr, es.data(), S);
    if (zero_on_identical && !S.nan_row && identical_hidden(pos)) continue;  // structurally zero
    project(ht, pos * H, wt, V, H, temp_r, scaled, inv_t, zt, et);
    compute_softmax_row<R>(zt.data(), V, nullptr, et.data(), Tt);
    bool nan_grads = false;
    if (S.nan_row || Tt.nan_row) {
      res.loss.value[0] += r_nan<R>();
      nan_grads = true;
    } else {
      const SoftmaxRow<R>& P = reverse ? S : Tt;
      const SoftmaxRow<R>& Q = reverse ? Tt : S;
      LogitFormulas<R> f(P, Q, nullptr, true, V, ps);
      if (f.kl() == Status::infinite) {
        res.loss.value[0] += r_inf<R>();
        nan_grads = true;
      } else {
        res.loss.value[0] += w[pos] * ps.loss;
        loss_err.add(mul(rounded(to_double(w[pos])), ps.loss_err));
      }
    }
    if (!gh && !gw) continue;
    // F Gz_v with F = w g / T, Gz = dl/dzs.
    const R F = w[pos] * R(g) / temp_r;
    const Err FE = div(mul(rounded(to_double(w[pos])), exact(g)), temp_err);
    for (std::int64_t v = 0; v < V; ++v) {
      if (nan_grads) {
        fgz[v] = r_nan<R>();
        continue;
      }
      const R& gz = reverse ? ps.gp[v] : ps.gq[v];
      const double gz_e = reverse ? ps.gp_e[v] : ps.gq_e[v];
      fgz[v] = F * gz;
      const Err FG = mul(FE, Err{to_double(gz), gz_e});
      fgz_d[v] = FG.v;
      fgz_e[v] = FG.e;
    }
    for (std::int64_t k = 0; k < H; ++k) {
      hrow[k] = hs.at(pos * H + k);
      hrow_d[k] = hs.at_double(pos * H + k);
      hacc[k] = 0;
      hacc_e[k] = ErrSum{};
    }
    for (std::int64_t v = 0; v < V; ++v) {
      const Err FG{fgz_d[v], fgz_e[v]};
      for (std::int64_t k = 0; k < H; ++k) {
        const std::int64_t vk = v * H + k;
        if (gh) {
          hacc[k] += fgz[v] * ws.at(vk);
          if (!nan_grads) hacc_e[k].add(mul(FG, exact(ws.at_double(vk))));
        }
        if (gw) {
          gw->value[vk] += fgz[v] * hrow[k];
          if (!nan_grads) gw->scale[vk] += mul(FG, exact(hrow_d[k])).e;
        }
      }
    }
    if (gh) {
      for (std::int64_t k = 0; k < H; ++k) {
        gh->value[pos * H + k] = hacc[k];
        gh->scale[pos * H + k] = hacc_e[k].get().e;
      }
    }
  }
  res.loss.scale[0] = loss_err.get().e;
  return res;
}

template RealResult<Float128> fused_linear_real(const RealInputs<Float128>&);
template RealResult<Mpfr50> fused_linear_real(const RealInputs<Mpfr50>&);

}  // namespace divcheck::ref
