// One benchmark of the CUDA backend (see bench_runner.hpp).
#include "bench/bench_runner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <string>
#include <memory>
#include <numeric>
#include <vector>

#include "bench/device_data.hpp"
#include "core/errors.hpp"
#include "kernels/cuda/case_args.hpp"
#include "kernels/cuda/device_api.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace divcheck::bench {

namespace {

using cuda::cuda_check;
using cuda::DeviceBuffer;

constexpr std::int64_t kSequences = 8;                   // B; T = rows / B
constexpr std::size_t kFlushBytes = std::size_t{256} << 20;
constexpr std::size_t kSlack = std::size_t{1} << 20;      // room for the copy of bytes/2
int g_failures = 0;

const char* dtype_name(cuda::FloatKind k) {
  switch (k) {
    case cuda::FloatKind::f32: return "f32";
    case cuda::FloatKind::bf16: return "bf16";
    case cuda::FloatKind::f16: return "f16";
  }
  return "?";
}

// Device buffers of one (rows, V, dtype), kept across the benchmarks of that shape.
struct DeviceSet {
  std::int64_t rows = 0, vocab = 0;
  cuda::FloatKind dtype = cuda::FloatKind::f32;
  DeviceBuffer inputs;   // [p-side | q-side] rows x V each
  DeviceBuffer grads;    // [grad p-side | grad q-side]
  DeviceBuffer valid;    // rows bytes, all 1
  DeviceBuffer go;       // upstream gradient: kSequences floats of 1.0
  DeviceBuffer loss;     // kSequences floats
  DeviceBuffer work;     // workspace of either launch
  DeviceBuffer flush;    // kFlushBytes
  std::size_t tensor_bytes = 0;
};
std::unique_ptr<DeviceSet> g_set;

DeviceSet& device_set(const BenchSpec& s, cudaStream_t stream) {
  if (g_set && g_set->rows == s.rows && g_set->vocab == s.vocab && g_set->dtype == s.dtype) return *g_set;
  g_set.reset();  // free the previous shape first
  auto d = std::make_unique<DeviceSet>();
  d->rows = s.rows;
  d->vocab = s.vocab;
  d->dtype = s.dtype;
  const std::int64_t n = s.rows * s.vocab;
  d->tensor_bytes = static_cast<std::size_t>(n) * cuda::float_kind_size(s.dtype);
  d->inputs = DeviceBuffer(2 * d->tensor_bytes + kSlack, "benchmark inputs");
  d->grads = DeviceBuffer(2 * d->tensor_bytes + kSlack, "benchmark gradients");
  d->valid = DeviceBuffer(static_cast<std::size_t>(s.rows), "benchmark mask");
  d->go = DeviceBuffer(kSequences * sizeof(float), "benchmark grad_output");
  d->loss = DeviceBuffer(kSequences * sizeof(float), "benchmark loss");
  d->work = DeviceBuffer(std::max(cuda::logit_workspace_bytes(kSequences, s.rows / kSequences),
                                  cuda::tvd_prob_workspace_bytes(s.rows)),
                         "benchmark workspace");
  d->flush = DeviceBuffer(kFlushBytes, "L2 flush buffer");
  cuda_check(cudaMemsetAsync(d->valid.get(), 1, static_cast<std::size_t>(s.rows), stream), "cudaMemsetAsync(mask)");
  const std::vector<float> ones(kSequences, 1.0f);
  cuda_check(cudaMemcpyAsync(d->go.get(), ones.data(), kSequences * sizeof(float), cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync(grad_output)");
  cuda_check(cudaStreamSynchronize(stream), "filling benchmark inputs");
  g_set = std::move(d);
  return *g_set;
}

bool is_tvd(const BenchSpec& s) { return s.id == DivergenceId::tvd_prob; }

std::size_t minimal_bytes(const BenchSpec& s, const DeviceSet& d) {
  const std::size_t reads = 2 * d.tensor_bytes + (is_tvd(s) ? 0 : static_cast<std::size_t>(s.rows));
  const std::size_t writes = s.backward ? (is_tvd(s) || s.student_only ? 1 : 2) * d.tensor_bytes : 0;
  return reads + writes;
}

// Plan knobs for A/B runs in one session (bench/RESULTS.md); unset or empty: automatic.
//   DIVCHECK_BENCH_ROW_GRID=1|2         LogitArgs::row_grid (one cluster per row, persistent)
//   DIVCHECK_BENCH_ROW_THREADS=128|256|512   LogitArgs::row_threads
//   DIVCHECK_BENCH_CLUSTER_CTAS=1|2|4|8|16   LogitArgs::cluster_ctas
//   DIVCHECK_BENCH_STREAM=1|2           LogitArgs::stream_rows (KL, cross-entropy and ts-KL, forward
//                                       only and with gradients, and the Jefferys rows' centred
//                                       forward: 1 the cluster kernel, 2 the streamed kernel)
//   DIVCHECK_BENCH_STREAM_GROUPS=1|2|4|8     LogitArgs::stream_groups (groups per tile, streamed)
//   DIVCHECK_BENCH_STREAM_REGISTERS=64|80    LogitArgs::stream_registers (the streamed kernel's cap)
//   DIVCHECK_BENCH_CLUSTER_POLICY=1|2   LogitArgs::cluster_policy (the cluster kernel's placement
//                                       preference: 1 spread, 2 load balancing; unset automatic)
//   DIVCHECK_BENCH_PARTIAL_STAGE=1|2|3  LogitArgs::partial_stage (the cluster kernel: 1 never partly
//                                       staged, 2 or 3 the partly staged plan of that many CTAs per
//                                       SM; launches whose slices fit whole keep the automatic plan)
//   DIVCHECK_BENCH_POW2=0|1             LogitArgs::pow2_kernels (0: T = 2^k on the reciprocal's
//                                       kernels, the form before step 73; unset or 1 automatic)
//   DIVCHECK_BENCH_TEMPERATURE=T        the temperature rows' T (default 2, a power of two: the
//                                       multiplying kernels, RowPaths::plain_pow2_t; e.g. 3 for
//                                       the reciprocal's, plain_recip_t, and 1e38 for the dividing
//                                       ones, plain_scaled_t); a finite number > 0
// Any other value is an error naming the variable.
int forced_knob(const char* name, std::initializer_list<int> allowed, const char* meaning) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  for (int k : allowed)
    if (std::to_string(k) == v) return k;
  throw InvalidArgument(name, v, meaning);
}
int forced_row_grid() {
  static const int grid = forced_knob("DIVCHECK_BENCH_ROW_GRID", {1, 2}, "must be 1 (one cluster per row) or 2 (persistent)");
  return grid;
}
int forced_row_threads() {
  static const int threads = forced_knob("DIVCHECK_BENCH_ROW_THREADS", {128, 256, 512}, "must be 128, 256 or 512");
  return threads;
}
int forced_stream_rows() {
  static const int stream = forced_knob("DIVCHECK_BENCH_STREAM", {1, 2}, "must be 1 (never streamed) or 2 (always)");
  return stream;
}
int forced_stream_groups() {
  static const int groups = forced_knob("DIVCHECK_BENCH_STREAM_GROUPS", {1, 2, 4, 8}, "must be 1, 2, 4 or 8");
  return groups;
}
int forced_stream_registers() {
  static const int regs = forced_knob("DIVCHECK_BENCH_STREAM_REGISTERS", {64, 80}, "must be 64 or 80");
  return regs;
}
int forced_cluster_policy() {
  static const int policy =
      forced_knob("DIVCHECK_BENCH_CLUSTER_POLICY", {1, 2}, "must be 1 (spread) or 2 (load balancing)");
  return policy;
}
int forced_partial_stage() {
  static const int stage = forced_knob("DIVCHECK_BENCH_PARTIAL_STAGE", {1, 2, 3},
                                       "must be 1 (never), 2 or 3 (a partly staged plan of that many CTAs per SM)");
  return stage;
}
// 0: T = 2^k on the reciprocal's kernels (LogitArgs::pow2_kernels false: the form before step 73).
bool pow2_kernels() {
  static const bool on = [] {
    const char* v = std::getenv("DIVCHECK_BENCH_POW2");
    if (v == nullptr || *v == '\0' || std::string(v) == "1") return true;
    if (std::string(v) == "0") return false;
    throw InvalidArgument("DIVCHECK_BENCH_POW2", v, "must be 0 (the reciprocal's kernels) or 1");
  }();
  return on;
}
int forced_cluster_ctas() {
  static const int ctas = forced_knob("DIVCHECK_BENCH_CLUSTER_CTAS", {1, 2, 4, 8, 16}, "must be 1, 2, 4, 8 or 16");
  return ctas;
}

double bench_temperature() {
  static const double t = [] {
    const char* v = std::getenv("DIVCHECK_BENCH_TEMPERATURE");
    if (v == nullptr || *v == '\0') return 2.0;  // a distillation temperature
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (*end != '\0' || !(x > 0.0) || !std::isfinite(x))
      throw InvalidArgument("DIVCHECK_BENCH_TEMPERATURE", v, "must be a finite number > 0");
    return x;
  }();
  return t;
}

bool has_temperature(const BenchSpec& s) { return info(s.id).accepts(ParamKind::temperature); }

// Whether the launcher has a partly staged plan for this benchmark at the forced partial_stage
// (it refuses one where the slices fit whole or no part fits): asked once per benchmark.
bool partial_stage_applies(const BenchSpec& s, const cuda::LogitArgs& a) {
  static std::map<std::string, bool> known;
  const std::string key = bench_name(s);
  auto it = known.find(key);
  if (it != known.end()) return it->second;
  bool ok = true;
  try {
    (void)cuda::plan_logit_divergence(a);
  } catch (const InvalidArgument&) {
    ok = false;
  }
  known.emplace(key, ok);
  return ok;
}

// Enqueues one computation; returns the plan (ctas 0 for tvd_prob).
cuda::LogitPlan launch(const BenchSpec& s, DeviceSet& d, cudaStream_t stream) {
  unsigned char* in = d.inputs.as<unsigned char>();
  unsigned char* gr = d.grads.as<unsigned char>();
  if (is_tvd(s)) {
    cuda::TvdProbArgs a;
    a.dtype = s.dtype;
    a.rows = s.rows;
    a.vocab = s.vocab;
    a.p = in;
    a.q = in + d.tensor_bytes;
    a.reduction = cuda::TvdReduction::batchmean;
    a.grad_output = s.backward ? d.go.as<float>() : nullptr;
    a.grad_p = s.backward ? gr : nullptr;
    a.loss = d.loss.as<float>();
    a.workspace = d.work.get();
    cuda::launch_tvd_prob(a, stream);
    return cuda::LogitPlan{0, false, 0, 0};
  }
  cuda::LogitArgs a = cuda::logit_args_defaults(s.id, s.dtype, kSequences, s.rows / kSequences, s.vocab);
  if (has_temperature(s)) a.temperature = bench_temperature();
  a.p_logits = in;
  a.q_logits = in + d.tensor_bytes;
  a.valid = d.valid.as<std::uint8_t>();
  a.grad_output = s.backward ? d.go.as<float>() : nullptr;
  a.grad_p = s.backward && !s.student_only ? gr : nullptr;
  a.grad_q = s.backward ? gr + d.tensor_bytes : nullptr;
  a.loss = d.loss.as<float>();
  a.workspace = d.work.get();
  a.row_grid = forced_row_grid();
  a.row_threads = forced_row_threads();
  a.cluster_ctas = forced_cluster_ctas();
  a.cluster_policy = forced_cluster_policy();
  a.partial_stage = forced_partial_stage();
  a.pow2_kernels = pow2_kernels();
  if (a.partial_stage >= 2 && !partial_stage_applies(s, a)) a.partial_stage = 0;  // e.g. its slices fit whole
  // Only the one-pass rows' launches (KL, CE, ts-KL; forward only or with gradients) and the
  // centred Jefferys forward (jefferys_divergence, ts-Jefferys at T = 1, 2^k, masked_jefferys at
  // T = 1 on either path) have the streamed
  // kernels; the knobs leave the others automatic. (Until 2026-12-07 the knobs skipped the centred
  // forward, so DIVCHECK_BENCH_STREAM=1 did not give its cluster-kernel A/B: step 79.)
  if (cuda::one_pass_row_launch(a) || cuda::centred_forward_launch(a)) {
    a.stream_rows = forced_stream_rows();
    a.stream_groups = forced_stream_groups();
    a.stream_registers = forced_stream_registers();
  }
  return cuda::launch_logit_divergence(a, stream);
}

void flush_l2(DeviceSet& d, cudaStream_t stream, int k) {
  cuda_check(cudaMemsetAsync(d.flush.get(), k & 0xff, kFlushBytes, stream), "cudaMemsetAsync(L2 flush)");
}

class Events {
 public:
  Events() {
    cuda_check(cudaEventCreate(&start_), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~Events() {
    (void)cudaEventDestroy(start_);
    (void)cudaEventDestroy(stop_);
  }
  template <class F>
  double time_ms(cudaStream_t stream, F&& work) {
    cuda_check(cudaEventRecord(start_, stream), "cudaEventRecord");
    work();
    cuda_check(cudaEventRecord(stop_, stream), "cudaEventRecord");
    cuda_check(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float ms = 0.0f;
    cuda_check(cudaEventElapsedTime(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms;
  }

 private:
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

std::vector<std::uint32_t> loss_bits(DeviceSet& d, cudaStream_t stream) {
  std::vector<std::uint32_t> bits(kSequences);
  cuda_check(cudaMemcpyAsync(bits.data(), d.loss.get(), bits.size() * 4, cudaMemcpyDeviceToHost, stream),
             "cudaMemcpyAsync(loss)");
  cuda_check(cudaStreamSynchronize(stream), "reading the loss");
  return bits;
}

void body(benchmark::State& state, const BenchSpec& s) {
  cuda::Stream stream;
  DeviceSet& d = device_set(s, stream.get());
  // Inputs of this row kind: logits in [-8, 8), or probability rows in [0, 2/V) for tvd_prob.
  if (is_tvd(s)) {
    const auto n = s.rows * s.vocab;
    fill_uniform(d.inputs.get(), s.dtype, n, 3, 0.0f, 2.0f / static_cast<float>(s.vocab), stream.get());
    fill_uniform(d.inputs.as<unsigned char>() + d.tensor_bytes, s.dtype, n, 4, 0.0f,
                 2.0f / static_cast<float>(s.vocab), stream.get());
  } else {
    fill_uniform(d.inputs.get(), s.dtype, s.rows * s.vocab, 1, -8.0f, 8.0f, stream.get());
    fill_uniform(d.inputs.as<unsigned char>() + d.tensor_bytes, s.dtype, s.rows * s.vocab, 2, -8.0f, 8.0f,
                 stream.get());
  }
  const cuda::LogitPlan plan = launch(s, d, stream.get());  // warm-up, and the check below
  stream.sync("warm-up launch");
  if (s.smoke) {
    const std::vector<std::uint32_t> first = loss_bits(d, stream.get());
    float loss0;
    std::memcpy(&loss0, first.data(), 4);
    if (!std::isfinite(loss0)) throw Unavailable("the loss of the warm-up launch is not finite");
    (void)launch(s, d, stream.get());
    if (loss_bits(d, stream.get()) != first) throw Unavailable("two launches gave different losses");
  }
  Events ev;
  std::vector<double> kernel_ms;
  int k = 0;
  for (auto _ : state) {
    flush_l2(d, stream.get(), ++k);
    const double ms = ev.time_ms(stream.get(), [&] { (void)launch(s, d, stream.get()); });
    state.SetIterationTime(ms * 1e-3);
    kernel_ms.push_back(ms);
  }
  const std::size_t bytes = minimal_bytes(s, d);
  const std::size_t copy_bytes = bytes / 2 / 16 * 16;  // read copy_bytes + write copy_bytes = bytes
  auto copy = [&] {
    cuda_check(cudaMemcpyAsync(d.grads.get(), d.inputs.get(), copy_bytes, cudaMemcpyDeviceToDevice, stream.get()),
               "cudaMemcpyAsync(yardstick copy)");
  };
  // One untimed copy first, as the kernel has its warm-up launch. On the H200 the first
  // benchmark of every run measured its copy low (2026-12-06: 4092 GB/s, every later one
  // 4257-4313; the earlier H200 tables alike), which inflated that benchmark's fraction by ~4%;
  // the likely cause is a one-time cost of the process's first device-to-device copy. Not yet
  // confirmed on an H200; on an H100, which shows no such gap, the warm-up changes nothing.
  copy();
  std::vector<double> copy_ms;
  const int copies = std::clamp(static_cast<int>(kernel_ms.size()), 5, 20);
  for (int i = 0; i < copies; ++i) {
    flush_l2(d, stream.get(), ++k);
    copy_ms.push_back(ev.time_ms(stream.get(), copy));
  }
  auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  };
  const double gbps = static_cast<double>(bytes) / (mean(kernel_ms) * 1e-3) / 1e9;
  const double copy_gbps = static_cast<double>(2 * copy_bytes) / (mean(copy_ms) * 1e-3) / 1e9;
  state.counters["bytes"] = static_cast<double>(bytes);
  // Device memory the launch needs beyond its inputs and outputs (its workspace; the kernels
  // allocate nothing): the figure to set beside a public implementation's temporaries.
  state.counters["workspace_bytes"] = static_cast<double>(
      is_tvd(s) ? cuda::tvd_prob_workspace_bytes(s.rows) : cuda::logit_workspace_bytes(kSequences, s.rows / kSequences));
  state.counters["GB/s"] = gbps;
  state.counters["copy_GB/s"] = copy_gbps;
  state.counters["frac_of_copy"] = gbps / copy_gbps;
  state.counters["ctas"] = plan.ctas;
  state.counters["threads"] = plan.threads;
  state.counters["staged"] = plan.staged ? 1 : 0;
  // The fraction of each slice in shared memory (1 when staged whole; below 1: partly staged).
  state.counters["staged_fraction"] =
      plan.staged && plan.slice > 0 ? static_cast<double>(plan.staged_columns) / static_cast<double>(plan.slice) : 0.0;
  state.counters["persistent"] = plan.persistent ? 1 : 0;
  state.counters["streamed"] = plan.streamed ? 1 : 0;
  state.counters["registers"] = plan.registers;  // (streamed only)
  state.counters["cluster_policy"] = plan.cluster_policy;  // the launch's: 0 default, 1 spread, 2 load balancing
  state.counters["resident_clusters"] = plan.resident_clusters;  // the persistent grid's clusters
  if (has_temperature(s)) {
    state.counters["temperature"] = bench_temperature();
    state.counters["pow2_kernels"] = pow2_kernels() ? 1 : 0;  // DIVCHECK_BENCH_POW2
  }
}

}  // namespace

std::string bench_name(const BenchSpec& s) {
  return std::string(name_of(s.id)) + "/" + dtype_name(s.dtype) + "/" + std::to_string(s.rows) + "x" +
         std::to_string(s.vocab) + "/" + (!s.backward ? "fwd" : s.student_only ? "fwd_bwd_student" : "fwd_bwd");
}

void run_benchmark(benchmark::State& state, const BenchSpec& spec) {
  try {
    body(state, spec);
  } catch (const std::exception& e) {
    ++g_failures;
    state.SkipWithError(e.what());
    // A failed launch may leave a sticky error: drop the cached buffers and start over next time.
    g_set.reset();
  }
}

int failures() { return g_failures; }

void release_device_buffers() { g_set.reset(); }

}  // namespace divcheck::bench
