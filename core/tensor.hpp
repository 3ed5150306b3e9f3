// Host tensors: a dtype, a row-major shape and the raw bytes. Element access converts exactly
// (every supported dtype is exactly representable in double) and writes round once to the
// tensor's dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace divcheck {

using Shape = std::vector<std::int64_t>;

std::string shape_string(const Shape& s);  // "(2, 3, 5)"; "()" for a scalar
std::int64_t shape_numel(const Shape& s);   // throws InvalidArgument on negative dims / overflow

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dt, Shape shape);  // zero-filled
  static Tensor scalar_f32(float v);
  // Adopt raw little-endian bytes; throws InvalidArgument when the size does not match the shape.
  static Tensor from_bytes(DType dt, Shape shape, std::vector<std::byte> bytes);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(std::size_t i) const { return shape_.at(i); }
  std::size_t rank() const { return shape_.size(); }
  std::int64_t numel() const { return numel_; }
  std::size_t nbytes() const { return bytes_.size(); }
  bool empty_tensor() const { return bytes_.empty() && shape_.empty() && numel_ == 0; }

  std::byte* data() { return bytes_.data(); }
  const std::byte* data() const { return bytes_.data(); }

  // Value of element i (flat, row-major) as double: exact for every dtype.
  double get(std::int64_t i) const;
  // Value as float: exact for f32/bf16/f16 (f64 and i64 round).
  float get_f32(std::int64_t i) const;
  // Non-zero test for masks (any dtype; NaN counts as non-zero).
  bool nonzero(std::int64_t i) const;
  // Write element i, rounding once to the dtype (integers: truncation toward zero, must fit).
  void set(std::int64_t i, double v);
  // Raw 16-bit pattern access for bf16/f16.
  std::uint16_t get_bits16(std::int64_t i) const;
  void set_bits16(std::int64_t i, std::uint16_t bits);

  // Bitwise equality of dtype, shape and bytes.
  bool bitwise_equal(const Tensor& o) const;

 private:
  DType dtype_ = DType::f32;
  Shape shape_;
  std::int64_t numel_ = 0;
  std::vector<std::byte> bytes_;
};

}  // namespace divcheck
