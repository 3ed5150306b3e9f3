#include "core/tensor.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/errors.hpp"

namespace divcheck {

std::string shape_string(const Shape& s) {
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ')';
  return os.str();
}

std::int64_t shape_numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) {
    if (d < 0) throw InvalidArgument("shape", shape_string(s), "dimensions must be non-negative");
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d)
      throw InvalidArgument("shape", shape_string(s), "element count overflows int64");
    n *= d;
  }
  return n;
}

Tensor::Tensor(DType dt, Shape shape) : dtype_(dt), shape_(std::move(shape)) {
  numel_ = shape_numel(shape_);
  bytes_.assign(static_cast<std::size_t>(numel_) * element_size(dt), std::byte{0});
}

Tensor Tensor::scalar_f32(float v) {
  Tensor t(DType::f32, {});
  t.set(0, v);
  return t;
}

Tensor Tensor::from_bytes(DType dt, Shape shape, std::vector<std::byte> bytes) {
  Tensor t;
  t.dtype_ = dt;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  if (static_cast<std::uint64_t>(t.numel_) * element_size(dt) != bytes.size())
    throw InvalidArgument("tensor bytes", std::to_string(bytes.size()),
                          "expected " + std::to_string(t.numel_ * static_cast<std::int64_t>(element_size(dt))) +
                              " bytes for shape " + shape_string(t.shape_));
  t.bytes_ = std::move(bytes);
  return t;
}

template <class T>
static T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <class T>
static void store(std::byte* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

double Tensor::get(std::int64_t i) const {
  const std::byte* p = bytes_.data() + static_cast<std::size_t>(i) * element_size(dtype_);
  switch (dtype_) {
    case DType::f32: return load<float>(p);
    case DType::bf16: return bf16_to_float(load<std::uint16_t>(p));
    case DType::f16: return f16_to_float(load<std::uint16_t>(p));
    case DType::f64: return load<double>(p);
    case DType::i64: return static_cast<double>(load<std::int64_t>(p));
    case DType::i32: return load<std::int32_t>(p);
    case DType::i16: return load<std::int16_t>(p);
    case DType::i8: return load<std::int8_t>(p);
    case DType::u8: return load<std::uint8_t>(p);
    case DType::boolean: return load<std::uint8_t>(p) ? 1.0 : 0.0;
  }
  return 0.0;
}

float Tensor::get_f32(std::int64_t i) const {
  const std::byte* p = bytes_.data() + static_cast<std::size_t>(i) * element_size(dtype_);
  switch (dtype_) {
    case DType::f32: return load<float>(p);
    case DType::bf16: return bf16_to_float(load<std::uint16_t>(p));
    case DType::f16: return f16_to_float(load<std::uint16_t>(p));
    default: return static_cast<float>(get(i));
  }
}

bool Tensor::nonzero(std::int64_t i) const {
  double v = get(i);
  return v != 0.0 || std::isnan(v);
}

void Tensor::set(std::int64_t i, double v) {
  std::byte* p = bytes_.data() + static_cast<std::size_t>(i) * element_size(dtype_);
  switch (dtype_) {
    case DType::f32: store<float>(p, static_cast<float>(v)); break;
    case DType::bf16: store<std::uint16_t>(p, double_to_bf16(v)); break;
    case DType::f16: store<std::uint16_t>(p, double_to_f16(v)); break;
    case DType::f64: store<double>(p, v); break;
    case DType::i64: store<std::int64_t>(p, static_cast<std::int64_t>(v)); break;
    case DType::i32: store<std::int32_t>(p, static_cast<std::int32_t>(v)); break;
    case DType::i16: store<std::int16_t>(p, static_cast<std::int16_t>(v)); break;
    case DType::i8: store<std::int8_t>(p, static_cast<std::int8_t>(v)); break;
    case DType::u8: store<std::uint8_t>(p, static_cast<std::uint8_t>(v)); break;
    case DType::boolean: store<std::uint8_t>(p, v != 0.0 ? 1 : 0); break;
  }
}

std::uint16_t Tensor::get_bits16(std::int64_t i) const {
  return load<std::uint16_t>(bytes_.data() + static_cast<std::size_t>(i) * 2);
}
void Tensor::set_bits16(std::int64_t i, std::uint16_t bits) {
  store<std::uint16_t>(bytes_.data() + static_cast<std::size_t>(i) * 2, bits);
}

bool Tensor::bitwise_equal(const Tensor& o) const {
  return dtype_ == o.dtype_ && shape_ == o.shape_ && bytes_ == o.bytes_;
}

}  // namespace divcheck
