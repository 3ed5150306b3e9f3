// A host emulator of the CUDA execution model, just enough to run the CUDA backend's kernels
// (kernels/cuda/*.cuh compiled by g++ with fake_cuda/prelude.hpp) on a machine without a GPU:
// one OS thread per CUDA thread; __syncthreads, warp shuffles and cluster.sync() as barriers;
// distributed shared memory as pointers into the other CTAs' explicitly passed shared storage.
// It checks the kernels' logic (indices, slices, barriers, reduction order, policies), not their
// performance or the CUDA runtime calls of the launchers.
#pragma once

#include <cstddef>
#include <functional>

namespace emu {

struct LaunchShape {
  unsigned grid = 1;     // blocks (a multiple of cluster)
  unsigned block = 32;   // threads per block (a multiple of 32)
  unsigned cluster = 1;  // blocks per cluster
};

// Runs body() once in every CUDA thread of the grid. The blocks of one cluster run
// concurrently; clusters run one after another (so function-scope `static` shared memory is
// per-CTA whenever cluster == 1). shared_base(rank), when given, is the base of CTA rank's
// shared storage of shared_bytes bytes: the one region map_shared() translates.
void launch(const LaunchShape& shape, const std::function<void()>& body,
            const std::function<void*(unsigned rank)>& shared_base = {}, std::size_t shared_bytes = 0);

}  // namespace emu
