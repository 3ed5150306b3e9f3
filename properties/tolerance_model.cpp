// Summation depth per output of a case. sigma(n) = ceil(n/1024) + 16 bounds the relative error
// of one lane-strided, pairwise-combined sum of n terms (docs/semantics.md, "Summation order").
// An output that is the result of several nested sums gets the sum of their sigmas (errors of
// nested sums add to first order). The choices:
//
//   logit rows (9 rows)   loss:      sigma(V) + sigma(B*T)   (row sums over V, then positions)
//                         gradients: sigma(V)                (each element needs the row sums)
//   fused-linear          as a logit row, plus sigma(H) on every output (each logit is a dot
//                         product of length H); the lm_head_weight gradient also sums over the
//                         B*T tokens, so it gets sigma(B*T) as well.
//   masked_unbiased_dcor  every output: sigma(N*N) + sigma(D1 + D2)  (N = number of valid
//                         samples: the double sums over distance matrices, and the squared
//                         distances summed over the D1 or D2 coordinates)
//   tvd_prob              loss: sigma(V) + sigma(N); gradient: 1 (elementwise, no sum; the
//                         one rounding of the scale product)
#include "properties/tolerance_model.hpp"

#include "core/errors.hpp"
#include "properties/verdict.hpp"

namespace divcheck {

namespace {

std::int64_t valid_count(const Case& c, const std::string& mask_role, std::int64_t positions) {
  const Tensor* m = c.input(mask_role);
  if (!m) return positions;
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < m->numel(); ++i) n += m->nonzero(i) ? 1 : 0;
  return n;
}

const Tensor& require(const Case& c, const std::string& role) {
  const Tensor* t = c.input(role);
  if (!t) throw InvalidArgument(std::string(name_of(c.id)) + ": " + role, "None", "is required");
  return *t;
}

}  // namespace

CaseSigmas case_sigmas(const Case& c) {
  const DivergenceInfo& d = info(c.id);
  CaseSigmas s;
  auto sig = [](std::int64_t n) { return summation_depth(n); };
  switch (c.id) {
    case DivergenceId::fused_linear_masked_kl_divergence: {
      const Tensor& h = require(c, "student_hidden");
      const Tensor& w = require(c, "lm_head_weight");
      std::int64_t bt = h.dim(0) * h.dim(1), v = w.dim(0), hd = w.dim(1);
      s.loss = sig(v) + sig(bt) + sig(hd);
      s.grads["student_hidden"] = sig(v) + sig(hd);
      s.grads["lm_head_weight"] = sig(v) + sig(hd) + sig(bt);
      break;
    }
    case DivergenceId::masked_unbiased_dcor: {
      const Tensor& x = require(c, "samples_1");
      const Tensor& y = require(c, "samples_2");
      std::int64_t n = valid_count(c, "attention_mask", x.dim(0) * x.dim(1));
      double v = sig(n * n) + sig(x.dim(2) + y.dim(2));
      s.loss = v;
      s.grads["samples_1"] = v;
      s.grads["samples_2"] = v;
      break;
    }
    case DivergenceId::tvd_prob: {
      const Tensor& p = require(c, "p");
      s.loss = sig(p.dim(1)) + sig(p.dim(0));
      s.grads["p"] = 1.0;
      break;
    }
    default: {  // the nine logit rows: first role is a (B, T, V) logit tensor
      const Tensor& x = require(c, std::string(d.roles.front().name));
      std::int64_t bt = x.dim(0) * x.dim(1), v = x.dim(2);
      s.loss = sig(v) + sig(bt);
      for (const auto& r : d.roles)
        if (r.differentiable) s.grads[std::string(r.name)] = sig(v);
      break;
    }
  }
  return s;
}

}  // namespace divcheck
