// The type the kernels keep statistics and optimizer state in: f32 whatever the storage (they exist for f32 and
// bf16); the reference keeps f64 for f64 storage (ref::acc_t, kernels/ref.h). A launcher's definition (kernels/*.cu)
// spells acc_t<T> where its declaration (PB_OP_SIGNATURES in the op's host file) does: `acc_t<T>*` and `float*`
// declare different templates, and clang links them apart.
#pragma once

namespace parbench::simt_kernels {
template <class T>
using acc_t = float;
}  // namespace parbench::simt_kernels
namespace parbench::cuda_kernels {
template <class T>
using acc_t = float;
}  // namespace parbench::cuda_kernels
