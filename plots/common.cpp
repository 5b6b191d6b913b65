// Drawing helpers shared by the figures: colours, size tics (8, 1K, 64M, 1G) and byte units.
#include <cmath>
#include <sstream>

#include "core/sizes.h"
#include "plots/figures.h"

namespace parbench::plots {

std::string series_color(int i) {
  // Tableau 10: distinct in print and for the common colour-vision deficiencies, readable on white.
  static const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                        "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kColors[((i % 10) + 10) % 10];
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
