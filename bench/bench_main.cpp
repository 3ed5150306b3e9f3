// divcheck_bench: Google Benchmark of the CUDA backend, every row of issue 3 at the registry's
// benchmark shapes ((rows, V) = (8192, 128256) and (4096, 256000)), bf16 and f32: forward only,
// forward + backward (every gradient), and for the logit rows forward + the student's gradient
// only (`fwd_bwd_student`); counters and method in bench_runner.hpp, results in bench/RESULTS.md.
//   divcheck_bench [--smoke] [Google Benchmark flags, e.g. --benchmark_format=json
//                   --benchmark_out=FILE --benchmark_filter=REGEX]
// --smoke: every benchmark at a tiny shape (64 x 1000), two iterations, with a check that the
// loss is finite and reproducible: the test suite's smoke tests (label gpu).
// The JSON's "context" names the divcheck revision and the GPU (bench_context.hpp).
// Without a visible CUDA device: prints "[  SKIPPED ] ..." and exits 0 with --smoke (ctest
// reports the smoke tests as skipped), else exits 2. Exit 1 when any benchmark failed.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/bench_context.hpp"
#include "bench/bench_runner.hpp"
#include "core/errors.hpp"
#include "kernels/backend.hpp"
#include "kernels/cuda/cuda_backend.hpp"

namespace {

using divcheck::DivergenceId;
using divcheck::bench::BenchSpec;

void register_all(bool smoke) {
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;
  if (smoke) {
    shapes = {{64, 1000}};
  } else {
    for (const auto& s : divcheck::info(DivergenceId::masked_kl_divergence).bench_shapes)
      shapes.emplace_back(s.rows, s.vocab);
  }
  for (const auto& [rows, vocab] : shapes)
    for (auto dtype : {divcheck::cuda::FloatKind::bf16, divcheck::cuda::FloatKind::f32})
      for (const auto& d : divcheck::registry()) {
        if (!divcheck::cuda::cuda_supports(d.id)) continue;
        for (int mode = 0; mode < 3; ++mode) {
          const bool student_only = mode == 2;
          if (student_only && d.id == DivergenceId::tvd_prob) continue;  // one gradient already
          const BenchSpec spec{d.id, rows, vocab, dtype, mode > 0, student_only, smoke};
          auto run = [spec](benchmark::State& st) { divcheck::bench::run_benchmark(st, spec); };
          auto* b = benchmark::RegisterBenchmark(divcheck::bench::bench_name(spec).c_str(), run);
          b->UseManualTime()->Unit(benchmark::kMillisecond);
          if (smoke) b->Iterations(2);
        }
      }
}

}  // namespace

int main(int argc, char** argv) {
  bool smoke = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) smoke = true;
    else args.push_back(argv[i]);
  }
  if (!divcheck::cuda_device_present()) {
    std::string why = "no CUDA device visible";
    try {
      (void)divcheck::make_cuda_backend();
    } catch (const divcheck::Unavailable& e) {
      why = e.what();
    }
    std::cout << "[  SKIPPED ] divcheck_bench: " << why << "\n";
    return smoke ? 0 : 2;
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;
  divcheck::bench::add_device_context();  // which divcheck, which GPU: the JSON's "context"
  register_all(smoke);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  divcheck::bench::release_device_buffers();
  return divcheck::bench::failures() == 0 ? 0 : 1;
}
