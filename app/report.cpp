// Table formatting and the CSV / JSON / text writers.
#include "app/report.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "base/error.h"

namespace parbench {

std::vector<Column> columns_of(std::span<const csv::HeaderColumn> header) {
  std::vector<Column> columns;
  for (const csv::HeaderColumn& c : header) columns.push_back({c.name, c.precision});
  return columns;
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<Cell> row) {
  PB_CHECK(row.size() == columns_.size(), "table row has " + std::to_string(row.size()) + " cells, expected " +
                                              std::to_string(columns_.size()));
  rows_.push_back(std::move(row));
}

std::string Table::format(const Cell& c, const Column& col) const {
  if (auto* s = std::get_if<std::string>(&c)) return *s;
  if (auto* i = std::get_if<std::int64_t>(&c)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&c)) {
    if (!std::isfinite(*d)) return std::isnan(*d) ? "nan" : (*d > 0 ? "inf" : "-inf");
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", col.precision, *d);
    return buf;
  }
  return "";
}

std::string csv_escape(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char ch : field) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string Table::header_csv() const {
  std::string h;
  for (std::size_t i = 0; i < columns_.size(); ++i) h += (i ? "," : "") + csv_escape(columns_[i].name);
  return h;
}

std::string Table::csv_line(const std::vector<Cell>& row) const {
  std::string out;
  for (std::size_t i = 0; i < row.size() && i < columns_.size(); ++i)
    out += (i ? "," : "") + csv_escape(format(row[i], columns_[i]));
  return out;
}

std::string Table::to_csv(bool with_header) const {
  std::string out = with_header ? header_csv() + "\n" : "";
  for (const auto& row : rows_) out += csv_line(row) + "\n";
  return out;
}

void Table::write_text(std::ostream& os) const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t i = 0; i < columns_.size(); ++i) width[i] = columns_[i].name.size();
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : rows_) {
    auto& out = cells.emplace_back();
    for (std::size_t i = 0; i < row.size(); ++i) {
      out.push_back(format(row[i], columns_[i]));
      width[i] = std::max(width[i], out.back().size());
    }
  }
  auto line = [&](auto get) {
    std::string s;
    for (std::size_t i = 0; i < columns_.size(); ++i) {
      std::string v = get(i);
      s += (i ? "  " : "") + std::string(width[i] - v.size(), ' ') + v;
    }
    os << s << "\n";
  };
  line([&](std::size_t i) { return columns_[i].name; });
  for (const auto& row : cells) line([&](std::size_t i) { return row[i]; });
}

nlohmann::json Table::to_json() const {
  auto arr = nlohmann::json::array();
  for (const auto& row : rows_) {
    nlohmann::json obj = nlohmann::json::object();
    for (std::size_t i = 0; i < row.size(); ++i) {
      const Cell& c = row[i];
      if (auto* s = std::get_if<std::string>(&c)) obj[columns_[i].name] = *s;
      else if (auto* n = std::get_if<std::int64_t>(&c)) obj[columns_[i].name] = *n;
      else if (auto* d = std::get_if<double>(&c)) obj[columns_[i].name] = std::isfinite(*d) ? nlohmann::json(*d) : nlohmann::json();
      else obj[columns_[i].name] = nullptr;
    }
    arr.push_back(std::move(obj));
  }
  return arr;
}

void Table::write_csv(const std::string& path, bool append) const {
  std::string existing;
  if (append) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      existing = ss.str();
    }
  }
  if (existing.empty()) return write_file_atomically(path, to_csv(true));
  std::string first = existing.substr(0, existing.find('\n'));
  if (!first.empty() && first.back() == '\r') first.pop_back();
  if (first != header_csv())
    throw Error("cannot append to '" + path + "': its header is\n  " + first + "\nbut these results have\n  " +
                header_csv() + "\nwrite to a new file instead");
  if (existing.back() != '\n') existing += '\n';
  write_file_atomically(path, existing + to_csv(false));
}

void Table::write_json(const std::string& path) const { write_file_atomically(path, to_json().dump(2) + "\n"); }

void write_file_atomically(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("cannot write '" + path + "': " + std::strerror(errno));
    out << content;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error("cannot write '" + path + "': write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    throw Error("cannot write '" + path + "': " + std::strerror(err));
  }
}

}  // namespace parbench
