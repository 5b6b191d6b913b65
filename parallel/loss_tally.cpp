// Losses copied on the stream and read after it.
#include "parallel/loss_tally.h"

namespace parbench {

void LossTally::add(const Tensor& losses, const Stream& s) {
  if (used_ == slots_.size()) slots_.push_back(std::make_unique<Slot>(device_));
  Slot& slot = *slots_[used_++];
  slot.numel = losses.numel(), slot.dtype = losses.dtype();
  device_memcpy_async(Device{}, slot.staging.get(losses.bytes()), losses.device(), losses.data(), losses.bytes(), s);
  slot.copied.record(s);
}

double LossTally::mean() const {
  if (used_ == 0) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < used_; ++i) {
    Slot& slot = *slots_[i];
    if (!slot.copied.done()) slot.copied.synchronize();
    double microbatch = 0;
    for (std::int64_t k = 0; k < slot.numel; ++k)
      microbatch += load_as_double(slot.staging.get(0), slot.dtype, std::size_t(k));
    sum += slot.numel ? microbatch / double(slot.numel) : 0;
  }
  return sum / double(used_);
}

}  // namespace parbench
