// Layout of the device workspaces of the logit launch and the tvd_prob launch: typed arrays
// carved out of one caller-provided buffer, each aligned to 256 bytes. Plain C++17.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/math/hd.hpp"

namespace divcheck::cuda {

inline constexpr std::size_t kWorkspaceAlign = 256;

DIVCHECK_HD inline std::size_t align_up(std::size_t n) { return (n + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }

struct LogitWorkspace {
  float* row_loss;           // (B*T) per-position loss (valid positions only are read)
  long long* counts;         // (B) n_b = valid positions of sequence b
  long long* total;          // (1) N_valid
  float* coef;               // (B) w g / T of sequence b, rounded once from double
  float* messages;           // (B*T, kMessageCtas, 8) the CTA messages of forward-only one-exchange
                             // launches (RowKernelParams::messages), combined after the row kernel
  float* seq_loss;           // (B) s_b of sequence_mean (launch_reduce_positions); after the
                             // messages, so that the row kernels' messages_of arithmetic is unchanged
                             // (SASS, step 39)
  // The streamed kernel with gradients (stream_grad_rows_kernel.cuh): the rows' arrival counts
  // (zeroed before each launch: arrival_bytes).
  unsigned* arrivals;          // (B*T)
  // Messages per row: a cluster's CTAs (plan_math.hpp kMaxClusterCtas, 16) or the streamed
  // kernel's tiles (stream_plan.hpp kMaxStreamTiles, 32).
  static constexpr std::size_t kMessageCtas = 32;
  static constexpr std::size_t kMessageFloats = 8;
  static std::size_t bytes(std::int64_t batch, std::int64_t seq) {
    const auto b = static_cast<std::size_t>(batch), bt = static_cast<std::size_t>(batch * seq);
    return align_up(bt * sizeof(float)) + align_up(b * sizeof(long long)) + align_up(sizeof(long long)) +
           align_up(b * sizeof(float)) + align_up(bt * kMessageCtas * kMessageFloats * sizeof(float)) +
           align_up(b * sizeof(float)) + arrival_bytes(batch, seq);
  }
  static std::size_t arrival_bytes(std::int64_t batch, std::int64_t seq) {
    return align_up(static_cast<std::size_t>(batch * seq) * sizeof(unsigned));
  }
  static LogitWorkspace carve(void* base, std::int64_t batch, std::int64_t seq) {
    auto* p = static_cast<unsigned char*>(base);
    const auto b = static_cast<std::size_t>(batch), bt = static_cast<std::size_t>(batch * seq);
    LogitWorkspace w;
    w.row_loss = reinterpret_cast<float*>(p);
    p += align_up(bt * sizeof(float));
    w.counts = reinterpret_cast<long long*>(p);
    p += align_up(b * sizeof(long long));
    w.total = reinterpret_cast<long long*>(p);
    p += align_up(sizeof(long long));
    w.coef = reinterpret_cast<float*>(p);
    w.messages = messages_of(w.row_loss, batch, seq);
    w.seq_loss = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(w.messages) +
                                          align_up(bt * kMessageCtas * kMessageFloats * sizeof(float)));
    w.arrivals =
        reinterpret_cast<unsigned*>(reinterpret_cast<unsigned char*>(w.seq_loss) + align_up(b * sizeof(float)));
    return w;
  }
  // The rows a centred Jefferys forward hands to the cluster kernel (logit_launch.cu
  // launch_centred_fallback), one byte each, written by its combine in the place of the arrivals
  // (which only the streamed kernel with gradients uses).
  DIVCHECK_HD static unsigned char* fallback_of(float* row_loss, std::int64_t batch, std::int64_t seq) {
    const auto b = static_cast<std::size_t>(batch), bt = static_cast<std::size_t>(batch * seq);
    return reinterpret_cast<unsigned char*>(messages_of(row_loss, batch, seq)) +
           align_up(bt * kMessageCtas * kMessageFloats * sizeof(float)) + align_up(b * sizeof(float));
  }
  // The messages of the workspace whose row_loss this is: the row kernel finds them from its
  // row_loss pointer (a kernel parameter of their own changed the code of every row kernel:
  // bench/RESULTS.md steps 18 and 28).
  DIVCHECK_HD static float* messages_of(float* row_loss, std::int64_t batch, std::int64_t seq) {
    const auto b = static_cast<std::size_t>(batch), bt = static_cast<std::size_t>(batch * seq);
    return reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(row_loss) + align_up(bt * sizeof(float)) +
                                    align_up(b * sizeof(long long)) + align_up(sizeof(long long)) +
                                    align_up(b * sizeof(float)));
  }
};

struct TvdWorkspace {
  float* row_value;          // (N) 0.5 * sum_v |p - q| of each valid row
  long long* total;          // (1) n_valid
  double* scale;             // (1) 1, 1/n_valid or 1/(n_valid V)
  float* half_scale_g;       // (1) (float)(0.5 * scale * g)
  static std::size_t bytes(std::int64_t rows) {
    return align_up(static_cast<std::size_t>(rows) * sizeof(float)) + align_up(sizeof(long long)) +
           align_up(sizeof(double)) + align_up(sizeof(float));
  }
  static TvdWorkspace carve(void* base, std::int64_t rows) {
    auto* p = static_cast<unsigned char*>(base);
    TvdWorkspace w;
    w.row_value = reinterpret_cast<float*>(p);
    p += align_up(static_cast<std::size_t>(rows) * sizeof(float));
    w.total = reinterpret_cast<long long*>(p);
    p += align_up(sizeof(long long));
    w.scale = reinterpret_cast<double*>(p);
    p += align_up(sizeof(double));
    w.half_scale_g = reinterpret_cast<float*>(p);
    return w;
  }
};

}  // namespace divcheck::cuda
