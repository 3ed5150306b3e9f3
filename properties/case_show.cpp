// describe_case / showValue (see case_show.hpp).
#include "properties/case_show.hpp"

#include <sstream>

namespace divcheck {

namespace {

void show_tensor(std::ostream& os, const std::string& name, const Tensor& t, std::int64_t max_values) {
  os << "  " << name << " " << short_name(t.dtype()) << " " << shape_string(t.shape()) << " = [";
  const std::int64_t n = t.numel();
  const std::int64_t shown = n <= max_values ? n : max_values;
  for (std::int64_t i = 0; i < shown; ++i) os << (i ? ", " : "") << t.get(i);
  if (shown < n) os << ", ... (" << n << " values)";
  os << "]\n";
}

}  // namespace

std::string describe_case(const Case& c, std::int64_t max_values) {
  std::ostringstream os;
  os.precision(9);
  const DivergenceInfo& d = info(c.id);
  os << d.name << " family=" << (c.provenance.family.empty() ? "?" : c.provenance.family)
     << " seed=" << c.provenance.seed << "\n  params:";
  const Params& p = c.params;
  for (auto k : d.params) {
    os << " " << param_name(k) << "=";
    switch (k) {
      case ParamKind::log_target: os << (p.log_target ? "True" : "False"); break;
      case ParamKind::max_loss:
        if (p.max_loss) os << *p.max_loss;
        else os << "None";
        break;
      case ParamKind::scaling_factor: os << p.scaling_factor; break;
      case ParamKind::temperature: os << p.temperature; break;
      case ParamKind::reduction: os << "\"" << p.reduction << "\""; break;
      case ParamKind::jsd_beta: os << p.jsd_beta; break;
      case ParamKind::chunk_size: os << p.chunk_size; break;
      case ParamKind::safety_factor: os << p.safety_factor; break;
    }
  }
  os << "\n  wants_grad: [";
  for (std::size_t i = 0; i < c.wants_grad.size(); ++i) os << (i ? ", " : "") << c.wants_grad[i];
  os << "]\n";
  for (const auto& role : d.roles) {
    const Tensor* t = c.input(std::string(role.name));
    if (t) show_tensor(os, std::string(role.name), *t, max_values);
    else os << "  " << role.name << " None\n";
  }
  show_tensor(os, "grad_output", c.grad_output, max_values);
  if (!c.provenance.note.empty()) os << "  note: " << c.provenance.note << "\n";
  return os.str();
}

void showValue(const Case& c, std::ostream& os) { os << describe_case(c); }

}  // namespace divcheck
