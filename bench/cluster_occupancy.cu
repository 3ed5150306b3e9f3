// divcheck_cluster_occupancy: how many thread block clusters of C CTAs (C = 1..16) the device
// holds at once, for a 256-thread CTA and a given dynamic shared memory per CTA, under each of the
// three cluster scheduling preferences (default, spread, load balancing), by
// cudaOccupancyMaxActiveClusters. It answers the question bench/RESULTS.md "Reading the misses"
// left open after steps 67 and 68: the persistent forward grid of the two-pass rows follows the
// number of resident clusters almost one for one, and with C = 8 or 16 CTAs of the staged plans
// (64-75 KB each: three per SM) it fills only 352-360 of the 396 CTA slots, because a cluster must
// fit in one GPC; would another cluster size fill more? Measured on three H100 80GB HBM3 and one
// H200 (2026-12-06, 132 SMs, the same table on all): at three CTAs per SM, load balancing, C = 1, 2, 3 and 6 fill all
// 396 slots, C = 4 384, C = 8 and 12 360, C = 16 352, C = 7 329; every other C fewer. (The staged slices need C >= 7 at
// bf16 V = 128256 and C >= 14 at V = 256000 to stay at three CTAs per SM, so no size there fills
// more than C = 8 and 16 do.)
//
// usage: divcheck_cluster_occupancy [--smoke] [SMEM_KB ...]   (default 40 66 72 74)
// Output: one Markdown table per shared memory size, clusters (and CTAs) per C and preference.
// Check (every run): the count for C = 1 must be given and equal cudaOccupancyMaxActiveBlocksPerMultiprocessor
// times the SM count; exit 1 otherwise, and [  SKIPPED ] with exit 0 without a CUDA device.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr int kThreads = 256;  // the row kernel's automatic CTA size at the benchmark shapes

// A CTA of the shape whose residency is asked: kThreads threads and dynamic shared memory; the
// body only keeps the shared memory in use (it is never timed).
__global__ void __launch_bounds__(kThreads) resident_probe(float* out) {
  extern __shared__ float slice[];
  slice[threadIdx.x] = static_cast<float>(threadIdx.x);
  __syncthreads();
  if (out != nullptr) out[blockIdx.x] = slice[(threadIdx.x + 1) % kThreads];
}

bool check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "divcheck_cluster_occupancy: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

// Clusters of `ctas` CTAs resident at once (-1 where the driver refuses the configuration).
int max_active_clusters(int ctas, int smem_bytes, cudaClusterSchedulingPolicy policy) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(ctas * 64));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
  cudaLaunchAttribute attributes[2] = {};
  attributes[0].id = cudaLaunchAttributeClusterDimension;
  attributes[0].val.clusterDim.x = static_cast<unsigned>(ctas);
  attributes[0].val.clusterDim.y = 1;
  attributes[0].val.clusterDim.z = 1;
  attributes[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
  attributes[1].val.clusterSchedulingPolicyPreference = policy;
  config.attrs = attributes;
  config.numAttrs = 2;
  int clusters = -1;
  if (cudaOccupancyMaxActiveClusters(&clusters, resident_probe, &config) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return clusters;
}

}  // namespace

int main(int argc, char** argv) {
  bool smoke = false;
  std::vector<int> sizes_kb;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--smoke") {
      smoke = true;
      continue;
    }
    char* end = nullptr;
    const long kb = std::strtol(arg.c_str(), &end, 10);
    if (end == arg.c_str() || *end != '\0' || kb < 0 || kb > 227) {
      std::fprintf(stderr, "divcheck_cluster_occupancy: SMEM_KB must be an integer in 0..227, got '%s'\n", arg.c_str());
      return 2;
    }
    sizes_kb.push_back(static_cast<int>(kb));
  }
  if (sizes_kb.empty()) sizes_kb = smoke ? std::vector<int>{66} : std::vector<int>{40, 66, 72, 74};

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("[  SKIPPED ] no CUDA device\n");
    return 0;
  }
  cudaDeviceProp prop{};
  if (!check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) return 1;
  if (!check(cudaFuncSetAttribute(resident_probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
             "non-portable cluster sizes"))
    return 1;
  std::printf("%s, %d SMs, %zu bytes of shared memory per SM, %d threads per CTA\n", prop.name,
              prop.multiProcessorCount, prop.sharedMemPerMultiprocessor, kThreads);

  const cudaClusterSchedulingPolicy policies[3] = {
      cudaClusterSchedulingPolicyDefault, cudaClusterSchedulingPolicySpread, cudaClusterSchedulingPolicyLoadBalancing};
  const char* policy_names[3] = {"default", "spread", "load balancing"};
  bool consistent = true;
  for (const int kb : sizes_kb) {
    const int smem = kb * 1024;
    if (!check(cudaFuncSetAttribute(resident_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, smem),
               "dynamic shared memory size"))
      return 1;
    int per_sm = 0;
    if (!check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, resident_probe, kThreads, smem), "CTAs per SM"))
      return 1;
    const int slots = per_sm * prop.multiProcessorCount;
    std::printf("\n%d KB per CTA: %d CTAs per SM, %d CTA slots; clusters (CTAs) resident\n\n| C |", kb, per_sm, slots);
    for (const char* name : policy_names) std::printf(" %s |", name);
    std::printf("\n|---|---|---|---|\n");
    for (int ctas = 1; ctas <= 16; ++ctas) {
      std::printf("| %d |", ctas);
      for (int p = 0; p < 3; ++p) {
        const int clusters = max_active_clusters(ctas, smem, policies[p]);
        if (clusters < 0) {
          std::printf(" refused |");
          if (ctas == 1) {  // a one-CTA cluster is always valid: a refusal there is a failure, not a skipped check
            std::fprintf(stderr, "divcheck_cluster_occupancy: clusters of 1 CTA refused (%s)\n", policy_names[p]);
            consistent = false;
          }
          continue;
        }
        std::printf(" %d (%d) |", clusters, clusters * ctas);
        if (ctas == 1 && clusters != slots) {
          std::fprintf(stderr, "divcheck_cluster_occupancy: clusters of 1 CTA: %d resident, expected %d (%d per SM)\n",
                       clusters, slots, per_sm);
          consistent = false;
        }
      }
      std::printf("\n");
    }
  }
  return consistent ? 0 : 1;
}
