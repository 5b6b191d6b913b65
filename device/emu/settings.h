// The emulated GPUs' settings, read once from the environment (README.md lists them).
#pragma once
#include <cstddef>
#include <vector>

#include "device/emu/gpu_emu.h"

namespace parbench::gpu_emu {

struct Settings {
  int gpus = 4;                                // visible GPUs: PARBENCH_EMU_GPUS, or CUDA_VISIBLE_DEVICES' count
  // The node's GPU behind each visible one. The node has PARBENCH_EMU_GPUS GPUs, the same in every process, and
  // CUDA_VISIBLE_DEVICES picks among them as on a real node; the UUID follows the physical GPU, so processes can
  // tell whether they share one.
  std::vector<int> physical;
  std::size_t memory_bytes = std::size_t(2) << 30;  // PARBENCH_EMU_GPU_MEMORY, per GPU
  bool strict = false;                         // PARBENCH_EMU_STRICT=1: host dereferences of device memory stop
  bool legacy_stream_error = false;            // PARBENCH_EMU_LEGACY_STREAM=error: a use of a legacy stream stops
  unsigned kernel_delay_us = 0;                // PARBENCH_EMU_KERNEL_DELAY_US: kernels and GEMMs run this longer
  HazardMode hazards = HazardMode::abort;      // PARBENCH_EMU_HAZARDS: what a stream-ordering hazard does
};
// A bad value prints the variable, the value and the accepted form, and exits with status 2.
const Settings& settings();
// The physical GPU behind visible device `device` (its UUID's last bytes).
int physical_gpu(int device);
[[noreturn]] void bad_setting(const char* name, const char* value, const char* accepted);

}  // namespace parbench::gpu_emu
