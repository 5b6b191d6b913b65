// Models on the cpu device: backward against float64 finite differences, and single-rank training that learns.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "base/error.h"
#include "core/memory.h"
#include "kernels/ops.h"
#include "models/model.h"

using namespace parbench;

namespace {

ModelConfig tiny(ModelKind kind, DType t) {
  ModelConfig c;
  c.kind = kind;
  c.layers = 2;
  c.hidden = 12;
  c.heads = 3;
  c.seq = 5;
  c.vocab = 11;
  c.ffn = 20;
  c.dtype = t;
  if (kind == ModelKind::llama) c.hidden = 16, c.heads = 4, c.kv_heads = 2;  // two query heads per kv head
  return c;
}

struct Fixture {
  explicit Fixture(const ModelConfig& c) : alloc(Device{}), stream(Device{}), model(Model::create(c, alloc)) {
    const std::int64_t n = model->layout().total;
    params = Tensor(alloc, c.dtype, {n}, MemCategory::parameters);
    grads = Tensor(alloc, c.dtype, {n}, MemCategory::gradients);
    std::vector<float> init = model->initial_params(7);
    for (std::int64_t i = 0; i < n; ++i) store_from_double(params.data(), c.dtype, std::size_t(i), init[i]);
    data = std::make_unique<SyntheticData>(c, 99);
  }
  double loss(const Batch& b) {
    FlatAccess access(model->layout(), params, grads);
    double l = 0;
    model->forward(b, access, 1.0f, stream, &l);
    return l;
  }
  void gradient(const Batch& b) {
    device_memset(Device{}, grads.data(), 0, grads.bytes());
    FlatAccess access(model->layout(), params, grads);
    double l = 0;
    auto acts = model->forward(b, access, 1.0f, stream, &l);
    model->backward(*acts, b, access, stream);
  }
  TrackedAllocator alloc;
  Stream stream;
  std::unique_ptr<Model> model;
  Tensor params, grads;
  std::unique_ptr<SyntheticData> data;
};

void check_gradients(ModelKind kind, bool flash) {
  ModelConfig c = tiny(kind, DType::f64);
  c.flash_attention = flash;
  Fixture f(c);
  Batch b = f.data->batch(0, 0, 3, f.alloc);
  f.gradient(b);
  auto* p = f.params.ptr<double>();
  auto* g = f.grads.ptr<double>();
  // Every parameter tensor: a few random elements each, central differences in float64.
  std::mt19937 rng(std::random_device{}());
  int checked = 0;
  for (const auto& unit : f.model->layout().units)
    for (const auto& spec : unit.params) {
      const std::int64_t n = shape_numel(spec.shape), base = unit.offset + spec.offset;
      for (int k = 0; k < 4; ++k) {
        std::int64_t i = base + std::int64_t(rng() % std::uint64_t(n));
        const double h = 1e-5, saved = p[i];
        p[i] = saved + h;
        double up = f.loss(b);
        p[i] = saved - h;
        double down = f.loss(b);
        p[i] = saved;
        double numeric = (up - down) / (2 * h);
        EXPECT_NEAR(g[i], numeric, 1e-6 + 1e-5 * std::fabs(numeric))
            << unit.name << "." << spec.name << " element " << i - base;
        ++checked;
      }
    }
  EXPECT_GT(checked, 20);
}

// Runs the model as pieces (pipeline stages) with the split backward: input part of every piece in reverse, then
// the weight parts; the gradients must equal the whole-model backward's exactly in float64 up to summation order.
void check_pieces(ModelKind kind, std::vector<int> cuts) {
  Fixture f(tiny(kind, DType::f64));
  Batch b = f.data->batch(0, 0, 3, f.alloc);
  f.gradient(b);
  std::vector<double> whole(f.grads.ptr<double>(), f.grads.ptr<double>() + f.grads.numel());
  double whole_loss = f.loss(b);

  device_memset(Device{}, f.grads.data(), 0, f.grads.bytes());
  FlatAccess access(f.model->layout(), f.params, f.grads);
  std::vector<std::unique_ptr<Activations>> acts;
  Tensor x;
  double loss = -1;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    acts.push_back(f.model->forward(b, {cuts[i], cuts[i + 1]}, x, access, 1.0f, f.stream, &loss));
    x = acts.back()->output();
  }
  EXPECT_EQ(loss, whole_loss);
  Tensor dx;
  for (std::size_t i = acts.size(); i-- > 0;) dx = f.model->backward(*acts[i], b, dx, access, f.stream, BackwardPart::input);
  EXPECT_EQ(dx.data(), nullptr);  // the first piece has no input gradient
  for (std::size_t i = 0; i < acts.size(); ++i)
    f.model->backward(*acts[i], b, Tensor{}, access, f.stream, BackwardPart::weight);
  const double* g = f.grads.ptr<double>();
  for (std::size_t i = 0; i < whole.size(); ++i) ASSERT_NEAR(g[i], whole[i], 1e-12 * (1 + std::fabs(whole[i]))) << i;
}

}  // namespace

TEST(Models, GptPiecesWithSplitBackwardMatchWholeModel) {
  check_pieces(ModelKind::gpt, {0, 1, 3, 4});
  check_pieces(ModelKind::gpt, {0, 2, 4});
}
TEST(Models, MlpPiecesWithSplitBackwardMatchWholeModel) { check_pieces(ModelKind::mlp, {0, 1, 2}); }
TEST(Models, LlamaPiecesWithSplitBackwardMatchWholeModel) {
  check_pieces(ModelKind::llama, {0, 1, 3, 4});
  check_pieces(ModelKind::llama, {0, 2, 4});
}

TEST(Models, PieceRangesAndShapesAreChecked) {
  Fixture f(tiny(ModelKind::gpt, DType::f64));
  Batch b = f.data->batch(0, 0, 2, f.alloc);
  FlatAccess access(f.model->layout(), f.params, f.grads);
  double loss = 0;
  EXPECT_THROW(f.model->forward(b, {2, 2}, Tensor{}, access, 1.0f, f.stream, &loss), Error);
  EXPECT_THROW(f.model->forward(b, {0, 5}, Tensor{}, access, 1.0f, f.stream, &loss), Error);
  Tensor wrong(f.alloc, DType::f64, {2, 5, 11}, MemCategory::activations);
  EXPECT_THROW(f.model->forward(b, {1, 4}, wrong, access, 1.0f, f.stream, &loss), Error);
}

TEST(Models, GptBackwardMatchesFiniteDifferences) { check_gradients(ModelKind::gpt, true); }
TEST(Models, GptPlainAttentionBackwardMatchesFiniteDifferences) { check_gradients(ModelKind::gpt, false); }
TEST(Models, MlpBackwardMatchesFiniteDifferences) { check_gradients(ModelKind::mlp, false); }
TEST(Models, LlamaBackwardMatchesFiniteDifferences) { check_gradients(ModelKind::llama, true); }
TEST(Models, LlamaPlainAttentionBackwardMatchesFiniteDifferences) { check_gradients(ModelKind::llama, false); }

TEST(Models, LayoutCountsParameters) {
  ModelConfig c = tiny(ModelKind::gpt, DType::f32);
  ParamLayout l = make_layout(c);
  const std::int64_t C = 12, F = 20, V = 11, T = 5;
  const std::int64_t block = 2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + F * C + F + C * F + C;
  EXPECT_EQ(l.parameters, V * C + T * C + 2 * block + 2 * C + V * C);
  EXPECT_EQ(int(l.units.size()), 4);
  EXPECT_GE(l.total, l.parameters);
  for (const auto& u : l.units)
    for (const auto& p : u.params) EXPECT_EQ((u.offset + p.offset) % kParamAlign, 0) << p.name;
  // 72 B s L h^2 (1 + s/(6h) + V/(12 L h)) with f = 4h
  c.ffn = 0;
  const double B = 3, s = 5, L = 2, h = 12, Vd = 11;
  EXPECT_DOUBLE_EQ(model_flops_per_step(c, 3), 72 * B * s * L * h * h * (1 + s / (6 * h) + Vd / (12 * L * h)));
}

TEST(Models, BadConfigurationsAreRefused) {
  ModelConfig c = tiny(ModelKind::gpt, DType::f32);
  c.heads = 5;
  try {
    c.validate();
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--heads 5 does not divide --hidden 12"), std::string::npos);
  }
  c = tiny(ModelKind::gpt, DType::i32);
  EXPECT_THROW(c.validate(), UsageError);
  c = tiny(ModelKind::mlp, DType::f32);
  c.layers = 0;
  EXPECT_THROW(c.validate(), UsageError);
  EXPECT_THROW(parse_model_kind("rnn"), UsageError);
}

// llama's parameters and FLOPs against the closed forms of docs/training.md, at Llama-3-8B's shape (8,030,261,248
// parameters, the published 8.03B) and at a random small one, its shapes under tensor parallelism and its refusals.
TEST(Models, LlamaLayoutAndFlopsMatchTheClosedForms) {
  ModelConfig c;
  c.kind = ModelKind::llama, c.layers = 32, c.hidden = 4096, c.heads = 32, c.kv_heads = 8, c.ffn = 14336;
  c.vocab = 128256, c.seq = 8192;
  c.validate();
  EXPECT_EQ(make_layout(c).parameters, 8030261248);
  EXPECT_DOUBLE_EQ(model_flops_per_step(c, 1), 474422087516160.0);
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 20; ++trial) {
    const int e = int(rng() % 4), a = 1 << e, d = 2 * (1 + int(rng() % 8)), kv = 1 << (rng() % (e + 1));
    ModelConfig m;
    m.kind = ModelKind::llama, m.layers = 1 + int(rng() % 5), m.hidden = a * d, m.heads = a, m.kv_heads = kv;
    m.ffn = 1 + int(rng() % 100), m.vocab = 1 + int(rng() % 500), m.seq = 1 + int(rng() % 64);
    SCOPED_TRACE("L " + std::to_string(m.layers) + " h " + std::to_string(m.hidden) + " a " + std::to_string(a) +
                 " kv " + std::to_string(kv) + " f " + std::to_string(m.ffn) + " V " + std::to_string(m.vocab));
    ASSERT_NO_THROW(m.validate());
    const double h = m.hidden, g = kv * d, f = m.ffn, V = m.vocab, L = m.layers, s = m.seq;
    const double block = h * (h + 2 * g) + h * h + 3 * h * f + 2 * h;  // q/k/v, o, gate/up/down, two norms
    EXPECT_EQ(double(make_layout(m).parameters), 2 * V * h + L * block + h);  // untied: embedding and head
    EXPECT_DOUBLE_EQ(model_flops_per_step(m, 3),
                     6 * 3 * s * (L * (h * (h + 2 * g) + h * h + 3 * h * f) + V * h) + 12 * 3 * s * s * L * h);
  }
  c.tp = 4;
  const ParamLayout split = make_layout(c);
  ASSERT_EQ(split.units.size(), 34u);
  EXPECT_EQ(split.units[1].params[std::size_t(LlamaBlockParam::qkvw)].shape, (Shape{(4096 + 2 * 8 * 128) / 4, 4096}));
  EXPECT_EQ(split.units[1].params[std::size_t(LlamaBlockParam::gate_upw)].shape, (Shape{2 * 14336 / 4, 4096}));
  EXPECT_EQ(split.units[1].params[std::size_t(LlamaBlockParam::downw)].shape, (Shape{4096, 14336 / 4}));
  EXPECT_EQ(split.units[33].params[std::size_t(LlamaHeadParam::lmw)].shape, (Shape{128256 / 4, 4096}));
  for (std::size_t i = 0; i < std::size(kLlamaBlockParams); ++i)
    EXPECT_EQ(split.units[1].params[i].name, kLlamaBlockParams[i]);
  const struct {
    int kv, tp;
    const char* message;
  } bad[] = {{3, 1, "--kv-heads 3 does not divide --heads 32"},
             {64, 1, "--kv-heads 64 does not divide --heads 32"},
             {8, 16, "--kv-heads 8 is not divisible by --tp 16"}};
  for (const auto& b : bad) {
    ModelConfig m = c;
    m.kv_heads = b.kv, m.tp = b.tp;
    try {
      m.validate();
      ADD_FAILURE() << b.message;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_model_kind("llama"), ModelKind::llama);
}

// A few hundred single-rank AdamW steps on the synthetic tasks lower the loss well below its start.
TEST(Models, TrainingLowersTheLoss) {
  for (ModelKind kind : {ModelKind::mlp, ModelKind::gpt, ModelKind::llama}) {
    ModelConfig c = tiny(kind, DType::f32);
    c.hidden = 16, c.heads = 2, c.ffn = 32, c.vocab = 16, c.seq = 8;
    c.kv_heads = 1;  // llama: multi-query
    Fixture f(c);
    TrackedAllocator& a = f.alloc;
    Tensor m(a, DType::f32, {f.params.numel()}, MemCategory::optimizer), v = m;
    v = Tensor(a, DType::f32, {f.params.numel()}, MemCategory::optimizer);
    device_memset(Device{}, m.data(), 0, m.bytes());
    device_memset(Device{}, v.data(), 0, v.bytes());
    ops::AdamWConfig cfg;
    cfg.lr = 1e-2f;
    double first = 0, last = 0;
    const int steps = 300;
    for (int step = 0; step < steps; ++step) {
      Batch b = f.data->batch(step, 0, 8, f.alloc);
      device_memset(Device{}, f.grads.data(), 0, f.grads.bytes());
      FlatAccess access(f.model->layout(), f.params, f.grads);
      double l = 0;
      auto acts = f.model->forward(b, access, 1.0f, f.stream, &l);
      f.model->backward(*acts, b, access, f.stream);
      ops::adamw_update(f.params, f.grads, m, v, cfg, step + 1, f.stream);
      if (step < 10) first += l / 10;
      if (step >= steps - 10) last += l / 10;
    }
    EXPECT_LT(last, 0.5 * first) << model_kind_name(kind) << ": " << first << " -> " << last;
  }
}

// The parameter handles name the layout's parameters in order, for every GPT unit kind and tp degree.
TEST(Models, ParameterHandlesMatchTheLayout) {
  for (int tp : {1, 2}) {
    ModelConfig c;
    c.kind = ModelKind::gpt, c.layers = 2, c.hidden = 16, c.heads = 2, c.seq = 8, c.vocab = 32, c.tp = tp;
    const ParamLayout l = make_layout(c);
    ASSERT_EQ(l.units.size(), 4u);
    auto expect_names = [&](int unit, const auto& names) {
      const auto& params = l.units[std::size_t(unit)].params;
      ASSERT_EQ(params.size(), std::size(names)) << l.units[std::size_t(unit)].name;
      for (std::size_t i = 0; i < params.size(); ++i) EXPECT_EQ(params[i].name, names[i]) << "tp " << tp;
    };
    expect_names(0, kEmbeddingParams);
    expect_names(1, kBlockParams);
    expect_names(2, kBlockParams);
    expect_names(3, kHeadParams);
    EXPECT_EQ(l.units[1].params[std::size_t(BlockParam::qkvw)].shape, (Shape{3 * 16 / tp, 16}));
    EXPECT_EQ(l.units[3].params[std::size_t(HeadParam::lmw)].shape, (Shape{32 / tp, 16}));
    EXPECT_EQ(l.units[0].params[std::size_t(EmbeddingParam::wpe)].shape, (Shape{8, 16}));
    c.kind = ModelKind::mlp;
    const ParamLayout mlp = make_layout(c);
    ASSERT_EQ(mlp.units.size(), 2u);
    for (const UnitLayout& u : mlp.units) {
      ASSERT_EQ(u.params.size(), std::size(kMlpParams));
      for (std::size_t i = 0; i < u.params.size(); ++i) EXPECT_EQ(u.params[i].name, kMlpParams[i]);
    }
  }
}
