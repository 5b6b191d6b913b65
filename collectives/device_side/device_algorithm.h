// The device-side collectives' common part: each runs as one kernel (or a fixed few) queued on the caller's
// stream, reading and writing the peers' symmetric buffers directly and waiting on flags in device memory, with no
// host step between; an implementation adds its kernel launch and how many flag phases it uses.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "collectives/communicator/algorithm.h"
#include "collectives/device_side/symm_kernels.h"

namespace parbench {

// A device-side implementation's registry row (registry.cpp): its --impl name and the collectives its kernels
// implement, written there once.
struct DeviceRow {
  std::string_view name;
  std::vector<Collective> collectives;
};

class DeviceAlgorithm : public Algorithm {
 public:
  explicit DeviceAlgorithm(DeviceRow row) : row_(std::move(row)) {}
  std::string_view name() const override { return row_.name; }
  const std::vector<Collective>& collectives() const { return row_.collectives; }
  // Queued on CollArgs::stream: the harness does not wait for the stream first, and in a timed batch nor after.
  bool queues_on_callers_stream() const override { return true; }
  // One kernel on CollArgs::stream per operation, whose flag values come from device memory (symm_op_begin), so a
  // graph's replays run fresh operations.
  std::string capture_refusal(Collective) const override { return {}; }
  // The collectives of its row, where symmetric memory can be made (symmetric_memory_refusal).
  std::string unsupported(Collective c, const Communicator& comm) const override;
  // Makes or grows the symmetric buffers when the message needs it (collective, outside a timed loop's steady
  // state), queues the kernel, and outside a batch or a stream order waits for it as NCCL's calls do.
  void run(Communicator& c, const CollArgs& a) const override;

 protected:
  // The flag values one operation may use, and the symmetric buffer it needs.
  virtual unsigned phases(int ranks) const = 0;
  virtual std::size_t buffer_bytes(const CollArgs& a, int ranks) const;
  virtual void launch(const SymmPeers& p, const CollArgs& a) const = 0;

 private:
  DeviceRow row_;
};

}  // namespace parbench
