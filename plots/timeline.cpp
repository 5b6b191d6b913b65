// timeline: a Gantt chart of one pipeline step from a Chrome trace (bench_train --trace): one row per pid
// (rank / stage), or per track (a rank's stream or thread), boxes coloured by kind (forward, backward,
// weight-gradient, communication, optimizer, idle).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/error.h"
#include "base/text.h"
#include "plots/figures.h"

namespace parbench::plots {
namespace {

using nlohmann::json;

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// "step", "step 3", "step=3", "step_3": the ranges that mark one training step.
bool is_step_event(const std::string& name) {
  const std::string n = ascii_lower(name);
  return starts_with(n, "step") && (n.size() == 4 || !std::isalpha(static_cast<unsigned char>(n[4])));
}

std::optional<std::int64_t> microbatch_of(const json& event, const std::string& name) {
  if (const auto a = event.find("args"); a != event.end() && a->is_object()) {
    for (const char* key : {"mb", "microbatch"})
      if (const auto v = a->find(key); v != a->end() && v->is_number_integer()) return v->get<std::int64_t>();
  }
  // "F mb=3" without args
  if (const auto at = name.find("mb="); at != std::string::npos) {
    std::size_t i = at + 3;
    std::int64_t v = 0;
    bool digits = false;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) v = v * 10 + (name[i++] - '0'), digits = true;
    if (digits) return v;
  }
  return std::nullopt;
}

double number_field(const json& e, const char* key, const std::string& where) {
  const auto v = e.find(key);
  if (v == e.end() || !v->is_number() || !std::isfinite(v->get<double>()))
    throw UsageError(where + ": '" + key + "' is missing or not a finite number");
  return v->get<double>();
}

// A row of the figure: a pid, or a pid and a tid when rows are tracks (tid 0 otherwise).
using RowKey = std::pair<std::int64_t, std::int64_t>;

struct RawEvent {
  std::string name;
  std::optional<SpanKind> kind;
  std::int64_t pid;
  RowKey row;
  double start_us, end_us;
  std::optional<std::int64_t> microbatch;
  std::optional<std::int64_t> chunk;
};

std::optional<std::int64_t> chunk_of(const json& event) {
  if (const auto a = event.find("args"); a != event.end() && a->is_object())
    if (const auto v = a->find("chunk"); v != a->end() && v->is_number_integer()) return v->get<std::int64_t>();
  return std::nullopt;
}

}  // namespace

const char* span_kind_name(SpanKind kind) {
  switch (kind) {
    case SpanKind::forward: return "forward";
    case SpanKind::backward: return "backward";
    case SpanKind::weight_grad: return "weight gradient";
    case SpanKind::communication: return "communication";
    case SpanKind::optimizer: return "optimizer";
    case SpanKind::other_compute: return "other compute";
    case SpanKind::idle: return "idle";
  }
  return "unknown";
}

std::optional<SpanKind> classify_event(const std::string& name, const std::string& cat) {
  const std::string n = ascii_lower(name);
  const std::string c = ascii_lower(cat);
  const std::string token = n.substr(0, n.find_first_of(" =:(["));
  // A single letter with an optional microbatch number: "F", "B3", "W12".
  auto letter = [&](char l) {
    return !token.empty() && token[0] == l &&
           std::all_of(token.begin() + 1, token.end(), [](unsigned char ch) { return std::isdigit(ch); });
  };
  if (c == "idle" || starts_with(n, "idle") || starts_with(n, "bubble")) return SpanKind::idle;
  if (starts_with(n, "send") || starts_with(n, "recv") || starts_with(n, "isend") || starts_with(n, "irecv"))
    return SpanKind::communication;
  if (letter('w') || n.find("wgrad") != std::string::npos || n.find("weight") != std::string::npos)
    return SpanKind::weight_grad;
  if (letter('b') || token == "bwd" || starts_with(n, "backward")) return SpanKind::backward;
  if (letter('f') || token == "fwd" || starts_with(n, "forward")) return SpanKind::forward;
  if (c == "communication") return SpanKind::communication;
  if (c == "optimizer" || starts_with(n, "optim")) return SpanKind::optimizer;
  return std::nullopt;
}

namespace {

json parse_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot open input '" + path + "': " + std::strerror(errno));
  try {
    return json::parse(in);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large for a double
    throw UsageError(path + ": not valid JSON: " + e.what());
  }
}

const json& trace_events(const json& doc, const std::string& path) {
  if (doc.is_array()) return doc;
  if (doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array()) return doc["traceEvents"];
  throw UsageError(path + ": not a Chrome trace (expected an object with a \"traceEvents\" array, or an array)");
}

// The trace's complete events ("ph":"X"): step markers apart from the rest, and the process names.
struct TraceEvents {
  std::map<std::int64_t, std::string> names;  // pid -> process_name
  std::map<RowKey, std::string> tracks;       // (pid, tid) -> thread_name
  std::vector<RawEvent> raw, steps;
};

// The integer field `key` of `e`, or 0 when absent or not an integer.
std::int64_t int_field(const json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
}

TraceEvents read_events(const json& events, const std::string& path, bool by_track) {
  TraceEvents out;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    const std::string where = path + ": traceEvents[" + std::to_string(i) + "]";
    if (!e.is_object()) throw UsageError(where + ": not an object");
    // json::value throws (not our Error) when the field exists with another type: read strings by hand.
    auto text = [&](const char* key) { return e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : ""; };
    const std::string ph = text("ph");
    const auto pid_it = e.find("pid");
    if (ph == "M") {
      if (pid_it != e.end() && pid_it->is_number_integer() && e.contains("args") && e["args"].is_object() &&
          e["args"].contains("name") && e["args"]["name"].is_string()) {
        const std::string value = e["args"]["name"].get<std::string>();
        if (text("name") == "process_name") out.names[pid_it->get<std::int64_t>()] = value;
        if (text("name") == "thread_name") out.tracks[{pid_it->get<std::int64_t>(), int_field(e, "tid")}] = value;
      }
      continue;
    }
    if (ph != "X") continue;
    if (pid_it == e.end() || !pid_it->is_number_integer())
      throw UsageError(where + ": 'pid' is missing or not an integer");
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    const std::string cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    const double ts = number_field(e, "ts", where);
    const double dur = number_field(e, "dur", where);
    if (dur < 0) throw UsageError(where + ": 'dur' is negative");
    const std::int64_t pid = pid_it->get<std::int64_t>();
    RawEvent r{name, classify_event(name, cat), pid, {pid, by_track ? int_field(e, "tid") : 0}, ts, ts + dur,
               microbatch_of(e, name), chunk_of(e)};
    (is_step_event(name) ? out.steps : out.raw).push_back(std::move(r));
  }
  if (out.raw.empty()) throw UsageError(path + ": no complete events (\"ph\":\"X\") to draw");
  return out;
}

// The time window to draw [begin, end) in trace microseconds: step `step` (-1: the last) across every pid, or
// the whole trace when it has no step markers. Sets tl.steps and tl.step.
std::pair<double, double> step_window(const TraceEvents& ev, int step, const std::string& path, Timeline& tl) {
  double begin = 1e300, end = -1e300;
  if (ev.steps.empty()) {
    if (step > 0) throw UsageError("--step " + std::to_string(step) + ": the trace '" + path + "' has no step events");
    for (const RawEvent& r : ev.raw) begin = std::min(begin, r.start_us), end = std::max(end, r.end_us);
    return {begin, end > begin ? end : begin + 1};
  }
  std::map<std::int64_t, std::vector<const RawEvent*>> per_pid;
  for (const RawEvent& s : ev.steps) per_pid[s.pid].push_back(&s);
  std::size_t count = 0;
  for (auto& [pid, v] : per_pid) {
    std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->start_us < b->start_us; });
    count = std::max(count, v.size());
  }
  tl.steps = static_cast<int>(count);
  tl.step = step < 0 ? tl.steps - 1 : step;
  if (tl.step >= tl.steps)
    throw UsageError("--step " + std::to_string(step) + ": the trace '" + path + "' has " +
                     std::to_string(tl.steps) + " steps (0.." + std::to_string(tl.steps - 1) + ")");
  for (auto& [pid, v] : per_pid)
    if (static_cast<std::size_t>(tl.step) < v.size()) {
      begin = std::min(begin, v[tl.step]->start_us);
      end = std::max(end, v[tl.step]->end_us);
    }
  return {begin, end > begin ? end : begin + 1};
}

// Classified events per row, by start, with the running maximum of their ends: an unclassified range that
// contains classified ones (a parent such as "train_step") or lies inside one (a layer inside "F mb=3") is
// drawn by those; only unclassified ranges alone on their stretch of time are "other compute".
class Coverage {
 public:
  explicit Coverage(const std::vector<RawEvent>& raw) {
    std::map<RowKey, std::vector<std::pair<double, double>>> spans_of;
    for (const RawEvent& r : raw)
      if (r.kind) spans_of[r.row].emplace_back(r.start_us, r.end_us);
    for (auto& [row, v] : spans_of) {
      std::sort(v.begin(), v.end());
      Classified& c = classified_[row];
      double running = -1e300;
      for (auto [s0, s1] : v) {
        running = std::max(running, s1);
        c.starts.push_back(s0);
        c.max_end.push_back(running);
      }
    }
  }

  bool covered(const RawEvent& r) const {
    const auto it = classified_.find(r.row);
    if (it == classified_.end()) return false;
    const auto& c = it->second;
    const auto inside_from = std::lower_bound(c.starts.begin(), c.starts.end(), r.start_us);
    if (inside_from != c.starts.end() && *inside_from < r.end_us) return true;  // a parent of classified ranges
    const auto before = std::upper_bound(c.starts.begin(), c.starts.end(), r.start_us);
    if (before == c.starts.begin()) return false;
    return c.max_end[static_cast<std::size_t>(before - c.starts.begin()) - 1] >= r.end_us;  // inside one
  }

 private:
  struct Classified {
    std::vector<double> starts, max_end;
  };
  std::map<RowKey, Classified> classified_;
};

// One row per pid (or track) with events in the window; the events clipped to it. Returns whether the trace marks
// idle time.
bool add_spans(const TraceEvents& ev, double begin, double end, Timeline& tl) {
  // An event is in the window when it overlaps it, or when it is instant (no duration, also a duration lost to
  // rounding at a large timestamp) inside it. Rows and spans use the same rule: fuzz_trace found an instant event
  // at the window's start that had a span but no row.
  const auto in_window = [&](const RawEvent& r) {
    return (r.end_us > begin && r.start_us < end) ||
           (r.start_us == r.end_us && r.start_us >= begin && r.start_us <= end);
  };
  std::set<RowKey> keys;
  for (const RawEvent& r : ev.raw)
    if (in_window(r)) keys.insert(r.row);
  std::map<RowKey, int> row_of;
  for (const RowKey& key : keys) {
    row_of[key] = static_cast<int>(tl.rows.size());
    const auto name = ev.names.find(key.first);
    std::string label = name != ev.names.end() ? name->second : "rank " + std::to_string(key.first);
    if (tl.by_track) {
      const auto track = ev.tracks.find(key);
      label += ": " + (track != ev.tracks.end() ? track->second : "track " + std::to_string(key.second));
    }
    tl.rows.push_back(label);
  }
  const Coverage coverage(ev.raw);
  bool explicit_idle = false;
  for (const RawEvent& r : ev.raw) {
    if (!in_window(r)) continue;
    if (!r.kind && coverage.covered(r)) continue;
    const SpanKind kind = r.kind ? *r.kind : SpanKind::other_compute;
    explicit_idle = explicit_idle || kind == SpanKind::idle;
    tl.spans.push_back({row_of.at(r.row), kind, (std::max(r.start_us, begin) - begin) / 1000.0,
                        (std::min(r.end_us, end) - begin) / 1000.0, r.microbatch, r.chunk});
  }
  return explicit_idle;
}

// Without idle events, idle = the gaps between compute ranges of a row (the bubble of docs/metrics.md:
// communication does not count as busy). With rows per track, a row without compute (a communication stream) has
// no idle time.
void add_implicit_idle(Timeline& tl) {
  tl.implicit_idle = true;
  std::vector<std::vector<std::pair<double, double>>> busy(tl.rows.size());
  for (const Span& s : tl.spans)
    if (s.kind != SpanKind::communication) busy[s.row].emplace_back(s.start_ms, s.end_ms);
  for (std::size_t row = 0; row < busy.size(); ++row) {
    auto& b = busy[row];
    if (tl.by_track && b.empty()) continue;
    std::sort(b.begin(), b.end());
    double t = 0;
    for (auto [s0, s1] : b) {
      if (s0 > t) tl.spans.push_back({static_cast<int>(row), SpanKind::idle, t, s0, std::nullopt, std::nullopt});
      t = std::max(t, s1);
    }
    if (t < tl.span_ms) tl.spans.push_back({static_cast<int>(row), SpanKind::idle, t, tl.span_ms, std::nullopt, std::nullopt});
  }
}

}  // namespace

namespace {

// otherData's "device" (a string) or "devices" (strings, a merged trace), when the writer recorded them.
std::vector<std::string> trace_devices(const json& doc) {
  std::vector<std::string> out;
  if (!doc.is_object() || !doc.contains("otherData") || !doc["otherData"].is_object()) return out;
  const json& other = doc["otherData"];
  if (const auto d = other.find("device"); d != other.end() && d->is_string()) out.push_back(d->get<std::string>());
  if (const auto d = other.find("devices"); d != other.end() && d->is_array())
    for (const json& v : *d)
      if (v.is_string() && std::find(out.begin(), out.end(), v.get<std::string>()) == out.end())
        out.push_back(v.get<std::string>());
  return out;
}

}  // namespace

Timeline read_timeline(const std::string& path, int step, bool by_track) {
  const json doc = parse_trace(path);
  const TraceEvents ev = read_events(trace_events(doc, path), path, by_track);
  Timeline tl;
  tl.by_track = by_track;
  const auto [begin, end] = step_window(ev, step, path, tl);
  const bool explicit_idle = add_spans(ev, begin, end, tl);
  tl.span_ms = (end - begin) / 1000.0;
  if (!explicit_idle) add_implicit_idle(tl);
  tl.devices = trace_devices(doc);
  return tl;
}

namespace {

std::string default_title(const Timeline& tl) {
  const int rows = static_cast<int>(tl.rows.size());
  std::string title = "Step timeline";
  if (tl.step >= 0) title += ": step " + std::to_string(tl.step) + " of " + std::to_string(tl.steps) + " (0-based)";
  return title + ", " + std::to_string(rows) + (rows == 1 ? " rank" : " ranks");
}

// Microbatch numbers inside F/B/W boxes wide enough to hold them; "mb/chunk" when the trace has several model
// chunks per stage (interleaved schedules).
void add_microbatch_labels(PlotScript& sc, const Timeline& tl) {
  const int rows = static_cast<int>(tl.rows.size());
  std::set<std::int64_t> chunks;
  for (const Span& s : tl.spans)
    if (s.chunk) chunks.insert(*s.chunk);
  const bool show_chunk = chunks.size() > 1;
  int labels = 0;
  const double min_width = tl.span_ms / 70.0;
  for (const Span& s : tl.spans) {
    if (!s.microbatch || labels >= 600 || s.end_ms - s.start_ms < min_width) continue;
    if (s.kind != SpanKind::forward && s.kind != SpanKind::backward && s.kind != SpanKind::weight_grad) continue;
    std::string text = std::to_string(*s.microbatch);
    if (show_chunk && s.chunk) text += "/" + std::to_string(*s.chunk);
    char cmd[200];
    std::snprintf(cmd, sizeof cmd, "set label '%s' at %.9g,%d center front font ',%d' tc rgb 'white'", text.c_str(),
                  (s.start_ms + s.end_ms) / 2, s.row, rows > 16 ? 7 : 9);
    sc.cmd(cmd);
    ++labels;
  }
}

}  // namespace

void plot_timeline(const FigureOptions& o, int step, bool by_track) {
  image_format(o.render.output);
  const Timeline tl = read_timeline(o.input, step, by_track);
  static const char* const kColors[kSpanKinds] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                                                  "#b07aa1", "#9c9c9c", "#e6e6e6"};
  // Drawing order: idle under everything, communication (a lower band) over compute.
  static const SpanKind kOrder[] = {SpanKind::idle,          SpanKind::forward,   SpanKind::backward,
                                    SpanKind::weight_grad,   SpanKind::optimizer, SpanKind::other_compute,
                                    SpanKind::communication};
  const int rows = static_cast<int>(tl.rows.size());
  PlotScript sc;
  sc.cmd("set encoding utf8");
  sc.cmd("set title " + quote_lines({o.title.empty() ? default_title(tl) : o.title, machine_caption(o.machine, tl.devices)}) +
         title_font(o.render.size));
  const std::string band = tl.by_track ? "" : "; communication in the lower band";
  sc.cmd("set xlabel 'time since the step start (ms)" + band + (tl.implicit_idle ? ", idle = no compute'" : "'"));
  char range[128];
  std::snprintf(range, sizeof range, "set xrange [0:%.9g]", tl.span_ms);
  sc.cmd(range);
  sc.cmd("set yrange [" + std::to_string(rows) + "-0.5:-0.5]");  // rank 0 on top
  std::string tics = "set ytics (";
  for (int r = 0; r < rows; ++r) tics += (r ? ", " : "") + quote(tl.rows[r]) + " " + std::to_string(r);
  sc.cmd(tics + ") scale 0");
  sc.cmd("set grid xtics lc rgb '#d0d0d0'");
  sc.cmd("set key outside bottom center horizontal reverse Left samplen 1.5");
  sc.cmd("set style fill solid 1.0 border lc rgb 'white'");
  sc.cmd("set bmargin 6");

  add_microbatch_labels(sc, tl);
  std::string plot = "plot ";
  std::vector<std::vector<std::vector<double>>> blocks;
  for (SpanKind kind : kOrder) {
    std::vector<std::vector<double>> data;
    for (const Span& s : tl.spans) {
      if (s.kind != kind) continue;
      const double y = s.row;
      const double y0 = kind == SpanKind::communication && !tl.by_track ? y + 0.1 : y - 0.38;
      const double y1 = y + 0.38;
      data.push_back({(s.start_ms + s.end_ms) / 2, (y0 + y1) / 2, s.start_ms, s.end_ms, y0, y1});
    }
    if (data.empty()) continue;
    // Short names: a horizontal key gives every entry the width of the longest one.
    const std::string name = span_kind_name(kind);
    plot += "'-' using 1:2:3:4:5:6 with boxxyerror lc rgb '" + std::string(kColors[static_cast<int>(kind)]) +
            "' title " + quote(name) + ", ";
    blocks.push_back(std::move(data));
  }
  if (blocks.empty()) throw UsageError(o.input + ": no events to draw in the chosen step");
  plot.resize(plot.size() - 2);
  sc.cmd(plot);
  for (auto& b : blocks) sc.data(std::move(b));
  const std::string warnings = render(sc, o.render);
  if (!warnings.empty()) std::fprintf(stderr, "gnuplot: %s", warnings.c_str());
}

}  // namespace parbench::plots
