// The environment a run reports: host, CPU model, compiler, git revision (fixed at configure
// time) and the GPU (name, NVIDIA driver, CUDA driver API and runtime versions) when one is
// visible, else the reason there is none.
#pragma once

#include <string>

#include "reports/report_model.hpp"

namespace divcheck::gate {

report::Environment collect_environment();

// The GPU part alone (gpu_info.cpp; the only file that talks to the CUDA runtime).
void collect_gpu_info(report::Environment& env);

// The driver version in the first line of /proc/driver/nvidia/version, whose wording varies:
// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 ..." and
// "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
// give "580.65.06" and "580.159.04" (the first dotted number); "unknown" when there is none.
std::string parse_nvidia_driver_version(const std::string& line);

}  // namespace divcheck::gate
