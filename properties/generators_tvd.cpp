// Case families of tvd_prob (the bug-report case): probability rows p, q (N, V), optional
// labels with ignore_index = -100, every reduction. Random rows, exact ties (q = p), partial
// ties, near ties (one ulp apart), zero columns, ignored rows (all of them too), garbage in
// ignored rows, narrow dtypes, NaN elements, upstream gradients.
#include <algorithm>
#include <cmath>
#include <limits>

#include "properties/case_builder.hpp"
#include "properties/family_table.hpp"
#include "properties/float_gen.hpp"
#include "properties/gen_primitives.hpp"

namespace divcheck::pgen {

namespace {

struct TvdDraft {
  std::int64_t N = 1, V = 1;
  DType dt = DType::f32;
  std::vector<double> p, q;  // N*V
  bool has_labels = false;
  DType labels_dt = DType::i64;
  std::vector<std::int64_t> labels;
  Params params;
  GradStyle grad_style = GradStyle::usual;
  std::size_t at(std::int64_t r, std::int64_t v) const { return static_cast<std::size_t>(r * V + v); }
};

// Rows of softmax(logits) computed in double, rounded once to dt.
std::vector<double> draw_prob_rows(std::int64_t n, std::int64_t v, double scale, DType dt) {
  std::vector<double> x = draw_values(static_cast<std::size_t>(n * v), logit_dist(scale), DType::f64);
  for (std::int64_t r = 0; r < n; ++r) {
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t k = 0; k < v; ++k) m = std::max(m, x[static_cast<std::size_t>(r * v + k)]);
    double s = 0.0;
    for (std::int64_t k = 0; k < v; ++k) s += std::exp(x[static_cast<std::size_t>(r * v + k)] - m);
    for (std::int64_t k = 0; k < v; ++k) {
      double& e = x[static_cast<std::size_t>(r * v + k)];
      e = round_to_dtype(std::exp(e - m) / s, dt);
    }
  }
  return x;
}

TvdDraft draw_tvd_layout(bool narrow_only = false) {
  TvdDraft f;
  const VocabDraw vd = draw_vocab(1);
  f.V = vd.v;
  f.N = vd.rows_cap > 0 ? *int_toward(1, vd.rows_cap, 1) : *sized_int(1, 16);
  f.dt = narrow_only ? *gen_narrow_dtype() : *gen_float_dtype();
  return f;
}

void draw_probs(TvdDraft& f) {
  const double scale = *one_of_values<double>({1.0, 3.0, 0.3, 10.0});
  f.p = draw_prob_rows(f.N, f.V, scale, f.dt);
  f.q = draw_prob_rows(f.N, f.V, scale, f.dt);
}

void draw_tvd_params(TvdDraft& f) {
  f.params.reduction = *one_of_values<std::string>({"batchmean", "sum", "mean", "none"});
}

// Labels: a class index per row, or -100 (ignored) with probability ignored_num/ignored_den.
void draw_labels(TvdDraft& f, bool force, int ignored_num = 1, int ignored_den = 4) {
  f.has_labels = force || *chance(1, 2);
  if (!f.has_labels) return;
  f.labels_dt = *one_of_values<DType>({DType::i64, DType::i32});
  f.labels.resize(static_cast<std::size_t>(f.N));
  const auto ignored = *rc::gen::container<std::vector<bool>>(static_cast<std::size_t>(f.N), chance(ignored_num, ignored_den));
  for (std::int64_t r = 0; r < f.N; ++r)
    f.labels[static_cast<std::size_t>(r)] = ignored[static_cast<std::size_t>(r)] ? -100 : *int_toward(0, f.V - 1, 0);
}

Case finish(const DivergenceInfo& d, TvdDraft&& f, std::string_view family) {
  Case c;
  c.id = d.id;
  c.params = f.params;
  c.inputs["p"] = float_tensor(f.dt, {f.N, f.V}, f.p);
  c.inputs["q"] = float_tensor(f.dt, {f.N, f.V}, f.q);
  if (f.has_labels) c.inputs["labels"] = int_tensor(f.labels_dt, {f.N}, f.labels);
  c.wants_grad = draw_wants(d, true);
  c.grad_output = draw_grad_output(loss_shape(c), f.grad_style);
  c.provenance.family = std::string(family);
  validate_case(c);
  return c;
}

// The neighbour of x one unit in the last place up or down, in dt.
double ulp_step(double x, DType dt, bool up) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (dt) {
    case DType::f32: return std::nextafter(static_cast<float>(x), up ? static_cast<float>(inf) : -static_cast<float>(inf));
    default: {  // bf16/f16: step by u * 2^floor(log2 |x|), at least the smallest subnormal
      if (x == 0.0) return up ? min_subnormal(dt) : -min_subnormal(dt);
      const double ulp = std::max(std::ldexp(2.0 * unit_roundoff(dt), std::ilogb(x)), min_subnormal(dt));
      return round_to_dtype(x + (up ? ulp : -ulp), dt);
    }
  }
}

Case random_probs(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout();
  draw_probs(f);
  draw_tvd_params(f);
  draw_labels(f, false);
  return finish(d, std::move(f), "random_probs");
}

Case exact_ties(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout();
  draw_probs(f);
  const bool all_rows = *chance(1, 3);
  const auto tie = *rc::gen::container<std::vector<bool>>(static_cast<std::size_t>(f.N), chance(1, 2));
  for (std::int64_t r = 0; r < f.N; ++r)
    if (all_rows || tie[static_cast<std::size_t>(r)] || r == 0)
      std::copy_n(f.p.begin() + r * f.V, f.V, f.q.begin() + r * f.V);  // q = p bitwise
  draw_tvd_params(f);
  draw_labels(f, false);
  return finish(d, std::move(f), "exact_ties");
}

Case partial_ties(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout();
  draw_probs(f);
  const auto tie = draw_values(f.p.size(), uniform_dist(0.0, 1.0), DType::f64);
  for (std::size_t i = 0; i < f.p.size(); ++i)
    if (tie[i] < 0.5) f.q[i] = f.p[i];  // some elements equal, the others not
  draw_tvd_params(f);
  draw_labels(f, false);
  return finish(d, std::move(f), "partial_ties");
}

Case near_ties(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout();
  draw_probs(f);
  const auto which = draw_values(f.p.size(), uniform_dist(0.0, 3.0), DType::f64);
  for (std::size_t i = 0; i < f.p.size(); ++i) {
    if (which[i] < 1.0) f.q[i] = ulp_step(f.p[i], f.dt, true);
    else if (which[i] < 2.0) f.q[i] = ulp_step(f.p[i], f.dt, false);
    else f.q[i] = f.p[i];
    if (f.q[i] < 0.0) f.q[i] = 0.0;
  }
  draw_tvd_params(f);
  draw_labels(f, false);
  return finish(d, std::move(f), "near_ties");
}

Case padded_zeros(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout();
  draw_probs(f);
  for (std::int64_t r = 0; r < f.N; ++r) {
    // 0: trailing zero columns in both; 1: random zero columns in both; 2: zeros in p only;
    // 3: zeros in q only.
    const std::int64_t mode = *int_toward(0, 3, 0);
    const std::int64_t k = *int_toward(0, f.V, 1);
    for (std::int64_t v = 0; v < f.V; ++v) {
      bool zero = mode == 0 ? v >= f.V - k : ((v * 7 + k) % 3 == 0);
      if (!zero) continue;
      if (mode != 3) f.p[f.at(r, v)] = 0.0;
      if (mode != 2) f.q[f.at(r, v)] = 0.0;
    }
  }
  draw_tvd_params(f);
  draw_labels(f, false);
  return finish(d, std::move(f), "padded_zeros");
}

Case ignored_labels(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout();
  draw_probs(f);
  draw_tvd_params(f);
  const bool all = *chance(1, 4);
  draw_labels(f, true, 1, 2);
  if (all) std::fill(f.labels.begin(), f.labels.end(), -100);
  return finish(d, std::move(f), "ignored_labels");
}

Case reductions(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout();
  draw_probs(f);
  draw_tvd_params(f);
  draw_labels(f, false);
  f.grad_style = GradStyle::unusual;
  return finish(d, std::move(f), "reductions");
}

Case narrow_dtypes(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout(true);
  draw_probs(f);
  draw_tvd_params(f);
  draw_labels(f, false);
  return finish(d, std::move(f), "narrow_dtypes");
}

Case masked_garbage(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout();
  draw_probs(f);
  draw_tvd_params(f);
  draw_labels(f, true, 1, 2);
  f.labels[static_cast<std::size_t>(*int_toward(0, f.N - 1, 0))] = -100;
  const auto gp = draw_values(f.p.size(), garbage_dist(), f.dt);
  const auto gq = draw_values(f.q.size(), garbage_dist(), f.dt);
  for (std::int64_t r = 0; r < f.N; ++r)
    if (f.labels[static_cast<std::size_t>(r)] == -100)
      for (std::int64_t v = 0; v < f.V; ++v) {
        f.p[f.at(r, v)] = gp[f.at(r, v)];
        f.q[f.at(r, v)] = gq[f.at(r, v)];
      }
  return finish(d, std::move(f), "masked_garbage");
}

Case nan_elements(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout();
  draw_probs(f);
  draw_tvd_params(f);
  draw_labels(f, false);
  const std::int64_t r = *int_toward(0, f.N - 1, 0);
  if (f.has_labels) f.labels[static_cast<std::size_t>(r)] = *int_toward(0, f.V - 1, 0);  // a valid row
  const std::size_t i = f.at(r, *int_toward(0, f.V - 1, 0));
  const double inf = std::numeric_limits<double>::infinity();
  switch (*int_toward(0, 2, 0)) {  // 0: NaN in p or q; 1: inf in both (inf - inf); 2: inf in one
    case 0: (*chance(1, 2) ? f.p : f.q)[i] = nan_value(); break;
    case 1: f.p[i] = inf; f.q[i] = inf; break;
    default: (*chance(1, 2) ? f.p : f.q)[i] = inf; break;
  }
  return finish(d, std::move(f), "nan_elements");
}

Case upstream_grads(const DivergenceInfo& d) {
  TvdDraft f = draw_tvd_layout();
  draw_probs(f);
  draw_tvd_params(f);
  draw_labels(f, false);
  f.grad_style = GradStyle::unusual;
  return finish(d, std::move(f), "upstream_grads");
}


}  // namespace

std::vector<FamilyDef> tvd_families(const DivergenceInfo& d) {
  return {
      family_def("random_probs", "random probability rows (softmax of random logits)", random_probs, d),
      family_def("exact_ties", "q == p bitwise in some or all rows (the bug report: gradient 0 at ties)", exact_ties, d),
      family_def("partial_ties", "some elements equal in p and q, the others not", partial_ties, d),
      family_def("near_ties", "q one ulp above or below p at many elements", near_ties, d),
      family_def("padded_zeros", "zero columns in both (trailing or scattered) or in one side", padded_zeros, d),
      family_def("ignored_labels", "labels with ignore_index rows, including all rows ignored", ignored_labels, d),
      family_def("reductions", "every reduction, unusual upstream gradients", reductions, d),
      family_def("narrow_dtypes", "bf16 and f16 probabilities", narrow_dtypes, d),
      family_def("masked_garbage", "NaN, +-inf, 1e30 in ignored rows", masked_garbage, d),
      family_def("nan_elements", "NaN, inf - inf or inf at an element of a valid row", nan_elements, d),
      family_def("upstream_grads", "upstream gradient 0, negative, large, small; (N, V) for none", upstream_grads, d),
  };
}

}  // namespace divcheck::pgen
