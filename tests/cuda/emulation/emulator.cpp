// The CUDA execution-model emulator (see emulator.hpp).
#include "tests/cuda/emulation/emulator.hpp"

#include <pthread.h>

#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "tests/cuda/emulation/fake_cuda/prelude.hpp"

namespace emu {

namespace {

struct Warp {
  std::barrier<> bar{32};
  unsigned long long slot[32] = {};
};

struct Cta {
  explicit Cta(unsigned threads) : bar(threads) {
    for (unsigned w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Warp>());
  }
  std::barrier<> bar;
  std::vector<std::unique_ptr<Warp>> warps;
};

struct Cluster {
  Cluster(unsigned size, unsigned threads) : bar(static_cast<std::ptrdiff_t>(size) * threads), size(size) {}
  std::barrier<> bar;
  unsigned size;
  std::vector<char*> bases;
  std::size_t bytes = 0;
};

struct ThreadContext {
  dim3 thread, block, block_dim, grid_dim;
  Cta* cta = nullptr;
  Cluster* cluster = nullptr;
  unsigned rank = 0;
  const std::function<void()>* body = nullptr;
};

thread_local ThreadContext* t_ctx = nullptr;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "kernel emulator: %s\n", what);
  std::abort();
}

ThreadContext& ctx() {
  if (!t_ctx) fail("a CUDA builtin was used outside an emulated kernel");
  return *t_ctx;
}

void* run_thread(void* arg) {
  auto* c = static_cast<ThreadContext*>(arg);
  t_ctx = c;
  (*c->body)();
  t_ctx = nullptr;
  return nullptr;
}

}  // namespace

const dim3& thread_idx() { return ctx().thread; }
const dim3& block_idx() { return ctx().block; }
const dim3& block_dim() { return ctx().block_dim; }
const dim3& grid_dim() { return ctx().grid_dim; }
void sync_block() { ctx().cta->bar.arrive_and_wait(); }

unsigned long long warp_exchange(unsigned long long value, int src) {
  ThreadContext& c = ctx();
  Warp& w = *c.cta->warps[c.thread.x / 32];
  w.slot[c.thread.x % 32] = value;
  w.bar.arrive_and_wait();
  const unsigned long long r = w.slot[src];
  w.bar.arrive_and_wait();  // nobody overwrites a slot before every lane has read
  return r;
}

int warp_any(int pred) {
  ThreadContext& c = ctx();
  Warp& w = *c.cta->warps[c.thread.x / 32];
  w.slot[c.thread.x % 32] = pred != 0 ? 1 : 0;
  w.bar.arrive_and_wait();
  int any = 0;
  for (int l = 0; l < 32; ++l) any |= w.slot[l] != 0 ? 1 : 0;
  w.bar.arrive_and_wait();
  return any;
}

unsigned cluster_size() { return ctx().cluster->size; }
unsigned cluster_rank() { return ctx().rank; }
void sync_cluster() { ctx().cluster->bar.arrive_and_wait(); }

void* map_shared(void* address, unsigned rank) {
  ThreadContext& c = ctx();
  Cluster& cl = *c.cluster;
  if (cl.bases.empty()) fail("map_shared_rank without registered shared storage");
  if (rank >= cl.size) fail("map_shared_rank: rank outside the cluster");
  char* mine = cl.bases[c.rank];
  const auto* a = static_cast<char*>(address);
  if (a < mine || a >= mine + cl.bytes) fail("map_shared_rank: address outside this CTA's shared storage");
  return cl.bases[rank] + (a - mine);
}

void launch(const LaunchShape& shape, const std::function<void()>& body,
            const std::function<void*(unsigned rank)>& shared_base, std::size_t shared_bytes) {
  if (shape.block == 0 || shape.block % 32 != 0) fail("block size must be a positive multiple of 32");
  if (shape.cluster == 0 || shape.grid % shape.cluster != 0) fail("grid must be a multiple of the cluster size");
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 512 * 1024);
  for (unsigned first = 0; first < shape.grid; first += shape.cluster) {
    Cluster cluster(shape.cluster, shape.block);
    if (shared_base) {
      for (unsigned r = 0; r < shape.cluster; ++r) cluster.bases.push_back(static_cast<char*>(shared_base(r)));
      cluster.bytes = shared_bytes;
    }
    std::vector<std::unique_ptr<Cta>> ctas;
    for (unsigned r = 0; r < shape.cluster; ++r) ctas.push_back(std::make_unique<Cta>(shape.block));
    std::vector<ThreadContext> contexts(static_cast<std::size_t>(shape.cluster) * shape.block);
    std::vector<pthread_t> threads(contexts.size());
    for (unsigned r = 0; r < shape.cluster; ++r)
      for (unsigned t = 0; t < shape.block; ++t) {
        ThreadContext& c = contexts[static_cast<std::size_t>(r) * shape.block + t];
        c.thread.x = t;
        c.block.x = first + r;
        c.block_dim.x = shape.block;
        c.grid_dim.x = shape.grid;
        c.cta = ctas[r].get();
        c.cluster = &cluster;
        c.rank = r;
        c.body = &body;
      }
    for (std::size_t i = 0; i < contexts.size(); ++i)
      if (pthread_create(&threads[i], &attr, run_thread, &contexts[i]) != 0) fail("pthread_create failed");
    for (auto& th : threads) pthread_join(th, nullptr);
  }
  pthread_attr_destroy(&attr);
}

}  // namespace emu
