// Model configuration checks, parameter layout and FLOP counts.
#include "models/config.h"

#include "base/error.h"

namespace parbench {

std::string_view model_kind_name(ModelKind k) {
  return k == ModelKind::mlp ? "mlp" : k == ModelKind::gpt ? "gpt" : "llama";
}

ModelKind parse_model_kind(std::string_view s) {
  if (s == "mlp") return ModelKind::mlp;
  if (s == "gpt") return ModelKind::gpt;
  if (s == "llama") return ModelKind::llama;
  throw UsageError("unknown model '" + std::string(s) + "'; accepted: mlp, gpt, llama");
}

namespace {

// llama's key/value heads: between 1 and the heads, dividing them; split over the tensor-parallel ranks whole.
void validate_kv_heads(const ModelConfig& c) {
  const int kv = c.kv_head_count();
  if (kv < 1 || kv > c.heads || c.heads % kv != 0)
    throw UsageError("--kv-heads " + std::to_string(kv) + " does not divide --heads " + std::to_string(c.heads) +
                     "; accepted: a divisor of the heads (1: multi-query, " + std::to_string(c.heads) +
                     ": multi-head)");
  if (kv % c.tp != 0)
    throw UsageError("--kv-heads " + std::to_string(kv) + " is not divisible by --tp " + std::to_string(c.tp) +
                     " (tensor parallelism gives each rank whole key/value heads)");
}

}  // namespace

void ModelConfig::validate() const {
  auto positive = [](const char* what, int v) {
    if (v < 1) throw UsageError(std::string("--") + what + " " + std::to_string(v) + " must be >= 1");
  };
  positive("layers", layers);
  positive("hidden", hidden);
  positive("ffn", ffn_dim());
  if (dtype != DType::f32 && dtype != DType::bf16 && dtype != DType::f64)
    throw UsageError("--dtype " + std::string(dtype_name(dtype)) +
                     " is not supported for training; accepted: f32, bf16 (and f64 on the cpu device)");
  if (is_transformer()) {
    positive("heads", heads);
    positive("seq", seq);
    positive("vocab", vocab);
    if (hidden % heads != 0)
      throw UsageError("--heads " + std::to_string(heads) + " does not divide --hidden " + std::to_string(hidden));
  }
  positive("tp", tp);
  auto divisible = [&](const std::string& what, int v) {
    if (v % tp != 0)
      throw UsageError(what + " " + std::to_string(v) + " is not divisible by --tp " + std::to_string(tp));
  };
  if (is_transformer()) divisible("--heads", heads);
  divisible(ffn > 0 ? "--ffn" : "--ffn (4 x --hidden)", ffn_dim());
  if (is_transformer()) divisible("--vocab", vocab);
  if (kind == ModelKind::llama) validate_kv_heads(*this);
  if (kind == ModelKind::llama && !(rope_theta > 1))
    throw UsageError("--rope-theta " + std::to_string(rope_theta) + " must be > 1 (Llama 2: 10000, Llama 3: 500000)");
  if (kind == ModelKind::llama && !(rms_norm_eps > 0 && rms_norm_eps < 1))
    throw UsageError("--rms-norm-eps " + std::to_string(rms_norm_eps) + " must be in (0, 1) (Llama: 1e-5 or 1e-6)");
  if (kind == ModelKind::llama && head_dim() % 2 != 0)
    throw UsageError("--hidden / --heads = " + std::to_string(head_dim()) +
                     " is odd; the rotary embedding needs an even head size");
  if (sequence_parallel) {
    if (!is_transformer())
      throw UsageError("--sequence-parallel needs --model gpt or llama (the mlp has no sequence dimension)");
    if (seq % tp != 0)
      throw UsageError("--seq " + std::to_string(seq) + " is not divisible by --tp " + std::to_string(tp) +
                       " (sequence parallelism splits the sequence over the tp ranks)");
  }
}

ParamLayout make_layout(const ModelConfig& c) {
  const std::int64_t C = c.hidden, F = c.ffn_dim(), V = c.vocab, T = c.seq, n = c.tp;
  ParamLayout layout;
  auto add_unit = [&](std::string name, std::vector<std::pair<std::string, Shape>> params) {
    UnitLayout u{std::move(name), {}, layout.total, 0};
    for (auto& [pname, shape] : params) {
      std::int64_t n = shape_numel(shape);
      u.params.push_back({pname, shape, u.numel});
      u.numel += (n + kParamAlign - 1) / kParamAlign * kParamAlign;
      layout.parameters += n;
    }
    layout.total += u.numel;
    layout.units.push_back(std::move(u));
  };
  // Column-parallel matmuls split their output rows, row-parallel ones their input columns (tensor_parallel.h).
  // The shapes in handle order (config.h), named from the handles' name tables.
  auto named = [](const auto& names, std::vector<Shape> shapes) {
    PB_CHECK(shapes.size() == std::size(names), "a GPT unit lists " + std::to_string(shapes.size()) +
                                                    " shapes for " + std::to_string(std::size(names)) + " names");
    std::vector<std::pair<std::string, Shape>> params;
    for (std::size_t i = 0; i < shapes.size(); ++i) params.emplace_back(names[i], std::move(shapes[i]));
    return params;
  };
  const std::int64_t Q = c.qkv_rows();
  if (c.kind == ModelKind::gpt) add_unit("embedding", named(kEmbeddingParams, {{V / n, C}, {T, C}}));
  if (c.kind == ModelKind::llama) add_unit("embedding", named(kLlamaEmbeddingParams, {{V / n, C}}));
  for (int l = 0; l < c.layers; ++l) {
    std::string name = "block" + std::to_string(l);
    if (c.kind == ModelKind::llama)  // the rank's query heads and whole key/value heads; gate and up rows alike
      add_unit(name, named(kLlamaBlockParams, {{C}, {Q / n, C}, {C, C / n}, {C}, {2 * F / n, C}, {C, F / n}}));
    else if (c.kind == ModelKind::gpt)
      add_unit(name, named(kBlockParams, {{C}, {C}, {3 * C / n, C}, {3 * C / n}, {C, C / n}, {C}, {C}, {C},
                                          {F / n, C}, {F / n}, {C, F / n}, {C}}));
    else
      add_unit(name, named(kMlpParams, {{F / n, C}, {F / n}, {C, F / n}, {C}}));
  }
  if (c.kind == ModelKind::gpt) add_unit("head", named(kHeadParams, {{C}, {C}, {V / n, C}}));
  if (c.kind == ModelKind::llama) add_unit("head", named(kLlamaHeadParams, {{C}, {V / n, C}}));
  return layout;
}

double model_flops_per_step(const ModelConfig& c, std::int64_t samples) {
  const double B = double(samples), L = c.layers, h = c.hidden, f = c.ffn_dim();
  if (c.kind == ModelKind::mlp) return 6.0 * B * 2.0 * L * h * f;
  const double s = c.seq, V = c.vocab;
  if (c.kind == ModelKind::llama) {  // q/k/v, output, gate + up + down per token; attention's scores on every head
    const double dense = 2 * B * s * L * (h * c.qkv_rows() + h * h + 3 * h * f);
    return 3 * (dense + 2 * B * s * L * (2 * s * h) + 2 * B * s * h * V);
  }
  // Equals 72 B s L h^2 (1 + s/(6h) + V/(12 L h)) when f = 4h; forward = 2 FLOPs per multiply-add, x3 for training.
  const double dense = 2 * B * s * L * (4 * h * h + 2 * h * f);  // qkv + proj (4h^2), fc + fcproj (2hf) per token
  const double attn = 2 * B * s * L * (2 * s * h);               // scores and weighted sum
  const double head = 2 * B * s * h * V;
  return 3 * (dense + attn + head);
}

}  // namespace parbench
