// A group's device buffers staged through one host buffer.
#include "collectives/transport/group_staging.h"

namespace parbench {

std::vector<char*> GroupStaging::stage(std::span<const P2POp> ops) {
  std::vector<std::size_t> offset(ops.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (staged(ops[i])) offset[i] = total, total += (ops[i].bytes + 255) / 256 * 256;
  char* host = total ? host_.get(total) : nullptr;
  std::vector<char*> bufs;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const P2POp& op = ops[i];
    bufs.push_back(staged(op) ? host + offset[i] : static_cast<char*>(op.buf));
    if (staged(op) && op.kind == P2POp::send) device_memcpy(Device{}, bufs.back(), device_, op.buf, op.bytes);
  }
  return bufs;
}

char* PostedSendStaging::stage(const P2POp& op) {
  if (op.device(device_).on_host()) return static_cast<char*>(op.buf);
  if (used_ == copies_.size()) copies_.emplace_back(device_);
  char* copy = copies_[used_++].get(op.bytes);
  device_memcpy(Device{}, copy, device_, op.buf, op.bytes);
  return copy;
}

void GroupStaging::unstage(std::span<const P2POp> ops, const std::vector<char*>& bufs) {
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == P2POp::recv && staged(ops[i])) device_memcpy(device_, ops[i].buf, Device{}, bufs[i], ops[i].bytes);
}

}  // namespace parbench
