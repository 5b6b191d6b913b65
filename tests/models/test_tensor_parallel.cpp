// Tensor and sequence parallelism inside the models: tp ranks as threads must give the single-rank loss and, put
// together through tp_index, the single-rank gradients; the split backward, the counted bytes and the checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "collectives/bootstrap.h"
#include "base/error.h"
#include "core/memory.h"
#include "kernels/ops.h"
#include "models/model.h"
#include "tests/models/host_values.h"
#include "models/tensor_parallel.h"

using namespace parbench;

namespace {

ModelConfig gpt_config(DType t, int tp, bool sp) {
  ModelConfig c;
  c.kind = ModelKind::gpt;
  c.layers = 2;
  c.hidden = 24;
  c.heads = 12;  // 2 per head channel, so tp 2, 3 and 4 all split the heads
  c.seq = 12;
  c.vocab = 36;
  c.ffn = 48;
  c.dtype = t;
  c.tp = tp;
  c.sequence_parallel = sp;
  return c;
}

// Four kv heads of two query heads each: tp 2 gives each rank two kv heads, tp 4 one.
ModelConfig llama_config(DType t, int tp, bool sp) {
  ModelConfig c = gpt_config(t, tp, sp);
  c.kind = ModelKind::llama;
  c.hidden = 32, c.heads = 8, c.kv_heads = 4, c.ffn = 40;
  return c;
}

ModelConfig mlp_config(DType t, int tp) {
  ModelConfig c;
  c.kind = ModelKind::mlp;
  c.layers = 3;
  c.hidden = 12;
  c.ffn = 20;
  c.dtype = t;
  c.tp = tp;
  return c;
}

using test::to_host;

void from_host(Tensor& t, const std::vector<double>& v) {
  std::vector<char> raw(t.bytes());
  for (std::size_t i = 0; i < v.size(); ++i) store_from_double(raw.data(), t.dtype(), i, v[i]);
  device_memcpy(t.device(), t.data(), Device{}, raw.data(), t.bytes());
}

// What one rank (or the single-rank reference) computed for microbatch 0 of step 0.
struct RankResult {
  double loss = 0;
  std::vector<double> grads;        // whole-model forward and backward (BackwardPart::all)
  std::vector<double> split_grads;  // pieces, input parts in reverse, then the weight parts
  double split_loss = 0;
  std::vector<double> boundary;     // the first piece's output (B, T/tp, C) or (B, C)
  std::uint64_t bytes = 0;          // TensorParallel::bytes of the whole-model forward + backward
  std::uint64_t split_bytes = 0;    // and of the pieces with the split backward
  bool init_matches = false;        // Model::initial_params equals the full values mapped through tp_index
};

constexpr std::uint64_t kSeed = 7;

// Runs model `c` on this rank: parameters from the full model's initial values through tp_index.
RankResult run_rank(const ModelConfig& c, Device device, Communicator* comm, std::int64_t B, std::vector<int> cuts) {
  TrackedAllocator alloc(device);
  Stream stream(device);
  TensorParallel tp{comm};
  auto model = Model::create(c, alloc, comm ? &tp : nullptr);
  const int rank = comm ? comm->rank() : 0;
  const ParamLayout& layout = model->layout();
  const ParamLayout full_layout = make_layout(c.unsplit());
  TrackedAllocator host_alloc(Device{});
  const std::vector<float> full_init = Model::create(c.unsplit(), host_alloc)->initial_params(kSeed);
  std::vector<double> init(std::size_t(layout.total), 0.0);
  for (int u = 0; u < model->units(); ++u) {
    const TpIndex map = tp_index(c, rank, u);
    const std::int64_t base = layout.units[std::size_t(u)].offset, full_base = full_layout.units[std::size_t(u)].offset;
    for (std::size_t i = 0; i < map.full.size(); ++i)
      if (map.full[i] >= 0) init[std::size_t(base) + i] = full_init[std::size_t(full_base + map.full[i])];
  }
  RankResult res;
  const std::vector<float> own_init = model->initial_params(kSeed);
  res.init_matches = std::equal(own_init.begin(), own_init.end(), init.begin(), init.end(),
                                [](float a, double b) { return double(a) == b; });

  Tensor params(alloc, c.dtype, {layout.total}, MemCategory::parameters);
  Tensor grads(alloc, c.dtype, {layout.total}, MemCategory::gradients);
  from_host(params, init);
  SyntheticData data(c.unsplit(), 99);
  Batch b = data.batch(0, 0, B, alloc);
  FlatAccess access(layout, params, grads);

  device_memset(device, grads.data(), 0, grads.bytes());
  auto acts = model->forward(b, access, 1.0f, stream, &res.loss);
  model->backward(*acts, b, access, stream);
  stream.synchronize();
  acts.reset();
  res.bytes = tp.bytes;
  res.grads = to_host(grads);

  device_memset(device, grads.data(), 0, grads.bytes());
  tp.bytes = 0;
  std::vector<std::unique_ptr<Activations>> pieces;
  Tensor x;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    pieces.push_back(model->forward(b, {cuts[i], cuts[i + 1]}, x, access, 1.0f, stream, &res.split_loss));
    x = pieces.back()->output();
    if (i == 0) res.boundary = to_host(x);
  }
  Tensor dx;
  for (std::size_t i = pieces.size(); i-- > 0;)
    dx = model->backward(*pieces[i], b, dx, access, stream, BackwardPart::input);
  for (auto& piece : pieces) model->backward(*piece, b, Tensor{}, access, stream, BackwardPart::weight);
  stream.synchronize();
  res.split_grads = to_host(grads);
  res.split_bytes = tp.bytes;
  return res;
}

std::vector<RankResult> run_tp(const ModelConfig& c, Device device, std::int64_t B, const std::vector<int>& cuts) {
  std::vector<RankResult> results(std::size_t(c.tp));
  run_ranks({c.tp, device, 60}, [&](Communicator& comm) {
    results[std::size_t(comm.rank())] = run_rank(c, device, &comm, B, cuts);
  });
  return results;
}

double rel_error(const std::vector<double>& a, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) num += (a[i] - ref[i]) * (a[i] - ref[i]), den += ref[i] * ref[i];
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// Bytes per rank of one microbatch's forward + backward through the whole model, per call (integer division) as
// TensorParallel counts: ar(S) = 2 S (n-1)/n, sh(S) = S (n-1)/n; S = B*T*C*dtype, s = B*T*stat dtype.
//   gpt:        (4L + 2) ar(S)  [blocks 4 per layer (2 forward, 2 backward); embedding output 1 forward;
//                                head input gradient 1 backward]  + ar(s) + ar(2s)  [cross-entropy max, sums]
//   gpt + sp:   (8L + 4) sh(S)  [blocks 2 all-gathers + 2 reduce-scatters each way; embedding reduce-scatter
//                                forward, all-gather backward; head all-gather forward, reduce-scatter backward]
//               + (2L + 1) ar(2 C dtype)  [layernorm weight and bias gradients; llama: C, one RMSNorm weight]  + ar(s) + ar(2s)
//   mlp:        (2L - 1) ar(B*C*dtype)  [1 forward per block, 1 backward per block but the first, whose input
//                                        needs no gradient]
std::uint64_t expected_bytes(const ModelConfig& c, std::int64_t B) {
  const std::uint64_t n = std::uint64_t(c.tp), L = std::uint64_t(c.layers), d = dtype_size(c.dtype),
                      sd = dtype_size(c.stat_dtype()), C = std::uint64_t(c.hidden), T = std::uint64_t(c.seq);
  auto ar = [&](std::uint64_t s) { return 2 * s * (n - 1) / n; };
  auto sh = [&](std::uint64_t s) { return s * (n - 1) / n; };
  if (c.kind == ModelKind::mlp) return (2 * L - 1) * ar(std::uint64_t(B) * C * d);
  const std::uint64_t S = std::uint64_t(B) * T * C * d, s = std::uint64_t(B) * T * sd;
  if (!c.sequence_parallel) return (4 * L + 2) * ar(S) + ar(s) + ar(2 * s);
  const std::uint64_t norm_params = c.kind == ModelKind::llama ? C : 2 * C;  // RMSNorm: a weight, no bias
  return (8 * L + 4) * sh(S) + (2 * L + 1) * ar(norm_params * d) + ar(s) + ar(2 * s);
}

// Puts the ranks' gradients together into the full layout: every full element must come from exactly one rank's
// split element or from the replicated copies, which must be equal on all ranks.
std::vector<double> assemble(const ModelConfig& c, const std::vector<std::vector<double>>& per_rank) {
  const ParamLayout local = make_layout(c), full = make_layout(c.unsplit());
  std::vector<double> out(std::size_t(full.total), 0.0);
  std::vector<int> hits(std::size_t(full.total), 0);
  for (int u = 0; u < int(full.units.size()); ++u) {
    const std::int64_t base = local.units[std::size_t(u)].offset, full_base = full.units[std::size_t(u)].offset;
    for (int r = 0; r < c.tp; ++r) {
      const TpIndex map = tp_index(c, r, u);
      EXPECT_EQ(std::int64_t(map.full.size()), local.units[std::size_t(u)].numel);
      for (std::size_t i = 0; i < map.full.size(); ++i) {
        if (map.full[i] < 0) continue;
        const double v = per_rank[std::size_t(r)][std::size_t(base) + i];
        const std::size_t f = std::size_t(full_base + map.full[i]);
        if (map.replicated[i]) {
          // Replicated parameters are updated independently on every rank: their gradients must be identical.
          EXPECT_EQ(v, per_rank[0][std::size_t(base) + i]) << full.units[std::size_t(u)].name << " rank " << r;
          if (r != 0) continue;
        }
        out[f] = v;
        ++hits[f];
      }
    }
  }
  for (const auto& unit : full.units)
    for (const auto& p : unit.params)
      for (std::int64_t i = 0; i < shape_numel(p.shape); ++i)
        EXPECT_EQ(hits[std::size_t(unit.offset + p.offset + i)], 1) << unit.name << "." << p.name << " " << i;
  return out;
}

// The whole check: single-rank reference on the cpu, tp ranks as threads on `device`.
void check_tp(const ModelConfig& c, Device device, std::int64_t B, double tol) {
  const std::vector<int> cuts = c.is_transformer() ? std::vector<int>{0, 2, c.layers + 2}
                                                         : std::vector<int>{0, 1, c.layers};
  const ModelConfig ref_config = c.unsplit();
  const RankResult ref = run_rank(ref_config, Device{}, nullptr, B, cuts);
  const std::vector<RankResult> ranks = run_tp(c, device, B, cuts);
  std::vector<std::vector<double>> grads, split;
  for (int r = 0; r < c.tp; ++r) {
    const RankResult& res = ranks[std::size_t(r)];
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_TRUE(res.init_matches);
    EXPECT_NEAR(res.loss, ref.loss, tol * std::fabs(ref.loss));
    EXPECT_EQ(res.loss, ranks[0].loss);  // the full-vocabulary loss, the same on every rank
    EXPECT_EQ(res.split_loss, res.loss);
    EXPECT_LT(rel_error(res.split_grads, res.grads), 1e-12 + (c.dtype == DType::f64 ? 0 : 1e-6));
    EXPECT_EQ(res.bytes, expected_bytes(c, B));
    EXPECT_EQ(res.bytes, tp_bytes_per_microbatch(c, B, 0, int(cuts.back())));
    std::uint64_t pieces = 0;
    for (std::size_t i = 0; i + 1 < cuts.size(); ++i) pieces += tp_bytes_per_microbatch(c, B, cuts[i], cuts[i + 1]);
    EXPECT_EQ(res.split_bytes, pieces);
    grads.push_back(res.grads);
    split.push_back(res.split_grads);
  }
  // Boundaries: under sp rank r holds positions [r T/tp, (r+1) T/tp) of every sample, else the whole activation.
  const std::int64_t rows = c.is_transformer() ? c.seq : 1, local_rows = c.local_seq(), C = c.hidden;
  for (int r = 0; r < c.tp; ++r) {
    std::vector<double> expect;
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t t = 0; t < (c.is_transformer() ? local_rows : 1); ++t) {
        const std::int64_t row = b * rows + (c.sequence_parallel ? r * local_rows : 0) + t;
        expect.insert(expect.end(), ref.boundary.begin() + std::ptrdiff_t(row * C),
                      ref.boundary.begin() + std::ptrdiff_t((row + 1) * C));
      }
    ASSERT_EQ(ranks[std::size_t(r)].boundary.size(), expect.size());
    EXPECT_LT(rel_error(ranks[std::size_t(r)].boundary, expect), tol) << "boundary of rank " << r;
  }
  const std::vector<double> full = assemble(c, grads);
  // Per parameter tensor, so that a small tensor's error is not hidden by a large one's norm.
  const ParamLayout layout = make_layout(ref_config);
  for (const auto& unit : layout.units)
    for (const auto& p : unit.params) {
      const auto first = std::size_t(unit.offset + p.offset), count = std::size_t(shape_numel(p.shape));
      std::vector<double> a(full.begin() + std::ptrdiff_t(first), full.begin() + std::ptrdiff_t(first + count));
      std::vector<double> e(ref.grads.begin() + std::ptrdiff_t(first),
                            ref.grads.begin() + std::ptrdiff_t(first + count));
      EXPECT_LT(rel_error(a, e), tol) << unit.name << "." << p.name;
    }
}

std::string usage_message(const ModelConfig& c) {
  try {
    c.validate();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(TensorParallel, GptTp2MatchesSingleRank) { check_tp(gpt_config(DType::f64, 2, false), Device{}, 3, 1e-12); }
TEST(TensorParallel, GptTp3MatchesSingleRank) { check_tp(gpt_config(DType::f64, 3, false), Device{}, 2, 1e-12); }
TEST(TensorParallel, GptTp4PlainAttentionMatchesSingleRank) {
  ModelConfig c = gpt_config(DType::f64, 4, false);
  c.flash_attention = false;
  check_tp(c, Device{}, 2, 1e-12);
}
TEST(TensorParallel, GptTp2F32MatchesSingleRank) { check_tp(gpt_config(DType::f32, 2, false), Device{}, 3, 1e-5); }
TEST(TensorParallel, GptSequenceParallelTp2MatchesSingleRank) {
  check_tp(gpt_config(DType::f64, 2, true), Device{}, 3, 1e-12);
}
TEST(TensorParallel, GptSequenceParallelTp3MatchesSingleRank) {
  check_tp(gpt_config(DType::f64, 3, true), Device{}, 2, 1e-12);
}
TEST(TensorParallel, GptSequenceParallelOneSampleMatchesSingleRank) {  // B = 1 gathers without reordering
  check_tp(gpt_config(DType::f64, 4, true), Device{}, 1, 1e-12);
}
// bf16 storage (f32 statistics): the tp sums round differently, so only about bf16's precision is expected.
TEST(TensorParallel, GptSequenceParallelBf16NearSingleRank) {
  check_tp(gpt_config(DType::bf16, 2, true), Device{}, 2, 2e-2);
}
TEST(TensorParallel, LlamaTp2MatchesSingleRank) { check_tp(llama_config(DType::f64, 2, false), Device{}, 3, 1e-12); }
TEST(TensorParallel, LlamaTp4OneKvHeadPerRankPlainAttentionMatchesSingleRank) {
  ModelConfig c = llama_config(DType::f64, 4, false);
  c.flash_attention = false;
  check_tp(c, Device{}, 2, 1e-12);
}
TEST(TensorParallel, LlamaSequenceParallelTp2MatchesSingleRank) {
  check_tp(llama_config(DType::f64, 2, true), Device{}, 3, 1e-12);
}
TEST(TensorParallel, LlamaSequenceParallelTp4F32MatchesSingleRank) {
  check_tp(llama_config(DType::f32, 4, true), Device{}, 2, 1e-5);
}
TEST(TensorParallel, MlpTp2MatchesSingleRank) { check_tp(mlp_config(DType::f64, 2), Device{}, 5, 1e-12); }
// 4 x 11 f64 values = 352 bytes: 2 x 352 x 2 / 3 = 469 per allreduce, CommCounter's rounding (not 2 x 234).
TEST(TensorParallel, MlpTp3OddSizesMatchesSingleRank) {
  ModelConfig c = mlp_config(DType::f64, 3);
  c.hidden = 11, c.ffn = 21;
  check_tp(c, Device{}, 4, 1e-12);
}
TEST(TensorParallel, MlpTp4F32MatchesSingleRank) {
  ModelConfig c = mlp_config(DType::f32, 4);
  check_tp(c, Device{}, 5, 1e-5);
}

// The same CUDA kernel sources through the simt emulator, f32, against the cpu reference.
TEST(TensorParallel, GptTp2OnSimtMatchesCpu) {
  if (!ops::kernels_available(DeviceKind::simt)) GTEST_SKIP() << "this build has no simt kernels";
  ModelConfig c = gpt_config(DType::f32, 2, false);
  c.layers = 1, c.hidden = 8, c.heads = 2, c.seq = 4, c.vocab = 8, c.ffn = 16;
  check_tp(c, Device{DeviceKind::simt}, 2, 1e-4);
  c.sequence_parallel = true;
  check_tp(c, Device{DeviceKind::simt}, 2, 1e-4);
}
TEST(TensorParallel, LlamaTp2OnSimtMatchesCpu) {
  if (!ops::kernels_available(DeviceKind::simt)) GTEST_SKIP() << "this build has no simt kernels";
  ModelConfig c = llama_config(DType::f32, 2, true);
  c.layers = 1, c.hidden = 16, c.heads = 4, c.kv_heads = 2, c.seq = 4, c.vocab = 8, c.ffn = 12;
  check_tp(c, Device{DeviceKind::simt}, 2, 1e-4);
}

// Sequence parallelism with one rank changes nothing: bit-identical to the plain model.
TEST(TensorParallel, SequenceParallelWithOneRankIsTheSingleRankModel) {
  ModelConfig c = gpt_config(DType::f64, 1, true);
  const std::vector<int> cuts{0, 2, c.layers + 2};
  const RankResult sp = run_rank(c, Device{}, nullptr, 2, cuts);
  const RankResult plain = run_rank(c.unsplit(), Device{}, nullptr, 2, cuts);
  EXPECT_EQ(sp.loss, plain.loss);
  EXPECT_EQ(sp.grads, plain.grads);
  EXPECT_EQ(sp.bytes, 0u);
}

TEST(TensorParallel, LocalLayoutAndBoundaryShapes) {
  ModelConfig c = gpt_config(DType::f32, 3, true);
  const ParamLayout l = make_layout(c);
  const std::int64_t C = 24, F = 48, V = 36;
  EXPECT_EQ(l.spec(0, EmbeddingParam::wte).shape, (Shape{V / 3, C}));
  EXPECT_EQ(l.spec(0, EmbeddingParam::wpe).shape, (Shape{12, C}));
  EXPECT_EQ(l.spec(1, BlockParam::qkvw).shape, (Shape{3 * C / 3, C}));
  EXPECT_EQ(l.spec(1, BlockParam::qkvb).shape, (Shape{3 * C / 3}));
  EXPECT_EQ(l.spec(1, BlockParam::projw).shape, (Shape{C, C / 3}));
  EXPECT_EQ(l.spec(1, BlockParam::projb).shape, (Shape{C}));
  EXPECT_EQ(l.spec(1, BlockParam::fcw).shape, (Shape{F / 3, C}));
  EXPECT_EQ(l.spec(1, BlockParam::fcprojw).shape, (Shape{C, F / 3}));
  EXPECT_EQ(l.spec(3, HeadParam::lmw).shape, (Shape{V / 3, C}));
  // Rank 1 of 3 holds heads 4..7: q rows 8..15, k rows 32..39, v rows 56..63 of the full qkvw.
  const TpIndex map = tp_index(c, 1, 1);
  const std::int64_t qkvw = l.spec(1, BlockParam::qkvw).offset, full_qkvw = make_layout(c.unsplit()).spec(1, BlockParam::qkvw).offset;
  EXPECT_EQ(map.full[std::size_t(qkvw)], full_qkvw + 8 * C);
  EXPECT_EQ(map.full[std::size_t(qkvw + 8 * C)], full_qkvw + 32 * C);
  EXPECT_EQ(map.full[std::size_t(qkvw + 16 * C + 3)], full_qkvw + 56 * C + 3);
  EXPECT_FALSE(map.replicated[std::size_t(qkvw)]);
  EXPECT_TRUE(map.replicated[std::size_t(l.spec(1, BlockParam::ln1w).offset)]);
  EXPECT_THROW(tp_index(c, 3, 1), Error);

  run_ranks({3, Device{}, 60}, [&](Communicator& comm) {
    TrackedAllocator alloc(Device{});
    TensorParallel tp{&comm};
    auto model = Model::create(c, alloc, &tp);
    EXPECT_EQ(model->boundary_shape(2), (Shape{2, 4, C}));  // the rank's sequence shard
  });
  TrackedAllocator alloc(Device{});
  EXPECT_EQ(Model::create(mlp_config(DType::f32, 1), alloc)->boundary_shape(2), (Shape{2, 12}));
}

TEST(TensorParallel, BadConfigurationsAreRefused) {
  ModelConfig c = gpt_config(DType::f32, 4, false);
  c.heads = 6;
  EXPECT_EQ(usage_message(c), "--heads 6 is not divisible by --tp 4");
  c = gpt_config(DType::f32, 3, false);
  c.ffn = 20;
  EXPECT_EQ(usage_message(c), "--ffn 20 is not divisible by --tp 3");
  c.ffn = 0, c.hidden = 12, c.heads = 3;  // 48 = 4 x 12 divides by 3: accepted
  EXPECT_EQ(usage_message(c), "(accepted)");
  c = gpt_config(DType::f32, 2, false);
  c.vocab = 11;
  EXPECT_EQ(usage_message(c), "--vocab 11 is not divisible by --tp 2");
  c = gpt_config(DType::f32, 0, false);
  EXPECT_EQ(usage_message(c), "--tp 0 must be >= 1");
  c = gpt_config(DType::f32, 5, true);
  c.heads = 5, c.hidden = 20, c.ffn = 40, c.vocab = 40, c.seq = 12;
  EXPECT_EQ(usage_message(c),
            "--seq 12 is not divisible by --tp 5 (sequence parallelism splits the sequence over the tp ranks)");
  c.sequence_parallel = false;
  EXPECT_EQ(usage_message(c), "(accepted)");
  c = mlp_config(DType::f32, 3);
  EXPECT_EQ(usage_message(c), "--ffn 20 is not divisible by --tp 3");
  c = mlp_config(DType::f32, 2);
  c.sequence_parallel = true;
  EXPECT_EQ(usage_message(c), "--sequence-parallel needs --model gpt or llama (the mlp has no sequence dimension)");

  // A tp model needs its group, of the right size.
  TrackedAllocator alloc(Device{});
  try {
    Model::create(gpt_config(DType::f32, 2, false), alloc);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs its tensor-parallel group"), std::string::npos) << e.what();
  }
  std::mutex m;
  std::string message;
  run_ranks({3, Device{}, 60}, [&](Communicator& comm) {
    TrackedAllocator a(Device{});
    TensorParallel tp{&comm};
    try {
      Model::create(gpt_config(DType::f32, 2, false), a, &tp);
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(m);
      message = e.what();
    }
  });
  EXPECT_EQ(message, "the tensor-parallel group has 3 ranks but the model tp is 2");
}
