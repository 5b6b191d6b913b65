// Helpers for the plots tests: scratch directories, PNG/SVG checks, running parbench-plot, input generators.
#include "plot_test_util.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

namespace parbench::plots::test {

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

namespace {

std::uint32_t be32(const std::string& s, std::size_t at) {
  return (std::uint32_t(static_cast<unsigned char>(s[at])) << 24) |
         (std::uint32_t(static_cast<unsigned char>(s[at + 1])) << 16) |
         (std::uint32_t(static_cast<unsigned char>(s[at + 2])) << 8) | std::uint32_t(static_cast<unsigned char>(s[at + 3]));
}

}  // namespace

PngInfo check_png(const std::string& path) {
  const std::string png = read_file(path);
  static const char kSignature[] = "\x89PNG\r\n\x1a\n";
  if (png.size() < 8 || png.compare(0, 8, kSignature, 8) != 0) throw std::runtime_error(path + ": no PNG signature");
  std::size_t at = 8;
  PngInfo info;
  int bit_depth = 0, color_type = -1, interlace = -1;
  std::string idat;
  bool first = true, ended = false;
  while (at + 12 <= png.size()) {
    const std::uint32_t length = be32(png, at);
    if (at + 12 + length > png.size()) throw std::runtime_error(path + ": truncated chunk");
    const std::string type = png.substr(at + 4, 4);
    const std::uint32_t crc = be32(png, at + 8 + length);
    const auto* bytes = reinterpret_cast<const Bytef*>(png.data() + at + 4);
    if (::crc32(0L, bytes, 4 + length) != crc) throw std::runtime_error(path + ": bad CRC in " + type);
    if (first && type != "IHDR") throw std::runtime_error(path + ": first chunk is " + type);
    if (type == "IHDR") {
      if (length != 13) throw std::runtime_error(path + ": IHDR length");
      info.width = static_cast<int>(be32(png, at + 8));
      info.height = static_cast<int>(be32(png, at + 12));
      bit_depth = static_cast<unsigned char>(png[at + 16]);
      color_type = static_cast<unsigned char>(png[at + 17]);
      interlace = static_cast<unsigned char>(png[at + 20]);
    } else if (type == "IDAT") {
      idat.append(png, at + 8, length);
    } else if (type == "IEND") {
      ended = true;
      at += 12 + length;
      break;
    }
    first = false;
    at += 12 + length;
  }
  if (!ended || at != png.size()) throw std::runtime_error(path + ": no IEND at the end");
  if (interlace != 0) throw std::runtime_error(path + ": interlaced PNG not expected");
  const int channels = color_type == 0 ? 1 : color_type == 2 ? 3 : color_type == 3 ? 1 : color_type == 4 ? 2 : 4;
  const std::size_t row = (static_cast<std::size_t>(info.width) * channels * bit_depth + 7) / 8 + 1;
  const std::size_t expected = row * static_cast<std::size_t>(info.height);
  std::string raw(expected + 1, '\0');  // one spare byte: inflating more than expected is an error too
  uLongf raw_size = static_cast<uLongf>(raw.size());
  const int rc = ::uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_size,
                              reinterpret_cast<const Bytef*>(idat.data()), static_cast<uLong>(idat.size()));
  if (rc != Z_OK) throw std::runtime_error(path + ": IDAT does not inflate (zlib " + std::to_string(rc) + ")");
  if (raw_size != expected)
    throw std::runtime_error(path + ": IDAT inflates to " + std::to_string(raw_size) + " bytes, expected " +
                             std::to_string(expected));
  std::set<unsigned char> distinct(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(raw_size));
  info.distinct_bytes = distinct.size();
  return info;
}

std::pair<int, int> svg_size(const std::string& path) {
  const std::string svg = read_file(path);
  const auto open = svg.find("<svg");
  if (open == std::string::npos) throw std::runtime_error(path + ": no <svg> element");
  if (svg.find("</svg>") == std::string::npos) throw std::runtime_error(path + ": no </svg>: incomplete");
  const auto close = svg.find('>', open);
  const std::string tag = svg.substr(open, close - open);
  auto attribute = [&](const std::string& name) {
    const auto at = tag.find(" " + name + "=\"");
    if (at == std::string::npos) throw std::runtime_error(path + ": <svg> has no " + name);
    return std::stoi(tag.substr(at + name.size() + 3));
  };
  return {attribute("width"), attribute("height")};
}

RunResult run_plot(const std::vector<std::string>& args) {
  std::string cmd = PARBENCH_PLOT_EXE;
  for (const std::string& a : args) {
    cmd += " '";
    for (char c : a) cmd += c == '\'' ? std::string("'\\''") : std::string(1, c);
    cmd += "'";
  }
  char err_path[] = "/tmp/parbench-plots-err-XXXXXX";
  const int fd = ::mkstemp(err_path);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  ::close(fd);
  cmd += " >/dev/null 2>" + std::string(err_path);
  const int status = std::system(cmd.c_str());
  RunResult r;
  r.err = read_file(err_path);
  std::remove(err_path);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool have_gnuplot() { return std::system("gnuplot -e 'exit' >/dev/null 2>&1") == 0; }

std::string collectives_csv(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(0.95, 1.05);
  std::ostringstream out;
  out << "collective,impl,device,ranks,nodes,dtype,op,root,inplace,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong\n";
  struct Impl {
    const char* name;
    double bw_gbps, latency_us;
  };
  for (const char* coll : {"allreduce", "allgather"}) {
    for (Impl impl : {Impl{"ring", 9.0, 14.0}, Impl{"tree", 7.0, 8.0}, Impl{"mpi", 2.2, 11.0}}) {
      for (int n : {2, 4}) {
        const double factor = std::string(coll) == "allreduce" ? 2.0 * (n - 1) / n : double(n - 1) / n;
        for (std::uint64_t bytes = 8; bytes <= (std::uint64_t{64} << 20); bytes *= 4) {
          const double t = (impl.latency_us + bytes * factor / (impl.bw_gbps * 1e3)) * jitter(rng);
          const double algbw = bytes / t / 1e3;
          out << coll << "," << impl.name << ",cpu," << n << ",1,f32,sum,0,0," << bytes << "," << bytes / 4 << ","
              << t << "," << algbw << "," << algbw * factor << ",0\n";
        }
      }
    }
  }
  return out.str();
}

std::string training_csv(unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(0.97, 1.03);
  std::ostringstream out;
  out << "model,scheme,schedule,device,impl,ranks,tp,pp,dp,microbatches,global_batch,micro_batch,step_ms,"
         "samples_per_s,tokens_per_s,tflops_per_rank,mfu,bubble_measured,bubble_theory,peak_bytes,params_bytes,"
         "grads_bytes,optimizer_bytes,activations_bytes,comm_buffer_bytes,workspace_bytes,comm_bytes_per_step,"
         "loss,max_param_diff_vs_single,estimate_bytes\n";
  const double psi = 124e6;
  struct Scheme {
    const char* name;
    double efficiency;
  };
  for (Scheme s : {Scheme{"ddp", 0.93}, Scheme{"zero1", 0.9}, Scheme{"zero3", 0.78}}) {
    for (int n : {1, 2, 4, 8}) {
      const double sps = 40.0 * n * std::pow(s.efficiency, std::log2(n)) * jitter(rng);
      const std::string name = s.name;
      const double params = name == "zero3" ? 4 * psi / n : 4 * psi;
      const double grads = name == "ddp" ? 4 * psi : 4 * psi / n;
      const double optim = name == "ddp" ? 8 * psi : 8 * psi / n;
      const double act = 1.5e9, comm = n > 1 ? 2.5e8 : 0, ws = 6.4e7;
      out << "gpt2-124m," << name << ",,cpu,ref," << n << ",1,1," << n << ",1," << 8 * n << ",8,"
          << 1000 * 8 * n / sps << "," << sps << "," << sps * 1024 << ",0.9,0.21,,,"
          << params + grads + optim + act + comm + ws << "," << params << "," << grads << "," << optim << "," << act
          << "," << comm << "," << ws << "," << 2 * 4 * psi * (n - 1) / n << ",3.1,," << params + grads + optim
          << "\n";
    }
  }
  for (const char* sched : {"gpipe", "1f1b", "interleaved"}) {
    for (int m : {1, 2, 4, 8, 16}) {
      const int p = 4;
      const double theory =
          std::string(sched) == "interleaved" ? (p - 1.0) / (2.0 * m + p - 1) : (p - 1.0) / (m + p - 1);
      const double measured = std::min(0.95, theory * jitter(rng) + 0.015);
      out << "gpt2-124m,pipeline," << sched << ",cpu,ref,4,1,4,1," << m << "," << 8 * m << ",8,120,"
          << 8 * m / 0.12 << ",9000,0.8,0.2," << measured << "," << theory << ",2.1e9,2.5e8,2.5e8,5e8,9e8,1e8,6e7,"
          << "4e7,3.2,,1.0e9\n";
    }
  }
  return out.str();
}

std::string pipeline_trace_json(int p, int m, int steps, bool with_idle_events) {
  // GPipe: all forwards, then all backwards; F = 1 ms, B = 2 ms, a 0.2 ms receive before each dependent op.
  const double F = 1000, B = 2000, C = 200;
  std::ostringstream out;
  out << "{\"traceEvents\":[\n";
  bool first = true;
  auto event = [&](const std::string& name, const char* cat, double ts, double dur, int pid, const std::string& args) {
    out << (first ? "" : ",\n") << "{\"name\":\"" << name << "\",\"cat\":\"" << cat << "\",\"ph\":\"X\",\"ts\":" << ts
        << ",\"dur\":" << dur << ",\"pid\":" << pid << ",\"tid\":0,\"args\":{" << args << "}}";
    first = false;
  };
  for (int s = 0; s < p; ++s) {
    out << (first ? "" : ",\n") << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << s
        << ",\"tid\":0,\"args\":{\"name\":\"stage " << s << "\"}}";
    first = false;
  }
  double t0 = 0;
  for (int step = 0; step < steps; ++step) {
    std::vector<std::vector<double>> f_end(p, std::vector<double>(m)), b_end(p, std::vector<double>(m));
    std::vector<double> clock(p, t0);
    for (int s = 0; s < p; ++s)
      for (int k = 0; k < m; ++k) {
        double start = clock[s];
        if (s > 0) {
          event("recv", "communication", f_end[s - 1][k], C, s, "\"mb\":" + std::to_string(k));
          start = std::max(start, f_end[s - 1][k] + C);
        }
        event("F mb=" + std::to_string(k), "compute", start, F, s, "\"stage\":" + std::to_string(s) + ",\"mb\":" + std::to_string(k));
        f_end[s][k] = clock[s] = start + F;
      }
    for (int s = p - 1; s >= 0; --s)
      for (int k = 0; k < m; ++k) {
        double start = clock[s];
        if (s < p - 1) {
          event("recv", "communication", b_end[s + 1][k], C, s, "\"mb\":" + std::to_string(k));
          start = std::max(start, b_end[s + 1][k] + C);
        }
        event("B", "compute", start, B, s, "\"stage\":" + std::to_string(s) + ",\"mb\":" + std::to_string(k));
        b_end[s][k] = clock[s] = start + B;
      }
    double end = *std::max_element(clock.begin(), clock.end());
    for (int s = 0; s < p; ++s) {
      if (with_idle_events && clock[s] < end) event("idle", "idle", clock[s], end - clock[s], s, "");
      event("optimizer", "optimizer", end, 300, s, "");
      event("step", "compute", t0, end + 300 - t0, s, "");
    }
    t0 = end + 500;
  }
  out << "\n],\"displayTimeUnit\":\"ms\"}\n";
  return out.str();
}

}  // namespace parbench::plots::test
