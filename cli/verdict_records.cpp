// Verdict -> report records.
#include "cli/verdict_records.hpp"

#include "properties/mismatch_names.hpp"

namespace divcheck::gate {

std::vector<std::int64_t> unravel(std::int64_t index, const Shape& shape) {
  std::vector<std::int64_t> coords(shape.size(), 0);
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] <= 0) return {index};  // degenerate shape: keep the flat index
    coords[i] = index % shape[i];
    index /= shape[i];
  }
  if (shape.empty() && index != 0) return {index};  // a "scalar" with index > 0: say so
  return coords;
}

std::string coords_string(const std::vector<std::int64_t>& coords) {
  std::string s = "(";
  for (std::size_t i = 0; i < coords.size(); ++i) s += (i ? ", " : "") + std::to_string(coords[i]);
  return s + ")";
}

Shape output_shape(const Case& c, const std::string& name) {
  if (name == "loss") return loss_shape(c);
  if (const Tensor* t = c.input(name)) return t->shape();
  return {};
}

std::vector<report::TensorRecord> tensor_records(const Case& c, const Verdict& v) {
  std::vector<report::TensorRecord> out;
  for (const auto& t : v.tensors) {
    report::TensorRecord r{t.name, t.wrong, t.total, t.worst_ratio, {}};
    const Shape shape = output_shape(c, t.name);
    for (const auto& m : t.first)
      r.first.push_back({m.index, unravel(m.index, shape), m.got, m.expected, m.bound, std::string(mismatch_kind_name(m.kind))});
    out.push_back(std::move(r));
  }
  return out;
}

std::string case_dtype(const Case& c) {
  const DivergenceInfo& d = info(c.id);
  for (const auto& role : d.roles) {
    if (role.kind == RoleKind::position_mask || role.kind == RoleKind::support_mask || role.kind == RoleKind::labels)
      continue;
    if (const Tensor* t = c.input(std::string(role.name))) return std::string(short_name(t->dtype()));
  }
  return "?";
}

}  // namespace divcheck::gate
