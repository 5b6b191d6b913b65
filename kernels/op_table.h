// The op table: one workload per op (its inputs, the call, the outputs to check, and the counted work), which
// the kernel tests run on every device against the reference and bench_kernels times. Each op's workload lives
// in its host file (kernels/<op>.cpp); its row (kernels/op_list.h) lists it in one line with its pairing.
#pragma once
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "kernels/op_list.h"
#include "kernels/op_params.h"
#include "kernels/ops.h"
#include "kernels/tensor_values.h"

namespace parbench::optable {

// Where a workload runs: a device, the allocator of its memory, and whether its floating-point tensors are held
// in f64 instead (the cpu reference run in float64, which checks the reference itself).
struct Side {
  Device device;
  TrackedAllocator* alloc;
  bool f64 = false;
};

// One tensor of a workload, the same values on every side.
struct Arg {
  std::vector<Tensor> at;
  Tensor& operator[](int side) { return at[std::size_t(side)]; }
  const Tensor& operator[](int side) const { return at[std::size_t(side)]; }
};

// Makes a workload's tensors on every side: random inputs (the same values everywhere) and NaN-poisoned outputs.
class OpCase {
 public:
  OpCase(std::vector<Side> sides, DType dtype, std::mt19937_64& rng, ops::MatmulAlgo algo = ops::MatmulAlgo::automatic)
      : sides_(std::move(sides)), dtype_(dtype), algo_(algo), rng_(rng) {}
  DType dtype() const { return dtype_; }
  DType acc() const { return DType::f32; }  // statistics and optimizer state (f64 on an f64 side)
  int sides() const { return int(sides_.size()); }
  // The matmul version a workload of a matmul_forward entry runs on the kernels' sides.
  ops::MatmulAlgo algo() const { return algo_; }

  Arg in(DType t, const Shape& shape, double lo = -1, double hi = 1);
  Arg tokens(const Shape& shape, int V);
  Arg out(DType t, const Shape& shape);

 private:
  Arg alloc(DType t, const Shape& shape);
  void upload(Arg& x, const Tensor& host);
  std::vector<Side> sides_;
  DType dtype_;
  ops::MatmulAlgo algo_;
  std::mt19937_64& rng_;
  TrackedAllocator host_{Device{}};
};

// A workload's tensor under its name in the op's signature ("inp", "weight", "out"); the gradient of a tensor is
// named "d" and its name ("dinp"), after any "prefix/" of a workload made of several.
struct NamedArg {
  std::string name;
  Arg arg;
};

// What a workload runs: call(side, stream) runs the op on that side's tensors; `checked` are the outputs compared
// across sides; flops and bytes are the counted work of one call. A workload of a pair (a forward or its backward)
// names its tensors in `args`, so that the gradient check can give the backward its forward's inputs and saved
// outputs and find the gradients; `dloss` is the gradient a backward takes as a number rather than a tensor
// (mse_backward's and crossentropy's dloss), for each element of its forward's outputs that have no gradient tensor.
struct Work {
  std::function<void(int side, const Stream&)> call;
  std::vector<Arg> checked;
  double flops = 0, bytes = 0;
  double tol = 0;  // 0: default_tolerance(dtype)
  std::vector<NamedArg> args = {};
  double dloss = 0;
  Work named(std::vector<NamedArg> a, double loss_gradient = 0) && {
    args = std::move(a);
    dloss = loss_gradient;
    return std::move(*this);
  }
};

struct OpEntry {
  std::string name;
  Work (*make)(OpCase&, const OpShape&);
  OpKind kind;
  OpPair pair;
  OpCost cost;
};

const std::vector<OpEntry>& op_table();

// A linear layer on its own (bench_kernels --linear, whose forward is the GEMM alone, `with_bias` false; the
// table's matmul entries are it at the model's widths, with the bias).
Work linear_workload(OpCase& c, int BT, int C, int OC, LinearPart part, bool with_bias = true);

inline double elem_bytes(DType d) { return double(dtype_size(d)); }

}  // namespace parbench::optable
