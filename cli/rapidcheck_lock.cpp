// The process-wide RapidCheck mutex (see rapidcheck_lock.hpp).
#include "cli/rapidcheck_lock.hpp"

namespace divcheck::gate {

std::mutex& rapidcheck_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace divcheck::gate
