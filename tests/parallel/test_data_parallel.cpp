// The data-parallel family on cpu threads: every scheme matches the single-rank run, replicas stay identical,
// memory per category and communication per step match the closed forms, the simt device matches cpu, bad
// configurations are refused, and the overlapped collectives are traced on their rank's communication track.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "collectives/bootstrap.h"
#include "base/error.h"
#include "kernels/ops.h"
#include "parallel/train.h"
#include "profiles/trace.h"
#include "train_test_util.h"

using namespace parbench;
using namespace parbench::test;

namespace {

// Every data-parallel scheme of the registry (all but the single-rank reference and the model-parallel family).
std::vector<std::string> data_parallel_schemes() {
  std::vector<std::string> names;
  for (const SchemeKind& k : scheme_kinds())
    if (!k.model_parallel && k.name != "single") names.emplace_back(k.name);
  return names;
}

}  // namespace

TEST(DataParallel, EverySchemeMatchesSingleRank) {
  for (ModelKind kind : {ModelKind::gpt, ModelKind::llama, ModelKind::mlp})
    for (bool accumulate : {false, true})
      for (int ranks = 1; ranks <= 4; ++ranks) {
        TrainConfig c = base_config(kind);
        c.micro_batch = 2;
        c.global_batch = ranks * 2 * (accumulate ? 3 : 1);
        TrainConfig single = c;
        single.scheme = &find_scheme_kind("single");
        const auto ref = train(single, 1)[0];
        const std::vector<std::string> schemes = data_parallel_schemes();
        ASSERT_GE(schemes.size(), 6u);
        for (const std::string& name : schemes) {
          c.scheme = &find_scheme_kind(name);
          c.bucket_mb = 0.004;  // several buckets even on a tiny model
          auto got = train(c, ranks);
          const std::string what = name + " " + std::string(model_kind_name(kind)) + " ranks=" +
                                   std::to_string(ranks) + (accumulate ? " accumulating" : "");
          // Sums in another order: float rounding only.
          EXPECT_LT(max_rel_diff(got[0].params, ref.params), 2e-6) << what;
          EXPECT_NEAR(got[0].loss, ref.loss, 1e-5 * std::fabs(ref.loss)) << what;
          for (int r = 1; r < ranks; ++r) {
            ASSERT_EQ(got[r].params.size(), got[0].params.size());
            EXPECT_EQ(std::memcmp(got[r].params.data(), got[0].params.data(), got[0].params.size() * 4), 0)
                << what << ": rank " << r << " holds another model than rank 0";
            EXPECT_EQ(got[r].loss, got[0].loss) << what;
          }
        }
      }
}

TEST(DataParallel, MemoryPerCategoryMatchesClosedForms) {
  TrainConfig c = base_config();
  c.model.hidden = 32, c.model.ffn = 128, c.model.vocab = 64, c.model.heads = 4;
  c.optimizer = OptimizerKind::adamw;
  c.global_batch = 8;
  const int n = 4;
  const ParamLayout layout = make_layout(c.model);
  std::int64_t tensors = 0;
  for (const auto& u : layout.units) tensors += std::int64_t(u.params.size());
  // Alignment: each tensor padded to kParamAlign elements, each unit to n * kParamAlign for sharding; 16 bytes
  // of state per padded element at most.
  const std::int64_t slack = 16 * kParamAlign * (tensors + std::int64_t(layout.units.size()) * n);
  const std::int64_t psi = layout.parameters;
  struct Expect {
    const char* scheme;
    int ranks;
    double params, grads, optimizer;  // bytes per parameter on one rank (fp32 AdamW: 4, 4, 8)
  };
  const Expect cases[] = {{"single", 1, 4, 4, 8},         {"ddp", n, 4, 4, 8},           {"zero1", n, 4, 4, 8.0 / n},
                          {"zero2", n, 4, 4.0 / n, 8.0 / n}, {"zero3", n, 4.0 / n, 4.0 / n, 8.0 / n}};
  for (const auto& e : cases) {
    c.scheme = &find_scheme_kind(e.scheme);
    auto got = train(c, e.ranks, 1);
    for (int r = 0; r < e.ranks; ++r) {
      const double want[3] = {e.params * psi, e.grads * psi, e.optimizer * psi};
      for (int k = 0; k < 3; ++k) {
        const double measured = double(got[r].current[k]);
        EXPECT_GE(measured, want[k]) << e.scheme << " " << mem_category_name(MemCategory(k));
        EXPECT_LE(measured, want[k] + slack) << e.scheme << " " << mem_category_name(MemCategory(k));
        EXPECT_NEAR(double(got[r].estimate[k]), want[k], 1.0) << e.scheme;
      }
    }
  }
  c.scheme = &find_scheme_kind("dp");  // the parameter server keeps the optimizer on rank 0 only
  auto got = train(c, n, 1);
  for (int r = 1; r < n; ++r) {
    EXPECT_EQ(got[r].current[int(MemCategory::optimizer)], 0u);
    EXPECT_GT(got[0].current[int(MemCategory::optimizer)], 0u);
  }
}

TEST(DataParallel, CommunicationPerStepMatchesClosedForms) {
  TrainConfig c = base_config();
  c.bucket_mb = 0.004;
  for (int n : {2, 3, 4}) {
    c.global_batch = 2 * n;
    const double full = double(make_layout(c.model).total) * 4;  // bytes of the flat fp32 buffer
    const double ring = 2 * full * (n - 1) / n;                  // DDP / ZeRO-1 / ZeRO-2: 2 Psi (n-1)/n
    for (auto [name, factor] : {std::pair{"ddp", 1.0}, {"zero1", 1.0}, {"zero2", 1.0}, {"zero3", 1.5}}) {
      c.scheme = &find_scheme_kind(name);
      auto got = train(c, n, 1);
      for (int r = 0; r < n; ++r)
        EXPECT_NEAR(double(got[r].comm), factor * ring, 64.0) << name << " n=" << n << " rank " << r;
    }
    c.scheme = &find_scheme_kind("dp");  // the parameter server's rank 0 moves (n-1) times what each other rank does
    auto got = train(c, n, 1);
    EXPECT_GT(got[0].comm, got[1].comm * std::uint64_t(n - 1) - 1);
  }
}

TEST(DataParallel, SimtRunsTheCudaKernelsAndMatchesCpu) {
  if (!ops::kernels_available(DeviceKind::simt)) GTEST_SKIP() << "this build has no simt kernels";
  TrainConfig c = base_config();
  c.model.layers = 1, c.model.seq = 4, c.model.hidden = 8, c.model.ffn = 16, c.model.vocab = 12;
  c.scheme = &find_scheme_kind("ddp");
  c.global_batch = 4;
  auto cpu = train(c, 4, 2, Device{DeviceKind::cpu, 0});
  auto simt = train(c, 4, 2, Device{DeviceKind::simt, 0});
  EXPECT_NEAR(simt[0].loss, cpu[0].loss, 1e-5 * std::fabs(cpu[0].loss));
  EXPECT_LT(max_rel_diff(simt[0].params, cpu[0].params), 1e-5);
}

// The kinds (parallel/scheme_kinds.cpp) and the implementations (schemes/registry.cpp) are two lists: each kind
// has one, and a kind without one is named.
TEST(SchemeRegistry, EveryKindHasAnImplementation) {
  for (const SchemeKind& k : scheme_kinds()) EXPECT_NE(scheme_implementation(k), nullptr) << k.name;
  EXPECT_EQ(scheme_implementation(find_scheme_kind("fsdp")), scheme_implementation(find_scheme_kind("zero3")));
  try {
    scheme_implementation(SchemeKind{.name = "zero4", .summary = {}});
    ADD_FAILURE() << "a kind without an implementation was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("scheme 'zero4' has no implementation"), std::string::npos) << e.what();
  }
}

// Every scheme name resolves to its own entry, whose name is the one given (fsdp is zero3's alias); --dp-scheme
// takes ddp and the ZeRO stages only.
TEST(SchemeRegistry, EveryNameRoundTrips) {
  for (const SchemeKind& k : scheme_kinds()) EXPECT_EQ(&find_scheme_kind(k.name), &k) << k.name;
  EXPECT_EQ(find_scheme_kind("fsdp").name, "zero3");
  std::vector<std::string_view> dp_schemes;
  for (const SchemeKind& k : scheme_kinds()) {
    try {
      EXPECT_EQ(&find_dp_scheme_kind(k.name), &k);
      dp_schemes.push_back(k.name);
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("accepted: ddp, zero1, zero2, zero3"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(dp_schemes, (std::vector<std::string_view>{"ddp", "zero1", "zero2", "zero3"}));
  const TrainConfig defaults;
  EXPECT_EQ(defaults.scheme->name, "single");
  EXPECT_EQ(defaults.dp_scheme->name, "ddp");
  EXPECT_EQ(defaults.schedule.name(), "1f1b");
  EXPECT_EQ(defaults.impl, nullptr);  // auto
}

TEST(DataParallel, BadConfigurationsAreRefused) {
  auto message = [](TrainConfig c, int ranks) -> std::string {
    try {
      train(c, ranks, 1);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "accepted";
  };
  TrainConfig c = base_config();
  c.scheme = &find_scheme_kind("ddp");
  c.global_batch = 10;
  EXPECT_NE(message(c, 4).find("global batch 10 is not divisible by 4"), std::string::npos);
  c.global_batch = 8;
  try {
    find_scheme_kind("pipeline-of-doom");
    ADD_FAILURE() << "an unknown scheme was found";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown scheme 'pipeline-of-doom'"), std::string::npos) << e.what();
  }
  c.scheme = &find_scheme_kind("ddp");
  c.offload = true;
  EXPECT_NE(message(c, 2).find("--offload applies to zero1"), std::string::npos);
  c.offload = false;
  c.scheme = &find_scheme_kind("single");
  EXPECT_NE(message(c, 2).find("single runs on one rank"), std::string::npos);
  c.scheme = &find_scheme_kind("zero3");
  c.model.hidden = 1 << 16, c.model.ffn = 1 << 18, c.model.layers = 64;  // ~ 3.4e10 parameters
  EXPECT_NE(message(c, 2).find("does not fit"), std::string::npos);
}

TEST(DataParallel, OffloadMatchesAndCountsHostTraffic) {
  TrainConfig c = base_config();
  c.global_batch = 8;
  c.scheme = &find_scheme_kind("single");
  auto ref = train(c, 1);
  for (const char* name : {"zero1", "zero2", "zero3"}) {
    c.scheme = &find_scheme_kind(name);
    c.offload = true;
    auto got = train(c, 2);
    EXPECT_LT(max_rel_diff(got[0].params, ref[0].params), 2e-6) << name;
    EXPECT_EQ(got[0].current[int(MemCategory::optimizer)], 0u) << name;  // the state lives on the host allocator
  }
}

// The collectives a scheme overlaps through its communication queue (ZeRO-3's gathers and reduce-scatters, DDP's
// bucket allreduces) run on a thread of their own; in a trace they sit on their own rank's "comm" track, every rank
// on its own, not on an anonymous track of rank 0.
TEST(DataParallel, OverlappedCollectivesAreTracedOnTheirRanksCommTrack) {
  TraceRecorder& recorder = TraceRecorder::instance();
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"zero3", {"all_gather", "reduce_scatter"}}, {"ddp", {"allreduce bucket"}}};
  for (const auto& [scheme, ranges] : cases) {
    TrainConfig c = base_config();
    c.scheme = &find_scheme_kind(scheme);
    c.micro_batch = 2, c.global_batch = 4;
    recorder.clear();
    recorder.enable();
    train(c, 2, 1);
    recorder.disable();
    const nlohmann::json trace = nlohmann::json::parse(recorder.to_json());
    recorder.clear();
    std::map<std::pair<int, int>, std::string> track_names;  // (pid, tid) -> thread_name
    for (const auto& e : trace.at("traceEvents"))
      if (e.at("ph") == "M" && e.at("name") == "thread_name")
        track_names[std::make_pair(e.at("pid").get<int>(), e.at("tid").get<int>())] = e.at("args").at("name");
    for (const std::string& range : ranges) {
      std::set<int> pids;
      for (const auto& e : trace.at("traceEvents")) {
        if (e.at("ph") != "X" || e.at("name") != range) continue;
        const int pid = e.at("pid").get<int>(), tid = e.at("tid").get<int>();
        pids.insert(pid);
        EXPECT_EQ(track_names[std::make_pair(pid, tid)], "comm") << scheme << " " << range << " on pid " << pid;
      }
      EXPECT_EQ(pids, (std::set<int>{kTraceIdOffset, kTraceIdOffset + 1})) << scheme << " " << range;
    }
  }
}
