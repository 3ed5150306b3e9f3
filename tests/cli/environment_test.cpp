// The environment block of report.json: the NVIDIA driver version parser on the two line
// formats seen on real machines, and the host facts every run reports.
#include <gtest/gtest.h>

#include "cli/environment.hpp"

namespace divcheck::gate {
namespace {

TEST(Environment, NvidiaDriverVersionFromBothLineFormats) {
  // The first from a proprietary-module machine, the second from the H200 machine (open module).
  EXPECT_EQ(parse_nvidia_driver_version(
                "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 07:09:12 UTC 2025"),
            "580.65.06");
  EXPECT_EQ(parse_nvidia_driver_version(
                "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  "),
            "580.159.04");
  EXPECT_EQ(parse_nvidia_driver_version("no version here"), "unknown");
  EXPECT_EQ(parse_nvidia_driver_version(""), "unknown");
}

TEST(Environment, HostFactsAreFilled) {
  const report::Environment e = collect_environment();
  EXPECT_FALSE(e.hostname.empty());
  EXPECT_FALSE(e.cpu_model.empty());
  EXPECT_FALSE(e.compiler.empty());
  EXPECT_FALSE(e.git_sha.empty());
  // Either a GPU or the reason there is none, never neither.
  EXPECT_TRUE(e.gpu.has_value() || !e.gpu_unavailable_reason.empty());
}

}  // namespace
}  // namespace divcheck::gate
