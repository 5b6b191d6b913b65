// Built-in systems and the JSON form of a system, with a schema check that names the bad field.
#include "predict/system.h"

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/text.h"

namespace parbench::predict {

std::string processing_name(Processing p) { return p == Processing::roofline ? "roofline" : "no_overlap"; }

double Curve::at(double size) const {
  for (const auto& [threshold, eff] : points)
    if (size >= threshold) return eff;
  return points.empty() ? 1.0 : points.back().second;
}

namespace {

// Calculon's published A100 curves (predict/README.md): matrix and vector efficiency by the op's GFLOP, HBM
// efficiency by the bytes an op moves.
Curve calculon_matrix() { return {{{128, 0.95}, {16, 0.9}, {1, 0.6}, {0, 0.1}}}; }
Curve calculon_vector() { return {{{16, 0.95}, {1, 0.5}, {0, 0.5}}}; }
Curve calculon_hbm() { return {{{100e6, 0.9}, {10e6, 0.75}, {1e6, 0.6}, {0, 0.3}}}; }

SystemModel dgx_a100() {
  GpuModel g{"A100-SXM4-80GB", 312, 19.5, 78, 2039, 80e9, calculon_matrix(), calculon_vector(), calculon_hbm()};
  g.processing = Processing::no_overlap;  // as Calculon's file
  return {"dgx-a100", g,
          {{"nvlink3", 8, 300, 0.6, 1.0}, {"infiniband-hdr", 1 << 30, 25, 0.9, 2.0}},
          "A100 80GB SXM data sheet; DGX A100: NVSwitch, 8 HDR NICs per node; Calculon's A100 efficiencies"};
}

SystemModel dgx_h100() {
  GpuModel g{"H100-SXM5-80GB", 989, 67, 134, 3350, 80e9, calculon_matrix(), calculon_vector(), calculon_hbm()};
  g.processing = Processing::no_overlap;
  return {"dgx-h100", g,
          {{"nvlink4", 8, 450, 0.6, 1.0}, {"infiniband-ndr", 1 << 30, 50, 0.9, 2.0}},
          "H100 SXM data sheet; DGX H100: NVSwitch, 8 NDR NICs per node; efficiencies as Calculon's A100 file"};
}

SystemModel h200() {
  SystemModel s = dgx_h100();
  s.name = "h200";
  s.gpu.name = "H200-SXM-141GB";
  s.gpu.hbm_gbps = 4800;
  s.gpu.hbm_bytes = 141e9;
  s.source = "H200 SXM data sheet (H100 compute, 141 GB HBM3e at 4.8 TB/s); network as DGX H100";
  return s;
}

// A 2-core VM running the cpu device; scripts/calibrate.sh measures the real figures and writes a file.
SystemModel this_machine_default() {
  GpuModel g{"cpu", 0.01, 0.01, 0.005, 10, 8e9, {{{0, 1.0}}}, {{{0, 1.0}}}, {{{0, 1.0}}}};
  return {"this-machine", g, {{"shared-memory", 1 << 30, 1.0, 1.0, 20.0}},
          "uncalibrated default: run scripts/calibrate.sh to measure this machine"};
}

}  // namespace

std::vector<std::string> builtin_system_names() { return {"dgx-a100", "dgx-h100", "h200", "this-machine"}; }

SystemModel builtin_system(const std::string& name) {
  if (name == "dgx-a100") return dgx_a100();
  if (name == "dgx-h100") return dgx_h100();
  if (name == "h200") return h200();
  if (name == "this-machine") return this_machine_default();
  throw UsageError("--system '" + name + "' is unknown; accepted: " + join(builtin_system_names()) +
                   ", or a system FILE.json");
}

SystemModel load_system(const std::string& name_or_file) {
  const bool file = name_or_file.find('/') != std::string::npos ||
                    (name_or_file.size() > 5 && name_or_file.substr(name_or_file.size() - 5) == ".json");
  std::string path = name_or_file;
  if (!file) {
    const char* env = std::getenv("PARBENCH_THIS_MACHINE");
    if (name_or_file != "this-machine" || !env || !*env) return builtin_system(name_or_file);
    path = env;  // scripts/calibrate.sh's file
  }
  std::ifstream in(path);
  if (!in) throw UsageError("--system: cannot read system file " + path + "; accepted: a built-in name or FILE.json");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError("system file " + path + " is not JSON: " + e.what());
  }
  return system_from_json(j, path);
}

}  // namespace parbench::predict
