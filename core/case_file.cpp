// Case files and result files: divcheck's metadata and tensor names in the safetensors container
// (API and layout: core/case_file.hpp; the container and its hostile-input checks:
// core/safetensors.cpp; JSON reading: core/json_guard.cpp; file reads and writes: core/file_io.cpp).
// Every rejection is a FormatError "<origin>: <what is wrong, naming the field and the value>".
//
// Decisions (documented here because the header leaves them open):
// - Case files always hold "grad_output" of the loss's shape (float32). encode_case writes zeros
//   when the case's grad_output was never set (a default-constructed Tensor); any other
//   grad_output must already be float32 of the loss's shape.
// - "params" stores exactly the row's parameters. Fields that are not parameters of the row are
//   ignored by every consumer; they are not stored and decode to Params{} defaults (for rows
//   without a reduction parameter the decoded reduction is "", meaning the row's default).
//   Doubles are written by nlohmann/json, whose shortest round-trip printing and correctly
//   rounded parsing make them round trip bitwise (tests/core check it on random bit patterns).
// - Metadata keys of a case file are a closed set: unknown keys are rejected (they would be typos
//   such as "wants_grads"). "divcheck.format", "divergence", "params" and "wants_grad" are
//   required; "divcheck.version", "family", "seed" and "note" are optional.
// - decode_case turns validate_case's InvalidArgument into FormatError ("<origin>: invalid case:
//   <argument> = <value>: <why>") so that a caller reading files handles one error type.
// - Result files require metadata "divergence" (equal to the case's); other metadata keys are
//   ignored there, because outside producers annotate their files (e.g. "producer").
#include "core/case_file.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "core/errors.hpp"
#include "core/json_guard.hpp"
#include "core/version.hpp"

namespace divcheck {

namespace {

using json = nlohmann::json;
using json_guard::in_quotes;
using json_guard::parse_guarded;
using json_guard::shown;
using json_guard::type_of;

// ---------------------------------------------------------------------------------------------
// Case metadata

constexpr const char* kKeyFormat = "divcheck.format";
constexpr const char* kKeyVersion = "divcheck.version";
constexpr const char* kKeyDivergence = "divergence";
constexpr const char* kKeyParams = "params";
constexpr const char* kKeyWantsGrad = "wants_grad";
constexpr const char* kKeyFamily = "family";
constexpr const char* kKeySeed = "seed";
constexpr const char* kKeyNote = "note";
constexpr const char* kGradOutput = "grad_output";
constexpr const char* kLoss = "loss";
constexpr const char* kGradPrefix = "grad.";

json finite_number(const DivergenceInfo& d, std::string_view field, double v) {
  // validate_case has already required finiteness for every row parameter; JSON cannot hold
  // NaN or inf (nlohmann would write null), so refuse rather than write a lie.
  if (!std::isfinite(v))
    throw InvalidArgument(std::string(d.name) + ": " + std::string(field), std::to_string(v),
                          "cannot be stored in a case file: not finite");
  return json(v);
}

json params_to_json(const DivergenceInfo& d, const Params& p) {
  json o = json::object();
  for (ParamKind k : d.params) {
    const std::string field(param_name(k));
    switch (k) {
      case ParamKind::log_target: o[field] = p.log_target; break;
      case ParamKind::max_loss: o[field] = p.max_loss ? finite_number(d, field, *p.max_loss) : json(nullptr); break;
      case ParamKind::scaling_factor: o[field] = finite_number(d, field, p.scaling_factor); break;
      case ParamKind::temperature: o[field] = finite_number(d, field, p.temperature); break;
      case ParamKind::reduction: o[field] = p.reduction; break;
      case ParamKind::jsd_beta: o[field] = finite_number(d, field, p.jsd_beta); break;
      case ParamKind::chunk_size: o[field] = p.chunk_size; break;
      case ParamKind::safety_factor: o[field] = finite_number(d, field, p.safety_factor); break;
    }
  }
  return o;
}

Params params_from_json(const DivergenceInfo& d, const std::string& text, const std::string& origin) {
  const std::string where = "metadata \"params\"";
  json o = parse_guarded(text, origin, where);
  if (!o.is_object()) throw FormatError(origin, where + " must be a JSON object, got " + type_of(o) + " " + shown(o));
  auto fail = [&](const std::string& field, const json& v, const std::string& why) {
    return FormatError(origin, where + ": " + field + " = " + shown(v) + " " + why);
  };
  for (const auto& [key, value] : o.items()) {
    bool known = false;
    for (ParamKind k : d.params) known |= (param_name(k) == key);
    if (!known) throw fail(key, value, "is not a parameter of " + std::string(d.name));
  }
  Params p;
  for (ParamKind k : d.params) {
    const std::string field(param_name(k));
    if (!o.contains(field))
      throw FormatError(origin, where + ": missing parameter \"" + field + "\" of " + std::string(d.name));
    const json& v = o[field];
    switch (k) {
      case ParamKind::log_target:
        if (!v.is_boolean()) throw fail(field, v, "must be true or false");
        p.log_target = v.get<bool>();
        break;
      case ParamKind::max_loss:
        if (v.is_null()) p.max_loss.reset();
        else if (v.is_number()) p.max_loss = v.get<double>();
        else throw fail(field, v, "must be null or a number");
        break;
      case ParamKind::reduction:
        if (!v.is_string()) throw fail(field, v, "must be a string");
        p.reduction = v.get<std::string>();
        break;
      case ParamKind::chunk_size:
        if (v.is_number_integer() && !v.is_number_unsigned()) p.chunk_size = v.get<std::int64_t>();
        else if (v.is_number_unsigned() &&
                 v.get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
          p.chunk_size = static_cast<std::int64_t>(v.get<std::uint64_t>());
        else throw fail(field, v, "must be an integer in the int64 range");
        break;
      case ParamKind::scaling_factor:
      case ParamKind::temperature:
      case ParamKind::jsd_beta:
      case ParamKind::safety_factor: {
        if (!v.is_number()) throw fail(field, v, "must be a number");
        double x = v.get<double>();
        if (k == ParamKind::scaling_factor) p.scaling_factor = x;
        if (k == ParamKind::temperature) p.temperature = x;
        if (k == ParamKind::jsd_beta) p.jsd_beta = x;
        if (k == ParamKind::safety_factor) p.safety_factor = x;
        break;
      }
    }
  }
  return p;
}

std::vector<std::string> wants_grad_from_json(const std::string& text, const std::string& origin) {
  const std::string where = "metadata \"wants_grad\"";
  json v = parse_guarded(text, origin, where);
  if (!v.is_array()) throw FormatError(origin, where + " must be a JSON list of role names, got " + shown(v));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw FormatError(origin, where + "[" + std::to_string(i) + "] = " + shown(v[i]) + " must be a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

// Canonical decimal: digits only, no sign, no leading zero (except "0"), fits in 64 bits.
std::uint64_t seed_from_string(const std::string& s, const std::string& origin) {
  auto fail = [&] {
    return FormatError(origin, "metadata \"seed\" = " + in_quotes(s) + " must be a decimal integer in [0, 2^64)");
  };
  if (s.empty() || (s.size() > 1 && s[0] == '0')) throw fail();
  for (char c : s)
    if (c < '0' || c > '9') throw fail();
  std::uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) throw fail();
  return v;
}

// Loss and gradients must match the case: loss f32 of loss_shape(c), exactly the wanted
// gradients, each in the dtype and shape of its role's tensor. Calls fail(argument, value, why),
// which throws.
template <class Fail>
void check_outputs(const Case& c, const Outputs& o, Fail fail) {
  const Shape ls = loss_shape(c);
  if (o.loss.empty_tensor()) fail("loss", "<empty>", "no loss tensor (a default-constructed Tensor)");
  if (o.loss.dtype() != DType::f32) fail("loss.dtype", std::string(short_name(o.loss.dtype())), "must be f32");
  if (o.loss.shape() != ls) fail("loss.shape", shape_string(o.loss.shape()), "must be the loss shape " + shape_string(ls));
  for (const auto& [role, g] : o.grads) {
    const Tensor* in = c.input(role);
    if (!c.wants(role) || !in) fail("grad." + role, "<tensor>", "this gradient was not requested by the case");
    if (g.dtype() != in->dtype())
      fail("grad." + role + ".dtype", std::string(short_name(g.dtype())),
           "must be the dtype of " + role + ", " + std::string(short_name(in->dtype())));
    if (g.shape() != in->shape())
      fail("grad." + role + ".shape", shape_string(g.shape()), "must be the shape of " + role + ", " + shape_string(in->shape()));
  }
  for (const auto& role : c.wants_grad)
    if (!o.grads.count(role)) fail("grad." + role, "None", "the case requests this gradient");
}

}  // namespace

// =============================================================================================
// Cases

std::vector<std::byte> encode_case(const Case& c) {
  validate_case(c);
  const DivergenceInfo& d = info(c.id);
  const Shape ls = loss_shape(c);

  SafeTensors st;
  st.tensors = c.inputs;
  if (c.grad_output.empty_tensor()) {
    st.tensors.emplace(kGradOutput, Tensor(DType::f32, ls));  // never set: zeros (see the file comment)
  } else {
    if (c.grad_output.dtype() != DType::f32)
      throw InvalidArgument(std::string(d.name) + ": grad_output.dtype", std::string(short_name(c.grad_output.dtype())),
                            "must be f32");
    if (c.grad_output.shape() != ls)
      throw InvalidArgument(std::string(d.name) + ": grad_output.shape", shape_string(c.grad_output.shape()),
                            "must equal the loss shape " + shape_string(ls));
    st.tensors.emplace(kGradOutput, c.grad_output);
  }
  st.metadata[kKeyFormat] = std::to_string(kCaseFileFormatVersion);
  st.metadata[kKeyVersion] = kVersion;
  st.metadata[kKeyDivergence] = std::string(d.name);
  st.metadata[kKeyParams] = params_to_json(d, c.params).dump();
  st.metadata[kKeyWantsGrad] = json(c.wants_grad).dump();
  st.metadata[kKeyFamily] = c.provenance.family;
  st.metadata[kKeySeed] = std::to_string(c.provenance.seed);
  st.metadata[kKeyNote] = c.provenance.note;
  return encode_safetensors(st);
}

Case decode_case(const std::vector<std::byte>& bytes, const std::string& origin) {
  SafeTensors st = decode_safetensors(bytes, origin);
  const auto& m = st.metadata;
  static const std::set<std::string> kKnown = {kKeyFormat, kKeyVersion, kKeyDivergence, kKeyParams,
                                               kKeyWantsGrad, kKeyFamily, kKeySeed, kKeyNote};
  for (const auto& [key, value] : m)
    if (!kKnown.count(key))
      throw FormatError(origin, "metadata " + in_quotes(key) + " = " + in_quotes(value) + " is not a case-file field");
  auto required = [&](const char* key) -> const std::string& {
    auto it = m.find(key);
    if (it == m.end()) throw FormatError(origin, std::string("metadata \"") + key + "\" is missing (not a divcheck case file?)");
    return it->second;
  };
  auto optional = [&](const char* key) -> const std::string* {
    auto it = m.find(key);
    return it == m.end() ? nullptr : &it->second;
  };

  const std::string& format = required(kKeyFormat);
  if (format != std::to_string(kCaseFileFormatVersion))
    throw FormatError(origin, "metadata \"divcheck.format\" = " + in_quotes(format) + " is not supported (this build reads " +
                                  std::to_string(kCaseFileFormatVersion) + ")");
  const std::string& name = required(kKeyDivergence);
  const DivergenceInfo* d = find_divergence(name);
  if (!d) throw FormatError(origin, "metadata \"divergence\" = " + in_quotes(name) + " is not a known divergence");

  Case c;
  c.id = d->id;
  c.params = params_from_json(*d, required(kKeyParams), origin);
  c.wants_grad = wants_grad_from_json(required(kKeyWantsGrad), origin);
  if (const std::string* s = optional(kKeyFamily)) c.provenance.family = *s;
  if (const std::string* s = optional(kKeySeed)) c.provenance.seed = seed_from_string(*s, origin);
  if (const std::string* s = optional(kKeyNote)) c.provenance.note = *s;

  auto go = st.tensors.find(kGradOutput);
  if (go == st.tensors.end()) throw FormatError(origin, "tensor \"grad_output\" is missing");
  c.grad_output = std::move(go->second);
  st.tensors.erase(go);
  c.inputs = std::move(st.tensors);

  try {
    validate_case(c);
  } catch (const InvalidArgument& e) {
    throw FormatError(origin, std::string("invalid case: ") + e.what());
  }
  const Shape ls = loss_shape(c);
  if (c.grad_output.dtype() != DType::f32)
    throw FormatError(origin, "tensor \"grad_output\": dtype " + std::string(safetensors_name(c.grad_output.dtype())) +
                                  " must be F32");
  if (c.grad_output.shape() != ls)
    throw FormatError(origin, "tensor \"grad_output\": shape " + shape_string(c.grad_output.shape()) +
                                  " must be the loss shape " + shape_string(ls));
  return c;
}

void write_case(const std::string& path, const Case& c) { write_file_bytes(path, encode_case(c)); }

Case read_case(const std::string& path) { return decode_case(read_file_bytes(path), path); }

// =============================================================================================
// External results

std::vector<std::byte> encode_outputs(const Case& c, const Outputs& o) {
  validate_case(c);
  const std::string where = std::string(name_of(c.id)) + ": outputs.";
  check_outputs(c, o, [&](const std::string& argument, const std::string& value, const std::string& why) {
    throw InvalidArgument(where + argument, value, why);
  });
  SafeTensors st;
  st.tensors.emplace(kLoss, o.loss);
  for (const auto& [role, g] : o.grads) st.tensors.emplace(kGradPrefix + role, g);
  st.metadata[kKeyFormat] = std::to_string(kCaseFileFormatVersion);
  st.metadata[kKeyVersion] = kVersion;
  st.metadata[kKeyDivergence] = std::string(name_of(c.id));
  return encode_safetensors(st);
}

Outputs decode_outputs(const Case& c, const std::vector<std::byte>& bytes, const std::string& origin) {
  validate_case(c);  // the case is the caller's, not the file's: its errors stay InvalidArgument
  SafeTensors st = decode_safetensors(bytes, origin);
  auto div = st.metadata.find(kKeyDivergence);
  if (div == st.metadata.end()) throw FormatError(origin, "metadata \"divergence\" is missing");
  if (div->second != name_of(c.id))
    throw FormatError(origin, "metadata \"divergence\" = " + in_quotes(div->second) + " but the case is " +
                                  std::string(name_of(c.id)));
  auto fmt = st.metadata.find(kKeyFormat);
  if (fmt != st.metadata.end() && fmt->second != std::to_string(kCaseFileFormatVersion))
    throw FormatError(origin, "metadata \"divcheck.format\" = " + in_quotes(fmt->second) + " is not supported");

  Outputs o;
  bool have_loss = false;
  for (auto& [name, t] : st.tensors) {
    if (name == kLoss) {
      o.loss = std::move(t);
      have_loss = true;
    } else if (name.starts_with(kGradPrefix)) {
      std::string role = name.substr(std::strlen(kGradPrefix));
      if (!c.wants(role))
        throw FormatError(origin, "tensor " + in_quotes(name) + ": the case does not request the gradient of " + in_quotes(role));
      o.grads.emplace(role, std::move(t));
    } else {
      throw FormatError(origin, "tensor " + in_quotes(name) + " is neither \"loss\" nor \"grad.<role>\"");
    }
  }
  if (!have_loss) throw FormatError(origin, "tensor \"loss\" is missing");
  check_outputs(c, o, [&](const std::string& argument, const std::string& value, const std::string& why) {
    throw FormatError(origin, argument + " = " + value + ": " + why);
  });
  return o;
}

void write_outputs(const std::string& path, const Case& c, const Outputs& o) {
  write_file_bytes(path, encode_outputs(c, o));
}

Outputs read_outputs(const std::string& path, const Case& c) { return decode_outputs(c, read_file_bytes(path), path); }

}  // namespace divcheck
