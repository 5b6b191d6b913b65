// Devices (cpu, simt, cuda) and discovery: which one `--device auto` picks, and why.
#pragma once
#include <string>
#include <string_view>

namespace parbench {

enum class DeviceKind { cpu, simt, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;  // GPU ordinal on cuda; 0 elsewhere
  bool operator==(const Device&) const = default;
  bool on_host() const { return kind != DeviceKind::cuda; }
};

std::string_view device_kind_name(DeviceKind k);
std::string device_name(const Device& d);

// What the CUDA runtime says about GPUs here. `usable` is false on a machine without a driver or
// GPU (cudaErrorInsufficientDriver / NoDevice are "no GPU", not errors) or a build without CUDA.
struct CudaProbe {
  bool compiled = false;  // this build has the cuda device
  bool usable = false;
  int count = 0;
  std::string reason;  // why not usable, in words
  std::string name;    // GPU 0's name when usable
  bool emulated = false;  // the GPUs are the emulated GPU build's (PARBENCH_CUDA=EMULATED), not real ones
};
CudaProbe probe_cuda();

// Parses "auto", "cpu", "simt", "cuda" or "cuda:N". For auto, `*choice` receives a sentence saying
// what was picked and why; for emulated GPUs, a sentence saying so. Throws UsageError for unknown names and for cuda when no GPU is usable.
Device resolve_device(std::string_view spec, std::string* choice = nullptr);

// cudaProfilerStart / cudaProfilerStop, so `nsys profile --capture-range=cudaProfilerApi` records only the chosen
// steps; nothing on builds or devices without CUDA.
void cuda_profiler(bool start);

}  // namespace parbench
