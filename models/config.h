// Model shapes and the parameter layout: parameters grouped in units (embedding, blocks, head), one flat buffer.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/dtype.h"
#include "core/tensor.h"

namespace parbench {

enum class ModelKind { mlp, gpt };
std::string_view model_kind_name(ModelKind k);
ModelKind parse_model_kind(std::string_view s);  // UsageError listing mlp, gpt

struct ModelConfig {
  ModelKind kind = ModelKind::gpt;
  int layers = 2;
  int hidden = 32;   // C
  int heads = 4;     // NH (gpt)
  int seq = 16;      // T (gpt); the MLP sees one vector per sample
  int vocab = 64;    // V (gpt)
  int ffn = 0;       // hidden size of each MLP block; 0 means 4 * hidden
  // Storage of parameters, gradients and activations: f32, or bf16 with f32 master weights; f64 runs on the cpu
  // device only (exact gradient checks).
  DType dtype = DType::f32;
  bool flash_attention = true;
  // Megatron tensor parallelism over `tp` ranks (heads, MLP columns and the vocabulary split), and sequence
  // parallelism on top of it (gpt: layernorms, residuals and the boundary activations on a T/tp shard).
  int tp = 1;
  bool sequence_parallel = false;

  int ffn_dim() const { return ffn > 0 ? ffn : 4 * hidden; }
  int tokens_per_sample() const { return kind == ModelKind::gpt ? seq : 1; }
  // Statistics (layernorm mean/rstd, attention probabilities, losses): f32, or f64 for f64 models.
  DType stat_dtype() const { return dtype == DType::f64 ? DType::f64 : DType::f32; }
  // Sequence positions each rank holds between units: seq / tp under sequence parallelism, else seq.
  int local_seq() const { return sequence_parallel && tp > 1 ? seq / tp : seq; }
  // The whole model a tensor-parallel rank holds a piece of: the same shapes with tp = 1.
  ModelConfig unsplit() const {
    ModelConfig c = *this;
    c.tp = 1;
    c.sequence_parallel = false;
    return c;
  }
  // Throws UsageError naming the bad value (heads not dividing hidden, non-positive sizes, unsupported dtype,
  // heads, ffn, vocab or seq (sequence parallel) not divisible by tp).
  void validate() const;
};

struct ParamSpec {
  std::string name;
  Shape shape;
  std::int64_t offset = 0;  // elements from the start of its unit
};

// A unit is what ZeRO-3 gathers at once and what a pipeline stage owns whole.
struct UnitLayout {
  std::string name;
  std::vector<ParamSpec> params;
  std::int64_t offset = 0;  // elements from the start of the flat buffer
  std::int64_t numel = 0;   // including alignment padding
};

// The units [first, last) one forward/backward runs: the whole model, a pipeline stage or one model chunk.
struct UnitRange {
  int first = 0, last = 0;
  int size() const { return last - first; }
};

// Each parameter starts on a multiple of kParamAlign elements (16-byte vector loads in the kernels);
// the padding is at most kParamAlign - 1 elements per parameter.
inline constexpr std::int64_t kParamAlign = 8;

struct ParamLayout {
  std::vector<UnitLayout> units;
  std::int64_t total = 0;        // elements of the flat buffer (with padding)
  std::int64_t parameters = 0;   // elements that are parameters (Psi)
  // A parameter of unit `unit` by its handle (EmbeddingParam, BlockParam, HeadParam, MlpParam below).
  template <class Handle>
    requires std::is_enum_v<Handle>
  const ParamSpec& spec(int unit, Handle which) const {
    return units.at(std::size_t(unit)).params.at(std::size_t(which));
  }
};

// Parameter handles: a parameter's place in its unit's list, so that a misspelt name does not compile.
// make_layout lists each unit's parameters in this order, by these names (kEmbeddingParams, ...).
enum class MlpParam { fcw, fcb, fcprojw, fcprojb };
inline constexpr const char* kMlpParams[] = {"fcw", "fcb", "fcprojw", "fcprojb"};
enum class EmbeddingParam { wte, wpe };
enum class BlockParam { ln1w, ln1b, qkvw, qkvb, projw, projb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb };
enum class HeadParam { lnfw, lnfb, lmw };
inline constexpr const char* kEmbeddingParams[] = {"wte", "wpe"};
inline constexpr const char* kBlockParams[] = {"ln1w", "ln1b", "qkvw",  "qkvb", "projw",   "projb",
                                               "ln2w", "ln2b", "fcw",   "fcb",  "fcprojw", "fcprojb"};
inline constexpr const char* kHeadParams[] = {"lnfw", "lnfb", "lmw"};

// The layout of one tensor-parallel rank (the same on every tp rank; the full model's when tp is 1): qkvw
// (3C/tp, C) with the q, k and v rows of the rank's heads, qkvb (3C/tp), projw (C, C/tp), fcw (F/tp, C),
// fcb (F/tp), fcprojw (C, F/tp), wte and lmw (V/tp, C); layernorms, projb, fcprojb and wpe replicated.
ParamLayout make_layout(const ModelConfig& c);

// Model FLOPs of one training step (forward + backward = 3x forward matmul FLOPs), PaLM-style model FLOPs:
// for gpt 72 B s L h^2 (1 + s/(6h) + V/(12 L h)) with ffn = 4h; for the MLP 6 * B * 2 L h f.
double model_flops_per_step(const ModelConfig& c, std::int64_t samples);

}  // namespace parbench
