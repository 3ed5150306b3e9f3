// Plain-text bug report of one checked case.
#include "cli/bug_report.hpp"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "cli/verdict_records.hpp"
#include "properties/mismatch_names.hpp"
#include "reports/report_model.hpp"
#include "reports/text_util.hpp"

namespace divcheck::gate {

namespace {

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

const TensorVerdict* find_tensor(const Verdict& v, const std::string& name) {
  for (const auto& t : v.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

void print_mismatches(std::ostream& os, const Case& c, const TensorVerdict& t) {
  const Shape shape = output_shape(c, t.name);
  std::vector<std::vector<std::string>> rows;
  for (const auto& m : t.first)
    rows.push_back({coords_string(unravel(m.index, shape)), num(m.got), num(m.expected), num(m.bound),
                    std::string(mismatch_kind_name(m.kind))});
  std::string table = report::text_table({"index", "got", "reference", "bound", "kind"}, rows);
  std::size_t start = 0;
  while (start < table.size()) {  // indent every line by 4
    const std::size_t nl = table.find('\n', start);
    os << "    " << table.substr(start, nl - start + 1);
    start = nl + 1;
  }
  if (t.wrong > static_cast<std::int64_t>(t.first.size()))
    os << "    ... " << t.wrong - static_cast<std::int64_t>(t.first.size()) << " more\n";
}

void print_tensor(std::ostream& os, const Case& c, const TensorVerdict& t) {
  const std::string label = t.name == "loss" ? "loss" : "grad " + t.name;
  os << label << " " << shape_string(output_shape(c, t.name)) << ": " << t.wrong << " of " << t.total
     << " elements wrong, worst error " << report::format_ratio(t.worst_ratio) << " of bound\n";
  if (t.wrong > 0) print_mismatches(os, c, t);
}

}  // namespace

std::string params_string(const Case& c) {
  const DivergenceInfo& d = info(c.id);
  const Params& p = c.params;
  std::string s;
  auto add = [&](const std::string& item) { s += (s.empty() ? "" : ", ") + item; };
  for (ParamKind k : d.params) {
    const std::string name(param_name(k));
    switch (k) {
      case ParamKind::log_target: add(name + "=" + (p.log_target ? "true" : "false")); break;
      case ParamKind::max_loss: add(name + "=" + (p.max_loss ? num(*p.max_loss) : "None")); break;
      case ParamKind::scaling_factor: add(name + "=" + num(p.scaling_factor)); break;
      case ParamKind::temperature: add(name + "=" + num(p.temperature)); break;
      case ParamKind::reduction:
        add(name + "=" + (p.reduction.empty() ? std::string(d.default_reduction) + " (default)" : p.reduction));
        break;
      case ParamKind::jsd_beta: add(name + "=" + num(p.jsd_beta)); break;
      case ParamKind::chunk_size: add(name + "=" + std::to_string(p.chunk_size)); break;
      case ParamKind::safety_factor: add(name + "=" + num(p.safety_factor)); break;
    }
  }
  for (const auto& r : d.roles)
    if (r.kind == RoleKind::labels) add("ignore_index=" + std::to_string(p.ignore_index));
  return s.empty() ? "(none)" : s;
}

void print_case_header(std::ostream& os, const Case& c) {
  const DivergenceInfo& d = info(c.id);
  os << "divergence:  " << d.name << " (" << d.summary << ")\n";
  os << "parameters:  " << params_string(c) << "\n";
  os << "inputs:      ";
  bool first = true;
  for (const auto& role : d.roles) {
    const Tensor* t = c.input(std::string(role.name));
    os << (first ? "" : "; ") << role.name << " ";
    if (t) os << short_name(t->dtype()) << " " << shape_string(t->shape());
    else os << "(absent)";
    first = false;
  }
  os << "\n";
  os << "grad_output: " << short_name(c.grad_output.dtype()) << " " << shape_string(c.grad_output.shape());
  if (c.grad_output.numel() == 1) os << " = " << num(c.grad_output.get(0));
  os << "\n";
  os << "gradients:   ";
  for (std::size_t i = 0; i < c.wants_grad.size(); ++i) os << (i ? ", " : "") << c.wants_grad[i];
  if (c.wants_grad.empty()) os << "(none)";
  os << "\n";
  os << "provenance:  family " << (c.provenance.family.empty() ? "?" : c.provenance.family) << ", seed "
     << c.provenance.seed;
  if (!c.provenance.note.empty()) os << "; " << c.provenance.note;
  os << "\n";
}

void print_bug_report(std::ostream& os, const Case& c, const CaseCheck& check, const std::string& source,
                      Precision precision) {
  print_case_header(os, c);
  os << "checked:     " << source << " against the " << (precision == Precision::mpfr50 ? "mpfr50" : "float128")
     << " reference\n\n";
  if (!check.error.empty()) {
    os << "ERROR " << check.error << "\n\nFAIL\n";
    return;
  }
  if (!check.verdict) {
    os << "ERROR no verdict\n\nFAIL\n";
    return;
  }
  const Verdict& v = *check.verdict;
  if (const TensorVerdict* loss = find_tensor(v, "loss")) {
    if (check.outputs && check.expected && check.outputs->loss.numel() == 1 && check.expected->loss.numel() == 1) {
      const double got = check.outputs->loss.get(0);
      const double ref = check.expected->loss.value[0];
      os << "loss:        got " << num(got) << ", reference " << num(ref) << ", |error| " << num(std::fabs(got - ref))
         << " = " << report::format_ratio(loss->worst_ratio) << " of bound" << (loss->wrong ? "  WRONG" : "") << "\n";
      if (loss->wrong) print_mismatches(os, c, *loss);
    } else {
      print_tensor(os, c, *loss);
    }
  }
  for (const auto& t : v.tensors)
    if (t.name != "loss") print_tensor(os, c, t);
  os << "\n" << (v.pass ? "PASS" : "FAIL") << ": worst error " << report::format_ratio(v.worst_ratio) << " of bound";
  for (const auto& t : v.tensors)
    if (t.wrong > 0) os << "; " << (t.name == "loss" ? "loss" : "grad " + t.name) << " " << t.wrong << "/" << t.total << " wrong";
  os << "\n";
}

}  // namespace divcheck::gate
