// Input generator, expected values and the per-rank buffers of a checked collective call.
#include "collectives/datacheck.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "collectives/table/alltoallv_split.h"
#include "collectives/table/collective_table.h"
#include "collectives/communicator/communicator.h"
#include "core/memory.h"

namespace parbench::datacheck {

namespace {
std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::int64_t signed_in(std::uint64_t h, std::int64_t lo, std::int64_t hi) {
  return lo + std::int64_t(h % std::uint64_t(hi - lo + 1));
}

// Largest |input| for sums over `ranks` ranks that keeps every partial sum exact and away from the poison.
std::int64_t sum_bound(DType t, int ranks) {
  switch (t) {
    case DType::f16: return std::max(1, 1024 / ranks);
    case DType::bf16: return std::max(1, 128 / ranks);
    case DType::i8: return std::max(1, 120 / ranks);
    case DType::u8: return std::max(1, 250 / ranks);
    default: return 1000;
  }
}

bool is_int(DType t) { return !dtype_is_float(t); }

double wrap_int(DType t, std::int64_t v) {
  switch (t) {
    case DType::i32: return double(std::int32_t(std::uint32_t(std::uint64_t(v))));
    case DType::i8: return double(std::int8_t(std::uint8_t(std::uint64_t(v))));
    case DType::u8: return double(std::uint8_t(std::uint64_t(v)));
    default: return double(v);
  }
}

double ulp_eps(DType t) {
  switch (t) {
    case DType::f64: return std::ldexp(1.0, -52);
    case DType::f32: return std::ldexp(1.0, -23);
    case DType::f16: return std::ldexp(1.0, -10);
    case DType::bf16: return std::ldexp(1.0, -7);
    default: return 0;
  }
}

// Rounds v to what `t` stores.
double round_to(DType t, double v) {
  unsigned char tmp[8];
  store_from_double(tmp, t, 0, v);
  return load_as_double(tmp, t, 0);
}
}  // namespace

double input_value(DType t, ReduceOp op, int ranks, std::uint64_t seed, int rank, std::size_t index) {
  const std::uint64_t h = mix(seed ^ mix(std::uint64_t(rank) * 0x100000001B3ull ^ mix(index)));
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::avg: {
      std::int64_t b = sum_bound(t, ranks);
      return double(t == DType::u8 ? signed_in(h, 0, b) : signed_in(h, -b, b));
    }
    case ReduceOp::prod: {  // powers of two: products exact (integers wrap identically in any order)
      static const double fl[5] = {1, -1, 2, -2, 0.5}, in[4] = {1, -1, 2, -2}, un[2] = {1, 2};
      if (t == DType::u8) return un[h % 2];
      return is_int(t) ? in[h % 4] : fl[h % 5];
    }
    case ReduceOp::max:
    case ReduceOp::min:
      switch (t) {
        case DType::bf16: return double(signed_in(h, -128, 128));
        case DType::i8: return double(signed_in(h, -100, 100));
        case DType::u8: return double(signed_in(h, 0, 250));
        default: return double(signed_in(h, -1000, 1000));
      }
  }
  return 0;
}

double poison_value(DType t, ReduceOp) {
  switch (t) {
    case DType::i32: return double(std::numeric_limits<std::int32_t>::min() + 1);
    case DType::i8: return -127;
    case DType::u8: return 255;
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

namespace {
Expected reduced(DType t, ReduceOp op, int ranks, std::uint64_t seed, std::size_t index) {
  if (is_int(t)) {
    std::int64_t acc = std::int64_t(input_value(t, op, ranks, seed, 0, index));
    for (int k = 1; k < ranks; ++k) {
      std::int64_t v = std::int64_t(input_value(t, op, ranks, seed, k, index));
      switch (op) {
        case ReduceOp::prod: acc = std::int64_t(std::uint64_t(acc) * std::uint64_t(v)); break;
        case ReduceOp::max: acc = std::max(acc, v); break;
        case ReduceOp::min: acc = std::min(acc, v); break;
        default: acc = std::int64_t(std::uint64_t(acc) + std::uint64_t(v)); break;
      }
    }
    if (op == ReduceOp::avg) acc /= ranks;  // truncation, as the kernels' integer division
    return {wrap_int(t, acc)};
  }
  double acc = input_value(t, op, ranks, seed, 0, index), magnitude = std::fabs(acc);
  for (int k = 1; k < ranks; ++k) {
    double v = input_value(t, op, ranks, seed, k, index);
    magnitude += std::fabs(v);
    switch (op) {
      case ReduceOp::prod: acc *= v; break;
      case ReduceOp::max: acc = std::max(acc, v); break;
      case ReduceOp::min: acc = std::min(acc, v); break;
      default: acc += v; break;
    }
  }
  if (op != ReduceOp::avg) return {round_to(t, acc)};
  // Sum then divide rounds once; NCCL's pre-multiplied terms round once each and every partial sum once more,
  // each partial sum bounded by the inputs' magnitude over n.
  const double mean_magnitude = std::max(magnitude / ranks, t == DType::f16 ? std::ldexp(1.0, -14) : 1e-30);
  return {round_to(t, acc / ranks), (ranks + 2) * ulp_eps(t) * mean_magnitude};
}
}  // namespace

Expected expected_value(Collective c, DType t, ReduceOp op, int n, int root, std::uint64_t seed, int rank,
                        std::size_t count, std::size_t i) {
  const CollectiveInfo& row = collective_info(c);
  const std::size_t blk = count ? i / count : 0, j = count ? i % count : 0, own = std::size_t(rank) * count;
  std::size_t index = i;
  switch (row.index) {
    case SourceIndex::same: break;
    case SourceIndex::own_block: index = own + i; break;
    case SourceIndex::block_offset: index = j; break;
    case SourceIndex::own_block_offset: index = own + j; break;
  }
  int from = root;
  switch (row.source) {
    case Source::reduced: return reduced(t, op, n, seed, index);
    case Source::root: break;
    case Source::block: from = int(blk); break;
    case Source::left: from = (rank - 1 + n) % n; break;
    case Source::split_peer: {
      const AlltoallvSource src = alltoallv_source(alltoallv_pattern(), rank, n, count, t, i);
      return Expected{input_value(t, op, n, seed, src.rank, src.index)};
    }
  }
  return Expected{input_value(t, op, n, seed, from, index)};
}

bool matches(double got, const Expected& e) {
  if (std::isnan(got) || std::isnan(e.value)) return false;
  return got == e.value || std::fabs(got - e.value) <= e.tolerance;
}

}  // namespace parbench::datacheck

namespace parbench {

namespace {
// Only the root holds an input when every output comes from the root's (broadcast, scatter).
bool has_input(Collective c, int rank, int root) { return collective_info(c).source != Source::root || rank == root; }
}  // namespace

CollectiveBuffers::CollectiveBuffers(Communicator& comm, Collective c, std::size_t count, DType t, ReduceOp op,
                                     int root, bool in_place, std::size_t unalign, NcclBufferMode nccl)
    : comm_(comm), in_place_(in_place) {
  const int n = comm.size(), r = comm.rank();
  args_.coll = c, args_.count = count, args_.dtype = t, args_.op = op, args_.root = root;
  const BufferCounts bc = buffer_counts(c, count, n, r, root, t);
  send_elems_ = bc.send, recv_elems_ = bc.recv;
  const std::size_t es = dtype_size(t);
  if (nccl.registration > 0) {
    // The same size on every rank and for both buffers: the largest any rank needs (an in-place call's too).
    const BufferCounts most = largest_buffer_counts(c, count, n, root, t);
    const std::size_t elems = std::max<std::size_t>({1, most.send, most.recv, bc.send, bc.recv});
    registered_ = std::make_unique<NcclRegisteredBuffers>(comm, in_place ? 1 : 2, (elems + unalign) * es, nccl);
    recv_mem_ = registered_->buffer(0);
    send_mem_ = in_place ? nullptr : registered_->buffer(1);
    const std::size_t off = in_place ? inplace_offset(c, count, r) + unalign : unalign;
    const InPlace layout = inplace_layout(c);
    args_.recv = byte_ptr(recv_mem_, in_place && layout == InPlace::recv_inside_send ? off : unalign, t);
    args_.send = in_place ? byte_ptr(recv_mem_, layout == InPlace::send_inside_recv ? off : unalign, t)
                          : byte_ptr(send_mem_, unalign, t);
    return;
  }
  if (in_place) {
    // One allocation as large as the root's or this rank's biggest buffer, aliased as NCCL's in-place calls expect.
    const BufferCounts full = buffer_counts(c, count, n, root, root, t);
    const std::size_t elems = std::max({full.send, full.recv, bc.send, bc.recv});
    recv_mem_ = device_malloc(comm.device(), (std::max<std::size_t>(1, elems) + unalign) * es);
    const std::size_t off = inplace_offset(c, count, r) + unalign;
    const bool send_inside = inplace_layout(c) == InPlace::send_inside_recv;
    const bool recv_inside = inplace_layout(c) == InPlace::recv_inside_send;
    args_.send = byte_ptr(recv_mem_, send_inside ? off : unalign, t);
    args_.recv = byte_ptr(recv_mem_, recv_inside ? off : unalign, t);
  } else {
    send_mem_ = device_malloc(comm.device(), (std::max<std::size_t>(1, send_elems_) + unalign) * es);
    recv_mem_ = device_malloc(comm.device(), (std::max<std::size_t>(1, recv_elems_) + unalign) * es);
    args_.send = byte_ptr(send_mem_, unalign, t), args_.recv = byte_ptr(recv_mem_, unalign, t);
  }
}

CollectiveBuffers::~CollectiveBuffers() {
  if (registered_) return;  // its destructor deregisters and frees them
  device_free(comm_.device(), send_mem_);
  device_free(comm_.device(), recv_mem_);
}

void CollectiveBuffers::fill(std::uint64_t seed) {
  const int n = comm_.size(), r = comm_.rank();
  const DType t = args_.dtype;
  const std::size_t es = dtype_size(t);
  const Device host{};
  std::vector<unsigned char> h(std::max(send_elems_, recv_elems_) * es);
  const double poison = datacheck::poison_value(t, args_.op);
  for (std::size_t i = 0; i < recv_elems_; ++i) store_from_double(h.data(), t, i, poison);
  device_memcpy(comm_.device(), args_.recv, host, h.data(), recv_elems_ * es);
  if (!has_input(args_.coll, r, args_.root)) return;
  for (std::size_t i = 0; i < send_elems_; ++i)
    store_from_double(h.data(), t, i, datacheck::input_value(t, args_.op, n, seed, r, i));
  device_memcpy(comm_.device(), const_cast<void*>(args_.send), host, h.data(), send_elems_ * es);
}

std::size_t CollectiveBuffers::wrong(std::uint64_t seed, FirstWrong* first) const {
  const int n = comm_.size(), r = comm_.rank();
  const DType t = args_.dtype;
  std::vector<unsigned char> h(recv_elems_ * dtype_size(t));
  device_memcpy(Device{}, h.data(), comm_.device(), args_.recv, h.size());
  std::size_t bad = 0;
  for (std::size_t i = 0; i < recv_elems_; ++i) {
    const datacheck::Expected e =
        datacheck::expected_value(args_.coll, t, args_.op, n, args_.root, seed, r, args_.count, i);
    const double got = load_as_double(h.data(), t, i);
    if (datacheck::matches(got, e)) continue;
    if (bad++ == 0 && first) *first = FirstWrong{i, e.value, got};
  }
  return bad;
}

}  // namespace parbench
