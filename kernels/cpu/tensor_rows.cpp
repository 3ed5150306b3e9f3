// Row access to host tensors for the CPU backend (see tensor_rows.hpp).
#include "kernels/cpu/tensor_rows.hpp"

#include <cstring>

#include "core/errors.hpp"

namespace divcheck::cpu {

void load_f32(const Tensor& t, std::int64_t offset, std::int64_t n, float* out) {
  switch (t.dtype()) {
    case DType::f32:
      std::memcpy(out, t.data() + offset * 4, static_cast<std::size_t>(n) * 4);
      return;
    case DType::bf16:
      for (std::int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(t.get_bits16(offset + i));
      return;
    case DType::f16:
      for (std::int64_t i = 0; i < n; ++i) out[i] = f16_to_float(t.get_bits16(offset + i));
      return;
    default:
      throw InvalidArgument("tensor.dtype", std::string(short_name(t.dtype())), "cpu backend reads only f32, bf16, f16");
  }
}

void store_f32(Tensor& t, std::int64_t offset, std::int64_t n, const float* in) {
  switch (t.dtype()) {
    case DType::f32:
      std::memcpy(t.data() + offset * 4, in, static_cast<std::size_t>(n) * 4);
      return;
    case DType::bf16:
      for (std::int64_t i = 0; i < n; ++i) t.set_bits16(offset + i, float_to_bf16(in[i]));
      return;
    case DType::f16:
      for (std::int64_t i = 0; i < n; ++i) t.set_bits16(offset + i, float_to_f16(in[i]));
      return;
    default:
      throw InvalidArgument("tensor.dtype", std::string(short_name(t.dtype())), "cpu backend writes only f32, bf16, f16");
  }
}

void fill_f32(Tensor& t, std::int64_t offset, std::int64_t n, float value) {
  std::vector<float> row(static_cast<std::size_t>(n), value);
  store_f32(t, offset, n, row.data());
}

std::vector<std::uint8_t> mask_flags(const Tensor* mask, std::int64_t count) {
  std::vector<std::uint8_t> f(static_cast<std::size_t>(count), 1);
  if (mask)
    for (std::int64_t i = 0; i < count; ++i) f[static_cast<std::size_t>(i)] = mask->nonzero(i) ? 1 : 0;
  return f;
}

void load_mask_row(const Tensor& mask, std::int64_t offset, std::int64_t n, std::uint8_t* out) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = mask.nonzero(offset + i) ? 1 : 0;
}

std::map<std::string, Tensor> zero_gradients(const Case& c) {
  std::map<std::string, Tensor> g;
  for (const auto& role : c.wants_grad) {
    const Tensor* t = c.input(role);
    g.emplace(role, Tensor(t->dtype(), t->shape()));
  }
  return g;
}

std::string effective_reduction(const Case& c) {
  return c.params.reduction.empty() ? std::string(info(c.id).default_reduction) : c.params.reduction;
}

}  // namespace divcheck::cpu
