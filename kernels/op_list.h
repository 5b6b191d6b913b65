// The op table's rows without their workloads (those are in kernels/op_table.h): each op's name, how it is run, its
// pairing (a forward names its backward, whose gradients test_op_table checks against finite differences of the
// forward) and what the predictor's calibration takes its rows for. Needs no kernels, so that the predictor and the
// calibration script (through bench_kernels --list-ops) read op names from here rather than spelling them.
#pragma once
#include <string_view>
#include <vector>

namespace parbench::optable {

// How an entry is run: once per storage dtype, once per matmul version as well, or once (its dtypes are fixed).
enum class OpKind { per_dtype, matmul_versions, fixed_dtype };

// An entry's pairing. A forward names its backward; a backward that computes part of a forward's gradients names
// that forward; a backward named by its forward is kBackward; any other entry says why it has no gradient check.
struct OpPair {
  std::string_view backward, forward_of, unchecked;
};
constexpr OpPair backward(std::string_view name) { return {name, {}, {}}; }
constexpr OpPair backward_of(std::string_view forward) { return {{}, forward, {}}; }
constexpr OpPair unchecked(std::string_view why) { return {{}, {}, why}; }
inline constexpr OpPair kBackward{};

// What the calibration (scripts/calibrate_kernels.awk, predict/calibrate.cpp) takes an entry's rows for: a matrix op
// (rated against the matrix peak, the rest against memory), and, for the rows the cost curves come from, which one:
// the block's forward weight matmuls, the fc's input and weight gradients alone (each with its GEMM's inner
// dimension k: C, 4C or BT), the layernorm and residual work (`per_block` times per block), GeLU, the optimizer,
// and the attention pair measured against SDPA (scripts/sdpa_compare.py; the backward is its pair's).
enum class CostRole { memory, matrix, matrix_forward, input_gradient, weight_gradient, elementwise, gelu, optimizer,
                      measured_attention };
struct OpCost {
  CostRole role = CostRole::memory;
  std::string_view k;
  int per_block = 1;
  bool matrix() const {
    return role == CostRole::matrix || role == CostRole::matrix_forward || role == CostRole::input_gradient ||
           role == CostRole::weight_gradient;
  }
};
constexpr OpCost cost(CostRole role, std::string_view k = {}, int per_block = 1) { return {role, k, per_block}; }
std::string_view cost_role_name(CostRole r);

// The rows, in the order bench_kernels registers them: X(name, kind, pairing, cost).
#define PB_OP_TABLE(X)                                                                                                \
  X(matmul_forward_qkv, OpKind::matmul_versions, unchecked("matmul_forward_fc at other widths, checked there"),       \
    cost(CostRole::matrix_forward, "C"))                                                                            \
  X(matmul_forward_fc, OpKind::matmul_versions, backward("matmul_backward_fc"), cost(CostRole::matrix_forward, "C")) \
  X(matmul_forward_fcproj, OpKind::matmul_versions, unchecked("matmul_forward_fc at other widths, checked there"),    \
    cost(CostRole::matrix_forward, "4C"))                                                                           \
  X(matmul_forward_fc_gelu, OpKind::matmul_versions,                                                                \
    unchecked("fused fc + GELU; training takes its gradients with matmul_backward and gelu_backward, each checked"),  \
    cost(CostRole::matrix))                                                                                         \
  X(encoder_forward, OpKind::per_dtype, backward("encoder_backward"), cost(CostRole::memory))                       \
  X(encoder_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                         \
  X(matmul_backward_fc, OpKind::per_dtype, kBackward, cost(CostRole::matrix))                                       \
  X(matmul_backward_input_fc, OpKind::per_dtype, backward_of("matmul_forward_fc"),                                  \
    cost(CostRole::input_gradient, "4C"))                                                                           \
  X(matmul_backward_weight_fc, OpKind::per_dtype, backward_of("matmul_forward_fc"),                                 \
    cost(CostRole::weight_gradient, "BT"))                                                                          \
  X(gelu_forward, OpKind::per_dtype, backward("gelu_backward"), cost(CostRole::gelu))                               \
  X(gelu_backward, OpKind::per_dtype, kBackward, cost(CostRole::gelu))                                              \
  X(bias_gelu_forward, OpKind::per_dtype, backward("bias_gelu_backward"), cost(CostRole::memory))                   \
  X(bias_gelu_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                       \
  X(swiglu_forward, OpKind::per_dtype, backward("swiglu_backward"), cost(CostRole::memory))                         \
  X(swiglu_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                          \
  X(layernorm_forward, OpKind::per_dtype, backward("layernorm_backward"), cost(CostRole::elementwise, {}, 2))        \
  X(layernorm_backward, OpKind::per_dtype, kBackward, cost(CostRole::elementwise, {}, 2))                           \
  X(rmsnorm_forward, OpKind::per_dtype, backward("rmsnorm_backward"), cost(CostRole::memory))                       \
  X(rmsnorm_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                         \
  X(rmsnorm_residual_forward, OpKind::per_dtype, backward("rmsnorm_residual_backward"), cost(CostRole::memory))     \
  X(rmsnorm_residual_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                \
  X(rope_table, OpKind::fixed_dtype, unchecked("the cos and sin of the positions: no input to differentiate"),      \
    cost(CostRole::memory))                                                                                         \
  X(rope_forward, OpKind::per_dtype, backward("rope_backward"), cost(CostRole::memory))                             \
  X(rope_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                            \
  X(residual_forward, OpKind::per_dtype, backward("residual_backward"), cost(CostRole::elementwise, {}, 2))          \
  X(residual_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                        \
  X(attention_forward, OpKind::per_dtype, backward("attention_backward"), cost(CostRole::memory))                   \
  X(attention_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                       \
  X(flash_attention_forward, OpKind::per_dtype, backward("flash_attention_backward"),                               \
    cost(CostRole::measured_attention))                                                                             \
  X(flash_attention_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                 \
  X(flash_attention_fwd_hs64_128, OpKind::per_dtype, backward("flash_attention_bwd_hs64_128"),                      \
    cost(CostRole::memory))                                                                                         \
  X(flash_attention_bwd_hs64_128, OpKind::per_dtype, kBackward, cost(CostRole::memory))                             \
  X(attention_forward_gqa, OpKind::per_dtype, backward("attention_backward_gqa"), cost(CostRole::memory))           \
  X(attention_backward_gqa, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                   \
  X(attention_forward_mqa, OpKind::per_dtype, backward("attention_backward_mqa"), cost(CostRole::memory))           \
  X(attention_backward_mqa, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                   \
  X(flash_attention_forward_gqa, OpKind::per_dtype, backward("flash_attention_backward_gqa"),                       \
    cost(CostRole::memory))                                                                                         \
  X(flash_attention_backward_gqa, OpKind::per_dtype, kBackward, cost(CostRole::memory))                             \
  X(flash_attention_forward_mqa, OpKind::per_dtype, backward("flash_attention_backward_mqa"),                       \
    cost(CostRole::memory))                                                                                         \
  X(flash_attention_backward_mqa, OpKind::per_dtype, kBackward, cost(CostRole::memory))                             \
  X(flash_attention_fwd_hs64_128_gqa, OpKind::per_dtype, backward("flash_attention_bwd_hs64_128_gqa"),              \
    cost(CostRole::memory))                                                                                         \
  X(flash_attention_bwd_hs64_128_gqa, OpKind::per_dtype, kBackward, cost(CostRole::memory))                         \
  X(crossentropy_forward_backward, OpKind::per_dtype, backward("crossentropy_forward_backward"),                    \
    cost(CostRole::memory))                                                                                         \
  X(adamw_update, OpKind::per_dtype, unchecked("an optimizer step: nothing to differentiate"),                      \
    cost(CostRole::optimizer))                                                                                      \
  X(adamw_update_master, OpKind::per_dtype, unchecked("an optimizer step: nothing to differentiate"),               \
    cost(CostRole::memory))                                                                                         \
  X(sgd_update, OpKind::per_dtype, unchecked("an optimizer step: nothing to differentiate"), cost(CostRole::memory)) \
  X(norm_squared, OpKind::per_dtype, unchecked("no backward: training never differentiates the gradient norm"),     \
    cost(CostRole::memory))                                                                                         \
  X(clip_by_norm, OpKind::per_dtype, unchecked("no backward: a step on the gradients, not differentiated"),         \
    cost(CostRole::memory))                                                                                         \
  X(mse_forward, OpKind::per_dtype, backward("mse_backward"), cost(CostRole::memory))                               \
  X(mse_backward, OpKind::per_dtype, kBackward, cost(CostRole::memory))                                             \
  X(convert_f32_bf16_roundtrip, OpKind::fixed_dtype, unchecked("a dtype conversion: no backward"),                  \
    cost(CostRole::memory))

struct OpRow {
  std::string_view name;
  OpKind kind;
  OpPair pair;
  OpCost cost;
};
const std::vector<OpRow>& op_rows();
// The row of that name; null when the table has none.
const OpRow* find_op_row(std::string_view name);
// The names of the rows with that cost role, in table order.
std::vector<std::string_view> op_names_with(CostRole role);

// A linear layer (BT, C) -> (BT, OC) on its own, at any widths (bench_kernels --linear): its forward, its whole
// backward, or the input or weight gradient alone; and the name its bench_kernels rows have.
enum class LinearPart { forward, backward, input_gradient, weight_gradient };
std::string_view linear_row_name(LinearPart part);
// The part a bench_kernels row of that name times; false for a row that is not a linear's.
bool linear_part_of(std::string_view row_name, LinearPart* part);

}  // namespace parbench::optable
