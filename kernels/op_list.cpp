// The op table's rows (kernels/op_list.h) as data, and the names bench_kernels gives a linear layer's rows.
#include "kernels/op_list.h"

namespace parbench::optable {

const std::vector<OpRow>& op_rows() {
#define PB_ROW(name, kind, pair, cost) OpRow{#name, kind, pair, cost},
  static const std::vector<OpRow> rows{PB_OP_TABLE(PB_ROW)};
#undef PB_ROW
  return rows;
}

const OpRow* find_op_row(std::string_view name) {
  for (const OpRow& r : op_rows())
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<std::string_view> op_names_with(CostRole role) {
  std::vector<std::string_view> out;
  for (const OpRow& r : op_rows())
    if (r.cost.role == role) out.push_back(r.name);
  return out;
}

std::string_view cost_role_name(CostRole r) {
  switch (r) {
    case CostRole::memory: return "memory";
    case CostRole::matrix: return "matrix";
    case CostRole::matrix_forward: return "matrix_forward";
    case CostRole::input_gradient: return "input_gradient";
    case CostRole::weight_gradient: return "weight_gradient";
    case CostRole::elementwise: return "elementwise";
    case CostRole::gelu: return "gelu";
    case CostRole::optimizer: return "optimizer";
    case CostRole::measured_attention: return "measured_attention";
  }
  return "memory";
}

namespace {
constexpr LinearPart kLinearParts[] = {LinearPart::forward, LinearPart::backward, LinearPart::input_gradient,
                                       LinearPart::weight_gradient};
}  // namespace

std::string_view linear_row_name(LinearPart part) {
  switch (part) {
    case LinearPart::forward: return "linear_forward";
    case LinearPart::backward: return "linear_backward";
    case LinearPart::input_gradient: return "linear_input_gradient";
    case LinearPart::weight_gradient: return "linear_weight_gradient";
  }
  return "linear_forward";
}

bool linear_part_of(std::string_view row_name, LinearPart* part) {
  for (LinearPart p : kLinearParts)
    if (linear_row_name(p) == row_name) {
      if (part) *part = p;
      return true;
    }
  return false;
}

}  // namespace parbench::optable
