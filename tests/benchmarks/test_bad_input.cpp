// The bad-input matrix: every program run with hostile input (unknown flags, bad numbers, out-of-range values,
// impossible layouts, unwritable output paths, missing or malformed input files, a CSV with another header).
// Each case must exit with its status (2: usage), name the bad value and the accepted form, and leave no output
// file behind (every case writes into an empty folder of its own, which must stay empty) nor touch its inputs.
#include <gtest/gtest.h>

#include <map>

#include "programs.h"

using namespace pbtest;
namespace fs = std::filesystem;

namespace {

struct Case {
  std::string program;  // in the build's bin folder
  std::string args;     // {in}: the folder of input files; {out}: this case's (empty) output folder
  std::vector<std::string> expect;  // substrings of the output (stdout and stderr)
  int status = 2;
  std::string env = "";  // VAR=value prefix
};

// Rows go to {out}: a run that refuses its input must not leave them (nor a header-only file).
const std::string kRows = " --csv {out}/rows.csv --json {out}/rows.json";

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      // Collective benches: flags and numbers.
      {"bench_allreduce", "--bogus" + kRows, {"--bogus", "--help for the accepted options"}},
      {"bench_allreduce", "--sizes 1K:abc" + kRows, {"'1K:abc'", "MIN:MAX:xFACTOR"}},
      {"bench_allreduce", "-b 1M -e 1K" + kRows, {"--minbytes 1M is larger than --maxbytes 1K"}},
      {"bench_allreduce", "-n 0" + kRows, {"--iters: 0 is not accepted", "1..1073741824"}},
      {"bench_allreduce", "-n abc" + kRows, {"'abc' is not a number", "1..1073741824"}},
      {"bench_allreduce", "-d fp8" + kRows, {"'fp8'", "accepted: f64 (double)"}},
      {"bench_allreduce", "-o max2" + kRows, {"'max2'", "accepted: sum, prod"}},
      {"bench_allreduce", "--impl warp" + kRows, {"'warp'", "accepted: nccl, mpi"}},
      {"bench_allreduce", "--ranks 5000" + kRows, {"5000", "0 to 1024"}},
      {"bench_allreduce", "-a 7" + kRows, {"--average: 7", "0..3"}},
      {"bench_allreduce", "-z 9" + kRows, {"--blocking: 9", "0..3"}},
      {"bench_allreduce", "-T -1" + kRows, {"--timeout: -1", ">= 0"}},
      {"bench_allreduce", "--inplace maybe" + kRows, {"maybe", "{both,only,off}"}},
      {"bench_allreduce", "--device tpu" + kRows, {"'tpu'", "accepted: auto, cpu, simt, cuda, cuda:N"}},
      {"bench_allreduce", "--device cuda:99 --sizes 1K" + kRows, {"device 'cuda:99'"}},
      {"bench_allreduce", "-f 1" + kRows, {"--stepfactor 1", "2 or more"}},
      {"bench_allreduce", "-u -3" + kRows, {"--unalign: -3", "0..4096"}},
      {"bench_allreduce", "-N -1" + kRows, {"--run_cycles: -1", "0..1073741824"}},
      {"bench_allreduce", "-m 0" + kRows, {"--agg_iters: 0", "1..1048576"}},
      {"bench_allreduce", "-I 2" + kRows, {"--per_iter_timing: 2", "0..1"}},
      {"bench_allreduce", "-t 0" + kRows, {"--nthreads: 0", "1..1024"}},
      {"bench_allreduce", "-R 3" + kRows, {"--local_register: 3", "0..2"}},
      {"bench_allreduce", "-D 3" + kRows, {"--device_implementation: 3", "0..2"}},
      {"bench_allreduce", "-R -1" + kRows, {"--local_register: -1", "0..2"}},
#ifdef PB_NCCL_DEVICE_API
      // nccl-tests' rules for -D, checked before any device work (so on a host device too).
      {"bench_broadcast", "--device cpu -D 1 -R 2" + kRows, {"-D 1", "allreduce only", "bench_broadcast accepts -D 0"}},
      {"bench_allreduce", "--device cpu -D 1" + kRows, {"-D 1 needs", "add -R 2"}},
      {"bench_allreduce", "--device cpu -D 1 -R 2 -o max" + kRows, {"-D 1 with -o max", "accepted: -o sum"}},
      {"bench_allreduce", "--device cpu -D 2 -R 2 -d half" + kRows, {"-D 2 with -d f16", "float, double and int32"}},
      {"bench_allreduce", "--device cpu -D 1 -R 2" + kRows, {"-D 1 runs kernels on GPUs", "--device cuda"}},
      // Named in --impl, a device kernel that cannot run here is not run, with the reason, like any other
      // implementation (Communicator.NcclDeviceKernelsRefuse...); with nothing else asked for, the run ends.
      {"bench_allreduce", "--device cpu --impl nccl-multimem -R 1" + kRows,
       {"none of the implementations asked for can run allreduce here",
        "--impl nccl-multimem runs kernels on GPUs: --device cuda (device cpu)"}},
      {"bench_allreduce", "--device cpu --impl nccl-lsa -R 2" + kRows,
       {"--impl nccl-lsa runs kernels on GPUs: --device cuda (device cpu)"}},
#endif
#ifdef PB_CUDA_EMULATED
      // The emulated NCCL has no device API: -D 1|2 and -R 1|2 on the GPU are refused with the reason.
      {"bench_allreduce", "--device cuda --ranks 2 --sizes 1K -D 1 -R 2" + kRows,
       {"-D 1 (our allreduce kernels on NCCL's device API): NCCL device API not available: emulated NCCL",
        "accepted here: -D 0"}},
      {"bench_allreduce", "--device cuda --ranks 2 --sizes 1K -D 2 -R 2" + kRows,
       {"-D 2", "NCCL device API not available: emulated NCCL"}},
      {"bench_allreduce", "--device cuda --ranks 2 --sizes 1K -R 2" + kRows,
       {"-R 2 (NCCL buffer registration): NCCL device API not available: emulated NCCL", "accepted here: -R 0"}},
      {"bench_allreduce", "--device cuda --ranks 2 --sizes 1K -R 1" + kRows,
       {"-R 1 (NCCL buffer registration): NCCL device API not available: emulated NCCL"}},
      // --impl nccl-lsa,nccl-multimem alone: tests/gpu_emu (gpu_bench_allreduce_device_api_kernels_alone), where the
      // ranks' NCCL communicators, aborted after the refusal, are not counted as leaks.
#endif
      {"bench_allreduce", "-e 1Q" + kRows, {"'1Q'", "K, M or G suffix"}},
      {"bench_allreduce", "-b 1K -e 4K -i 0" + kRows, {"--stepbytes 0", "positive step"}},
      // Found by fuzz_sizes: a range of a billion sizes was built in memory until the process ran out.
      {"bench_allreduce", "--sizes 1K:6566666M:+6" + kRows, {"'1K:6566666M:+6'", "more than 100000", "larger step"}},
      {"bench_allreduce", "-b 1 -e 1G -i 1" + kRows, {"-b 1 -e 1G -i 1 gives 1073741824 sizes", "larger -i or -f"}},
      {"bench_allreduce", "--ranks 2 --sizes 1K" + kRows, {"'XOR 1'", "'AND|OR|MOD|DIV <number>'"}, 2,
       "NCCL_TESTS_SPLIT='XOR 1'"},
      {"bench_sendrecv", "--bogus" + kRows, {"--bogus"}},
      {"bench_reducescatter", "-d bf16x" + kRows, {"'bf16x'", "accepted: f64"}},
      // Impossible layouts: refused on the ranks, before the first row.
      {"bench_broadcast", "--device cpu --ranks 2 -r 3 --sizes 1K" + kRows, {"--root 3", "0..1", "a rank or all"}},
      {"bench_gather", "--device cpu --ranks 2 -r 7 --sizes 1K" + kRows, {"--root 7", "0..1"}},
      {"bench_alltoall", "--device cpu --ranks 3 --impl ring --sizes 1K" + kRows,
       {"none of the implementations asked for can run alltoall", "ring implements allreduce"}},
      {"bench_broadcast", "--device cpu --ranks 2 --impl rd --sizes 1K" + kRows, {"rd", "implements allreduce"}},
      // Output paths and result files.
      {"bench_allreduce", "--csv {out}", {"--csv '", "it is a directory", "expected a file in an existing"}},
      {"bench_allreduce", "--csv /nonexistent/dir/x.csv", {"'/nonexistent/dir/x.csv'", "does not exist"}},
      {"bench_allreduce", "-J /nonexistent/dir/x.json", {"-J/--output_file '/nonexistent/dir/x.json'"}},
      {"bench_allreduce", "--trace /nonexistent/dir/t.json", {"--trace '/nonexistent/dir/t.json'"}},
      {"bench_allreduce", "--csv {out}/same --json {out}/same", {"--csv and --json name the same file"}},
      {"bench_allreduce", "--csv {in}/plain/x.csv", {"is not a directory"}},
      {"bench_allreduce", "--resume", {"--resume needs --csv FILE"}},
      {"bench_allreduce", "--resume -N 2 --csv {out}/r.csv", {"--resume with -N 2", "-N 1 only"}},
      {"bench_allreduce", "--resume --sizes 1K --csv {in}/memcpy.csv",
       {"its header is\n  device,bytes,time_us,gbps,wrong", "writes\n  collective,impl,device"}},
      // bench_links: nothing measured, nothing written.
      {"bench_links", "--ranks 3 --bandwidth-size 4X" + kRows, {"--bandwidth-size: bad size '4X'", "K, M or G"}},
      {"bench_links", "--ranks 3 -n 0" + kRows, {"--iters: 0 is not accepted", "an integer in 1.."}},
      {"bench_links", "--ranks 3 --passes 1.5" + kRows, {"'1.5' is not an integer"}},
      {"bench_links", "--ranks 3 --bogus" + kRows, {"--bogus"}},
      {"bench_links", "--ranks 3 --csv /nonexistent/dir/l.csv", {"'/nonexistent/dir/l.csv'", "does not exist"}},
      // Memory: refused before any allocation (terabyte buffers would not even allocate), estimate and limit named.
      {"bench_allreduce", "--ranks 2 --device cpu --sizes 1K:64M:x2 --max-memory 1M" + kRows,
       {"allreduce's buffers for the largest size needs 134217728 bytes (128.0 MiB) per rank",
        "limit of 1048576 bytes (1.0 MiB: --max-memory)"}},
      {"bench_allgather", "--ranks 2 --device cpu --sizes 1K:1024G:x2" + kRows,
       {"allgather's buffers for the largest size needs 1649267441664 bytes (1572864.0 MiB) per rank",
        "memory shared by 2 ranks"}},
      {"bench_allreduce", "--max-memory 12Q" + kRows, {"--max-memory: bad size '12Q'", "K, M or G suffix"}},
      {"bench_memcpy", "--device cpu --sizes 1K:64M:x2 --max-memory 100M" + kRows,
       {"needs 268435456 bytes (256.0 MiB) per rank", "104857600 bytes (100.0 MiB: --max-memory)"}},
      {"bench_memcpy", "--device cpu --sizes 1024G" + kRows, {"needs 4398046511104 bytes", "cpu's memory"}},
      {"bench_train", "--device cpu --ranks 2 --scheme ddp --max-memory 100K" + kRows,
       {"model state of scheme 'ddp'", "needs 481280 bytes", "102400 bytes (0.1 MiB: --max-memory)"}},
      {"bench_train", "--device cpu --ranks 2 --scheme pp --layers 4 --max-memory 100K" + kRows,
       {"model state of scheme 'pp'", "needs 447488 bytes"}},
      {"bench_train", "--max-memory 0" + kRows, {"--max-memory: 0 bytes is not accepted", "a positive size"}},
      // bench_memcpy.
      {"bench_memcpy", "--bogus" + kRows, {"--bogus"}},
      {"bench_memcpy", "--sizes 1K:x" + kRows, {"'1K:x'", "MIN:MAX:+STEP"}},
      {"bench_memcpy", "-n 0" + kRows, {"--iters: 0 is not accepted", "an integer in 1.."}},
      {"bench_memcpy", "-n 1.5" + kRows, {"'1.5' is not an integer", "an integer in 1.."}},
      {"bench_memcpy", "-w -1" + kRows, {"--warmup: -1", "an integer in 0.."}},
      {"bench_memcpy", "--device gpu" + kRows, {"'gpu'", "accepted: auto, cpu"}},
      {"bench_memcpy", "--csv /nonexistent/dir/m.csv", {"'/nonexistent/dir/m.csv'", "does not exist"}},
      {"bench_memcpy", "--resume --json {out}/m.json", {"--resume needs --csv FILE"}},
      // bench_kernels.
      {"bench_kernels", "--bogus" + kRows, {"--bogus"}},
      {"bench_kernels", "--shape huge" + kRows, {"'huge'", "accepted: tiny, small, gpt2-124M, gpt2-1.5B"}},
      {"bench_kernels", "--shape B=4,T=0,C=8,NH=2,V=5" + kRows, {"T=0 is not an integer >= 1", "B=<int>,T=<int>,C=<int>,NH=<int>,V=<int>"}},
      {"bench_kernels", "--shape B=4,T=x,C=8,NH=2,V=5" + kRows, {"T=x is not an integer >= 1"}},
      {"bench_kernels", "--shape B=4,T=8,C=10,NH=3,V=5" + kRows, {"NH=3 does not divide C=10", "B=<int>,T=<int>,C=<int>,NH=<int>,V=<int>"}},
      {"bench_kernels", "--shape B=4,T=8,C=8,V=5" + kRows, {"NH is missing"}},
      {"bench_kernels", "--shape B=4,X=8,C=8,NH=2,V=5" + kRows, {"'X=8' is not KEY=VALUE", "B=<int>,T=<int>,C=<int>,NH=<int>,V=<int>"}},
      {"bench_kernels", "--shape B=2,B=3,T=8,C=8,NH=2,V=5" + kRows, {"B is given twice"}},
      {"bench_kernels", "--shape B=65536,T=65536,C=8,NH=1,V=5" + kRows, {"B*T*4C = 137438953472 exceeds 2147483647"}},
      {"bench_kernels", "--device cpu --linear 256x64" + kRows, {"--linear '256x64': not three numbers", "TOKENSxINxOUT"}},
      {"bench_kernels", "--device cpu --linear 256x0x8" + kRows, {"'0' is not an integer >= 1", "TOKENSxINxOUT"}},
      {"bench_kernels", "--device cpu --linear 4x4x4,8xAx8" + kRows, {"--linear '8xAx8'", "'A' is not an integer"}},
      {"bench_kernels", "--device cpu --linear 100000x100000x2" + kRows, {"10000000000 elements exceeds 2147483647"}},
      {"bench_kernels", "--device cpu --linear 4x4x4 --shape tiny" + kRows, {"--linear and --shape exclude each other"}},
      {"bench_kernels", "--device cpu --dtype f16" + kRows, {"--dtype f16", "f32 or bf16"}},
      {"bench_kernels", "--peak-tflops -1" + kRows, {"--peak-tflops: -1", "a number > 0"}},
      {"bench_kernels", "--min-time 0" + kRows, {"--min-time: 0", "a number > 0"}},
      {"bench_kernels", "--device tpu" + kRows, {"'tpu'", "accepted: auto"}},
      {"bench_kernels", "--json /nonexistent/dir/k.json", {"--json '/nonexistent/dir/k.json'", "does not exist"}},
      {"bench_kernels", "--resume", {"--resume needs --csv FILE"}},
      // Memory: the largest workload (closed form, benchmarks/kernels_bench/memory.h) refused before any allocation.
      {"bench_kernels", "--device cpu --shape gpt2-1.5B --dtype f32 --max-memory 1G" + kRows,
       {"bench_kernels' largest workload (closed form) needs 7549747200 bytes (7200.0 MiB) per rank",
        "limit of 1073741824 bytes (1024.0 MiB: --max-memory)", "use a smaller --shape"}},
      {"bench_kernels", "--device cpu --shape tiny --max-memory 12Q" + kRows,
       {"--max-memory: bad size '12Q'", "K, M or G suffix"}},
#ifdef PB_CUDA_EMULATED
      // Beyond the device's memory: an emulated GPU of 1 GiB against gpt2-124M's cross-entropy in f32.
      {"bench_kernels", "--device cuda --shape gpt2-124M --dtype f32" + kRows,
       {"needs 3293708288 bytes (3141.1 MiB) per rank", "limit of 1073741824 bytes (1024.0 MiB: cuda:0's memory)"},
       2, "PARBENCH_EMU_GPU_MEMORY=1G"},
#endif
      // bench_train: numbers, names, layouts, schedule files, its CSV.
      {"bench_train", "--bogus" + kRows, {"--bogus"}},
      {"bench_train", "--scheme zero9" + kRows, {"'zero9'", "accepted: single, dp, ddp"}},
      {"bench_train", "--model cnn" + kRows, {"'cnn'", "accepted: mlp, gpt"}},
      {"bench_train", "--layers 0" + kRows, {"--layers: 0 is not accepted", "an integer in 1.."}},
      {"bench_train", "--layers 1.5" + kRows, {"'1.5' is not an integer"}},
      {"bench_train", "--hidden 63 --heads 4" + kRows, {"--heads 4 does not divide --hidden 63"}},
      {"bench_train", "--device cpu --scheme tp --ranks 3 --heads 4" + kRows, {"--heads 4", "--tp 3"}},
      {"bench_train", "--device cpu --scheme hybrid --ranks 4 --dp 3 --tp 2 --pp 1" + kRows,
       {"--dp 3 x --tp 2 x --pp 1 = 6 ranks, but 4 ranks run"}},
      {"bench_train", "--device cpu --scheme pp --ranks 2 --schedule 1f1b --microbatches 1 --global-batch 4" + kRows,
       {"1f1b needs microbatches >= stages", "use gpipe or more microbatches"}},
      {"bench_train", "--scheme pp --ranks 2 --schedule foo" + kRows, {"'foo'", "accepted: gpipe, 1f1b"}},
      {"bench_train", "--device cpu --scheme pp --ranks 2 --schedule /nonexistent/s.csv" + kRows,
       {"'/nonexistent/s.csv'", "stage,op,microbatch,chunk"}},
      {"bench_train", "--device cpu --scheme pp --ranks 2 --schedule {in}/bad_sched.csv --microbatches 1 "
                      "--global-batch 2" + kRows,
       {"bad_sched.csv:3: op 'X'", "accepted: F, B, BI or W"}},
      {"bench_train", "--device cpu --scheme pp --ranks 2 --schedule {in}/nohdr_sched.csv" + kRows,
       {"nohdr_sched.csv", "expected the header stage,op,microbatch,chunk"}},
      {"bench_train", "--device cpu --scheme pp --ranks 2 --schedule {in}/dead_sched.csv --microbatches 1 "
                      "--global-batch 2" + kRows,
       {"dead_sched.csv is not a valid schedule"}},
      {"bench_train", "--scheme ddp --tp 2" + kRows, {"--tp", "apply to schemes tp, sp, mp, pp, hybrid"}},
      {"bench_train", "--steps 0" + kRows, {"--steps: 0", "an integer in 1.."}},
      {"bench_train", "--lr -1" + kRows, {"--lr: -1", "a number > 0"}},
      {"bench_train", "--device cpu --global-batch 3 --ranks 2" + kRows, {"global batch 3 is not divisible"}},
      {"bench_train", "--dtype f16" + kRows, {"--dtype f16", "accepted: f32, bf16"}},
      {"bench_train", "--optimizer lion" + kRows, {"'lion'", "accepted: adamw, sgd"}},
      {"bench_train", "--profile-steps 5:2" + kRows, {"'5:2'", "A:B"}},
      {"bench_train", "--bucket-mb -1" + kRows, {"--bucket-mb: -1", "a number > 0"}},
      {"bench_train", "--device cpu --scheme pp --ranks 2 --layers 3" + kRows, {"--layers 3 is not divisible"}},
      {"bench_train", "--device cpu --ranks 2 --scheme single" + kRows, {"scheme single runs on one rank"}},
      {"bench_train", "--csv {in}/memcpy.csv", {"its header is\n  device,bytes", "writes\n  model,scheme"}},
      {"bench_train", "--trace /nonexistent/dir/t.json", {"--trace '/nonexistent/dir/t.json'", "does not exist"}},
      // parbench-plot: subcommands, options, missing and malformed inputs, outputs.
      {"parbench-plot", "", {"A subcommand is required"}},
      {"parbench-plot", "wobble", {"'wobble'", "accepted: busbw, latency"}},
      {"parbench-plot", "busbw -i /nonexistent.csv -o {out}/x.png", {"cannot open input '/nonexistent.csv'"}},
      {"parbench-plot", "busbw -i {in}/missingcol.csv -o {out}/x.png",
       {"missingcol.csv:1: missing column 'ranks'", "this figure needs collective, impl, ranks"}},
      {"parbench-plot", "busbw -i {in}/nonnum.csv -o {out}/x.png", {"nonnum.csv:2: column 'bytes': 'abc'"}},
      {"parbench-plot", "busbw -i {in}/coll.csv -o {out}/x.jpg", {"'.jpg'", ".png or .svg"}},
      {"parbench-plot", "busbw -i {in}/coll.csv -o {out}/x.png --size 12x", {"'12x'", "WIDTHxHEIGHT"}},
      {"parbench-plot", "latency -i {in}/coll.csv -o {out}/x.png --max-bytes 1Q", {"'1Q'", "K, M or G suffix"}},
      {"parbench-plot", "scaling -i {in}/coll.csv -o {out}/x.png --mode medium", {"medium", "{strong,weak}"}},
      {"parbench-plot", "timeline -i {in}/garbage.json -o {out}/x.png", {"garbage.json: not valid JSON"}},
      {"parbench-plot", "timeline -i {in}/wrongtype.json -o {out}/x.png",
       {"not a Chrome trace", "\"traceEvents\" array"}},
      {"parbench-plot", "merge-traces -o {out}/m.json {in}/garbage.json", {"garbage.json: not JSON"}},
      {"parbench-plot", "merge-traces -o {out}/m.json /nonexistent.json", {"cannot open trace '/nonexistent.json'"}},
      {"parbench-plot", "memory -i {in}/hdronly.csv -o {out}/x.svg", {"missing column 'params_bytes'"}},
      {"parbench-plot", "busbw -i {in}/coll.csv -o /nonexistent/dir/x.png",
       {"-o/--output '/nonexistent/dir/x.png'", "does not exist"}},
      {"parbench-plot", "busbw -i {in}/coll.csv", {"--output is required"}},
      // bench_harness_overhead (an MPI build's): options, then the launch.
      {"bench_harness_overhead", "--rounds 0", {"--rounds: 0", "1..1000"}},
      {"bench_harness_overhead", "--sizes 1K,8G", {"8589934592 bytes", "up to 8589934588 bytes"}},
      {"bench_harness_overhead", "--sizes 1K", {"run under mpirun"}},
  };
  return all;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

// The inputs the cases read (never written by them).
void make_inputs(const fs::path& in) {
  fs::create_directories(in);
  write(in / "memcpy.csv", "device,bytes,time_us,gbps,wrong\ncpu,1024,1,1,0\n");
  write(in / "plain", "a file, not a folder\n");
  write(in / "bad_sched.csv", "stage,op,microbatch,chunk\n0,F,0,0\n0,X,0,0\n");
  write(in / "nohdr_sched.csv", "stage,op,microbatch\n0,F,0\n");
  write(in / "dead_sched.csv", "stage,op,microbatch,chunk\n0,F,0,0\n1,F,0,0\n1,B,0,0\n");
  const std::string coll_header =
      "collective,impl,device,ranks,nodes,dtype,op,root,inplace,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong";
  write(in / "coll.csv", coll_header + "\nallreduce,ring,cpu,2,1,f32,sum,0,0,1024,256,10,0.1,0.1,0\n");
  write(in / "missingcol.csv", "collective,impl\nallreduce,ring\n");
  write(in / "nonnum.csv", coll_header + "\nallreduce,ring,cpu,2,1,f32,sum,0,0,abc,2,1,1,1,0\n");
  write(in / "hdronly.csv", "model,scheme\n");
  write(in / "garbage.json", "x");
  write(in / "wrongtype.json", "{\"traceEvents\": 5}\n");
}

std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) files[e.path().string()] = pbtest::read_file(e.path());
  return files;
}

std::string substitute(std::string s, const fs::path& in, const fs::path& out) {
  for (auto [key, value] : {std::pair<std::string, std::string>{"{in}", in.string()}, {"{out}", out.string()}})
    for (std::size_t at; (at = s.find(key)) != std::string::npos;) s.replace(at, key.size(), value);
  return s;
}

}  // namespace

TEST(BadInput, EveryProgramRefusesHostileInputNamingItAndWritesNothing) {
  const fs::path root = fs::temp_directory_path() / ("pb_bad_input_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path in = root / "in";
  make_inputs(in);
  const auto inputs = snapshot(in);
  int ran = 0;
  for (std::size_t i = 0; i < cases().size(); ++i) {
    const Case& c = cases()[i];
#ifndef PB_HAVE_BENCH_KERNELS
    if (c.program == "bench_kernels") continue;
#endif
#ifndef PB_HAVE_HARNESS_OVERHEAD
    if (c.program == "bench_harness_overhead") continue;
#endif
    const fs::path out = root / ("case" + std::to_string(i));
    fs::create_directories(out);
    const std::string cmd = c.env + (c.env.empty() ? "" : " ") + "timeout 60 " + bin(c.program) + " " +
                            substitute(c.args, in, out);
    const Finished r = run(cmd);
    ++ran;
    SCOPED_TRACE("case " + std::to_string(i) + ": " + cmd + "\n" + r.output);
    EXPECT_EQ(r.status, c.status);
    for (const std::string& e : c.expect) EXPECT_NE(r.output.find(e), std::string::npos) << "missing: " << e;
    EXPECT_EQ(r.output.find("terminate called"), std::string::npos);  // no escaped exception
    EXPECT_TRUE(fs::is_empty(out)) << "left output behind";
    EXPECT_EQ(snapshot(in), inputs) << "changed an input file";
  }
  EXPECT_GE(ran, 60);
  std::printf("%d bad-input cases run\n", ran);
  fs::remove_all(root);
}

#ifdef PB_MPIEXEC
// Under mpirun every rank sees the bad option; the job exits 2 and the message comes once (rank 0's).
TEST(BadInput, UnderMpirunTheMessageComesOnceAndTheJobExitsTwo) {
  const Finished r = run(mpirun(2) + bin("bench_allreduce") + " --csv /nonexistent/dir/x.csv");
  EXPECT_EQ(r.status, 2) << r.output;
  std::size_t count = 0;
  for (std::size_t at = 0; (at = r.output.find("'/nonexistent/dir/x.csv'", at)) != std::string::npos; ++at) ++count;
  EXPECT_EQ(count, 1u) << r.output;
}
#endif
