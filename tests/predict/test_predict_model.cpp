// The predictor's parts: collective costs, the pipeline bubble with free communication and equal stages against
// every registered schedule's closed form, the layout checks, system files, and speed at 4096 GPUs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/sanitizers.h"
#include "parallel/schedule/schedule.h"
#include "parallel/schedule/play.h"
#include "predict/calibrate.h"
#include "predict/collective_model.h"
#include "predict/costs.h"
#include "predict/predict.h"
#include "predict/search.h"
#include "predict/zero3.h"
#include "tests/test_files.h"

using namespace parbench;
using namespace parbench::predict;
using testing::HasSubstr;
using testing::ThrowsMessage;

namespace {

Layout small_gpt(int gpus, int tp, int pp) {
  Layout l;
  l.model.kind = ModelKind::gpt;
  l.model.layers = 24, l.model.hidden = 2048, l.model.heads = 16, l.model.seq = 2048, l.model.vocab = 51200;
  l.model.dtype = DType::bf16;
  l.gpus = gpus, l.tp = tp, l.pp = pp, l.dp = gpus / (tp * pp);
  l.micro_batch = 1, l.global_batch = 8 * l.dp;
  return l;
}

// One tensor-parallel group of a bf16 GPT (sequence 2048, vocabulary 51200) running one microbatch of b samples.
Layout tensor_parallel_gpt(int layers, int hidden, int heads, int tp, int b) {
  Layout l;
  l.model.kind = ModelKind::gpt;
  l.model.layers = layers, l.model.hidden = hidden, l.model.heads = heads, l.model.seq = 2048, l.model.vocab = 51200;
  l.model.dtype = DType::bf16;
  l.gpus = tp, l.tp = tp, l.micro_batch = b, l.global_batch = b;
  return l;
}

// `sys` with gpu.KEY = value must be refused naming gpu.FIELD.
void expect_gpu_field_refused(nlohmann::json sys, const std::string& key, const nlohmann::json& value,
                              const std::string& field) {
  sys["gpu"][key] = value;
  try {
    system_from_json(sys, "sys.json");
    ADD_FAILURE() << "accepted gpu." << key << " = " << value.dump();
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("field 'gpu." + field + "'"));
  }
}

}  // namespace

// Equal stages (F = 1, BI = W = 1, so B = 2) and free communication: the predicted bubble of the slowest stage is
// the schedule's closed form, for every registered schedule and several shapes.
TEST(PredictPipeline, FreeCommunicationEqualStagesGiveTheClosedForm) {
  const SystemModel sys = builtin_system("dgx-a100");
  PassCosts unit;
  unit.forward = 1, unit.backward_input = 1, unit.backward_weight = 1;
  int checked = 0;
  for (const ScheduleKind& k : schedule_kinds())
    for (int p : {2, 4, 8})
      for (int m : {8, 16, 32})
        for (int v : {1, 2, 3}) {
          try {
            k.validate(p, m, v);
          } catch (const UsageError&) {
            continue;
          }
          Layout l = small_gpt(p, 1, p);
          l.model.layers = p * v * 2, l.virtual_stages = v, l.schedule = ScheduleRef{&k, {}};
          l.global_batch = m;
          validate_layout(l);
          const std::vector<PassCosts> costs(std::size_t(p * v), unit);
          const Prediction pr = predict_with_costs(l, sys, costs, /*transfer=*/0);
          const TimeSplit& t = pr.time;
          const double span = t.forward + t.backward + t.bubble;
          EXPECT_EQ(t.pp_comm, 0);
          EXPECT_NEAR(t.bubble / span, k.bubble(p, m, v), 1e-12) << k.name << " p=" << p << " m=" << m << " v=" << v;
          EXPECT_NEAR(pr.bubble_simulated, k.bubble(p, m, v), 1e-12) << k.name;
          ++checked;
        }
  EXPECT_GE(checked, 30);
}

// Ring allreduce within a node: the level's fixed collective latency + 2 (n-1) alpha + 2 (n-1)/n S beta, and the
// least-time choice picks the cheapest.
TEST(PredictCollectives, AlphaBetaFormulasAndLeastTimeChoice) {
  SystemModel sys = builtin_system("dgx-a100");
  sys.levels[0].latency_us = 1.5;  // a per-step alpha beside the fixed cost, so both terms show
  sys.collective_algorithms = CollectiveAlgorithms::every;  // every algorithm modelled, not NCCL's alone
  const Link nv = link_of(sys.levels[0], 64e6);
  const double S = 64e6, fixed = 16.96e-6;
  const auto costs = collective_costs(sys, Collective::allreduce, S, {8, 8});
  double ring = -1, least = 1e9;
  for (const auto& c : costs) {
    if (c.algorithm == "ring") ring = c.seconds;
    least = std::min(least, c.seconds);
  }
  EXPECT_NEAR(ring, fixed + 14 * nv.alpha + 2 * 7.0 / 8 * S * nv.beta, 1e-12);
  EXPECT_EQ(collective_cost(sys, Collective::allreduce, S, {8, 8}).seconds, least);
  // Small messages: the per-step latency decides, so a log-depth algorithm beats the ring.
  EXPECT_NE(collective_cost(sys, Collective::allreduce, 8, {8, 8}).algorithm, "ring");
  // Across 16 nodes with 8 GPUs each, the hierarchical form is offered.
  bool hier = false;
  for (const auto& c : collective_costs(sys, Collective::allreduce, S, {128, 8})) hier |= c.algorithm == "hierarchical";
  EXPECT_TRUE(hier);
  EXPECT_EQ(collective_cost(sys, Collective::allreduce, S, {1, 1}).seconds, 0);
  // Reduce-scatter: (n-1) alpha + (n-1)/n S beta on the ring; a collective without a model is refused.
  for (const auto& c : collective_costs(sys, Collective::reduce_scatter, S, {8, 8})) {
    if (c.algorithm == "ring") {
      EXPECT_NEAR(c.seconds, fixed + 7 * nv.alpha + 7.0 / 8 * S * nv.beta, 1e-12);
    }
  }
  EXPECT_THROW(collective_costs(sys, Collective::broadcast, S, {8, 8}), Error);
}

// The built-in DGX A100's small collectives take the measured fixed latencies: 16.96 us inside a node, 21.27 us
// between two nodes of one GPU each, their sum across 2 x 8 GPUs (measured 35.85 us), the same for a send.
TEST(PredictCollectives, FixedLatencyOfTheLevelsAGroupSpans) {
  const SystemModel sys = builtin_system("dgx-a100");
  const double tiny = 8;
  EXPECT_NEAR(collective_cost(sys, Collective::allreduce, tiny, {8, 8}).seconds, 16.96e-6, 0.01e-6);
  EXPECT_NEAR(collective_cost(sys, Collective::allreduce, tiny, {2, 1}).seconds, 21.27e-6, 0.01e-6);
  EXPECT_NEAR(collective_cost(sys, Collective::allreduce, tiny, {16, 8}).seconds, 38.23e-6, 0.01e-6);
  EXPECT_NEAR(collective_cost(sys, Collective::sendrecv, tiny, {2, 2}).seconds, 16.96e-6, 0.01e-6);
  EXPECT_NEAR(collective_cost(sys, Collective::sendrecv, tiny, {2, 1}).seconds, 21.27e-6, 0.01e-6);
  // A big collective adds its bandwidth time to the same fixed cost.
  const double S = 1e9;
  EXPECT_NEAR(collective_cost(sys, Collective::allgather, S, {8, 8}).seconds,
              16.96e-6 + 7.0 / 8 * S / (300e9 * sys.levels[0].efficiency.at(S)), 1e-12);
}

// NCCL's collectives on the built-in DGX A100: ring, and tree for an allreduce, alone; a ring across more than two
// nodes pays NCCL's step latency for each further node (a 14 us network step and, AMD hosts, 6 us per further GPU of
// the node, per pass), a tree for each further level of the binary tree over the nodes (14 us, up and down).
TEST(PredictCollectives, NcclAlgorithmsPayStepsBeyondTwoNodes) {
  const SystemModel nccl = builtin_system("dgx-a100");
  ASSERT_EQ(nccl.collective_algorithms, CollectiveAlgorithms::nccl);
  ASSERT_EQ(nccl.host_cpu, HostCpu::amd);
  // The same curves and fixed latencies, no step latency.
  const SystemModel flat = without_nccl_collectives(nccl);
  auto cost = [](const SystemModel& sys, Collective op, double bytes, GroupPlacement g, const std::string& algorithm) {
    for (const CollCost& c : collective_costs(sys, op, bytes, g))
      if (c.algorithm == algorithm) return c.seconds;
    ADD_FAILURE() << algorithm << " not offered";
    return 0.0;
  };
  auto extra = [&](Collective op, double bytes, GroupPlacement g, const std::string& algorithm) {
    return cost(nccl, op, bytes, g, algorithm) - cost(flat, op, bytes, g, algorithm);
  };
  std::vector<std::string> names;
  for (const CollCost& c : collective_costs(nccl, Collective::allreduce, 256e6, {64, 8})) names.push_back(c.algorithm);
  EXPECT_EQ(names, (std::vector<std::string>{"ring", "tree"}));
  ASSERT_EQ(collective_costs(nccl, Collective::allgather, 256e6, {64, 8}).size(), 1u);
  // 4 GiB: the Simple protocol on two nodes and on eight (LL128's 8% less bandwidth costs more than its steps save).
  // 8 nodes of 8: 6 nodes beyond two, each 14 + 7 x 6 = 56 us per pass.
  const double big = 4.0 * (1 << 30);
  EXPECT_NEAR(extra(Collective::allgather, big, {64, 8}, "ring"), 6 * 56e-6, 1e-12);
  EXPECT_NEAR(extra(Collective::reduce_scatter, big, {64, 8}, "ring"), 6 * 56e-6, 1e-12);
  EXPECT_NEAR(extra(Collective::allreduce, big, {64, 8}, "ring"), 2 * 6 * 56e-6, 1e-12);
  // Tree over 8 nodes: 3 levels, 2 beyond a two-node tree's one, up and down.
  EXPECT_NEAR(extra(Collective::allreduce, big, {64, 8}, "tree"), 2 * 2 * 14e-6, 1e-12);
  // 8 KiB: LL on both; per node beyond two a 2.7 us network step and 7 NVLink steps at the AMD host's 2 us network
  // post, and LL's bandwidth cap over more than two nodes (19 GB/s, 22.5 on two) on the 63/64 of the buffer it moves.
  const double small = 8192, wire = small * 63 / 64;
  EXPECT_NEAR(extra(Collective::allgather, small, {64, 8}, "ring"),
              6 * (2.7 + 7 * 2.0) * 1e-6 + wire / 19e9 - wire / 22.5e9, 1e-12);
  // One GPU per node (a data-parallel group beside tp 8): LL's network step at the tree's 5 us, 14 nodes beyond two;
  // the bandwidth (half of one NIC's, under the cap) the same on two nodes as on sixteen.
  EXPECT_NEAR(extra(Collective::allgather, small, {16, 1}, "ring"), 14 * 5.0e-6, 1e-12);
  // Inside a node and across two nodes the measured curves and fixed latencies hold: nothing added.
  for (GroupPlacement g : {GroupPlacement{8, 8}, GroupPlacement{16, 8}, GroupPlacement{2, 1}})
    for (Collective op : {Collective::allreduce, Collective::allgather, Collective::reduce_scatter})
      for (double bytes : {small, 256e6, big})
        EXPECT_EQ(collective_cost(nccl, op, bytes, g).seconds, collective_cost(flat, op, bytes, g).seconds);
  // At scale the ring's latency outgrows its bandwidth time, and NCCL's model turns to LL128 (per node beyond two
  // 4 + 7 x 2 us, not Simple's 56): an all-gather of 256 MB over 512 nodes of 8 pays more than LL128's steps and
  // less than Simple's.
  const double wide = extra(Collective::allgather, 256e6, {4096, 8}, "ring");
  EXPECT_GT(wide, 510 * 18e-6);
  EXPECT_LT(wide, 510 * 56e-6 / 2);
  // Each protocol's steps are NCCL's whatever the system's Simple figures: on an Intel host's DGX H100 the LL ring's
  // NVLink step is its own 1 us post.
  const SystemModel h100 = builtin_system("dgx-h100"), h100_flat = without_nccl_collectives(h100);
  ASSERT_EQ(h100.host_cpu, HostCpu::intel);
  EXPECT_NEAR(collective_cost(h100, Collective::allgather, small, {64, 8}).seconds -
                  collective_cost(h100_flat, Collective::allgather, small, {64, 8}).seconds,
              6 * (2.7 + 7 * 1.0) * 1e-6 + wire / 20.4e9 - wire / 39e9, 1e-12);
}

TEST(PredictLayout, BadLayoutsAreRefusedNamingTheValue) {
  Layout l = small_gpt(8, 2, 2);
  l.dp = 3;
  EXPECT_THROW(
      {
        try {
          validate_layout(l);
        } catch (const UsageError& e) {
          EXPECT_NE(std::string(e.what()).find("--dp 3"), std::string::npos) << e.what();
          throw;
        }
      },
      UsageError);
  l = small_gpt(8, 3, 1);
  l.gpus = 3, l.dp = 1;
  EXPECT_THROW(validate_layout(l), UsageError);  // 16 heads not divisible by tp 3
  EXPECT_THROW(parse_recompute("some"), UsageError);
}

TEST(PredictSystem, JsonRoundTripAndSchemaErrorsNameTheField) {
  const SystemModel a = builtin_system("dgx-h100");
  const SystemModel b = system_from_json(system_to_json(a), "x.json");
  EXPECT_EQ(b.gpu.matrix_tflops_16, 989);
  EXPECT_EQ(b.levels.size(), a.levels.size());
  EXPECT_EQ(b.gpu.hbm_efficiency.at(5e6), a.gpu.hbm_efficiency.at(5e6));
  EXPECT_EQ(b.gpu.processing, Processing::no_overlap);
  auto error_of = [](nlohmann::json j) {
    try {
      system_from_json(j, "sys.json");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  nlohmann::json j = system_to_json(a);
  j["gpu"]["hbm_gbps"] = "fast";
  EXPECT_NE(error_of(j).find("gpu.hbm_gbps"), std::string::npos) << error_of(j);
  j = system_to_json(a);
  j["network"][1]["bandwidth"] = 3;
  EXPECT_NE(error_of(j).find("network[1].bandwidth"), std::string::npos) << error_of(j);
  j = system_to_json(a);
  j["gpu"]["matrix_efficiency"] = {{1, 1.5}};
  EXPECT_NE(error_of(j).find("gpu.matrix_efficiency"), std::string::npos) << error_of(j);
  j = system_to_json(a);
  j["network"][1]["gpus"] = 12;
  EXPECT_NE(error_of(j).find("network[1].gpus"), std::string::npos) << error_of(j);
  j = system_to_json(a);
  j["gpu"]["processing"] = "overlapped";
  EXPECT_NE(error_of(j).find("gpu.processing' = \"overlapped\" is unknown; accepted: roofline, no_overlap"),
            std::string::npos)
      << error_of(j);
  j = system_to_json(a);
  j["gpu"].erase("processing");  // optional: the older files' roofline
  EXPECT_EQ(system_from_json(j, "sys.json").gpu.processing, Processing::roofline);
  EXPECT_THROW(load_system("no-such-system"), UsageError);
  // NCCL's algorithms and step latencies travel; absent, every algorithm and none.
  EXPECT_EQ(b.collective_algorithms, CollectiveAlgorithms::nccl);
  EXPECT_EQ(b.levels[0].step_latency_us, 3.4);
  EXPECT_EQ(b.levels[1].step_latency_us, 14);
  EXPECT_EQ(b.host_cpu, HostCpu::intel);
  EXPECT_EQ(system_from_json(system_to_json(builtin_system("dgx-a100")), "x.json").host_cpu, HostCpu::amd);
  j = system_to_json(builtin_system("dgx-a100"));
  j.erase("host_cpu");  // optional: NCCL's Intel figures
  EXPECT_EQ(system_from_json(j, "sys.json").host_cpu, HostCpu::intel);
  j["host_cpu"] = "arm";
  EXPECT_NE(error_of(j).find("host_cpu' = \"arm\" is unknown; accepted: intel, amd"), std::string::npos) << error_of(j);
  j = system_to_json(a);
  j.erase("collective_algorithms");
  j["network"][1].erase("step_latency_us");
  const SystemModel older = system_from_json(j, "sys.json");
  EXPECT_EQ(older.collective_algorithms, CollectiveAlgorithms::every);
  EXPECT_EQ(older.levels[1].step_latency_us, 0);
  j["collective_algorithms"] = "mpi";
  EXPECT_NE(error_of(j).find("collective_algorithms' = \"mpi\" is unknown; accepted: every, nccl"), std::string::npos)
      << error_of(j);
  j = system_to_json(a);
  j["network"][0]["step_latency_us"] = -1;
  EXPECT_NE(error_of(j).find("network[0].step_latency_us"), std::string::npos) << error_of(j);
}

// op_overhead_us: optional (0, as every built-in system), read in microseconds, written back, and refused when it is
// not a number >= 0.
TEST(PredictSystem, OpOverheadIsOptionalAndChecked) {
  for (const std::string& name : builtin_system_names()) EXPECT_EQ(builtin_system(name).gpu.op_overhead_s, 0) << name;
  nlohmann::json j = system_to_json(builtin_system("dgx-a100"));
  j["gpu"].erase("op_overhead_us");
  EXPECT_EQ(system_from_json(j, "sys.json").gpu.op_overhead_s, 0);
  j["gpu"]["op_overhead_us"] = 12.5;
  const SystemModel s = system_from_json(j, "sys.json");
  EXPECT_DOUBLE_EQ(s.gpu.op_overhead_s, 12.5e-6);
  EXPECT_DOUBLE_EQ(system_from_json(system_to_json(s), "x.json").gpu.op_overhead_s, 12.5e-6);
  for (const nlohmann::json& bad : {nlohmann::json(-1), nlohmann::json("1us"), nlohmann::json(2e6)}) {
    j["gpu"]["op_overhead_us"] = bad;
    try {
      system_from_json(j, "sys.json");
      ADD_FAILURE() << "accepted op_overhead_us = " << bad.dump();
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("field 'gpu.op_overhead_us'"), std::string::npos) << e.what();
    }
  }
}

// The rates measured on an op's own kernel (optimizer_gbps, gelu_gbps): optional (absent on every built-in system,
// and not written back then), read and written back when given, refused when not a number > 0.
TEST(PredictSystem, MeasuredOpRatesAreOptional) {
  for (auto [field, member] : {std::pair{"optimizer_gbps", &GpuModel::optimizer_gbps},
                               std::pair{"gelu_gbps", &GpuModel::gelu_gbps}}) {
    SCOPED_TRACE(field);
    for (const std::string& name : builtin_system_names()) {
      EXPECT_EQ(builtin_system(name).gpu.*member, 0) << name;
      EXPECT_FALSE(system_to_json(builtin_system(name))["gpu"].contains(field)) << name;
    }
    nlohmann::json j = system_to_json(builtin_system("dgx-a100"));
    j["gpu"][field] = 6.5;
    const SystemModel sys = system_from_json(j, "sys.json");
    EXPECT_DOUBLE_EQ(sys.gpu.*member, 6.5);
    EXPECT_DOUBLE_EQ(system_from_json(system_to_json(sys), "x.json").gpu.*member, 6.5);
    for (const nlohmann::json& bad : {nlohmann::json(0), nlohmann::json(-2), nlohmann::json("fast")})
      expect_gpu_field_refused(j, field, bad, field);
  }
}

// The GPU's SM count: the data sheets' on the built-in GPUs, written back, optional in a file (0: not given), refused
// when not a whole number >= 1.
TEST(PredictSystem, StreamingMultiprocessorsAreOptional) {
  EXPECT_EQ(builtin_system("dgx-a100").gpu.sms, 108);
  EXPECT_EQ(builtin_system("dgx-h100").gpu.sms, 132);
  EXPECT_EQ(builtin_system("h200").gpu.sms, 132);
  nlohmann::json j = system_to_json(builtin_system("dgx-h100"));
  EXPECT_EQ(j["gpu"]["sms"], 132);
  EXPECT_EQ(system_from_json(j, "sys.json").gpu.sms, 132);
  j["gpu"].erase("sms");
  EXPECT_EQ(system_from_json(j, "sys.json").gpu.sms, 0);
  EXPECT_FALSE(system_to_json(system_from_json(j, "sys.json"))["gpu"].contains("sms"));
  for (const nlohmann::json& bad : {nlohmann::json(0), nlohmann::json(13.5), nlohmann::json("many")})
    expect_gpu_field_refused(j, "sms", bad, "sms");
}

// With optimizer_gbps the update takes its bytes at that rate instead of the HBM curve's: fp32 AdamW moves 28 bytes
// per parameter (m and v read and written, gradient read, parameter read and written), bf16 with master weights 28
// too (master, m and v read and written, gradient read, parameter written), ZeRO-1 a 1/dp shard of them.
TEST(PredictSystem, OptimizerRateTimesTheUpdate) {
  SystemModel sys = builtin_system("dgx-a100");
  sys.gpu.optimizer_gbps = 6.5;
  for (DType dtype : {DType::f32, DType::bf16})
    for (int zero : {0, 1}) {
      Layout l = small_gpt(2, 1, 1);  // dp 2
      l.model.dtype = dtype, l.zero_stage = zero;
      const double params = stage_parameter_counts(l)[0] / (zero ? 2.0 : 1.0);
      EXPECT_NEAR(predict_step(l, sys).time.optimizer, params * 28 / 6.5e9, 1e-12) << dtype_name(dtype) << zero;
    }
}

// With gelu_gbps a block's bias + GeLU takes its bytes (the (b, s, f/t) input read and output written; twice that
// in the input gradient) at that rate instead of the HBM curve's, and nothing else in the block changes.
TEST(PredictCosts, GeluRateTimesTheBlocksGeluAlone) {
  SystemModel sys = builtin_system("dgx-a100");
  for (int tp : {1, 4}) {
    const Layout l = small_gpt(tp, tp, 1);
    const double bytes = 2.0 * l.micro_batch * l.model.seq * l.model.ffn_dim() / tp * 2;  // bf16
    sys.gpu.gelu_gbps = 0;
    const PassCosts hbm = block_costs(l, sys);
    sys.gpu.gelu_gbps = 0.5;
    const PassCosts rate = block_costs(l, sys);
    const double change = bytes / 0.5e9 - memory_seconds(sys, bytes);
    EXPECT_GT(change, 0);  // 0.5 GB/s is slower than any HBM
    EXPECT_NEAR(rate.forward - hbm.forward, change, 1e-12 + 1e-9 * change) << tp;
    EXPECT_NEAR(rate.backward_input - hbm.backward_input, 2 * change, 1e-12 + 1e-9 * change) << tp;
    EXPECT_DOUBLE_EQ(rate.backward_weight, hbm.backward_weight) << tp;
    EXPECT_DOUBLE_EQ(rate.forward_tp, hbm.forward_tp) << tp;
  }
}

// The curves by k are optional and come as three: absent on the built-ins and not written back, a round trip keeps
// them, and a missing or unknown kind is refused by name.
TEST(PredictSystem, CurvesByKComeAsThreeKinds) {
  for (const std::string& name : builtin_system_names()) {
    EXPECT_TRUE(builtin_system(name).gpu.matrix_efficiency_by_k.empty()) << name;
    EXPECT_FALSE(system_to_json(builtin_system(name))["gpu"].contains("matrix_efficiency_by_k")) << name;
  }
  nlohmann::json j = system_to_json(builtin_system("dgx-a100"));
  j["gpu"]["matrix_efficiency_by_k"] = {
      {"forward", {{0, 1.0}, {48, 0.5}}}, {"input_gradient", {{0, 0.8}}}, {"weight_gradient", {{0, 0.4}, {100, 0.2}}}};
  const SystemModel sys = system_from_json(j, "sys.json");
  const GemmCurvesByK& k = sys.gpu.matrix_efficiency_by_k;
  EXPECT_DOUBLE_EQ(k.forward.at(32), 1.0);
  EXPECT_DOUBLE_EQ(k.forward.at(64), 0.5);
  EXPECT_DOUBLE_EQ(k.input_gradient.at(1e6), 0.8);
  EXPECT_DOUBLE_EQ(k.weight_gradient.at(256), 0.2);
  const GemmCurvesByK back = system_from_json(system_to_json(sys), "x.json").gpu.matrix_efficiency_by_k;
  EXPECT_EQ(back.weight_gradient.points, k.weight_gradient.points);
  EXPECT_EQ(back.forward.points, k.forward.points);
  auto refused = [&](const nlohmann::json& bad, const std::string& field) {
    expect_gpu_field_refused(j, "matrix_efficiency_by_k", bad, "matrix_efficiency_by_k." + field);
  };
  nlohmann::json two = j["gpu"]["matrix_efficiency_by_k"];
  two.erase("input_gradient");
  refused(two, "input_gradient");
  nlohmann::json extra = j["gpu"]["matrix_efficiency_by_k"];
  extra["attention"] = {{0, 1.0}};
  refused(extra, "attention");
  nlohmann::json over = j["gpu"]["matrix_efficiency_by_k"];
  over["forward"] = {{0, 1.5}};
  refused(over, "forward");
}

// On a k-keyed system a linear's three GEMMs (tokens 256, 64 -> 192 features) each take their kind's efficiency at
// their own k: the forward at k = 64, the input gradient at k = 192, the weight gradient at k = 256. Memory is made
// negligible (the roofline takes the compute). Without the curves the three take the same time: the same FLOPs and
// bytes on the GFLOP curve.
TEST(PredictCosts, LinearGemmsTakeTheirKindsEfficiencyAtTheirOwnK) {
  SystemModel sys = builtin_system("dgx-a100");  // no per-op overhead
  sys.gpu.processing = Processing::roofline, sys.gpu.hbm_gbps = 1e9, sys.gpu.matrix_tflops_32 = 1e-3;
  sys.gpu.matrix_efficiency_by_k = {Curve{{{100, 0.5}, {0, 1.0}}, {}}, Curve{{{150, 0.25}, {0, 0.8}}, {}},
                                    Curve{{{300, 0.1}, {200, 0.4}, {0, 0.9}}, {}}};
  const double flops = 2.0 * 256 * 64 * 192, peak = 1e9;
  const LinearSeconds t = linear_seconds(sys, 256, 64, 192, 4);
  EXPECT_NEAR(t.forward, flops / (peak * 1.0), 1e-12);
  EXPECT_NEAR(t.input_gradient, flops / (peak * 0.25), 1e-12);
  EXPECT_NEAR(t.weight_gradient, flops / (peak * 0.4), 1e-12);
  // A block's weight gradient is its four linears' (qkv, projection, fc, fc projection at tokens b s).
  Layout l = small_gpt(1, 1, 1);
  l.model.dtype = DType::f32, l.model.hidden = 64, l.model.heads = 4, l.model.seq = 32, l.micro_batch = 8;
  const double block_flops = 2.0 * 256 * (3 * 64 * 64 + 64 * 64 + 2 * 4 * 64 * 64);
  EXPECT_NEAR(block_costs(l, sys).backward_weight, block_flops / (peak * 0.4), 1e-12);
  l.micro_batch = 16;  // 512 tokens: past the weight gradient's last threshold
  EXPECT_NEAR(block_costs(l, sys).backward_weight, 2 * block_flops / (peak * 0.1), 1e-12);
  const SystemModel gpu = builtin_system("dgx-a100");
  const LinearSeconds g = linear_seconds(gpu, 8192, 6144, 2304, 2);
  EXPECT_NEAR(g.input_gradient, g.forward, 1e-12 * g.forward);
  EXPECT_NEAR(g.weight_gradient, g.forward, 1e-12 * g.forward);
}

// Measured linears: read back as written, refused by name when malformed or repeated; a linear of exactly a
// measured shape and element size takes the measured times, any other the curves.
TEST(PredictSystem, MeasuredLinearsReplaceTheCurvesForTheirShapeOnly) {
  nlohmann::json j = system_to_json(builtin_system("dgx-a100"));
  EXPECT_FALSE(j["gpu"].contains("linears"));
  const nlohmann::json entry = {{"tokens", 256}, {"in", 64}, {"out", 192}, {"dtype", "f32"},
                                {"forward_us", 100}, {"input_gradient_us", 50}, {"weight_gradient_us", 200}};
  j["gpu"]["linears"] = nlohmann::json::array({entry});
  const SystemModel sys = system_from_json(j, "sys.json");
  const LinearSeconds t = linear_seconds(sys, 256, 64, 192, 4);
  EXPECT_DOUBLE_EQ(t.forward, 100e-6);
  EXPECT_DOUBLE_EQ(t.input_gradient, 50e-6);
  EXPECT_DOUBLE_EQ(t.weight_gradient, 200e-6);
  const SystemModel curves = builtin_system("dgx-a100");
  for (auto [tokens, in, out, bytes] : {std::tuple{256, 64, 96, 4}, std::tuple{128, 64, 192, 4},
                                        std::tuple{256, 64, 192, 2}}) {
    const LinearSeconds other = linear_seconds(sys, tokens, in, out, bytes);
    EXPECT_DOUBLE_EQ(other.forward, linear_seconds(curves, tokens, in, out, bytes).forward) << out << bytes;
  }
  const LinearSeconds back = linear_seconds(system_from_json(system_to_json(sys), "x.json"), 256, 64, 192, 4);
  EXPECT_NEAR(back.forward, 100e-6, 1e-15);
  EXPECT_NEAR(back.input_gradient, 50e-6, 1e-15);
  EXPECT_NEAR(back.weight_gradient, 200e-6, 1e-15);
  auto refused = [&](const nlohmann::json& linears, const std::string& field) {
    expect_gpu_field_refused(j, "linears", linears, field);
  };
  nlohmann::json e = entry;
  e["dtype"] = "f16";
  refused(nlohmann::json::array({e}), "linears[0].dtype");
  e = entry;
  e["weight_gradient_us"] = 0;
  refused(nlohmann::json::array({e}), "linears[0].weight_gradient_us");
  e = entry;
  e.erase("in");
  refused(nlohmann::json::array({e}), "linears[0].in");
  refused({entry, entry}, "linears[1].tokens");
  refused(entry, "linears");
}

// layout_linears names the shapes the cost model times: a system whose measured linears are those five shapes, each
// part a known amount slower than the curves make it, moves a block's and the head's passes by exactly those
// amounts (tensor parallelism and sequence parallelism included: widths divided by t, tokens b s).
TEST(PredictCosts, LayoutLinearsAreTheShapesTheCostModelTimes) {
  const SystemModel curves = builtin_system("dgx-h100");
  Layout l = small_gpt(2, 2, 1);
  l.micro_batch = 2, l.sequence_parallel = true;
  const LayoutLinears dims = layout_linears(l);  // h 2048, f 8192, V 51200, t 2: five different shapes
  EXPECT_EQ(dims.qkv.tokens, 4096);
  EXPECT_EQ(dims.qkv.in, 2048);
  EXPECT_EQ(dims.qkv.out, 3072);
  EXPECT_EQ(dims.proj.in, 1024);
  EXPECT_EQ(dims.proj.out, 2048);
  EXPECT_EQ(dims.fc.out, 4096);
  EXPECT_EQ(dims.fc_proj.in, 4096);
  EXPECT_EQ(dims.fc_proj.out, 2048);
  EXPECT_EQ(dims.logits.tokens, 4096);
  EXPECT_EQ(dims.logits.out, 25600);
  SystemModel measured = curves;
  std::array<LinearSeconds, 5> delta{};
  for (std::size_t i = 0; i < 5; ++i) {
    const LinearDims d = dims.all()[i];
    const LinearSeconds base = linear_seconds(curves, d, 2);
    delta[i] = {1e-3 * double(i + 1), 2e-3 * double(i + 1), 3e-3 * double(i + 1)};
    measured.gpu.measured_linears.push_back({d.tokens, d.in, d.out, 2, base.forward + delta[i].forward,
                                             base.input_gradient + delta[i].input_gradient,
                                             base.weight_gradient + delta[i].weight_gradient});
  }
  const PassCosts b0 = block_costs(l, curves), b1 = block_costs(l, measured);
  double f = 0, bi = 0, w = 0;
  for (std::size_t i = 0; i < 4; ++i)
    f += delta[i].forward, bi += delta[i].input_gradient, w += delta[i].weight_gradient;
  EXPECT_NEAR(b1.forward - b0.forward, f, 1e-12);
  EXPECT_NEAR(b1.backward_input - b0.backward_input, bi, 1e-12);
  EXPECT_NEAR(b1.backward_weight - b0.backward_weight, w, 1e-12);
  const PassCosts h0 = head_costs(l, curves), h1 = head_costs(l, measured);
  EXPECT_NEAR(h1.forward - h0.forward, delta[4].forward, 1e-12);
  EXPECT_NEAR(h1.backward_input - h0.backward_input, delta[4].input_gradient, 1e-12);
  EXPECT_NEAR(h1.backward_weight - h0.backward_weight, delta[4].weight_gradient, 1e-12);
}

// Measured attention is optional: absent on the built-ins, a round trip keeps it, bad entries are refused by name;
// a layout with flash attention of exactly that shape (b, a/t heads, s, h/a) takes its times for the attention core
// (two measurements differ in a block's forward and input gradient by exactly their own difference), while plain
// attention and other shapes keep the GEMM curves.
TEST(PredictSystem, MeasuredAttentionReplacesFlashAttentionOfItsShapeOnly) {
  for (const std::string& name : builtin_system_names())
    EXPECT_TRUE(builtin_system(name).gpu.measured_attention.empty()) << name;
  Layout l = small_gpt(2, 2, 1);  // h 2048, 16 heads, s 2048, t 2: 8 heads of 128 on a GPU
  l.micro_batch = 2, l.model.flash_attention = true;
  const AttentionDims d = layout_attention(l);
  EXPECT_EQ(d.batch, 2);
  EXPECT_EQ(d.heads, 8);
  EXPECT_EQ(d.seq, 2048);
  EXPECT_EQ(d.head_dim, 128);
  nlohmann::json j = system_to_json(builtin_system("dgx-h100"));
  EXPECT_FALSE(j["gpu"].contains("attention"));
  const nlohmann::json entry = {{"batch", 2}, {"heads", 8}, {"seq", 2048}, {"head_dim", 128}, {"dtype", "bf16"},
                                {"forward_us", 1000}, {"backward_us", 3000}};
  j["gpu"]["attention"] = nlohmann::json::array({entry});
  const SystemModel one = system_from_json(system_to_json(system_from_json(j, "a.json")), "b.json");
  ASSERT_EQ(one.gpu.measured_attention.size(), 1u);
  EXPECT_NEAR(one.gpu.measured_attention[0].backward_s, 3e-3, 1e-15);
  nlohmann::json k = j;
  k["gpu"]["attention"][0]["forward_us"] = 1500, k["gpu"]["attention"][0]["backward_us"] = 5000;
  const SystemModel two = system_from_json(k, "c.json");
  const PassCosts c1 = block_costs(l, one), c2 = block_costs(l, two);
  EXPECT_NEAR(c2.forward - c1.forward, 0.5e-3, 1e-12);
  EXPECT_NEAR(c2.backward_input - c1.backward_input, 2e-3, 1e-12);
  EXPECT_DOUBLE_EQ(c2.backward_weight, c1.backward_weight);
  const SystemModel curves = builtin_system("dgx-h100");
  Layout plain = l, other = l;
  plain.model.flash_attention = false, other.micro_batch = 1;
  EXPECT_DOUBLE_EQ(block_costs(plain, one).forward, block_costs(plain, curves).forward);
  EXPECT_DOUBLE_EQ(block_costs(other, one).forward, block_costs(other, curves).forward);
  EXPECT_NE(block_costs(l, one).forward, block_costs(l, curves).forward);
  auto refused = [&](const nlohmann::json& attention, const std::string& field) {
    expect_gpu_field_refused(j, "attention", attention, field);
  };
  nlohmann::json e = entry;
  e["head_dim"] = 0;
  refused(nlohmann::json::array({e}), "attention[0].head_dim");
  e = entry;
  e["dtype"] = "fp8";
  refused(nlohmann::json::array({e}), "attention[0].dtype");
  e = entry;
  e["causal"] = true;
  refused(nlohmann::json::array({e}), "attention[0].causal");
  refused({entry, entry}, "attention[1].batch");
  refused(entry, "attention");
}

// Pinned ranks on a node with fewer compute units than ranks: a 4-stage pipeline on 2 units bound 0, 1, 0, 1 plays
// slower than with the units shared among all ranks (an idle stage's unit is not lent to the other's stages);
// where every stage runs at once (one stage of 4 data-parallel ranks) or there are units enough (2 stages), the
// binding changes nothing.
TEST(PredictStep, PinnedRanksShareOnlyTheirOwnUnit) {
  SystemModel sys = builtin_system("dgx-a100");
  sys.gpu.compute_units = 2;
  Layout l = small_gpt(4, 1, 4);
  l.model.layers = 4, l.global_batch = 4;
  const double shared = predict_step(l, sys).time.step;
  l.pinned = true;
  EXPECT_GT(predict_step(l, sys).time.step, shared * 1.01);
  for (auto [tp, pp] : {std::pair{1, 1}, std::pair{2, 2}}) {
    Layout m = small_gpt(4, tp, pp);  // dp 4, or tp 2 x pp 2
    m.model.layers = 4, m.global_batch = 8;
    const double unpinned = predict_step(m, sys).time.step;
    m.pinned = true;
    EXPECT_DOUBLE_EQ(predict_step(m, sys).time.step, unpinned) << tp << " " << pp;
  }
}

// The per-op overhead adds exactly (ops per microbatch) x microbatches x overhead to a one-GPU step: per block 10
// forward, 12 input-gradient and 4 weight-gradient ops, the embedding 2 and the head 8 (predict/costs.cpp).
TEST(PredictCosts, OpOverheadIsChargedPerOpAndMicrobatch) {
  SystemModel sys = builtin_system("dgx-a100");
  for (int microbatches : {1, 4}) {
    Layout l = small_gpt(1, 1, 1);
    l.model.layers = 3, l.global_batch = microbatches;
    const double without = predict_step(l, sys).time.step;
    sys.gpu.op_overhead_s = 7e-6;
    const Prediction with = predict_step(l, sys);
    sys.gpu.op_overhead_s = 0;
    const double ops = microbatches * (3 * (10 + 12 + 4) + 2 + 8);
    EXPECT_NEAR(with.time.step - without, ops * 7e-6, 1e-12) << microbatches;
  }
}

// The backward's tensor-parallel time by hand (22B layer, b 4, tp 8, DGX A100): without the overlap two allreduces
// of the (b, s, h) activation; with it only what each exceeds of its column-parallel linear's gradient GEMM (qkv,
// fc). Under sequence parallelism each region's all-gather stays exposed, its reduce-scatter and second all-gather
// hide behind the GEMM; a schedule that splits the weight gradient off gets no overlap.
TEST(PredictCosts, TensorParallelBackwardOverlapHidesBehindColumnGemms) {
  const SystemModel sys = builtin_system("dgx-a100");
  Layout l = tensor_parallel_gpt(48, 6144, 64, 8, 4);
  const double bytes = 4.0 * 2048 * 6144 * 2;
  const double gemm[2] = {gemm_seconds(sys, 1, 8192, 2304, 6144, 2), gemm_seconds(sys, 1, 8192, 3072, 6144, 2)};
  const double ar = collective_cost(sys, Collective::allreduce, bytes, {8, 8}).seconds;
  const double ag = collective_cost(sys, Collective::allgather, bytes, {8, 8}).seconds;
  const double rs = collective_cost(sys, Collective::reduce_scatter, bytes, {8, 8}).seconds;
  EXPECT_NEAR(block_costs(l, sys).backward_tp, 2 * ar, 1e-12);
  l.tp_backward_overlap = true;
  EXPECT_NEAR(block_costs(l, sys).backward_tp, std::max(0.0, ar - gemm[0]) + std::max(0.0, ar - gemm[1]), 1e-12);
  EXPECT_LT(block_costs(l, sys).backward_tp, ar);  // the 22B layer's GEMMs hide most of it
  l.sequence_parallel = true;
  double expected = 0;
  for (double g : gemm) expected += ag + std::max(0.0, rs - g) + std::max(0.0, ag - g);
  EXPECT_NEAR(block_costs(l, sys).backward_tp, expected, 1e-12);
  l.tp_backward_overlap = false;
  const double sp_exposed = block_costs(l, sys).backward_tp;
  EXPECT_NEAR(sp_exposed, 2 * (ag + rs + ag), 1e-12);
  l.tp_backward_overlap = true;
  l.gpus = 16, l.pp = 2, l.global_batch = 8, l.schedule = ScheduleRef::parse("zb-h1");
  EXPECT_NEAR(block_costs(l, sys).backward_tp, sp_exposed, 1e-12);
}

// Transformer Engine's userbuffers by hand (NVIDIA's GPT-3 175B layer, b 1, tp 4, sequence parallelism, DGX H100):
// each all-gather feeding a GEMM (forward qkv and fc1, backward input gradients of proj and fc2) exposes only what
// exceeds t - 1 of that GEMM's t pieces; each forward reduce-scatter after proj and fc2 runs in 4 parts, each beside
// the next part's GEMM on 132 - 24 (proj) or 132 - 20 (fc2) SMs. The column-parallel backward overlap stays the one
// above. Refused without the GPU's SM count or without sequence parallelism.
TEST(PredictCosts, UserbuffersOverlapEachCollectiveWithItsGemm) {
  const SystemModel sys = builtin_system("dgx-h100");
  Layout l = tensor_parallel_gpt(96, 12288, 96, 4, 1);
  l.sequence_parallel = true, l.tp_backward_overlap = true;
  const PassCosts plain = block_costs(l, sys);
  const double bytes = 2048.0 * 12288 * 2;
  const double ag = collective_cost(sys, Collective::allgather, bytes, {4, 8}).seconds;
  const double rs = collective_cost(sys, Collective::reduce_scatter, bytes, {4, 8}).seconds;
  const double part_rs = collective_cost(sys, Collective::reduce_scatter, bytes / 4, {4, 8}).seconds;
  EXPECT_NEAR(plain.forward_tp, 2 * (ag + rs), 1e-12);
  const LinearSeconds qkv = linear_seconds(sys, 2048, 12288, 9216, 2), proj = linear_seconds(sys, 2048, 3072, 12288, 2);
  const LinearSeconds fc = linear_seconds(sys, 2048, 12288, 12288, 2), fc2 = linear_seconds(sys, 2048, 12288, 12288, 2);
  auto ring = [&](double gemm) { return std::max(0.0, ag - 0.75 * gemm); };
  auto pipelined = [&](double gemm, int comm_sms) {
    const double part = gemm / 4 * 132 / (132 - comm_sms);
    return part + 3 * std::max(part, part_rs) + part_rs - gemm;
  };
  l.tp_userbuffers = true;
  const PassCosts ub = block_costs(l, sys);
  EXPECT_NEAR(ub.forward_tp, ring(qkv.forward) + pipelined(proj.forward, 24) + ring(fc.forward) +
                                 pipelined(fc2.forward, 20), 1e-12);
  EXPECT_NEAR(ub.backward_tp - plain.backward_tp, ring(proj.input_gradient) + ring(fc2.input_gradient) - 2 * ag, 1e-12);
  // These GEMMs hide every all-gather; the reduce-scatters' parts cost about what the SMs they take do.
  EXPECT_EQ(ring(qkv.forward) + ring(fc.forward) + ring(proj.input_gradient) + ring(fc2.input_gradient), 0.0);
  EXPECT_LT(ub.forward_tp + ub.backward_tp, 0.5 * (plain.forward_tp + plain.backward_tp));
  EXPECT_EQ(ub.forward, plain.forward);
  // A measured piece replaces its share of the whole: the qkv GEMM's quarter at 1 ms (the four pieces then take
  // 4 ms where the whole takes about 0.7), the all-gather's three sends hidden behind three of them.
  SystemModel measured = sys;
  measured.gpu.measured_linears.push_back({512, 12288, 9216, 2, 1e-3, 1e-3, 1e-3});
  EXPECT_NEAR(block_costs(l, measured).forward_tp - ub.forward_tp, 4e-3 - qkv.forward, 1e-12);
  // The pieces to measure: qkv, fc, proj and fc2 over a tp-th of the 2048 tokens, proj and fc2 over a quarter.
  std::vector<std::array<double, 3>> pieces;
  for (const LinearDims& d : userbuffer_pieces(l)) pieces.push_back({d.tokens, d.in, d.out});
  EXPECT_EQ(pieces, (std::vector<std::array<double, 3>>{{512, 12288, 9216}, {512, 12288, 12288}, {512, 3072, 12288},
                                                        {512, 12288, 12288}, {512, 3072, 12288}, {512, 12288, 12288}}));
  Layout without = l;
  without.tp_userbuffers = false;
  EXPECT_TRUE(userbuffer_pieces(without).empty());
  // A narrow layer (h 1024, b 1): the GEMMs are too short to hide the all-gathers (t - 1 pieces hide some), and each
  // reduce-scatter part pays a collective's fixed cost, so there the overlap loses to the unsplit collectives.
  Layout narrow = l;
  narrow.model.hidden = 1024, narrow.model.heads = 8;
  const double small_ag = collective_cost(sys, Collective::allgather, 2048.0 * 1024 * 2, {4, 8}).seconds;
  const double small_qkv = linear_seconds(sys, 2048, 1024, 768, 2).forward;
  const double small_fc = linear_seconds(sys, 2048, 1024, 1024, 2).forward;
  ASSERT_GT(small_ag, small_fc);
  narrow.tp_userbuffers = false;
  const double narrow_plain = block_costs(narrow, sys).forward_tp;
  narrow.tp_userbuffers = true;
  const double small_part_rs = collective_cost(sys, Collective::reduce_scatter, 2048.0 * 1024 * 2 / 4, {4, 8}).seconds;
  const double small_proj = linear_seconds(sys, 2048, 256, 1024, 2).forward;
  const double small_fc2 = linear_seconds(sys, 2048, 1024, 1024, 2).forward;
  auto small_pipelined = [&](double gemm, int comm_sms) {
    const double part = gemm / 4 * 132 / (132 - comm_sms);
    return part + 3 * std::max(part, small_part_rs) + small_part_rs - gemm;
  };
  EXPECT_NEAR(block_costs(narrow, sys).forward_tp,
              (small_ag - 0.75 * small_qkv) + small_pipelined(small_proj, 24) + (small_ag - 0.75 * small_fc) +
                  small_pipelined(small_fc2, 20), 1e-12);
  EXPECT_GT(block_costs(narrow, sys).forward_tp, narrow_plain);
  SystemModel unknown = sys;
  unknown.gpu.sms = 0;
  EXPECT_THAT([&] { block_costs(l, unknown); },
              ThrowsMessage<UsageError>(
                  HasSubstr("--tp-userbuffers needs the GPU's streaming multiprocessors (gpu.sms")));
  l.sequence_parallel = false;
  EXPECT_THAT([&] { validate_layout(l); }, ThrowsMessage<UsageError>(HasSubstr("--tp-userbuffers needs sequence "
                                                                             "parallelism (--sp)")));
}

// The data-parallel reduction at the end (Megatron's own data parallelism before 2023, DeepSpeed's pipeline): every
// 25 MiB bucket of the gradients after the last backward, so all of the reduction is exposed, where bucket by bucket
// during the backward most of it hides.
TEST(PredictStep, DataParallelReductionAtTheEndIsExposedWhole) {
  const SystemModel sys = builtin_system("dgx-a100");
  Layout l = small_gpt(2, 1, 1);  // dp 2
  const double overlapped = predict_step(l, sys).time.dp_comm;
  l.dp_reduce_at_end = true;
  const double bytes = stage_parameter_counts(l)[0] * 2;
  const int buckets = int(std::ceil(bytes / (25.0 * 1048576)));
  const double whole =
      buckets * collective_cost(sys, Collective::allreduce, bytes / buckets, place_group(sys, 2, 1)).seconds;
  EXPECT_NEAR(predict_step(l, sys).time.dp_comm, whole, 1e-12);
  EXPECT_LT(overlapped, whole);
}

// The gradients' element type and collective as the run's software reduces them: at the end, every bucket exposed;
// ZeRO-1's all-gather of the updated parameters in the model's 16-bit type whatever the gradients were.
TEST(PredictStep, DataParallelReductionTakesItsSoftwaresTypeAndCollective) {
  const SystemModel sys = builtin_system("dgx-a100");
  Layout l = small_gpt(16, 1, 1);  // dp 16 over two nodes
  l.dp_reduce_at_end = true, l.zero_stage = 1;
  const double params = stage_parameter_counts(l)[0];
  const GroupPlacement g = place_group(sys, 16, 1);
  auto expected = [&](double element_bytes, Collective op) {
    const double bytes = params * element_bytes;
    const int buckets = int(std::ceil(bytes / (25.0 * 1048576)));
    return buckets * collective_cost(sys, op, bytes / buckets, g).seconds +
           collective_cost(sys, Collective::allgather, params * 2, g).seconds;
  };
  // The gradients the GPU holds: Megatron's fp32 buffer instead of the 16-bit ones; DeepSpeed's bf16 optimizer both.
  struct Case {
    DpReduce mode;
    double seconds, gradient_bytes_per_param;
  };
  const Case cases[] = {{DpReduce::model, expected(2, Collective::reduce_scatter), 2},
                        {DpReduce::fp32, expected(4, Collective::reduce_scatter), 4},
                        {DpReduce::allreduce, expected(2, Collective::allreduce), 2},
                        {DpReduce::fp32_allreduce, expected(4, Collective::allreduce), 6}};
  for (const Case& c : cases) {
    l.dp_reduce = c.mode;
    const Prediction p = predict_step(l, sys);
    EXPECT_NEAR(p.time.dp_comm, c.seconds, 1e-12) << dp_reduce_name(c.mode);
    EXPECT_NEAR(double(p.memory[int(MemCategory::gradients)]), params * c.gradient_bytes_per_param, 1.0)
        << dp_reduce_name(c.mode);
    EXPECT_EQ(parse_dp_reduce(dp_reduce_name(c.mode)), c.mode);
  }
  EXPECT_LT(cases[0].seconds, cases[1].seconds);
  EXPECT_LT(cases[1].seconds, cases[3].seconds);
  // DeepSpeed's pipeline engine allreduces with ZeRO 0 or 1 only.
  l.zero_stage = 2;
  EXPECT_THAT([&] { validate_layout(l); },
              ThrowsMessage<UsageError>(HasSubstr("--dp-reduce fp32-allreduce (DeepSpeed's pipeline engine) runs with "
                                                  "--zero 0 or 1, not --zero 2")));
  EXPECT_THAT([] { parse_dp_reduce("bf16"); },
              ThrowsMessage<UsageError>(HasSubstr("'bf16' is unknown; accepted: model, fp32, allreduce, "
                                                  "fp32-allreduce")));
  // ZeRO-3's per-block reduce-scatters move fp32 too: with its scatters exposed (dp 64 over 8 nodes), slower.
  Layout z = small_gpt(64, 1, 1);
  z.zero_stage = 3;
  const double model_step = predict_step(z, sys).time.step;
  z.dp_reduce = DpReduce::fp32;
  const Prediction fp32_zero3 = predict_step(z, sys);
  EXPECT_GT(fp32_zero3.time.step, model_step);
  EXPECT_NEAR(double(fp32_zero3.memory[int(MemCategory::gradients)]), stage_parameter_counts(z)[0] * 4 / 64, 1.0);
}

// Tied embeddings: without a pipeline the head has no weight of its own (V/t x h fewer parameters); with one, the
// first and last stages allreduce the shared weight's gradient (V/t x h in the gradients' type, between two ranks
// (pp - 1) x tp x dp apart) after the backward: the whole step grows by it, as the critical stage is the first or the
// last (they hold the embedding and the head, the most parameters to reduce and update).
TEST(PredictStep, TiedEmbeddingsShareOneWeightAndAllreduceItsGradientAcrossThePipeline) {
  const SystemModel sys = builtin_system("dgx-a100");
  Layout one = small_gpt(8, 2, 1);
  const double untied_params = stage_parameter_counts(one)[0];
  one.tied_embeddings = true;
  EXPECT_NEAR(stage_parameter_counts(one)[0], untied_params - 51200.0 / 2 * 2048, 0.5);
  EXPECT_DOUBLE_EQ(predict_step(one, sys).time.pp_comm, 0);
  struct Case {
    int gpus, tp, pp;
    DpReduce reduce;
    double element_bytes;
    GroupPlacement pair;
  };
  // pp 4 x tp 2 on 8 GPUs: one node; pp 4 x tp 8 on 32: first and last stage on different nodes; fp32 gradients.
  for (const Case& c : {Case{8, 2, 4, DpReduce::model, 2, {2, 2}}, Case{32, 8, 4, DpReduce::model, 2, {2, 1}},
                        Case{32, 8, 4, DpReduce::fp32, 4, {2, 1}}}) {
    Layout l = small_gpt(c.gpus, c.tp, c.pp);
    l.global_batch = 8 * l.dp, l.dp_reduce = c.reduce;
    const Prediction untied = predict_step(l, sys);
    l.tied_embeddings = true;
    const Prediction tied = predict_step(l, sys);
    const double allreduce =
        collective_cost(sys, Collective::allreduce, 51200.0 / c.tp * 2048 * c.element_bytes, c.pair).seconds;
    EXPECT_NEAR(tied.time.pp_comm - untied.time.pp_comm, allreduce, 1e-12) << c.tp << " " << c.pp;
    EXPECT_NEAR(tied.time.step - untied.time.step, allreduce, 1e-12) << c.tp << " " << c.pp;
    EXPECT_GT(allreduce, 0);
  }
}

// ZeRO-1's all-gather of the updated parameters, overlapped with the next forward: block j's share (of n) arrives
// at (j + 1) g and is needed when the first forward (F long, from the step's start) reaches it, at F j / n; the
// largest lateness shows, at least the first block's gather g. In one node the gathers outrun the forward (only g
// shows); over 8 nodes, with a forward 4x shorter (sequence 512), they lag it. Without the overlap the whole
// all-gather shows.
TEST(PredictStep, OverlappedParameterGatherShowsOnlyItsLateness) {
  const SystemModel sys = builtin_system("dgx-a100");
  for (int gpus : {8, 64}) {
    Layout l = small_gpt(gpus, 1, 1);
    l.zero_stage = 1;
    if (gpus == 64) l.model.seq = 512;
    const double psi = stage_parameter_counts(l)[0], n = l.model.layers;
    const GroupPlacement group = place_group(sys, l.dp, 1);
    const double whole = collective_cost(sys, Collective::allgather, psi * 2, group).seconds;
    const double g = collective_cost(sys, Collective::allgather, psi * 2 / n, group).seconds;
    const double forward = all_stage_costs(l, sys)[0].f();
    double late = g;
    for (int j = 0; j < n; ++j) late = std::max(late, (j + 1) * g - forward * j / n);
    const double plain = predict_step(l, sys).time.dp_comm;
    l.param_gather_overlap = true;
    const double overlapped = predict_step(l, sys).time.dp_comm;
    EXPECT_NEAR(plain - overlapped, whole - late, 1e-12) << gpus;
    if (gpus == 8) EXPECT_DOUBLE_EQ(late, g);
    else EXPECT_GT(late, 2 * g);
    l.zero_stage = 3;  // gathers per block anyway: the flag changes nothing
    const double zero3 = predict_step(l, sys).time.step;
    l.param_gather_overlap = false;
    EXPECT_DOUBLE_EQ(predict_step(l, sys).time.step, zero3);
  }
}

// The loss's bytes per logit, forward and again backward: 16 with fp32 logits in separate passes, 2 x 2 with one
// fused kernel over the bf16 logits (two reads forward; a read and the gradient's write backward).
TEST(PredictCosts, FusedCrossEntropyMovesTheSixteenBitLogits) {
  const SystemModel sys = builtin_system("dgx-a100");
  Layout l = small_gpt(8, 2, 1);
  const double logits = 2048.0 * 51200 / 2;
  const PassCosts separate = head_costs(l, sys);
  l.fused_cross_entropy = true;
  const PassCosts fused = head_costs(l, sys);
  const double saved = memory_seconds(sys, logits * 16) - memory_seconds(sys, logits * 4);
  EXPECT_NEAR(separate.forward - fused.forward, saved, 1e-15);
  EXPECT_NEAR(separate.backward_input - fused.backward_input, saved, 1e-15);
  EXPECT_DOUBLE_EQ(separate.backward_weight, fused.backward_weight);
  EXPECT_GT(saved, 0);
}

// Each microbatch's weight gradients joining the step's, per parameter tensor: nothing inside the GEMM (fused); PyTorch
// adding each later 16-bit gradient into .grad (read 2 + 2, write 2 bytes per element, one kernel; nothing to add
// to on the first of the m microbatches); DeepSpeed's bf16 optimizer casting each to fp32 (read 2, write 4) and
// adding it to the fp32 copy (read 4 + 4, write 4), two kernels. Only the weight-gradient pass grows.
TEST(PredictCosts, GradientAccumulationAddsItsPassPerParameterTensor) {
  SystemModel sys = builtin_system("dgx-a100");
  sys.gpu.op_overhead_s = 3e-6;
  Layout l = small_gpt(8, 2, 1);  // h 2048, f 8192, t 2; 8 microbatches per step
  const double h = 2048, f = 8192, t = 2, V = 51200;
  const std::vector<double> block = {h,         h, 3 * h / t * h, 3 * h / t, h * h / t, h,
                                     h,         h, f / t * h,     f / t,     h * f / t, h};
  auto autograd = [&](const std::vector<double>& tensors) {
    double s = 0;
    for (double n : tensors) s += memory_seconds(sys, 6 * n) + 3e-6;
    return s * 7 / 8;
  };
  auto fp32_add = [&](const std::vector<double>& tensors) {
    double s = 0;
    for (double n : tensors) s += memory_seconds(sys, 6 * n) + memory_seconds(sys, 12 * n) + 6e-6;
    return s;
  };
  const PassCosts fused_block = block_costs(l, sys), fused_head = head_costs(l, sys);
  const PassCosts fused_embedding = embedding_costs(l, sys);
  l.grad_accumulation = GradAccumulation::autograd;
  EXPECT_NEAR(block_costs(l, sys).backward_weight - fused_block.backward_weight, autograd(block), 1e-12);
  EXPECT_NEAR(embedding_costs(l, sys).backward_weight - fused_embedding.backward_weight,
              autograd({V / t * h, 2048 * h}), 1e-12);
  l.grad_accumulation = GradAccumulation::fp32_add;
  const PassCosts added = block_costs(l, sys);
  EXPECT_NEAR(added.backward_weight - fused_block.backward_weight, fp32_add(block), 1e-12);
  EXPECT_DOUBLE_EQ(added.forward, fused_block.forward);
  EXPECT_DOUBLE_EQ(added.backward_input, fused_block.backward_input);
  EXPECT_NEAR(head_costs(l, sys).backward_weight - fused_head.backward_weight, fp32_add({h, h, V / t * h}), 1e-12);
  // Tied without a pipeline the head's weight is the embedding's: its layernorm alone; with one, the last stage's copy.
  l.tied_embeddings = true;
  EXPECT_NEAR(head_costs(l, sys).backward_weight - fused_head.backward_weight, fp32_add({h, h}), 1e-12);
  Layout piped = small_gpt(8, 2, 2);
  piped.tied_embeddings = true;
  const double piped_fused = head_costs(piped, sys).backward_weight;
  piped.grad_accumulation = GradAccumulation::fp32_add;
  EXPECT_NEAR(head_costs(piped, sys).backward_weight - piped_fused, fp32_add({h, h, V / t * h}), 1e-12);
  // One microbatch per step: PyTorch has nothing to accumulate.
  l.grad_accumulation = GradAccumulation::autograd, l.global_batch = l.dp;
  Layout single = l;
  single.grad_accumulation = GradAccumulation::fused;
  EXPECT_DOUBLE_EQ(block_costs(l, sys).backward_weight, block_costs(single, sys).backward_weight);
  EXPECT_GT(autograd(block), 0);
}

// The step refuses a gradient accumulation DeepSpeed's pipeline engine does not run with the ZeRO stage, and an
// unknown name, naming the value and the accepted ones.
TEST(PredictStep, GradientAccumulationNamesAndStages) {
  for (GradAccumulation a : {GradAccumulation::fused, GradAccumulation::autograd, GradAccumulation::fp32_add})
    EXPECT_EQ(parse_grad_accumulation(grad_accumulation_name(a)), a);
  EXPECT_THAT([] { parse_grad_accumulation("bf16"); },
              ThrowsMessage<UsageError>(HasSubstr("--grad-accumulation 'bf16' is unknown; accepted: fused, autograd, "
                                                  "fp32-add")));
  Layout l = small_gpt(8, 2, 1);
  l.zero_stage = 2, l.grad_accumulation = GradAccumulation::autograd;
  EXPECT_THAT([&] { validate_layout(l); },
              ThrowsMessage<UsageError>(HasSubstr("--grad-accumulation autograd (DeepSpeed's pipeline engine) runs "
                                                  "with --zero 0 or 1, not --zero 2")));
  l.zero_stage = 1;
  EXPECT_NO_THROW(validate_layout(l));
}

// Full recomputation repeats each block's forward with its tensor-parallel collectives (Megatron checkpoints the
// transformer layers' inputs; DeepSpeed's PipelineModule only ParallelTransformerLayerPipe; MosaicML the MPT blocks),
// never the embedding or the head: with a large vocabulary the head's logits GEMM is no small part of a stage.
TEST(PredictCosts, FullRecomputationRepeatsTheBlocksNotTheHead) {
  const SystemModel sys = builtin_system("dgx-a100");
  Layout l = small_gpt(8, 2, 4);
  l.global_batch = 8, l.model.vocab = 256000;
  const PassCosts block = block_costs(l, sys), head = head_costs(l, sys), embedding = embedding_costs(l, sys);
  EXPECT_DOUBLE_EQ(block.recompute, 0);
  l.recompute = Recompute::full;
  const PassCosts full_block = block_costs(l, sys), full_head = head_costs(l, sys);
  EXPECT_DOUBLE_EQ(full_block.recompute, block.forward);
  EXPECT_DOUBLE_EQ(full_block.recompute_tp, block.forward_tp);
  EXPECT_GT(full_block.recompute_tp, 0);
  EXPECT_DOUBLE_EQ(full_head.recompute, 0);
  EXPECT_DOUBLE_EQ(full_head.recompute_tp, 0);
  EXPECT_DOUBLE_EQ(full_head.forward, head.forward);
  EXPECT_DOUBLE_EQ(embedding_costs(l, sys).recompute, embedding.recompute);
  EXPECT_DOUBLE_EQ(embedding.recompute, 0);
  EXPECT_GT(head.forward, block.forward / 4);  // the head would have mattered
}

// A GEMM's time by hand: 2 m n k FLOPs at peak x the matrix efficiency of its GFLOP, (m k + k n + m n) p bytes at the
// HBM bandwidth x the efficiency of its bytes; summed under no_overlap, the slower under roofline.
TEST(PredictCosts, GemmCombinesComputeAndMemoryByTheProcessingMode) {
  SystemModel sys = builtin_system("dgx-a100");
  const double m = 2048, n = 2304, k = 6144;  // 58 GFLOP: efficiency 0.74; 60.8 MB: HBM efficiency 0.69
  const double compute = 2 * m * n * k / (312e12 * 0.74), memory = (m * k + k * n + m * n) * 2 / (2039e9 * 0.69);
  EXPECT_NEAR(gemm_seconds(sys, 1, m, n, k, 2), compute + memory, 1e-12);
  sys.gpu.processing = Processing::roofline;
  EXPECT_NEAR(gemm_seconds(sys, 1, m, n, k, 2), std::max(compute, memory), 1e-12);
  EXPECT_NEAR(gemm_seconds(sys, 32, 2048, 2048, 96, 2), 32 * (2.0 * 2048 * 96 + 2048.0 * 2048) * 2 / (2039e9 * 0.84),
              1e-12);  // the attention scores' batched GEMM (294 MB): memory-bound
}

// ZeRO-3's two streams by hand. Forward, gathers faster than compute: only the first gather shows. Gathers slower
// (G 2 > C 1, 3 blocks): the gathers run back to back and the last block computes after the third, 3 G + C = 7.
// Backward (B 2, G S 0.5, 3 blocks): gather 0 ends 0.5; blocks run 0.5-2.5, 2.5-4.5, 4.5-6.5, each next gather and
// the previous scatter fit inside; the last scatter ends 7.0: the first gather and the last scatter show, 1.0.
TEST(PredictZero3, GathersPrefetchOneBlockAheadAndScattersFollowTheBackward) {
  Zero3Pass p;
  p.blocks = 4, p.forward = 1, p.backward = 2, p.gather = 0.5, p.scatter = 0;
  EXPECT_NEAR(zero3_exposed(p).forward, 0.5, 1e-12);
  p.blocks = 3, p.gather = 2;
  EXPECT_NEAR(zero3_exposed(p).forward, 7.0 - 3, 1e-12);
  p.gather = 0.5, p.scatter = 0.5;
  EXPECT_NEAR(zero3_exposed(p).backward, 1.0, 1e-12);
  p.blocks = 1, p.gather = 0, p.scatter = 0;
  EXPECT_NEAR(zero3_exposed(p).forward + zero3_exposed(p).backward, 0.0, 1e-12);
  // FSDP's SHARD_GRAD_OP keeps the forward's parameters: the backward (3 blocks of 2) gathers nothing, and only the
  // last block's scatter shows, 0.5.
  p.blocks = 3, p.backward = 2, p.gather = 0.5, p.scatter = 0.5, p.regather_backward = false;
  EXPECT_NEAR(zero3_exposed(p).backward, 0.5, 1e-12);
}

// ZeRO-2 as FSDP runs it (per block, no bucketed reduction, no all-gather after the optimizer) beside DeepSpeed's
// and beside ZeRO-3 over 64 DGX H100 nodes: ZeRO-3's communication with the backward's gathers left out, and far less
// than DeepSpeed's, whose updated 3B parameters are all-gathered after the optimizer over 512 ranks.
TEST(PredictZero3, FsdpShardGradOpIsZero3WithoutTheBackwardGathers) {
  const SystemModel sys = builtin_system("dgx-h100");
  Layout l = small_gpt(512, 1, 1);
  l.model.layers = 32, l.model.hidden = 2560, l.model.heads = 20, l.micro_batch = 8, l.global_batch = 4096;
  l.zero_stage = 3;
  const double zero3 = predict_step(l, sys).time.dp_comm;
  l.zero_stage = 2;
  const double deepspeed = predict_step(l, sys).time.dp_comm;
  l.zero2_fsdp = true;
  const Prediction fsdp = predict_step(l, sys);
  EXPECT_GT(fsdp.time.dp_comm, 0);
  EXPECT_LT(fsdp.time.dp_comm, zero3);
  EXPECT_LT(fsdp.time.dp_comm, deepspeed / 4);
  EXPECT_EQ(fsdp.peak_bytes, [&] { Layout d = l; d.zero2_fsdp = false; return predict_step(d, sys).peak_bytes; }());
  l.zero_stage = 3;
  EXPECT_THROW(validate_layout(l), UsageError);
}

// Sanitizer builds run several times slower: there the time limits are not checked (the results still are), and
// the pipeline is smaller (under ASan the full-size one alone took half a minute of CI).
#if defined(PB_ASAN) || defined(PB_TSAN)
constexpr double kSlowdown = 0;
#else
constexpr double kSlowdown = 1;
#endif

// Speed: 4096 GPUs, 1F1B over 64 stages with 512 microbatches, under 2 s; a search over thousands of layouts
// under a minute.
TEST(PredictSpeed, LargePipelineAndSearch) {
  const SystemModel sys = builtin_system("dgx-a100");
  Layout l = small_gpt(4096, 8, 64);
  l.model.layers = 128, l.model.hidden = 12288, l.model.heads = 96;
  l.global_batch = kSlowdown > 0 ? 8 * 512 : 8 * 64;  // dp 8 x 512 microbatches (64 under the sanitizers)
  auto t0 = std::chrono::steady_clock::now();
  const Prediction p = predict_step(l, sys);
  const double one = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("4096 GPUs (dp 8 tp 8 pp 64), %d microbatches, 1f1b: step %.2f s predicted in %.3f s\n",
              l.global_batch / 8, p.time.step, one);
  if (kSlowdown > 0) {
    EXPECT_LT(one, 2.0);
  }
  if (kSlowdown == 0) return;  // the search's speed means nothing under the sanitizers, and takes minutes there
  Layout base = small_gpt(512, 1, 1);
  base.model.layers = 96, base.model.hidden = 12288, base.model.heads = 96;
  base.global_batch = 1536;
  t0 = std::chrono::steady_clock::now();
  const SearchResult r = search_layouts(base, sys);
  const double all = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("search, %d GPUs: %d layouts, %zu fit, %.2f s\n", base.gpus, r.enumerated, r.fitting.size(), all);
  EXPECT_GE(r.enumerated, 1000);
  EXPECT_LT(all, 60.0);
  ASSERT_FALSE(r.fitting.empty());
  for (std::size_t i = 1; i < r.fitting.size(); ++i)
    EXPECT_LE(r.fitting[i - 1].prediction.time.step, r.fitting[i].prediction.time.step);
}

// Calibration: rows generated from a known alpha and beta (ring allreduce counts) give them back with zero error;
// a noisy row shows in the fit error; a CSV without the columns is refused naming the file.
TEST(PredictCalibrate, FitRecoversAlphaAndBetaAndReportsTheError) {
  const double alpha = 7e-6, beta = 1.0 / 3e9;
  std::vector<CollectiveSample> rows;
  for (int n : {2, 4})
    for (double bytes : {1e3, 1e5, 1e7, 6e7})
      rows.push_back({"allreduce", "ring", n, bytes, 2.0 * (n - 1) * alpha + 2.0 * (n - 1) / n * bytes * beta});
  auto fits = fit_links(rows);
  ASSERT_EQ(fits.size(), 2u);
  for (const LinkFit& f : fits) {
    EXPECT_NEAR(f.alpha, alpha, 1e-12) << f.ranks;
    EXPECT_NEAR(f.gbps(), 3.0, 1e-6) << f.ranks;
    EXPECT_LT(f.max_rel_error, 1e-9);
  }
  rows[0].seconds *= 1.5;  // one slow measurement at 2 ranks
  fits = fit_links(rows);
  EXPECT_GT(fits[0].max_rel_error, 0.1);
  const std::string path = pbtest::scratch_file("not_collective.csv");
  std::ofstream(path) << "stage,op\n0,F\n";
  EXPECT_THROW(read_collective_csv(path), UsageError);
  EXPECT_THROW(fit_links({{"allreduce", "ring", 2, 8, 1e-6}}), UsageError);  // one size: nothing to fit
}

// The steps and volume per collective come from its wire family: at 4 ranks a tree (broadcast) takes 2 steps of
// the whole buffer, a ring (gather) 3 steps of 3/4 of it, one message (sendrecv) 1 step of all of it.
TEST(PredictCalibrate, EachWireFamilyFitsItsOwnSteps) {
  const double alpha = 5e-6, beta = 1.0 / 2e9;
  struct Family {
    const char* collective;
    double steps, volume;
  } families[] = {{"broadcast", 2, 1}, {"gather", 3, 0.75}, {"sendrecv", 1, 1}};
  for (const Family& f : families) {
    std::vector<CollectiveSample> rows;
    for (double bytes : {1e3, 1e6, 4e7})
      rows.push_back({f.collective, "naive", 4, bytes, f.steps * alpha + f.volume * bytes * beta});
    const auto fits = fit_links(rows);
    ASSERT_EQ(fits.size(), 1u);
    EXPECT_NEAR(fits[0].alpha, alpha, 1e-12) << f.collective;
    EXPECT_NEAR(fits[0].gbps(), 2.0, 1e-6) << f.collective;
  }
  const std::string path = pbtest::scratch_file("bad_collective.csv");
  std::ofstream(path) << "collective,impl,ranks,bytes,time_us\nallreduce,ring,2,8,1\nall_reduce,ring,2,16,1\n";
  try {
    read_collective_csv(path);
    FAIL() << "accepted all_reduce";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path + ":3: unknown collective 'all_reduce'; accepted: broadcast, reduce"), std::string::npos)
        << what;
  }
}

// Sends of one stage queue on its communication stream: GPipe over 2 stages with forwards far shorter than a
// transfer, so stage 1 receives microbatch k only after k + 1 transfers.
TEST(PredictPipeline, SendsQueueOnTheCommunicationStream) {
  const int m = 6;
  const PipeSchedule s = make_schedule("gpipe", 2, m);
  PipeCosts c;
  c.forward = 1e-3, c.backward = 2e-3, c.transfer = 1;
  const PipeSimulation sim = simulate_schedule(s, c);
  double last_forward_start = 0;
  for (const TimedAction& t : sim.timeline[1])
    if (t.action.op == PipeOp::forward && t.action.microbatch == m - 1) last_forward_start = t.start;
  EXPECT_NEAR(last_forward_start, m * 1.0 + 1e-3, 1e-9);  // not 1 + m x 1e-3, as with parallel sends
}

// A blocking send holds its stage: GPipe's first stage computes forward, sends (transfer T), computes the next, so
// its m forwards end at m (F + T) - T plus the last send, not at m F; the second stage's last forward starts when
// that send arrives. With F = 1, T = 0.5, m = 4: the first stage's sends end at 1.5, 3, 4.5, 6.
TEST(PredictPipeline, BlockingSendsHoldTheSendingStage) {
  const int m = 4;
  const PipeSchedule s = make_schedule("gpipe", 2, m);
  PipeCosts c;
  c.forward = 1, c.backward = 2, c.transfer = 0.5, c.blocking_sends = true;
  const PipeSimulation sim = simulate_schedule(s, c);
  double last_forward_start = -1, sends_end = -1;
  for (const TimedAction& t : sim.timeline[1])
    if (t.action.op == PipeOp::forward && t.action.microbatch == m - 1) last_forward_start = t.start;
  for (const TimedAction& t : sim.timeline[0])
    if (t.action.op == PipeOp::send_activation) sends_end = std::max(sends_end, t.end);
  EXPECT_NEAR(sends_end, 6.0, 1e-12);
  EXPECT_NEAR(last_forward_start, 6.0, 1e-12);
  c.blocking_sends = false;  // the sends leave on the stream: the forwards end at m F, the last arrives at 4.5
  const PipeSimulation overlapped = simulate_schedule(s, c);  // kept: a loop over a temporary's member dangles
  for (const TimedAction& t : overlapped.timeline[1])
    if (t.action.op == PipeOp::forward && t.action.microbatch == m - 1) last_forward_start = t.start;
  EXPECT_NEAR(last_forward_start, 4.5, 1e-12);
}

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = pbtest::scratch_file(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

// A bench_kernels CSV fitted by hand: bf16 matmuls of 2 GFLOP per call at 1.0, 1.5 and 2.0 ms on a 2 TFLOP/s
// peak are 1.0, 0.667 and 0.5 efficient (median 0.667, decade [1, 10)); one of 0.02 GFLOP at 0.1 ms is 0.1 (the
// smallest decade, threshold 0). An elementwise op of 1e6 bytes at 1 ms on a 2 GB/s HBM is 0.5. A failed row
// and f32 rows are left out.
TEST(PredictCalibrate, KernelCsvFitsMatrixAndHbmCurves) {
  const std::string header =
      "name,iterations,real_time,cpu_time,time_unit,bytes_per_second,items_per_second,label,error_occurred,"
      "error_message,\"FLOP/s\",\"batch\",\"bytes/s\"\n";
  const std::string path = write_file("kernels.csv", header +
      "\"matmul_forward_qkv/cuda/bf16/a/manual_time\",10,1000,1,us,,,,,,2e12,1,1e9\n"
      "\"matmul_forward_fc/cuda/bf16/a/manual_time\",10,1.5,1,ms,,,,,,1.33333333333e12,1,1e9\n"
      "\"matmul_backward_fc/cuda/bf16/a/manual_time\",10,2000000,1,ns,,,,,,1e12,1,1e9\n"
      "\"matmul_forward_fcproj/cuda/bf16/a/manual_time\",10,100,1,us,,,,,,2e11,1,1e9\n"
      "\"gelu_forward/cuda/bf16/a/manual_time\",10,1,1,ms,,,,,,1e9,1,1e9\n"
      "\"matmul_forward_qkv/cuda/f32/a/manual_time\",10,1,1,ms,,,,,,1e9,1,1e9\n"
      "\"layernorm_forward/cuda/bf16/a/manual_time\",10,1,1,ms,,,,true,out of memory,,,\n");
  ASSERT_TRUE(is_kernels_csv(path));
  const std::vector<KernelSample> rows = read_kernels_csv(path);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_TRUE(rows[0].matmul());
  EXPECT_FALSE(rows[4].matmul());  // matrix ops are the op table's (kernels/op_list.h), not names with "matmul"
  KernelSample named_matmul;
  named_matmul.op = "matmul_forward_tiny";
  EXPECT_FALSE(named_matmul.matmul());
  EXPECT_EQ(rows[0].dtype, "bf16");
  EXPECT_NEAR(rows[1].seconds, 1.5e-3, 1e-15);
  EXPECT_NEAR(rows[2].flops, 2e9, 1e-3);
  SystemModel sys = builtin_system("dgx-a100");
  sys.gpu.matrix_tflops_16 = 2, sys.gpu.hbm_gbps = 2;
  const KernelFit fit = fit_kernel_curves(rows, sys, "bf16");
  ASSERT_EQ(fit.matrix.curve.points.size(), 2u);
  EXPECT_EQ(fit.matrix.curve.points[0].first, 1.0);
  EXPECT_NEAR(fit.matrix.curve.points[0].second, 2.0 / 3, 1e-9);
  EXPECT_EQ(fit.matrix.curve.points[1].first, 0.0);
  EXPECT_NEAR(fit.matrix.curve.points[1].second, 0.1, 1e-9);
  EXPECT_NEAR(fit.matrix.max_rel_error, 1.0 / 3, 1e-9);  // the rows at 1.0 and 0.5 against the curve's 0.667
  EXPECT_EQ(fit.matrix.samples, 4);
  ASSERT_EQ(fit.hbm.curve.points.size(), 1u);
  EXPECT_NEAR(fit.hbm.curve.points[0].second, 0.5, 1e-9);
  EXPECT_THROW(fit_kernel_curves(rows, sys, "f16"), UsageError);
  // With cuBLAS rows in the CSV, they alone make the matrix curve: a naive version's 0.01 is left out.
  const std::string vendor = write_file("kernels_vendor.csv", header +
      "\"matmul_forward_fc/cublas/cuda/bf16/a/manual_time\",10,1000,1,us,,,,,,1.6e12,1,1e9\n"
      "\"matmul_forward_fc/v1_naive/cuda/bf16/a/manual_time\",10,1000,1,us,,,,,,2e10,1,1e9\n");
  const KernelFit cublas_fit = fit_kernel_curves(read_kernels_csv(vendor), sys, "bf16");
  EXPECT_EQ(cublas_fit.matrix.samples, 1);
  EXPECT_NEAR(cublas_fit.matrix.curve.at(2), 0.8, 1e-9);
  const std::string collective = write_file("ar.csv", "collective,impl,ranks,bytes,time_us\nallreduce,ring,2,8,1\n");
  EXPECT_FALSE(is_kernels_csv(collective));
  EXPECT_THROW(read_kernels_csv(write_file("bad.csv", "name,real_time\n\"x\",1\n")), UsageError);  // no FLOP/s
  EXPECT_THROW(read_kernels_csv(write_file("unit.csv", header + "\"matmul/cuda/bf16\",1,1,1,hours,,,,,,1,1,1\n")),
               UsageError);
}

// Measured linears from bench_kernels rows: on cuda each part's cuBLAS row (not cuBLASLt's, not ours), whatever the
// row's unit; on cpu the reference forward and the default gradients; other dtypes and the table entries' matmul
// rows left out, and the --linear rows left out of the curve fit. A shape lacking a part, or named otherwise, is
// refused; a system's linear of the same shape and size is replaced.
TEST(PredictCalibrate, MeasuredLinearsFromCublasRowsElseTheReference) {
  const std::string header = "name,iterations,real_time,cpu_time,time_unit,batch,flops_per_s,bytes_per_s,pct_cublas,"
                             "pct_cublaslt,pct_roofline,error_occurred,error_message\n";
  auto row = [](const std::string& name, const std::string& time, const std::string& unit) {
    return name + ",10," + time + "," + time + "," + unit + ",1,1e12,1e9,,,,0,\n";
  };
  const std::string cuda = write_file(
      "linears_cuda.csv",
      header + row("linear_forward/cublas/cuda/bf16/T2048_I64_O96", "100", "us") +
          row("linear_forward/cublaslt/cuda/bf16/T2048_I64_O96", "90", "us") +
          row("linear_forward/v5_mma_cp_async/cuda/bf16/T2048_I64_O96", "300", "us") +
          row("linear_input_gradient/cublas/cuda/bf16/T2048_I64_O96", "110", "us") +
          row("linear_input_gradient/cuda/bf16/T2048_I64_O96", "400", "us") +
          row("linear_weight_gradient/cuda/bf16/T2048_I64_O96", "500", "us") +
          row("linear_weight_gradient/cublas/cuda/bf16/T2048_I64_O96", "0.12", "ms") +
          row("linear_forward/cublas/cuda/f32/T2048_I64_O96", "7", "us") +
          row("matmul_forward_qkv/cublas/cuda/bf16/B1_T64_C64_NH4_V64", "50", "us"));
  const std::vector<KernelSample> rows = read_kernels_csv(cuda);
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[2].impl, "v5_mma_cp_async");
  EXPECT_EQ(rows[4].impl, "");
  EXPECT_EQ(rows[4].shape, "T2048_I64_O96");
  const std::vector<MeasuredLinear> got = measured_linears(rows, "bf16");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].measures(2048, 64, 96, 2));
  EXPECT_DOUBLE_EQ(got[0].forward_s, 100e-6);
  EXPECT_DOUBLE_EQ(got[0].input_gradient_s, 110e-6);
  EXPECT_DOUBLE_EQ(got[0].weight_gradient_s, 120e-6);
  EXPECT_EQ(fit_kernel_curves(rows, builtin_system("dgx-h100"), "bf16").matrix.samples, 1);  // the qkv row alone
  EXPECT_THROW(measured_linears(rows, "f32"), UsageError);  // its cuBLAS forward alone
  const std::vector<KernelSample> f32_default = read_kernels_csv(write_file(
      "linears_mixed.csv", header + row("linear_forward/cublas/cuda/bf16/T8_I8_O8", "1", "us") +
                               row("linear_forward/reference/cpu/f32/T8_I8_O8", "5", "us") +
                               row("linear_input_gradient/cpu/f32/T8_I8_O8", "6", "us") +
                               row("linear_weight_gradient/cpu/f32/T8_I8_O8", "7", "us")));
  ASSERT_EQ(measured_linears(f32_default, "f32").size(), 1u);  // bf16's cuBLAS rows do not decide f32's source
  EXPECT_DOUBLE_EQ(measured_linears(f32_default, "f32")[0].forward_s, 5e-6);
  SystemModel sys = builtin_system("dgx-h100");
  sys.gpu.measured_linears = {{2048, 64, 96, 2, 1, 1, 1}, {2048, 64, 96, 4, 1, 1, 1}};
  const SystemModel with = with_measured_linears(sys, got);
  ASSERT_EQ(with.gpu.measured_linears.size(), 2u);
  EXPECT_DOUBLE_EQ(linear_seconds(with, 2048, 64, 96, 2).forward, 100e-6);
  EXPECT_DOUBLE_EQ(linear_seconds(with, 2048, 64, 96, 4).forward, 1);
  EXPECT_THAT(with.source, HasSubstr("1 linear layers measured by bench_kernels --linear"));

  const std::string cpu = write_file(
      "linears_cpu.csv", header + row("linear_forward/reference/cpu/f32/T64_I32_O96", "76", "us") +
                             row("linear_input_gradient/cpu/f32/T64_I32_O96", "121", "us") +
                             row("linear_weight_gradient/cpu/f32/T64_I32_O96", "116", "us") +
                             row("linear_forward/reference/cpu/f32/T32_I16_O16", "3", "us"));
  try {
    measured_linears(read_kernels_csv(cpu), "f32");
    ADD_FAILURE() << "a linear lacking its gradients was taken";
  } catch (const UsageError& e) {
    EXPECT_THAT(e.what(), HasSubstr("linear T32_I16_O16 (f32) lacks its forward, input or weight gradient row"));
  }
  const std::vector<KernelSample> cpu_rows = read_kernels_csv(cpu);
  const std::vector<MeasuredLinear> one =
      measured_linears(std::vector<KernelSample>(cpu_rows.begin(), cpu_rows.begin() + 3), "f32");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].measures(64, 32, 96, 4));
  EXPECT_DOUBLE_EQ(one[0].weight_gradient_s, 116e-6);
  for (const std::string shape : {"T64_I32", "T64_I32_O96x", "T0_I32_O96", "T64_I2000000000_O96",
                                   "T99999999999999999999_I1_O1", "T-1_I1_O1", "I32_T64_O96"}) {
    const std::string bad =
        write_file("linears_bad.csv", header + row("linear_forward/reference/cpu/f32/" + shape, "1", "us"));
    try {
      measured_linears(read_kernels_csv(bad), "f32");
      ADD_FAILURE() << "shape " << shape << " was taken";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr("linear row shape '" + shape + "' is not T<tokens>_I<in>_O<out>"));
    }
  }
  // Rows of another linear op are not a part: they neither count nor start a shape.
  const std::string other =
      write_file("linears_other.csv", header + row("linear_backward/cpu/f32/T8_I8_O8", "1", "us"));
  EXPECT_TRUE(measured_linears(read_kernels_csv(other), "f32").empty());
}

// scripts/sdpa_compare.py's CSV: its SDPA times per (B, T, NH, hs) as measured attention, forward and backward from
// their rows (our times and other ops ignored); a shape lacking its backward and a bad number are refused by name.
TEST(PredictCalibrate, SdpaCsvGivesMeasuredAttention) {
  const std::string header = "B,T,NH,hs,op,ours_us,sdpa_us,pct_sdpa\n";
  const std::string path = write_file("sdpa.csv", header +
      "8,2048,32,128,flash_attention_forward,900.5,450.25,50.0\n"
      "8,2048,32,128,flash_attention_backward,,1200,\n"
      "8,2048,32,128,attention_forward,5,5,100\n"
      "1,2048,24,128,flash_attention_backward,10,20,200\n"
      "1,2048,24,128,flash_attention_forward,10,8,80\n");
  ASSERT_TRUE(is_sdpa_csv(path));
  EXPECT_FALSE(is_kernels_csv(path));
  const std::vector<MeasuredAttention> got = read_sdpa_csv(path);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].measures(8, 32, 2048, 128, 2));
  EXPECT_DOUBLE_EQ(got[0].forward_s, 450.25e-6);
  EXPECT_DOUBLE_EQ(got[0].backward_s, 1200e-6);
  EXPECT_TRUE(got[1].measures(1, 24, 2048, 128, 2));
  EXPECT_DOUBLE_EQ(got[1].forward_s, 8e-6);
  const SystemModel sys = with_measured_attention(with_measured_attention(builtin_system("dgx-h100"), got), got);
  EXPECT_EQ(sys.gpu.measured_attention.size(), 2u);  // the same shapes again replace, not repeat
  auto refused = [&](const std::string& rows, const std::string& what) {
    try {
      read_sdpa_csv(write_file("sdpa_bad.csv", header + rows));
      ADD_FAILURE() << rows;
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr(what));
    }
  };
  refused("8,2048,32,128,flash_attention_forward,1,2,3\n", "attention B 8 T 2048 NH 32 hs 128 lacks its forward or "
                                                          "backward row");
  refused("8,2048,0,128,flash_attention_forward,1,2,3\n", "sdpa_bad.csv:2: B, T, NH and hs must be whole numbers");
  refused("8,2048,32,128,flash_attention_forward,1,-2,3\n", "sdpa_bad.csv:2: sdpa_us must be a time in us");
  refused("8,2048,32,128,attention_forward,1,2,3\n", "has no flash attention rows");
}

// A given partition moves blocks between stages: each virtual stage's costs are its own block count's, so with a
// heavy head (a large vocabulary on few blocks) the balanced counts, which give the last stage fewer blocks,
// predict a shorter step and a smaller bubble than equal shares; counts that do not spread the layers are refused.
TEST(PredictPartition, BalancedBlocksShortenAStepWithAHeavyHead) {
  const SystemModel sys = builtin_system("dgx-a100");
  Layout uniform = small_gpt(4, 1, 4);
  uniform.model.layers = 8, uniform.model.vocab = 256000, uniform.global_batch = 8;
  validate_layout(uniform);
  PartitionRequest balanced;
  balanced.kind = PartitionRequest::Kind::balanced;
  balanced.costs = unit_costs(uniform, sys);
  ASSERT_GT(balanced.costs.head, balanced.costs.block);  // the premise: the head outweighs a block
  Layout l = uniform;
  l.stage_blocks = partition_blocks(balanced, l.model, 4);
  ASSERT_EQ(l.stage_blocks.size(), 4u);
  EXPECT_LT(l.stage_blocks.back(), 2);
  const std::vector<PassCosts> uniform_costs = all_stage_costs(uniform, sys), costs = all_stage_costs(l, sys);
  const PassCosts block = block_costs(l, sys);
  for (int vs = 1; vs + 1 < 4; ++vs)  // middle stages: blocks only
    EXPECT_NEAR(costs[std::size_t(vs)].f(), l.stage_blocks[std::size_t(vs)] * block.f(), 1e-12 * block.f());
  EXPECT_NEAR(costs[3].f() - uniform_costs[3].f(), (l.stage_blocks[3] - 2) * block.f(), 1e-9 * block.f());
  const Prediction pu = predict_step(uniform, sys), pb = predict_step(l, sys);
  EXPECT_LT(pb.time.step, pu.time.step);
  EXPECT_LT(pb.bubble_simulated, pu.bubble_simulated);
  EXPECT_EQ(stage_block_count(l, 3), l.stage_blocks[3]);
  for (const std::vector<int>& bad : {std::vector<int>{2, 2, 2}, {2, 2, 2, 3}, {0, 3, 3, 2}}) {
    l.stage_blocks = bad;
    try {
      validate_layout(l);
      ADD_FAILURE() << partition_text(bad) << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(partition_text(bad)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--layers 8"), std::string::npos) << e.what();
    }
  }
}
