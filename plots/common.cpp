// Drawing helpers shared by the figures: colours, splitting series into panels, the machine caption, size tics
// (8, 1K, 64M, 1G) and byte units.
#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "base/text.h"
#include "app/sizes.h"
#include "plots/figures.h"

namespace parbench::plots {

std::string series_color(int i) {
  // Okabe-Ito's six hues (told apart with the common colour-vision deficiencies), then grey and black, which
  // differ from them by lightness. Okabe-Ito's yellow is left out: faint on white. Black comes last because it is
  // the colour of the reference lines (ideal, 100%, style keys): only a figure of eight series uses it.
  static const char* const kColors[kPaletteSize] = {"#0072b2", "#e69f00", "#009e73", "#d55e00",
                                                    "#cc79a7", "#56b4e9", "#7f7f7f", "#000000"};
  return kColors[((i % kPaletteSize) + kPaletteSize) % kPaletteSize];
}

int series_point(int i, bool hollow) {
  // Filled square, circle, triangle, inverted triangle, diamond, pentagon; gnuplot's hollow twin is one less. The
  // shape tells series apart where colour does not (print, overlapping lines).
  static const int kPoints[] = {5, 7, 9, 11, 13, 15};
  return kPoints[((i % 6) + 6) % 6] - (hollow ? 1 : 0);
}

std::vector<std::vector<int>> split_colors(const std::vector<int>& colors, int limit) {
  std::vector<int> sorted = colors;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  if (sorted.empty()) return {};
  // As many parts as the limit needs, filled evenly (7 = 4 + 3, not 6 + 1); a part never holds two indices that
  // the palette draws alike.
  const int n = static_cast<int>(sorted.size());
  const int per_part = (n + (n + limit - 1) / limit - 1) / ((n + limit - 1) / limit);
  std::vector<std::vector<int>> parts(1);
  std::set<int> used;
  for (int c : sorted) {
    const int shade = ((c % kPaletteSize) + kPaletteSize) % kPaletteSize;
    if (static_cast<int>(parts.back().size()) >= per_part || used.count(shade)) {
      parts.emplace_back();
      used.clear();
    }
    parts.back().push_back(c);
    used.insert(shade);
  }
  return parts;
}

std::string machine_caption(const std::string& machine, const std::vector<std::string>& devices) {
  std::string device_words;
  for (const std::string& d : devices) device_words += (device_words.empty() ? "" : ", ") + d;
  if (!device_words.empty()) device_words = (devices.size() > 1 ? "devices " : "device ") + device_words;
  if (machine.empty())
    return "measured on: " + (device_words.empty() ? std::string("machine not named") : device_words + ", machine not named") +
           " (--machine)";
  // The device the file names is added unless the text already says it.
  const std::string lower = ascii_lower(machine);
  const bool said = std::all_of(devices.begin(), devices.end(),
                                [&](const std::string& d) { return lower.find(ascii_lower(d)) != std::string::npos; });
  return "measured on: " + machine + (said || device_words.empty() ? "" : ", " + device_words);
}

std::string size_tics_command(const std::string& axis, double min_bytes, double max_bytes, int max_ticks) {
  const int lo = static_cast<int>(std::floor(std::log2(std::max(min_bytes, 1.0)) + 1e-9));
  const int hi = static_cast<int>(std::ceil(std::log2(std::max(max_bytes, 1.0)) - 1e-9));
  // Steps that divide 10 keep 1K, 1M and 1G among the tics.
  int step = 10;
  for (int s : {1, 2, 5, 10}) {
    const int count = hi / s - (lo + s - 1) / s + 1;
    if (count <= max_ticks) {
      step = s;
      break;
    }
  }
  std::ostringstream out;
  out << "set " << axis << "tics (";
  bool first = true;
  for (int e = lo; e <= hi; ++e) {
    if (e % step != 0 || e < 0 || e > 62) continue;
    out << (first ? "" : ", ") << "'" << format_size(std::uint64_t{1} << e) << "' " << (std::uint64_t{1} << e);
    first = false;
  }
  if (first) out << "'" << format_size(std::uint64_t{1} << std::max(lo, 0)) << "' " << (std::uint64_t{1} << std::max(lo, 0));
  out << ")";
  return out.str();
}

std::pair<double, std::string> byte_unit(double max_bytes) {
  if (max_bytes >= 0x1p30) return {0x1p30, "GiB"};
  if (max_bytes >= 0x1p20) return {0x1p20, "MiB"};
  if (max_bytes >= 0x1p10) return {0x1p10, "KiB"};
  return {1.0, "B"};
}

}  // namespace parbench::plots
