// Device names and `--device` resolution.
#include "core/device.h"

#include <charconv>

#include "base/error.h"

namespace parbench {

std::string_view device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::simt: return "simt";
    case DeviceKind::cuda: return "cuda";
  }
  return "?";
}

std::string device_name(const Device& d) {
  std::string n(device_kind_name(d.kind));
  if (d.kind == DeviceKind::cuda) n += ":" + std::to_string(d.index);
  return n;
}

#ifndef PARBENCH_HAVE_CUDA
CudaProbe probe_cuda() { return {false, false, 0, "this build has no CUDA support (PARBENCH_CUDA=OFF or no toolkit)"}; }
void cuda_profiler(bool) {}
#endif

Device resolve_device(std::string_view spec, std::string* choice) {
  const std::string accepted = "accepted: auto, cpu, simt, cuda, cuda:N";
  if (spec == "cpu") return {DeviceKind::cpu, 0};
  if (spec == "simt") return {DeviceKind::simt, 0};
  if (spec == "auto") {
    CudaProbe p = probe_cuda();
    if (p.usable) {
      if (choice) *choice = "device auto: cuda (" + std::to_string(p.count) + (p.emulated ? " emulated" : "") + " GPU(s) found)";
      return {DeviceKind::cuda, 0};
    }
    if (choice) *choice = "device auto: cpu (no usable GPU: " + p.reason + ")";
    return {DeviceKind::cpu, 0};
  }
  if (spec.substr(0, 4) == "cuda") {
    int index = 0;
    if (spec.size() > 4) {
      auto digits = spec.substr(5);
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (spec[4] != ':' || digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() || index < 0)
        throw UsageError("unknown device '" + std::string(spec) + "'; " + accepted);
    }
    CudaProbe p = probe_cuda();
    if (!p.usable) throw UsageError("device '" + std::string(spec) + "' is not usable: " + p.reason +
                                    "; use --device cpu or --device simt");
    if (index >= p.count)
      throw UsageError("device '" + std::string(spec) + "' does not exist: " + std::to_string(p.count) +
                       " GPU(s) found");
    if (choice && p.emulated)
      *choice = "device " + std::string(spec) + ": " + std::to_string(p.count) + " emulated GPUs (" + p.name +
                "); results check correctness and GPU hygiene, not speed";
    return {DeviceKind::cuda, index};
  }
  throw UsageError("unknown device '" + std::string(spec) + "'; " + accepted);
}

}  // namespace parbench
