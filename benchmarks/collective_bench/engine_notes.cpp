// See engine_notes.h.
#include "engine_notes.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "collectives/registry.h"
#include "collectives/table/measurement.h"
#include "collectives/bootstrap.h"
#include "collectives/device_side/nccl_registration.h"

#ifdef PARBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace parbench {
namespace {

// Fixed-size record, so that one gather of bytes carries every rank's line.
struct RankRecord {
  int pid = 0, device = 0, group = 0;
  char host[64] = {}, bus[32] = {}, name[96] = {};
};

void copy_text(char* dst, std::size_t size, const std::string& s) {
  std::strncpy(dst, s.c_str(), size - 1);
  dst[size - 1] = 0;
}

// A host device has no index of its own: its number is the rank's place on its node, as a GPU's is with one GPU per
// rank.
RankRecord my_record(int group, int local_rank, const Device& d) {
  RankRecord r;
  r.pid = int(getpid());
  r.group = group;
  r.device = d.on_host() ? local_rank : d.index;
  gethostname(r.host, sizeof r.host - 1);
  copy_text(r.bus, sizeof r.bus, device_name(d));
  copy_text(r.name, sizeof r.name, device_name(d));
#ifdef PARBENCH_HAVE_CUDA
  if (d.kind == DeviceKind::cuda) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d.index) == cudaSuccess) {
      char bus[32];
      std::snprintf(bus, sizeof bus, "%04x:%02x:%02x", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
      copy_text(r.bus, sizeof r.bus, bus);
      copy_text(r.name, sizeof r.name, prop.name);
    }
  }
#endif
  return r;
}

const char* average_name(int a) {
  static const char* names[] = {"rank 0's", "the mean over ranks", "the minimum over ranks", "the maximum over ranks"};
  return names[a];
}

}  // namespace

std::vector<RankInfo> gather_rank_info(Communicator& world, int group, const Device& d) {
  const RankRecord mine = my_record(group, world.local_rank(), d);
  std::vector<RankRecord> all(std::size_t(world.size()));
  world.gather(&mine, all.data(), sizeof(RankRecord), DType::u8, 0, &find_algorithm("naive"));
  std::vector<RankInfo> out;
  if (world.rank() != 0) return out;
  for (int r = 0; r < world.size(); ++r) {
    const RankRecord& x = all[std::size_t(r)];
    out.push_back({r, x.group, x.pid, x.device, x.host, x.bus, x.name});
  }
  return out;
}

std::vector<std::string> run_notes(const BenchOptions& o, const BenchPlan& p, const Communicator& world,
                                   const Communicator& group, int nodes, const Device& d) {
  std::vector<std::string> n;
  const bool cuda = d.kind == DeviceKind::cuda;
  n.push_back("parbench: " + world_summary(world, nodes, d) + "; time is " + average_name(o.average) + " (-a " +
              std::to_string(o.average) + "), per operation");
  if (!p.split.op.empty())
    n.push_back("NCCL_TESTS_SPLIT '" + p.split.op + " " + std::to_string(p.split.value) + "': groups of " +
                std::to_string(group.size()) + " at world rank 0; every group runs the same test, the rows show "
                "world rank 0's group, times are taken over all ranks");
  if (!cuda && (o.ngpus > 1 || o.nthreads > 1))
    n.push_back("-t/-g on device " + device_name(d) + ": each 'GPU' is a rank thread of this process");
  if (o.graph > 0)
    n.push_back("-G " + std::to_string(o.graph) +
                (cuda ? ": the -n x -m timed operations are captured into a CUDA graph on each rank's stream and the "
                        "graph launched " + std::to_string(o.graph) + " times; time = total / (n x m x " +
                        std::to_string(o.graph) + "); each check round is captured and launched once; host-driven "
                        "implementations cannot be captured and are not run"
                      : ": not applied: CUDA graphs need --device cuda; timed without a graph"));
  if (const char* first = std::getenv("NCCL_TESTS_DEVICE"); first && *first)
    n.push_back(std::string("NCCL_TESTS_DEVICE=") + first + ": " +
                (!cuda ? "not applied on device " + device_name(d)
                 : o.common.device.find(':') != std::string::npos
                     ? "not applied: --device " + o.common.device + " names the first GPU"
                     : std::string("the first GPU; each rank takes the next one on its node")));
  if (o.registration > 0)
    n.push_back("-R " + std::to_string(o.registration) +
                (cuda ? std::string(o.registration == 1 ? ": the nccl rows' buffers come from ncclMemAlloc, "
                                                          "registered with ncclCommRegister"
                                                        : ": the nccl rows' buffers come from ncclMemAlloc, "
                                                          "registered as symmetric windows (ncclCommWindowRegister)")
                      : std::string(": NCCL buffer registration is not applied here (no NCCL rows on device ") +
                            device_name(d) + ")"));
  if (o.parallel_init) n.push_back("-p 1: not applied: the bootstrap starts the ranks' communicators itself");
  if (o.device_api)
    n.push_back("-D " + std::to_string(o.device_api) + ": the nccl rows run our allreduce kernel on NCCL's device "
                "API, " + nccl_device_impl_name(o.device_api) +
                (o.device_api == 1 ? " (loads and stores to the peers' windows)"
                                   : " (multimem loads and stores, NVLink SHARP)") +
                ", " + std::to_string(kNcclDeviceBlocks) + " blocks of 512 threads");
  if (o.device_verify) n.push_back("-V: not applied: the device kernels use " +
                                   std::to_string(kNcclDeviceBlocks) + " blocks");
  if (o.stream_null) n.push_back("-y 1: our collectives already run on the default stream");
  n.push_back("timeout: every operation has a deadline of " + std::to_string(int(p.timeout)) + " s (-T" +
              (o.timeout == 0 ? std::string(" 0 or not given: ours, not nccl-tests' none)") : std::string(")")));
  if (o.blocking == 3)
    n.push_back(o.graph > 0 ? std::string("-z 3 with -G: timed as -z 0 (one wait per timed batch), as nccl-tests does")
                            : "-z 3: each iteration (its -m operations) timed alone after a barrier, the barrier "
                              "not timed");
  if (o.cputime) n.push_back("-C 1: 'cputime' is the host's time to issue the operations (before the final wait)");
  return n;
}

void report_wrong(const Communicator& world, std::size_t wrong, const CollectiveBuffers::FirstWrong& first,
                  int round) {
  std::fprintf(stderr, "error: rank %d: %s: %zu wrong element(s) in check round %d; the first at index %zu: "
               "expected %.9g, got %.9g\n", world.rank(), current_measurement().c_str(), wrong, round + 1,
               first.index, first.expected, first.got);
}

NcclReport make_report(const std::string& name, const BenchOptions& o, const BenchPlan& plan, int argc, char** argv) {
  const auto [lo, hi] = std::minmax_element(plan.sizes.begin(), plan.sizes.end());
  return NcclReport(name, o, plan.sizes.empty() ? 0 : *lo, plan.sizes.empty() ? 0 : *hi,
                    std::vector<std::string>(argv, argv + argc));
}

void memory_report(Communicator& world, const BenchPlan& p, bool out) {
  const std::uint64_t largest = p.sizes.empty() ? 0 : *std::max_element(p.sizes.begin(), p.sizes.end());
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  double mine[2] = {2.0 * double(largest) / (1 << 20), double(ru.ru_maxrss) / 1024};
  std::vector<double> all(2 * std::size_t(world.size()));
  world.gather(mine, all.data(), 2, DType::f64, 0, &find_algorithm("naive"));
  if (!out) return;
  for (int r = 0; r < world.size(); ++r)
    std::printf("#  Rank %2d memory: buffers %.2f MiB, peak resident %.1f MiB (process)\n", r,
                all[2 * std::size_t(r)], all[2 * std::size_t(r) + 1]);
}

}  // namespace parbench
