// Build-time proof that every shared pointwise header compiles as device code under nvcc (the
// CPU backend compiles them with g++). Built only when the CUDA toolkit is configured; it
// produces no kernel that anything launches.
#include "kernels/math/cross_entropy.hpp"
#include "kernels/math/dcor.hpp"
#include "kernels/math/exact_sum.hpp"
#include "kernels/math/hd.hpp"
#include "kernels/math/hellinger.hpp"
#include "kernels/math/hellinger_centred.hpp"
#include "kernels/math/jefferys_centred.hpp"
#include "kernels/math/jensen_shannon.hpp"
#include "kernels/math/kl.hpp"
#include "kernels/math/reduction_order.hpp"
#include "kernels/math/sign.hpp"
#include "kernels/math/softmax.hpp"
#include "kernels/math/total_variation.hpp"

namespace divcheck::math {

constexpr int kChunkOf8 = 8;

__global__ void nvcc_check_kernel(float* out, const float* in) {
  const int i = static_cast<int>(threadIdx.x);
  const float p = in[i], q = in[i + 1];
  const float lp = log_softmax_from_shifted(shifted_logit(p, 1.0f, 1.0f), 0.5f);
  OnlineLse lse;
  lse.add(p);
  const KlStats ks{1.0f};
  const JefferysStats js{1.0f, 1.0f, 1.0f, 1.0f};
  const CeStats cs{1.0f};
  const JsStats jss{1.0f, 1.0f};
  const HellingerStats hs{1.0f, 1.0f};
  const TvStats ts{1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  out[i] = kl_term(p, lp, q) + kl_grad_p(p, lp, q, ks) + kl_grad_q(p, q) + jefferys_term(p, q, lp, q) +
           jefferys_grad_p(p, q, lp, q, js) + jefferys_support_grad_q(p, q, lp, q, true, js) + ce_term(p, lp, q) +
           ce_grad_p(p, lp, q, cs) + capped_ce(p, 1.0f, 2.0f) + capped_ce_slope(p, 1.0f, 2.0f) +
           js_half_term(p, lp, js_log_ratios(lp, q).ep, true) + js_grad(q, js_log_ratios(lp, q).eq, true, jss.jq) + js_loss(jss) +
           hellinger_term(p, q, true) + hellinger_grad_p(p, sqrt_prob(lp), q, true, hs) + tv_abs_term(p, q, true) +
           tv_grad_q(p, q, true, ts) + tv_class_mass(p, q, true, 1.0f, p) + tvd_prob_element(p, q) + tvd_prob_grad(p, q, 0.5f) +
           sgn(p) + lse.logsumexp() + prob_path_from_shifted(p, 0.5f, 1.0f).lp + prob_column_tame(p, 1.0f, 0.5f, 1.0f).lp + dcor_ratio(p, q, 1.0f, 1e-5f).value +
           dcor_d_ratio_d_vxx(dcor_ratio(p, q, 1.0f, 1e-5f), p, q, 1.0f) + distance_direction(p, q) +
           u_centered(p, q, 1.0f, 2.0f) + dcor_distance(p, 1e-5f);
  float lanes[kLanes];
  for (int l = 0; l < kLanes; ++l) lanes[l] = in[l];
  out[0] += tree_reduce_lanes(lanes, 700);
  FixedSum fs, other;
  fs.add(in[i]);
  other.add(in[i + 2]);
  fs.merge(other);
  out[1] += fs.value();
  const float ey[kChunkOf8] = {p, q, p, q, p, q, p, q}, ex[kChunkOf8] = {q, p, q, p, q, p, q, p}, g[kChunkOf8] = {};
  const JefferysRecord rec = jefferys_chunk_record<kChunkOf8>(ey, ex, g);
  out[2] += jefferys_record_loss(jefferys_merge(rec, jefferys_rescale(rec, 0.5f, 0.25f)));
  const HellingerRecord hr = hellinger_chunk_record<kChunkOf8>(ey, ex);
  out[3] += hellinger_record_loss(hellinger_merge(hr, hellinger_rescale(hr, 0.5f, 0.25f)));
}

}  // namespace divcheck::math
