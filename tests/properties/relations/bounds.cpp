// Metamorphic bounds: every row declared non-negative returns values >= 0, and every row with an
// upper bound (TV <= 1, JS <= ln 2, H^2 <= 1, dcor <= 1) stays below it, up to the element's
// tolerance bound. Checked on the per-position output where the row has one (reduction "none":
// per-sequence means of per-position values for the logit rows, per-row sums of the (N, V)
// elements for tvd_prob), else on the loss. dcor is clamped last, so [0, 1] holds exactly.
#include <cmath>

#include "relations/relations.hpp"
#include "support/property_support.hpp"

namespace divcheck::props {

namespace {

// tvd_prob rows are probability rows rounded to the dtype: TV(p, q) <= (sum|p| + sum|q|) / 2,
// which is 1 up to that rounding. Returns the per-row limit.
double tvd_row_limit(const Tensor& p, const Tensor& q, std::int64_t r) {
  double s = 0.0;
  for (std::int64_t v = 0; v < p.dim(1); ++v) s += std::fabs(p.get(r * p.dim(1) + v)) + std::fabs(q.get(r * p.dim(1) + v));
  return std::max(1.0, s / 2.0);
}

}  // namespace

void bounds_property(const Backend& backend, DivergenceId id) {
  const DivergenceInfo& d = info(id);
  Case c = *gen_case_of(id, [](std::string_view f) { return !is_nan_family(f); });
  tag_case(c);
  c.wants_grad.clear();  // values only
  if (d.props.has_reduction_none || id == DivergenceId::tvd_prob) c.params.reduction = "none";
  const Outputs o = compute(backend, c);
  const Expected e = reference_of(c);
  const Bounds b = bounds_of(c, e);
  const std::optional<double> upper = d.props.upper_bound;

  if (id == DivergenceId::masked_unbiased_dcor) {
    const double y = o.loss.get(0);
    if (!(y >= 0.0 && y <= 1.0)) RC_FAIL("dcor outside [0, 1]: " + std::to_string(y) + "\n" + describe_case(c));
    return;
  }
  if (id == DivergenceId::tvd_prob) {
    const Tensor& p = c.inputs.at("p");
    const Tensor& q = c.inputs.at("q");
    const std::int64_t N = p.dim(0), V = p.dim(1);
    for (std::int64_t r = 0; r < N; ++r) {
      double row = 0.0, slack = 0.0;
      for (std::int64_t v = 0; v < V; ++v) {
        const double y = o.loss.get(r * V + v);
        if (y < -b.loss[static_cast<std::size_t>(r * V + v)]) RC_FAIL("negative tvd element\n" + describe_case(c));
        row += y;
        slack += b.loss[static_cast<std::size_t>(r * V + v)];
      }
      slack += 0x1p-50 * static_cast<double>(V) * std::fabs(row);  // this check's own double sum
      if (row > tvd_row_limit(p, q, r) + slack) RC_FAIL("tvd row " + std::to_string(r) + " sums to " + std::to_string(row) + "\n" + describe_case(c));
    }
    return;
  }
  for (std::int64_t i = 0; i < o.loss.numel(); ++i) {
    const double y = o.loss.get(i), bound = b.loss[static_cast<std::size_t>(i)];
    RC_ASSERT(!std::isnan(y));
    if (d.props.nonnegative && y < -bound)
      RC_FAIL("negative value " + std::to_string(y) + " (bound " + std::to_string(bound) + ")\n" + describe_case(c));
    if (upper && !(y <= *upper + bound))
      RC_FAIL("value " + std::to_string(y) + " above the upper bound " + std::to_string(*upper) + "\n" + describe_case(c));
  }
}

}  // namespace divcheck::props
