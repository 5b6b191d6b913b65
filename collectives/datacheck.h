// Data check without communication (nccl-tests style): every rank's input is a function of (seed, rank, index)
// chosen so that reductions are exact in every order, so each rank knows its expected output locally.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/communicator/algorithm.h"
#include "collectives/device_side/nccl_registration.h"
#include "collectives/table/types.h"

namespace parbench {

class Communicator;

namespace datacheck {
// Element `index` of `rank`'s input (exactly representable in `t`; bounded so that sums over `ranks` ranks stay
// exact, and so that the poison value below can never be a correct output).
double input_value(DType t, ReduceOp op, int ranks, std::uint64_t seed, int rank, std::size_t index);
// An expected output element and how far a correct result may lie from it: 0 (exact) for everything but avg on
// floating types, where implementations differ in rounding (sum then divide, or NCCL's sum of the inputs each
// pre-multiplied by 1/n): (ranks + 2) units in the last place of the inputs' mean magnitude, which bounds both.
struct Expected {
  double value = 0;
  double tolerance = 0;
};
// Expected receive element i on `rank` for a call with per-rank `count`.
Expected expected_value(Collective c, DType t, ReduceOp op, int ranks, int root, std::uint64_t seed, int rank,
                        std::size_t count, std::size_t i);
// Whether `got` is within the tolerance of `expected`. NaN never matches.
bool matches(double got, const Expected& expected);
// A value no correct output can have (NaN for floats).
double poison_value(DType t, ReduceOp op);
}  // namespace datacheck

// The buffers of one collective call on one rank, in out-of-place or in-place (NCCL aliasing) layout, on the
// communicator's device: fill() writes inputs and poisons outputs, wrong() counts output elements that differ
// from the expected values (unwritten ones included). `unalign` elements in front of each buffer move it off the
// allocation's alignment (nccl-tests' -u).
class CollectiveBuffers {
 public:
  // `nccl`: -R/-D on the nccl rows: the buffers come from ncclMemAlloc, registered with the NCCL communicator
  // (nccl_registration.h), every rank's at the size of the largest rank's (windows are symmetric).
  CollectiveBuffers(Communicator& comm, Collective c, std::size_t count, DType t, ReduceOp op, int root,
                    bool in_place, std::size_t unalign = 0, NcclBufferMode nccl = {});
  ~CollectiveBuffers();
  CollectiveBuffers(const CollectiveBuffers&) = delete;
  CollectiveBuffers& operator=(const CollectiveBuffers&) = delete;

  const CollArgs& args() const { return args_; }
  bool in_place() const { return in_place_; }
  void fill(std::uint64_t seed);
  // The first wrong output element: where, what it should be and what it is.
  struct FirstWrong {
    std::size_t index = 0;
    double expected = 0, got = 0;
  };
  // How many output elements are wrong; `first` (when given and any is wrong) gets the first of them.
  std::size_t wrong(std::uint64_t seed, FirstWrong* first = nullptr) const;

 private:
  Communicator& comm_;
  CollArgs args_;
  bool in_place_;
  std::unique_ptr<NcclRegisteredBuffers> registered_;  // -R: owns send_mem_ and recv_mem_
  void* send_mem_ = nullptr;
  void* recv_mem_ = nullptr;
  std::size_t send_elems_ = 0, recv_elems_ = 0;
};

}  // namespace parbench
