// Host facts for report.json.
#include "cli/environment.hpp"

#include <unistd.h>

#include <fstream>
#include <string>

#ifndef DIVCHECK_GIT_SHA
#define DIVCHECK_GIT_SHA "unknown"
#endif

namespace divcheck::gate {

namespace {

std::string hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        while (!v.empty() && v.front() == ' ') v.erase(v.begin());
        return v;
      }
    }
  }
  return "unknown";
}

std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("gcc ") + __VERSION__;
#else
  return "unknown";
#endif
}

}  // namespace

report::Environment collect_environment() {
  report::Environment e;
  e.hostname = hostname();
  e.cpu_model = cpu_model();
  e.compiler = compiler();
  e.git_sha = DIVCHECK_GIT_SHA;
  collect_gpu_info(e);
  return e;
}

}  // namespace divcheck::gate
