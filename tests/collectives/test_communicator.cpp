// Communicator behaviour in threads mode: split groups, deadlines instead of hangs, clear refusals, the
// reduction kernel (cpu reference and simt) against independent conversions, and algorithms on the simt device.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <mutex>
#include <random>

#include "collectives/registry.h"
#include "collectives/bootstrap.h"
#include "collectives/device_side/nccl_registration.h"
#include "collectives/communicator/reduce.h"
#include "core/memory.h"
#include "sweep.h"
#include "tests/float16_devices.h"

namespace parbench {
namespace {

using ::testing::HasSubstr;

void run_threads(int ranks, double timeout, const std::function<void(Communicator&)>& body) {
  LaunchOptions o;
  o.ranks = ranks;
  o.timeout_s = timeout;
  run_ranks(o, body);
}

TEST(Communicator, NodesNumberedByFirstRankAndKeptBySplits) {
  EXPECT_EQ(number_nodes({"b", "b", "a", "c", "a", "b"}), (std::vector<int>{0, 0, 1, 2, 1, 0}));
  EXPECT_EQ(number_nodes({}), std::vector<int>{});
  std::atomic<int> wrong{0};
  run_threads(4, 20, [&](Communicator& comm) {
    if (comm.nodes() != 1 || comm.node_of(comm.rank()) != 0) ++wrong;
    // Two nodes as a launcher would report them; a split's ranks keep their world ranks' nodes.
    comm.set_local(comm.rank() % 2, 2, {0, 0, 1, 1});
    Communicator odd = comm.split(comm.rank() % 2, comm.rank());  // {0,2} {1,3}
    if (comm.nodes() != 2 || odd.nodes() != 2 || odd.node_of(0) != 0 || odd.node_of(1) != 1) ++wrong;
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Communicator, SplitMakesIndependentGroups) {
  // 6 ranks as 2 (tensor) x 3 (data) groups: allreduce inside each group sees only its members.
  std::mutex mu;
  std::vector<std::string> errors;
  run_threads(6, 20, [&](Communicator& comm) {
    const int r = comm.rank();
    Communicator tp = comm.split(r / 2, r);   // {0,1} {2,3} {4,5}
    Communicator dp = comm.split(r % 2, -r);  // {4,2,0} {5,3,1}: key reverses the order
    auto check = [&](bool ok, const std::string& what) {
      if (!ok) {
        std::lock_guard lock(mu);
        errors.push_back("rank " + std::to_string(r) + ": " + what);
      }
    };
    check(tp.size() == 2 && tp.rank() == r % 2, "tp rank/size");
    check(dp.size() == 3 && dp.rank() == 2 - r / 2, "dp rank/size");
    for (const char* impl : {"ring", "rhd", "naive"}) {
      double mine = double(1 << r), tp_sum = 0, dp_sum = 0;
      tp.allreduce(&mine, &tp_sum, 1, DType::f64, ReduceOp::sum, &find_algorithm(impl));
      dp.allreduce(&mine, &dp_sum, 1, DType::f64, ReduceOp::sum, &find_algorithm(impl));
      const int g = r / 2 * 2;
      check(tp_sum == double((1 << g) + (1 << (g + 1))), std::string(impl) + " tp sum");
      check(dp_sum == double(r % 2 ? (2 + 8 + 32) : (1 + 4 + 16)), std::string(impl) + " dp sum");
    }
    // Interleaved traffic on parent and child must not cross.
    int a = r, b = -1;
    int left = (r + 5) % 6, right = (r + 1) % 6;
    P2POp ops[2] = {send_op(&a, sizeof a, right), recv_op(&b, sizeof b, left)};
    comm.group(ops);
    check(b == left, "parent ring exchange");
  });
  for (const auto& e : errors) ADD_FAILURE() << e;
}

TEST(Communicator, MissingRankEndsWithTimeoutNotHang) {
  auto t0 = std::chrono::steady_clock::now();
  try {
    run_threads(4, 0.5, [&](Communicator& comm) {
      std::vector<float> in(100, 1.0f), out(100);
      if (comm.rank() != 2)
        comm.allreduce(in.data(), out.data(), in.size(), DType::f32, ReduceOp::sum, &find_algorithm("ring"));
      comm.barrier();
    });
    FAIL() << "a rank skipping the allreduce did not fail the run";
  } catch (const TimeoutError& e) {
    EXPECT_THAT(e.what(), HasSubstr("allreduce/ring of 400 bytes"));
    EXPECT_THAT(e.what(), HasSubstr("did not finish within the timeout of 0.5 s"));
    EXPECT_THAT(e.what(), HasSubstr("rank "));
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST(Communicator, PostedSendsCompleteInTheBackgroundAndMatchByTag) {
  // Rank 0 posts three tagged messages and goes on; rank 1 receives them in another order (tags match them).
  std::vector<int> got(3, -1);
  run_threads(2, 20, [&](Communicator& comm) {
    std::vector<int> data = {10, 11, 12};
    if (comm.rank() == 0) {
      for (int i = 0; i < 3; ++i) {
        P2POp op = send_op(&data[std::size_t(i)], sizeof(int), 1);
        op.tag = 16 + i;
        comm.post_sends({&op, 1});
      }
      comm.finish_sends();
    } else {
      for (int i : {2, 0, 1}) {
        P2POp op = recv_op(&got[std::size_t(i)], sizeof(int), 0);
        op.tag = 16 + i;
        comm.group({&op, 1});
      }
    }
  });
  EXPECT_EQ(got, (std::vector<int>{10, 11, 12}));
}

TEST(Communicator, UnreceivedPostedSendTimesOutNamingTheRank) {
  std::string message;
  try {
    run_threads(2, 0.3, [&](Communicator& comm) {
      int v = 1;
      if (comm.rank() == 1) return;
      P2POp op = send_op(&v, sizeof v, 1);
      op.tag = 20;
      comm.post_sends({&op, 1});
      comm.finish_sends();
    });
  } catch (const TimeoutError& e) {
    message = e.what();
  }
  EXPECT_THAT(message, HasSubstr("rank 0 sent 4 bytes to rank 1, which never received them"));
}

TEST(Communicator, RefusalsAreUsageErrorsWithReasons) {
  run_threads(3, 10, [&](Communicator& comm) {
    std::vector<float> buf(8);
    try {
      comm.broadcast(buf.data(), buf.data(), 8, DType::f32, 0, &find_algorithm("rd"));
      ADD_FAILURE() << "rd broadcast did not refuse";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr("rd implements allreduce and allgather"));
    }
    try {
      comm.allreduce(buf.data(), buf.data(), 8, DType::f32, ReduceOp::sum, &find_algorithm("mpi"));
      ADD_FAILURE() << "mpi in threads mode did not refuse";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr("mpirun"));
    }
    try {
      comm.allreduce(buf.data(), buf.data(), 8, DType::f32, ReduceOp::sum, &find_algorithm("nccl"));
      ADD_FAILURE() << "nccl on cpu did not refuse";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr("NCCL runs on GPUs only"));
    }
    try {
      comm.reduce(buf.data(), buf.data(), 8, DType::f32, ReduceOp::sum, 3, &find_algorithm("tree"));
      ADD_FAILURE() << "root 3 of 3 ranks accepted";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr("root 3 is outside the ranks 0..2"));
    }
    try {
      comm.allreduce(buf.data(), buf.data(), 8, DType::f32, ReduceOp::sum, &find_algorithm("bogus"));
      ADD_FAILURE() << "unknown implementation accepted";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr("accepted: nccl, mpi, mpi-nb, naive, tree, ring, rd, rhd, oneshot"));
    }
  });
}

// Our kernels on NCCL's device API refuse what nccl-tests' rules refuse in the collective benches' words for
// --impl (one rule set for both): a host device, or first a build without the device API; broadcast.
TEST(Communicator, NcclDeviceKernelsRefuseInTheBenchesWords) {
  const bool api = nccl_device_api_refusal().empty();
  run_threads(2, 10, [&](Communicator& comm) {
    std::vector<float> buf(8);
    for (const std::string impl : {"nccl-lsa", "nccl-multimem"}) {
      try {
        comm.allreduce(buf.data(), buf.data(), 8, DType::f32, ReduceOp::sum, &find_algorithm(impl));
        ADD_FAILURE() << impl << " on cpu did not refuse";
      } catch (const UsageError& e) {
        const std::string head = impl + " cannot run allreduce: --impl " + impl;
        EXPECT_THAT(e.what(), HasSubstr(api ? head + " runs kernels on GPUs: --device cuda (device cpu)"
                                            : head + " (our allreduce kernels on NCCL's device API): NCCL device "
                                                     "API not available: "));
      }
    }
    const std::string why = find_algorithm("nccl-lsa").unsupported(Collective::broadcast, comm);
    if (api)
      EXPECT_EQ(why, "--impl nccl-lsa: the NCCL device-API kernels exist for allreduce only (as in nccl-tests); "
                     "bench_broadcast accepts -D 0");
    else
      EXPECT_THAT(why, HasSubstr("NCCL device API not available: "));
  });
}

// A --impl name resolves once to its registry entry and back; the implementation set on a communicator runs its
// collectives, passes to its sub-groups, and a call may name another.
TEST(Communicator, SetImplementationRunsItAndPassesToSplits) {
  for (const std::string& name : algorithm_names()) EXPECT_EQ(implementation_name(find_implementation(name)), name);
  EXPECT_EQ(find_implementation("auto"), nullptr);
  EXPECT_EQ(implementation_name(nullptr), "auto");
  EXPECT_THROW(find_implementation("bogus"), UsageError);
  run_threads(2, 10, [&](Communicator& comm) {
    EXPECT_EQ(comm.implementation(), nullptr);
    comm.set_implementation(find_implementation("rd"));
    Communicator sub = comm.split(0, comm.rank());
    EXPECT_EQ(sub.implementation(), &find_algorithm("rd"));
    std::vector<float> buf(8, float(comm.rank() + 1));
    sub.allreduce(buf.data(), buf.data(), 8, DType::f32, ReduceOp::sum);
    EXPECT_EQ(buf[7], 3.0f);
    try {
      sub.broadcast(buf.data(), buf.data(), 8, DType::f32, 0);
      ADD_FAILURE() << "the communicator's rd ran a broadcast";
    } catch (const UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr("rd implements allreduce and allgather"));
    }
    buf.assign(8, float(comm.rank() + 5));
    sub.broadcast(buf.data(), buf.data(), 8, DType::f32, 1, &find_algorithm("naive"));
    EXPECT_EQ(buf[0], 6.0f);
  });
}

// The auto policy lists every registered implementation but oneshot (which needs shared addresses), mpi-nb (the
// non-blocking form of mpi), hier (topology-aware: it gains only across nodes), the device-side collectives (a GPU
// per rank on one node) and our kernels on NCCL's device API (buffers in NCCL windows, -D), which run only when
// named; libraries first, then ring.
TEST(Registry, AutoOrderCoversTheRegistry) {
  const std::vector<std::string> order = auto_order();
  const std::vector<std::string> named_only = {"oneshot",  "mpi-nb",    "hier",     "oneshot-dev",
                                                "twoshot-dev", "ring-dev", "naive-dev", "tree-dev",
                                                "rd-dev",   "rhd-dev",   "nccl-lsa", "nccl-multimem"};
  EXPECT_EQ(order.size() + named_only.size(), algorithm_names().size());
  for (const std::string& name : algorithm_names()) {
    const bool only_named = std::count(named_only.begin(), named_only.end(), name) > 0;
    EXPECT_EQ(std::count(order.begin(), order.end(), name), only_named ? 0 : 1) << name;
  }
  ASSERT_GE(order.size(), 3u);
  EXPECT_EQ(order[0], "nccl");
  EXPECT_EQ(order[1], "mpi");
  EXPECT_EQ(order[2], "ring");
  EXPECT_NE(auto_policy_text().find("nccl, mpi, ring"), std::string::npos) << auto_policy_text();
}

// "auto" picks per collective: ring where ring runs, another algorithm where it does not (scatter, gather,
// reduce, alltoall, sendrecv), and every one of those calls delivers the right data.
TEST(Communicator, AutoChoosesAnAlgorithmThatRunsEachCollective) {
  std::mutex mu;
  std::vector<std::string> errors;
  run_threads(3, 20, [&](Communicator& comm) {
    const int n = comm.size(), r = comm.rank();
    auto expect = [&](bool ok, const std::string& what) {
      if (ok) return;
      std::lock_guard lock(mu);
      errors.push_back("rank " + std::to_string(r) + ": " + what);
    };
    expect(comm.resolve(Collective::allreduce).name() == "ring", "allreduce is not ring");
    for (Collective c : {Collective::scatter, Collective::gather, Collective::reduce, Collective::alltoall}) {
      const Algorithm& chosen = comm.resolve(c);
      expect(chosen.unsupported(c, comm).empty(), std::string(collective_name(c)) + " unsupported");
      // The policy's order: nothing preferred over the chosen one could have run it.
      for (const std::string& name : auto_order()) {
        if (name == chosen.name()) break;
        expect(!find_algorithm(name).unsupported(c, comm).empty(),
               std::string(collective_name(c)) + ": " + name + " runs it but " + std::string(chosen.name()) + " won");
      }
    }
    std::vector<int> all(std::size_t(2 * n)), mine(2, -1), back(std::size_t(2 * n), -1);
    for (int i = 0; i < 2 * n; ++i) all[std::size_t(i)] = 100 + i;
    comm.scatter(all.data(), mine.data(), 2, DType::i32, 1);  // root 1 sends [2r, 2r+1] to rank r
    expect(mine[0] == 100 + 2 * r && mine[1] == 101 + 2 * r, "scatter delivered " + std::to_string(mine[0]));
    comm.gather(mine.data(), back.data(), 2, DType::i32, 2);
    if (r == 2) expect(back == all, "gather at root 2 differs");
  });
  EXPECT_TRUE(errors.empty()) << errors.front();
}

TEST(Communicator, MismatchedMessageSizesAreErrors) {
  try {
    run_threads(2, 5, [&](Communicator& comm) {
      std::vector<char> buf(64);
      if (comm.rank() == 0) comm.send(buf.data(), 16, 1);
      else comm.recv(buf.data(), 32, 0);
    });
    FAIL() << "a 16-byte send matched a 32-byte receive";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("expected 32 bytes from rank 0, which sent 16"));
  }
}

TEST(Communicator, NcclRefusesRanksSharingAGpu) {
  EXPECT_EQ(nccl_gpu_refusal(2, 2), "");
  std::string why = nccl_gpu_refusal(2, 1);
  EXPECT_THAT(why, HasSubstr("NCCL needs one GPU per rank"));
  EXPECT_THAT(why, HasSubstr("2 ranks would share 1 GPU(s)"));
  EXPECT_THAT(why, HasSubstr("ring, rd, rhd"));
}

// The combine step against the core dtype conversions (an independent implementation of the 16-bit roundings).
TEST(ReduceKernel, CpuAndSimtMatchIndependentReference) {
  std::mt19937 gen(std::random_device{}());
  std::uniform_real_distribution<float> val(-300.0f, 300.0f);
  const std::size_t n = 1003;  // odd: the vector loops' scalar tails too
  for (DType t : all_dtypes())
    for (ReduceOp op : all_reduce_ops()) {
      const std::size_t es = dtype_size(t);
      std::vector<unsigned char> a(n * es), b(n * es), want(n * es);
      for (std::size_t i = 0; i < n; ++i) {
        double x = val(gen), y = val(gen);
        if (!dtype_is_float(t)) x = std::floor(x), y = std::floor(y);
        if (t == DType::u8) x = std::fabs(x), y = std::fabs(y);
        store_from_double(a.data(), t, i, x);
        store_from_double(b.data(), t, i, y);
        double xa = load_as_double(a.data(), t, i), yb = load_as_double(b.data(), t, i), r;
        switch (op) {
          case ReduceOp::prod: r = xa * yb; break;
          case ReduceOp::max: r = std::max(xa, yb); break;
          case ReduceOp::min: r = std::min(xa, yb); break;
          default: r = xa + yb; break;
        }
        // 16-bit floats combine in fp32, then round once; integers wrap.
        if (t == DType::f16) r = f16_to_float(float_to_f16(float(r)));
        if (t == DType::bf16) r = bf16_to_float(float_to_bf16(float(r)));
        if (t == DType::f32) r = double(float(r));
        if (t == DType::i32) r = double(std::int32_t(std::uint32_t(std::int64_t(r))));
        if (t == DType::i8) r = double(std::int8_t(std::uint8_t(std::int64_t(r))));
        if (t == DType::u8) r = double(std::uint8_t(std::int64_t(r)));
        store_from_double(want.data(), t, i, r);
      }
      for (DeviceKind k : {DeviceKind::cpu, DeviceKind::simt}) {
        std::vector<unsigned char> inout = a;  // in place: out is x
        reduce_combine(Device{k, 0}, inout.data(), inout.data(), b.data(), n, t, op);
        EXPECT_EQ(inout, want) << device_kind_name(k) << " " << dtype_name(t) << " " << reduce_op_name(op);
        std::vector<unsigned char> out(n * es + es, 0x5a);  // out of place, poisoned, one element past the end
        reduce_combine(Device{k, 0}, out.data(), a.data(), b.data(), n, t, op);
        EXPECT_TRUE(std::equal(want.begin(), want.end(), out.begin()))
            << device_kind_name(k) << " " << dtype_name(t) << " " << reduce_op_name(op) << " out of place";
        EXPECT_EQ(out[n * es], 0x5a) << "wrote past the end";
      }
    }
}

// One rule for 16-bit floats on every device (base/float16.h): NaN canonical, ties to even, overflow to inf.
TEST(ReduceKernel, SixteenBitFloatsFollowOneRuleOnCpuAndSimt) {
  for (DeviceKind k : {DeviceKind::cpu, DeviceKind::simt})
    EXPECT_EQ(float16_check::float16_mismatches(Device{k, 0}), "") << device_kind_name(k);
}

TEST(ReduceKernel, DivideTruncatesIntegersAndRoundsFloats) {
  for (DeviceKind k : {DeviceKind::cpu, DeviceKind::simt}) {
    std::int32_t iv[3] = {7, -7, 9};
    reduce_divide(Device{k, 0}, iv, 3, DType::i32, 2);
    EXPECT_EQ(iv[0], 3);
    EXPECT_EQ(iv[1], -3);
    EXPECT_EQ(iv[2], 4);
    float fv[2] = {1.0f, 10.0f};
    reduce_divide(Device{k, 0}, fv, 2, DType::f32, 3);
    EXPECT_EQ(fv[0], 1.0f / 3.0f);
    EXPECT_EQ(fv[1], 10.0f / 3.0f);
  }
}

// The hand-written algorithms with the simt device's reduction kernel (host memory, emulated CUDA).
TEST(SimtDevice, AlgorithmsExact) {
  testing::SweepConfig cfg;
  cfg.seed = std::random_device{}();
  cfg.counts = {7};
  std::mutex mu;
  std::vector<std::string> failures;
  LaunchOptions o;
  o.ranks = 3;
  o.device = Device{DeviceKind::simt, 0};
  o.timeout_s = 60;
  run_ranks(o, [&](Communicator& comm) {
    for (const char* a : {"ring", "rhd", "tree", "oneshot"}) {
      auto f = testing::sweep(comm, find_algorithm(a), cfg);
      std::lock_guard lock(mu);
      failures.insert(failures.end(), f.begin(), f.end());
    }
  });
  for (const auto& f : failures) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace parbench
