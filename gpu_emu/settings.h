// The emulated GPUs' settings, read once from the environment (README.md lists them).
#pragma once
#include <cstddef>

namespace parbench::gpu_emu {

struct Settings {
  int gpus = 4;                                // PARBENCH_EMU_GPUS
  std::size_t memory_bytes = std::size_t(2) << 30;  // PARBENCH_EMU_GPU_MEMORY, per GPU
  bool strict = false;                         // PARBENCH_EMU_STRICT=1: host dereferences of device memory stop
};
// A bad value prints the variable, the value and the accepted form, and exits with status 2.
const Settings& settings();
[[noreturn]] void bad_setting(const char* name, const char* value, const char* accepted);

}  // namespace parbench::gpu_emu
