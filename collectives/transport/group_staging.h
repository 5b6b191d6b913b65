// Device memory that a host transport (MPI without CUDA support, the tcp mesh) cannot touch goes through pinned host
// buffers: a group's through one, each such op in its own 256-byte aligned part, sends copied in before the group and
// receives copied out after it; posted sends each through a copy of its own, held until they are finished.
#pragma once
#include <span>
#include <vector>

#include "collectives/transport/transport.h"
#include "core/memory.h"

namespace parbench {

class GroupStaging {
 public:
  explicit GroupStaging(Device device) : device_(device), host_(device) {}
  // Whether `op`'s buffer must go through the host (it is device memory).
  bool staged(const P2POp& op) const { return !op.device(device_).on_host(); }
  // The buffer each op moves through: its own, or its part of the staging buffer (holding the data of a send).
  std::vector<char*> stage(std::span<const P2POp> ops);
  // After the group completed: the staged receives copied to their device buffers.
  void unstage(std::span<const P2POp> ops, const std::vector<char*>& bufs);

 private:
  Device device_;
  HostStaging host_;
};

class PostedSendStaging {
 public:
  explicit PostedSendStaging(Device device) : device_(device) {}
  // The buffer send `op` moves through: its own, or (device memory) a host copy of its data, kept until release().
  char* stage(const P2POp& op);
  void release() { used_ = 0; }  // the posted sends are finished or abandoned: the copies may be reused

 private:
  Device device_;
  std::vector<HostStaging> copies_;  // the first used_ hold posted sends' data
  std::size_t used_ = 0;
};

}  // namespace parbench
