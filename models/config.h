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

// gpt: GPT-2's block (layernorm, learned positions, GeLU MLP, multi-head attention). llama: Llama's (RMSNorm,
// rotary positions, SwiGLU MLP of three matrices, grouped-query attention, no biases, untied head).
enum class ModelKind { mlp, gpt, llama };
std::string_view model_kind_name(ModelKind k);
ModelKind parse_model_kind(std::string_view s);  // UsageError listing mlp, gpt, llama

struct ModelConfig {
  ModelKind kind = ModelKind::gpt;
  int layers = 2;
  int hidden = 32;   // C
  int heads = 4;     // NH (gpt)
  int seq = 16;      // T (gpt); the MLP sees one vector per sample
  int vocab = 64;    // V (gpt)
  int ffn = 0;       // hidden size of each MLP block; 0 means 4 * hidden
  int kv_heads = 0;  // llama: key/value heads, dividing heads (0: heads, multi-head; 1: multi-query)
  double rope_theta = 10000;  // llama: the rotary embedding's base
  double rms_norm_eps = 1e-5;  // llama: the RMSNorms' eps
  // Storage of parameters, gradients and activations: f32, or bf16 with f32 master weights; f64 runs on the cpu
  // device only (exact gradient checks).
  DType dtype = DType::f32;
  bool flash_attention = true;
  // Megatron tensor parallelism over `tp` ranks (heads, MLP columns and the vocabulary split), and sequence
  // parallelism on top of it (gpt: layernorms, residuals and the boundary activations on a T/tp shard).
  int tp = 1;
  bool sequence_parallel = false;

  int ffn_dim() const { return ffn > 0 ? ffn : 4 * hidden; }
  bool is_transformer() const { return kind != ModelKind::mlp; }
  int tokens_per_sample() const { return is_transformer() ? seq : 1; }
  int kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
  int head_dim() const { return hidden / heads; }
  // The q, k and v rows of the fused projection: C + 2 x kv_heads x head_dim (3C for gpt, every head its own k, v).
  int qkv_rows() const { return kind == ModelKind::llama ? hidden + 2 * kv_head_count() * head_dim() : 3 * hidden; }
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
// llama's: the token embedding alone (rotary positions have no parameters); a block's two RMSNorm weights, the
// fused q/k/v projection, the output projection, the fused gate/up projection (2F rows: gate, then up) and the down
// projection, none with a bias; the final RMSNorm and the untied head. Hugging Face's names: embed_tokens,
// input_layernorm, q_proj/k_proj/v_proj, o_proj, post_attention_layernorm, gate_proj/up_proj, down_proj, norm,
// lm_head.
enum class LlamaEmbeddingParam { wte };
enum class LlamaBlockParam { attn_norm, qkvw, ow, mlp_norm, gate_upw, downw };
enum class LlamaHeadParam { normw, lmw };
inline constexpr const char* kLlamaEmbeddingParams[] = {"wte"};
inline constexpr const char* kLlamaBlockParams[] = {"attn_norm", "qkvw", "ow", "mlp_norm", "gate_upw", "downw"};
inline constexpr const char* kLlamaHeadParams[] = {"normw", "lmw"};

// The layout of one tensor-parallel rank (the same on every tp rank; the full model's when tp is 1): qkvw
// (3C/tp, C) with the q, k and v rows of the rank's heads, qkvb (3C/tp), projw (C, C/tp), fcw (F/tp, C),
// fcb (F/tp), fcprojw (C, F/tp), wte and lmw (V/tp, C); layernorms, projb, fcprojb and wpe replicated.
ParamLayout make_layout(const ModelConfig& c);

// Model FLOPs of one training step (forward + backward = 3x forward matmul FLOPs), PaLM-style model FLOPs:
// for gpt 72 B s L h^2 (1 + s/(6h) + V/(12 L h)) with ffn = 4h; for llama 6 B s (L (h q + h^2 + 3 h f) + V h) +
// 12 B s^2 L h with q = qkv_rows(); for the MLP 6 * B * 2 L h f.
double model_flops_per_step(const ModelConfig& c, std::int64_t samples);

}  // namespace parbench
