// A system as JSON: reading with a schema check (every field named in its error), and writing.
#include <algorithm>
#include <array>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/text.h"
#include "predict/system.h"

namespace parbench::predict {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& field, const std::string& why) {
  throw UsageError(where + ": field '" + field + "' " + why + " (schema: predict/README.md)");
}

void only_keys(const json& j, const std::set<std::string>& allowed, const std::string& where, const std::string& at) {
  if (!j.is_object()) bad(where, at.empty() ? "(top level)" : at, "must be an object");
  for (const auto& [k, v] : j.items())
    if (!allowed.count(k)) bad(where, at + k, "is unknown; accepted: " + join(allowed));
}

double number(const json& j, const std::string& key, const std::string& where, const std::string& at, double min,
              double max) {
  if (!j.contains(key)) bad(where, at + key, "is missing");
  const json& v = j.at(key);
  if (!v.is_number()) bad(where, at + key, "must be a number, got " + v.dump());
  const double d = v.get<double>();
  if (!(d >= min && d <= max))
    bad(where, at + key, "= " + v.dump() + " is out of range; accepted: " + std::to_string(min) + " .. " +
                             std::to_string(max));
  return d;
}

std::string text(const json& j, const std::string& key, const std::string& where, const std::string& at) {
  if (!j.contains(key)) bad(where, at + key, "is missing");
  if (!j.at(key).is_string()) bad(where, at + key, "must be a string, got " + j.at(key).dump());
  return j.at(key).get<std::string>();
}

// A list of [threshold >= 0, efficiency in (0, 1]] or [threshold, efficiency, spread >= 0] points (all with a spread
// or none), sorted by threshold, descending.
Curve curve_of(const json& v, const std::string& where, const std::string& field) {
  const std::string form =
      "must be a non-empty list of [threshold >= 0, efficiency in (0, 1]] or [threshold, efficiency, spread >= 0] "
      "points, all with a spread or none";
  if (!v.is_array() || v.empty()) bad(where, field, form);
  std::vector<std::array<double, 3>> pts;
  const std::size_t width = v[0].is_array() ? v[0].size() : 0;
  for (const json& p : v) {
    if (!p.is_array() || (p.size() != 2 && p.size() != 3) || p.size() != width) bad(where, field, form);
    for (const json& x : p)
      if (!x.is_number()) bad(where, field, form + ", got " + p.dump());
    const double t = p[0].get<double>(), e = p[1].get<double>(), sp = width == 3 ? p[2].get<double>() : 0;
    if (t < 0 || !(e > 0 && e <= 1) || !(sp >= 0 && sp < 1)) bad(where, field, form + ", got " + p.dump());
    pts.push_back({t, e, sp});
  }
  std::sort(pts.begin(), pts.end(), [](const auto& a, const auto& b) { return a[0] > b[0]; });
  Curve c;
  for (const auto& p : pts) {
    c.points.push_back({p[0], p[1]});
    if (width == 3) c.spread.push_back(p[2]);
  }
  return c;
}

Curve curve(const json& j, const std::string& key, const std::string& where, const std::string& at) {
  if (!j.contains(key)) bad(where, at + key, "is missing");
  return curve_of(j.at(key), where, at + key);
}

json curve_json(const Curve& c) {
  json a = json::array();
  for (std::size_t i = 0; i < c.points.size(); ++i) {
    json p = {c.points[i].first, c.points[i].second};
    if (!c.spread.empty()) p.push_back(c.spread[i]);
    a.push_back(p);
  }
  return a;
}

// A network level's efficiency: a number (flat, the older form) or a curve by the collective's bytes.
Curve link_efficiency(const json& l, const std::string& where, const std::string& at) {
  if (l.contains("efficiency") && l.at("efficiency").is_array()) return curve(l, "efficiency", where, at);
  return {{{0, number(l, "efficiency", where, at, 1e-6, 1)}}, {}};
}

json link_efficiency_json(const Curve& c) {
  const bool flat = c.points.size() == 1 && c.points[0].first == 0 && c.spread.empty();
  return flat ? json(c.points[0].second) : curve_json(c);
}

// A measured entry's "dtype": its element size (f32 4 bytes, bf16 2).
int element_bytes(const json& entry, const std::string& where, const std::string& at) {
  const std::string dtype = text(entry, "dtype", where, at);
  if (dtype != "f32" && dtype != "bf16") bad(where, at + "dtype", "= \"" + dtype + "\" is unknown; accepted: f32, bf16");
  return dtype == "f32" ? 4 : 2;
}

// A list of measured entries, gpu.FIELD: each entry's keys checked against `keys` and its values read by
// `read(entry, at)`; an entry of the same shape and dtype as an earlier one is refused at its `shape_key`.
template <class T, class Read>
std::vector<T> measured_list(const json& v, const std::string& where, const std::string& field,
                             const std::set<std::string>& keys, const std::string& shape_key, const Read& read) {
  if (!v.is_array()) bad(where, "gpu." + field, "must be a list of measured " + field + " entries");
  std::vector<T> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string at = "gpu." + field + "[" + std::to_string(i) + "].";
    only_keys(v[i], keys, where, at);
    const T m = read(v[i], at);
    for (const T& o : out)
      if (o.same_shape(m)) bad(where, at + shape_key, "repeats an earlier entry's shape and dtype");
    out.push_back(m);
  }
  return out;
}

// gpu.linears: [{"tokens", "in", "out", "dtype": "f32" | "bf16", "forward_us", "input_gradient_us",
// "weight_gradient_us"}, ...], no shape and dtype twice.
std::vector<MeasuredLinear> linears_from_json(const json& v, const std::string& where) {
  auto read = [&](const json& e, const std::string& at) {
    MeasuredLinear m;
    m.tokens = number(e, "tokens", where, at, 1, 1e12);
    m.in = number(e, "in", where, at, 1, 1e9);
    m.out = number(e, "out", where, at, 1, 1e9);
    m.dtype_bytes = element_bytes(e, where, at);
    m.forward_s = number(e, "forward_us", where, at, 1e-6, 1e12) * 1e-6;
    m.input_gradient_s = number(e, "input_gradient_us", where, at, 1e-6, 1e12) * 1e-6;
    m.weight_gradient_s = number(e, "weight_gradient_us", where, at, 1e-6, 1e12) * 1e-6;
    return m;
  };
  return measured_list<MeasuredLinear>(
      v, where, "linears",
      {"tokens", "in", "out", "dtype", "forward_us", "input_gradient_us", "weight_gradient_us"}, "tokens", read);
}

json linears_json(const std::vector<MeasuredLinear>& linears) {
  json a = json::array();
  for (const MeasuredLinear& m : linears)
    a.push_back({{"tokens", m.tokens}, {"in", m.in}, {"out", m.out}, {"dtype", m.dtype_bytes == 4 ? "f32" : "bf16"},
                 {"forward_us", m.forward_s * 1e6}, {"input_gradient_us", m.input_gradient_s * 1e6},
                 {"weight_gradient_us", m.weight_gradient_s * 1e6}});
  return a;
}

// gpu.attention: [{"batch", "heads", "seq", "head_dim", "dtype": "bf16" | "f32", "forward_us", "backward_us"}, ...],
// no shape and dtype twice.
std::vector<MeasuredAttention> attention_from_json(const json& v, const std::string& where) {
  auto read = [&](const json& e, const std::string& at) {
    MeasuredAttention m;
    m.batch = number(e, "batch", where, at, 1, 1e9);
    m.heads = number(e, "heads", where, at, 1, 1e9);
    m.seq = number(e, "seq", where, at, 1, 1e9);
    m.head_dim = number(e, "head_dim", where, at, 1, 1e9);
    m.dtype_bytes = element_bytes(e, where, at);
    m.forward_s = number(e, "forward_us", where, at, 1e-6, 1e12) * 1e-6;
    m.backward_s = number(e, "backward_us", where, at, 1e-6, 1e12) * 1e-6;
    return m;
  };
  return measured_list<MeasuredAttention>(
      v, where, "attention", {"batch", "heads", "seq", "head_dim", "dtype", "forward_us", "backward_us"}, "batch",
      read);
}

json attention_json(const std::vector<MeasuredAttention>& attention) {
  json a = json::array();
  for (const MeasuredAttention& m : attention)
    a.push_back({{"batch", m.batch}, {"heads", m.heads}, {"seq", m.seq}, {"head_dim", m.head_dim},
                 {"dtype", m.dtype_bytes == 4 ? "f32" : "bf16"}, {"forward_us", m.forward_s * 1e6},
                 {"backward_us", m.backward_s * 1e6}});
  return a;
}

GpuModel gpu_from_json(const json& g, const std::string& where) {
  const std::string at = "gpu.";
  only_keys(g, {"name", "matrix_tflops_16", "matrix_tflops_32", "hbm_gbps", "hbm_gb", "matrix_efficiency",
                "hbm_efficiency", "compute_units", "processing", "op_overhead_us", "optimizer_gbps",
                "gelu_gbps", "matrix_efficiency_by_k", "linears", "attention", "sms"},
            where, at);
  GpuModel m;
  m.name = text(g, "name", where, at);
  m.matrix_tflops_16 = number(g, "matrix_tflops_16", where, at, 1e-9, 1e6);
  m.matrix_tflops_32 = number(g, "matrix_tflops_32", where, at, 1e-9, 1e6);
  m.hbm_gbps = number(g, "hbm_gbps", where, at, 1e-6, 1e6);
  m.hbm_bytes = number(g, "hbm_gb", where, at, 1e-6, 1e6) * 1e9;
  m.matrix_efficiency = curve(g, "matrix_efficiency", where, at);
  m.hbm_efficiency = curve(g, "hbm_efficiency", where, at);
  if (g.contains("compute_units")) m.compute_units = number(g, "compute_units", where, at, 0, 1 << 20);
  if (g.contains("op_overhead_us")) m.op_overhead_s = number(g, "op_overhead_us", where, at, 0, 1e6) * 1e-6;
  if (g.contains("optimizer_gbps")) m.optimizer_gbps = number(g, "optimizer_gbps", where, at, 1e-6, 1e6);
  if (g.contains("gelu_gbps")) m.gelu_gbps = number(g, "gelu_gbps", where, at, 1e-6, 1e6);
  if (g.contains("sms")) {
    const double n = number(g, "sms", where, at, 1, 1 << 20);
    if (n != std::floor(n)) bad(where, at + "sms", "= " + g.at("sms").dump() + " must be a whole number");
    m.sms = int(n);
  }
  if (g.contains("matrix_efficiency_by_k")) {
    // All three kinds or none: a missing one would leave its GEMMs on a curve keyed by something else.
    const json& k = g.at("matrix_efficiency_by_k");
    const std::string kat = at + "matrix_efficiency_by_k.";
    only_keys(k, {"forward", "input_gradient", "weight_gradient"}, where, kat);
    m.matrix_efficiency_by_k = {curve(k, "forward", where, kat), curve(k, "input_gradient", where, kat),
                                curve(k, "weight_gradient", where, kat)};
  }
  if (g.contains("linears")) m.measured_linears = linears_from_json(g.at("linears"), where);
  if (g.contains("attention")) m.measured_attention = attention_from_json(g.at("attention"), where);
  if (g.contains("processing")) {
    const std::string p = text(g, "processing", where, at);
    if (p != "roofline" && p != "no_overlap")
      bad(where, at + "processing", "= \"" + p + "\" is unknown; accepted: roofline, no_overlap");
    m.processing = p == "roofline" ? Processing::roofline : Processing::no_overlap;
  }
  return m;
}

}  // namespace

SystemModel system_from_json(const json& j, const std::string& where) {
  only_keys(j, {"name", "source", "gpu", "network", "collective_algorithms", "host_cpu"}, where, "");
  SystemModel s;
  s.name = text(j, "name", where, "");
  if (j.contains("source")) s.source = text(j, "source", where, "");
  if (j.contains("collective_algorithms")) {
    const std::string a = text(j, "collective_algorithms", where, "");
    if (a != "every" && a != "nccl")
      bad(where, "collective_algorithms", "= \"" + a + "\" is unknown; accepted: every, nccl");
    s.collective_algorithms = a == "nccl" ? CollectiveAlgorithms::nccl : CollectiveAlgorithms::every;
  }
  if (j.contains("host_cpu")) {
    const std::string c = text(j, "host_cpu", where, "");
    if (c != "intel" && c != "amd") bad(where, "host_cpu", "= \"" + c + "\" is unknown; accepted: intel, amd");
    s.host_cpu = c == "amd" ? HostCpu::amd : HostCpu::intel;
  }
  if (!j.contains("gpu")) bad(where, "gpu", "is missing");
  s.gpu = gpu_from_json(j.at("gpu"), where);
  if (!j.contains("network") || !j.at("network").is_array() || j.at("network").empty())
    bad(where, "network", "must be a non-empty list of levels, innermost first");
  int reach = 1;
  for (std::size_t i = 0; i < j.at("network").size(); ++i) {
    const json& l = j.at("network")[i];
    const std::string at = "network[" + std::to_string(i) + "].";
    only_keys(l, {"name", "gpus", "gbps", "efficiency", "latency_us", "collective_latency_us", "step_latency_us"},
              where, at);
    NetLevel n{text(l, "name", where, at), int(number(l, "gpus", where, at, 1, 1 << 30)),
               number(l, "gbps", where, at, 1e-9, 1e6), link_efficiency(l, where, at),
               number(l, "latency_us", where, at, 0, 1e7)};
    if (l.contains("collective_latency_us"))
      n.collective_latency_us = number(l, "collective_latency_us", where, at, 0, 1e7);
    if (l.contains("step_latency_us")) n.step_latency_us = number(l, "step_latency_us", where, at, 0, 1e7);
    if (n.size % reach != 0 || n.size < reach)
      bad(where, at + "gpus", "= " + std::to_string(n.size) + " must be a multiple of the inner level's " +
                                  std::to_string(reach));
    reach = n.size;
    s.levels.push_back(n);
  }
  return s;
}

json system_to_json(const SystemModel& s) {
  const GpuModel& g = s.gpu;
  json net = json::array();
  for (const NetLevel& l : s.levels)
    net.push_back({{"name", l.name}, {"gpus", l.size}, {"gbps", l.gbps}, {"efficiency", link_efficiency_json(l.efficiency)},
                   {"latency_us", l.latency_us}, {"collective_latency_us", l.collective_latency_us},
                   {"step_latency_us", l.step_latency_us}});
  json gpu = {{"name", g.name}, {"matrix_tflops_16", g.matrix_tflops_16}, {"matrix_tflops_32", g.matrix_tflops_32},
              {"hbm_gbps", g.hbm_gbps}, {"hbm_gb", g.hbm_bytes / 1e9},
              {"matrix_efficiency", curve_json(g.matrix_efficiency)}, {"hbm_efficiency", curve_json(g.hbm_efficiency)},
              {"compute_units", g.compute_units}, {"processing", processing_name(g.processing)},
              {"op_overhead_us", g.op_overhead_s * 1e6}};
  // Optional measured rates and k-keyed curves: absent means the HBM figures and the GFLOP curve.
  if (g.optimizer_gbps > 0) gpu["optimizer_gbps"] = g.optimizer_gbps;
  if (g.gelu_gbps > 0) gpu["gelu_gbps"] = g.gelu_gbps;
  if (g.sms > 0) gpu["sms"] = g.sms;
  if (!g.measured_linears.empty()) gpu["linears"] = linears_json(g.measured_linears);
  if (!g.measured_attention.empty()) gpu["attention"] = attention_json(g.measured_attention);
  if (const GemmCurvesByK& k = g.matrix_efficiency_by_k; !k.empty())
    gpu["matrix_efficiency_by_k"] = {{"forward", curve_json(k.forward)},
                                     {"input_gradient", curve_json(k.input_gradient)},
                                     {"weight_gradient", curve_json(k.weight_gradient)}};
  const bool nccl = s.collective_algorithms == CollectiveAlgorithms::nccl;
  return {{"name", s.name}, {"source", s.source}, {"gpu", gpu}, {"network", net},
          {"collective_algorithms", nccl ? "nccl" : "every"},
          {"host_cpu", s.host_cpu == HostCpu::amd ? "amd" : "intel"}};
}

}  // namespace parbench::predict
