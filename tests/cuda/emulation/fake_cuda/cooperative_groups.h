// The emulator's stand-in for <cooperative_groups.h>: the thread block cluster of the calling
// CTA (barrier over every thread of the cluster; distributed shared memory as plain pointers
// into the other CTAs' shared storage).
#pragma once

namespace emu {
unsigned cluster_size();
unsigned cluster_rank();
void sync_cluster();
void* map_shared(void* address, unsigned rank);
}  // namespace emu

namespace cooperative_groups {

class cluster_group {
 public:
  unsigned int num_blocks() const { return ::emu::cluster_size(); }
  unsigned int block_rank() const { return ::emu::cluster_rank(); }
  void sync() const { ::emu::sync_cluster(); }
  template <class T>
  T* map_shared_rank(T* address, unsigned int rank) const {
    return static_cast<T*>(::emu::map_shared(const_cast<void*>(static_cast<const void*>(address)), rank));
  }
};

inline cluster_group this_cluster() { return cluster_group{}; }

}  // namespace cooperative_groups
