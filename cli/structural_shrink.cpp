// Structural shrinking: blocks of indices removed along named dimensions (structural_shrink.hpp).
#include "cli/structural_shrink.hpp"

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "core/registry.hpp"

namespace divcheck::gate {

namespace {

// The dimensions a pass tries, in this order: whole sequences and rows first, columns last.
constexpr std::string_view kDims[] = {"B", "N", "T", "D", "V", "H"};

// Removes indices [start, start + count) along `axis`, copying the other elements' bytes.
Tensor remove_block(const Tensor& t, std::size_t axis, std::int64_t start, std::int64_t count) {
  Shape shape = t.shape();
  const std::int64_t n = shape.at(axis);
  std::int64_t outer = 1, inner = 1;
  for (std::size_t a = 0; a < axis; ++a) outer *= shape[a];
  for (std::size_t a = axis + 1; a < shape.size(); ++a) inner *= shape[a];
  const std::size_t elem = t.numel() > 0 ? t.nbytes() / static_cast<std::size_t>(t.numel()) : 0;
  const std::size_t run = static_cast<std::size_t>(inner) * elem;  // bytes of one index's slab
  std::vector<std::byte> bytes;
  bytes.reserve(static_cast<std::size_t>(outer * (n - count)) * run);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t k = 0; k < n; ++k) {
      if (k >= start && k < start + count) continue;
      const std::byte* src = t.data() + static_cast<std::size_t>(o * n + k) * run;
      bytes.insert(bytes.end(), src, src + run);
    }
  shape[axis] = n - count;
  return Tensor::from_bytes(t.dtype(), shape, std::move(bytes));
}

// The axis of `dim` in a role's tensor (its non-empty symbolic dims, in order), or -1.
int axis_of(const RoleSpec& r, std::string_view dim) {
  int axis = 0;
  for (std::string_view d : r.dims) {
    if (d.empty()) continue;
    if (d == dim) return axis;
    ++axis;
  }
  return -1;
}

// The symbolic dims of the loss (and so of grad_output), as core/case.cpp's loss_shape: a
// scalar; per sequence (B,) for the logit rows with reduction "none"; tvd_prob's (N, V).
std::vector<std::string_view> loss_dims(const Case& c) {
  if (loss_shape(c).empty()) return {};
  const DivergenceInfo& d = info(c.id);
  const RoleSpec& first = c.id == DivergenceId::tvd_prob ? *d.role("p") : d.roles.front();
  if (c.id == DivergenceId::tvd_prob) {
    std::vector<std::string_view> dims;
    for (std::string_view x : first.dims)
      if (!x.empty()) dims.push_back(x);
    return dims;
  }
  return {first.dims[0]};
}

}  // namespace

std::optional<Case> without_block(const Case& c, std::string_view dim, std::int64_t start, std::int64_t count) {
  if (count <= 0 || start < 0) return std::nullopt;
  Case out = c;
  bool touched = false;
  for (const RoleSpec& r : info(c.id).roles) {
    auto it = out.inputs.find(std::string(r.name));
    if (it == out.inputs.end()) continue;
    const int axis = axis_of(r, dim);
    if (axis < 0 || static_cast<std::size_t>(axis) >= it->second.rank()) continue;
    const std::int64_t n = it->second.dim(static_cast<std::size_t>(axis));
    if (count >= n || start + count > n) return std::nullopt;  // keep at least one index
    it->second = remove_block(it->second, static_cast<std::size_t>(axis), start, count);
    touched = true;
  }
  if (!touched) return std::nullopt;
  const std::vector<std::string_view> ld = loss_dims(c);
  for (std::size_t a = 0; a < ld.size(); ++a)
    if (ld[a] == dim && a < out.grad_output.rank()) out.grad_output = remove_block(out.grad_output, a, start, count);
  try {
    validate_case(out);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return out;
}

void shrink_structure(ShrinkResult& r, const std::function<bool(const Case&)>& still_fails, const ShrinkLimits& limits,
                      std::chrono::steady_clock::time_point t0) {
  using Clock = std::chrono::steady_clock;
  auto size_of = [](const Case& c, std::string_view dim) -> std::int64_t {
    for (const RoleSpec& role : info(c.id).roles) {
      const Tensor* t = c.input(std::string(role.name));
      const int axis = axis_of(role, dim);
      if (t != nullptr && axis >= 0 && static_cast<std::size_t>(axis) < t->rank())
        return t->dim(static_cast<std::size_t>(axis));
    }
    return 0;
  };
  for (std::string_view dim : kDims) {
    for (std::int64_t len = size_of(r.minimal, dim) / 2; len >= 1; len /= 2) {
      std::int64_t start = 0;
      while (start + len <= size_of(r.minimal, dim)) {
        if (r.attempts >= limits.max_attempts) {
          r.stopped_by = "attempt limit";
          return;
        }
        if (std::chrono::duration<double>(Clock::now() - t0).count() > limits.max_seconds) {
          r.stopped_by = "time limit";
          return;
        }
        std::optional<Case> candidate = without_block(r.minimal, dim, start, len);
        if (!candidate) {
          start += len;
          continue;
        }
        ++r.attempts;
        if (still_fails(*candidate)) {
          r.minimal = std::move(*candidate);
          ++r.steps;  // the same start again: the next block has moved into it
        } else {
          start += len;
        }
      }
    }
  }
}

}  // namespace divcheck::gate
