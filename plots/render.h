// Drawing through gnuplot: a figure is a PlotScript (commands and inline data blocks); render() feeds it to a
// gnuplot child process through gnuplot-iostream and moves the finished image into place atomically.
#pragma once
#include <string>
#include <vector>

namespace parbench::plots {

enum class ImageFormat { png, svg };

// From the output file's extension (.png or .svg, any case); UsageError naming the file and extension otherwise.
ImageFormat image_format(const std::string& output_path);

struct ImageSize {
  int width = 1200;
  int height = 800;
};
// "WIDTHxHEIGHT", each 100..10000 pixels; UsageError naming the value and the form otherwise.
ImageSize parse_image_size(const std::string& text);

// gnuplot commands and the inline data of each '-' in the plot commands, in the order gnuplot reads them.
class PlotScript {
 public:
  void cmd(const std::string& line) { items_.push_back({line + "\n", {}, false}); }
  // The rows (columns of numbers) for the next '-' of the preceding plot command; must not be empty.
  void data(std::vector<std::vector<double>> rows);

  struct Item {
    std::string text;
    std::vector<std::vector<double>> rows;
    bool is_data;
  };
  const std::vector<Item>& items() const { return items_; }
  std::string to_string() const;  // the script as gnuplot reads it, data included

 private:
  std::vector<Item> items_;
};

struct RenderOptions {
  std::string output;             // .png or .svg
  ImageSize size;
  std::string gnuplot = "gnuplot";  // program name (searched in PATH) or path
  std::string script_copy;        // when set, the full script is also written here (for tweaking by hand)
};

// Runs gnuplot on `script` after setting the terminal (pngcairo or svg, from the extension, at the size) and a
// temporary output in the output's directory; renames it to the output when gnuplot succeeds. Throws
// UsageError for a bad extension or a missing/unwritable output directory, Error (with gnuplot's stderr) when
// gnuplot is missing or fails; the temporary file is removed and no gnuplot process is left behind.
// Returns gnuplot's stderr of a successful run (warnings), usually empty.
std::string render(const PlotScript& script, const RenderOptions& options);

// The terminal's font size in points for an image size (11 at 1200 wide, scaled with the width).
int font_points(const ImageSize& size);
// " font ',N'" for titles: a few points larger than the text.
std::string title_font(const ImageSize& size, int larger = 4);

// Gnuplot string literal: single-quoted, quotes doubled (the terminals run in noenhanced mode, so no other
// character is special).
std::string quote(const std::string& text);
// Gnuplot string of several lines (a title over its caption line): double-quoted, "\n" between the lines,
// backslashes and double quotes escaped.
std::string quote_lines(const std::vector<std::string>& lines);

}  // namespace parbench::plots
