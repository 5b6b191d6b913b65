// render(): gnuplot as a child process (posix_spawn, stdin from a pipe wrapped by gnuplot-iostream, stderr
// into a temporary file so a chatty gnuplot cannot block us), terminal chosen by extension, atomic output.
#include "plots/render.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <gnuplot-iostream.h>
#include <sstream>

#include "base/error.h"
#include "base/text.h"

extern char** environ;

namespace parbench::plots {
namespace {


std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_items(Gnuplot& gp, const PlotScript& script) {
  for (const PlotScript::Item& item : script.items()) {
    if (item.is_data)
      gp.send1d(item.rows);  // rows of numbers, then "e"
    else
      gp << item.text;
  }
}

std::string terminal_command(ImageFormat format, const ImageSize& size) {
  // Font scaled with the width so a 2400-wide image is as readable as the default 1200.
  const int font = font_points(size);
  std::ostringstream t;
  if (format == ImageFormat::png)
    t << "set terminal pngcairo size " << size.width << "," << size.height << " noenhanced font 'DejaVu Sans,"
      << font << "' linewidth 1.5\n";
  else
    t << "set terminal svg size " << size.width << "," << size.height << " noenhanced font 'DejaVu Sans,"
      << font << "' linewidth 1.5 background rgb 'white'\n";
  return t.str();
}

// Blocks SIGPIPE in this thread while we write to gnuplot, so a gnuplot that died gives EPIPE instead of
// killing us; a SIGPIPE that became pending meanwhile is consumed before the old mask comes back.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~SigpipeBlock() {
    if (!was_pending_) {
      sigset_t set;
      sigemptyset(&set);
      sigaddset(&set, SIGPIPE);
      const timespec zero{0, 0};
      while (sigtimedwait(&set, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t old_;
  bool was_pending_ = false;
};

// Owns the gnuplot child: closing its stdin ends it; the destructor always reaps it (killing it only when it
// is still running after an error on our side), so no gnuplot outlives render().
class GnuplotChild {
 public:
  GnuplotChild(const std::string& program, const std::string& stderr_path) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe for gnuplot: ") + std::strerror(errno));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[0], 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char* argv[] = {const_cast<char*>(program.c_str()), nullptr};
    const int rc = program.find('/') == std::string::npos
                       ? posix_spawnp(&pid_, program.c_str(), &actions, nullptr, argv, environ)
                       : posix_spawn(&pid_, program.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[0]);
    if (rc != 0) {
      ::close(fds[1]);
      pid_ = -1;
      if (rc == ENOENT)
        throw Error("cannot run gnuplot: '" + program +
                    "' was not found (install gnuplot, e.g. apt-get install gnuplot-nox, or pass --gnuplot PATH)");
      throw Error("cannot run gnuplot '" + program + "': " + std::strerror(rc));
    }
    pipe_ = ::fdopen(fds[1], "w");
    if (!pipe_) {
      ::close(fds[1]);
      wait(true);
      throw Error("cannot open the pipe to gnuplot");
    }
  }
  ~GnuplotChild() {
    if (pipe_) std::fclose(pipe_);
    if (pid_ > 0) wait(true);
  }
  GnuplotChild(const GnuplotChild&) = delete;
  GnuplotChild& operator=(const GnuplotChild&) = delete;

  // Hands the write end to gnuplot-iostream, which closes it (fclose) when destroyed.
  std::FILE* release_pipe() {
    std::FILE* f = pipe_;
    pipe_ = nullptr;
    return f;
  }

  // Waits for gnuplot to exit; returns the wait status.
  int wait(bool kill_first = false) {
    if (pid_ <= 0) return status_;
    if (kill_first) ::kill(pid_, SIGTERM);
    while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return status_;
  }

 private:
  pid_t pid_ = -1;
  std::FILE* pipe_ = nullptr;
  int status_ = 0;
};

class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  ~TempFile() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  void keep() { path_.clear(); }

 private:
  std::string path_;
};

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "wait status " + std::to_string(status);
}

}  // namespace

ImageFormat image_format(const std::string& output_path) {
  const auto slash = output_path.rfind('/');
  const auto dot = output_path.rfind('.');
  const std::string ext =
      dot == std::string::npos || (slash != std::string::npos && dot < slash) ? "" : ascii_lower(output_path.substr(dot));
  if (ext == ".png") return ImageFormat::png;
  if (ext == ".svg") return ImageFormat::svg;
  throw UsageError("output '" + output_path + "': unsupported extension '" + ext +
                   "' (accepted: .png or .svg, which choose the image format)");
}

ImageSize parse_image_size(const std::string& text) {
  const std::string form = "expected WIDTHxHEIGHT in pixels, each 100..10000, e.g. 1200x800";
  const auto x = ascii_lower(text).find('x');
  if (x == std::string::npos) throw UsageError("image size '" + text + "': " + form);
  auto parse = [&](const std::string& part) {
    if (part.empty() || part.size() > 5 || !std::all_of(part.begin(), part.end(), ::isdigit))
      throw UsageError("image size '" + text + "': " + form);
    const int v = std::stoi(part);
    if (v < 100 || v > 10000) throw UsageError("image size '" + text + "': " + form);
    return v;
  };
  return ImageSize{parse(text.substr(0, x)), parse(text.substr(x + 1))};
}

void PlotScript::data(std::vector<std::vector<double>> rows) {
  PB_CHECK(!rows.empty(), "PlotScript::data: empty data block");
  items_.push_back({"", std::move(rows), true});
}

std::string PlotScript::to_string() const {
  std::ostringstream out;
  for (const Item& item : items_) {
    if (!item.is_data) {
      out << item.text;
      continue;
    }
    for (const auto& row : item.rows) {
      for (std::size_t i = 0; i < row.size(); ++i) out << (i ? " " : "") << row[i];
      out << "\n";
    }
    out << "e\n";
  }
  return out.str();
}

int font_points(const ImageSize& size) {
  return std::clamp(static_cast<int>(std::lround(11.0 * size.width / 1200.0)), 8, 28);
}

std::string title_font(const ImageSize& size, int larger) {
  return " font '," + std::to_string(font_points(size) + larger) + "'";
}

std::string quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    if (c == '\n') {
      out += "\\n";  // not interpreted in single quotes; keeps the command on one line
      continue;
    }
    out += c;
  }
  return out + "'";
}

std::string quote_lines(const std::vector<std::string>& lines) {
  std::string out = "\"";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\\n";
    for (char c : lines[i]) {
      if (c == '\\' || c == '"') out += '\\';
      out += c == '\n' ? ' ' : c;
    }
  }
  return out + "\"";
}

std::string render(const PlotScript& script, const RenderOptions& options) {
  const ImageFormat format = image_format(options.output);
  const std::string dir = directory_of(options.output);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError("output '" + options.output + "': directory '" + dir + "' does not exist");
  if (::access(dir.c_str(), W_OK) != 0)
    throw UsageError("output '" + options.output + "': directory '" + dir + "' is not writable");

  const std::string preamble = terminal_command(format, options.size);
  if (!options.script_copy.empty()) {
    std::FILE* f = std::fopen(options.script_copy.c_str(), "w");
    if (!f) throw UsageError("cannot write script copy '" + options.script_copy + "': " + std::strerror(errno));
    Gnuplot copy(f);  // closes f
    copy << preamble << "set output " << quote(options.output) << "\n";
    write_items(copy, script);
    copy << "unset output\n";
  }

  const std::string base = options.output.substr(options.output.rfind('/') == std::string::npos
                                                     ? 0
                                                     : options.output.rfind('/') + 1);
  const std::string ext = format == ImageFormat::png ? ".png" : ".svg";
  TempFile image(dir + "/." + base + ".tmp" + std::to_string(::getpid()) + ext);
  std::string err_template = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : "/tmp") +
                             "/parbench-plot-stderr-XXXXXX";
  const int err_fd = ::mkstemp(err_template.data());
  if (err_fd < 0) throw Error("cannot create a temporary file for gnuplot's messages: " + std::string(std::strerror(errno)));
  ::close(err_fd);
  TempFile errors(err_template);

  int status = 0;
  bool write_failed = false;
  {
    SigpipeBlock no_sigpipe;
    GnuplotChild child(options.gnuplot, errors.path());
    {
      Gnuplot gp(child.release_pipe());
      gp << preamble << "set output " << quote(image.path()) << "\n";
      write_items(gp, script);
      gp << "unset output\n";
      gp.flush();
      write_failed = !gp.good();
    }  // closes gnuplot's stdin: it finishes and exits
    status = child.wait();
  }
  const std::string messages = read_file(errors.path());
  struct stat img {};
  const bool have_image = ::stat(image.path().c_str(), &img) == 0 && img.st_size > 0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || write_failed || !have_image) {
    std::string why = describe_status(status);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      why += " (the command could not be run)";
    else if (!have_image && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      why = "it exited without writing the image";
    throw Error("gnuplot ('" + options.gnuplot + "') failed drawing '" + options.output + "': " + why +
                (messages.empty() ? std::string() : "; gnuplot said:\n" + messages));
  }
  if (std::rename(image.path().c_str(), options.output.c_str()) != 0)
    throw Error("cannot move the image to '" + options.output + "': " + std::strerror(errno));
  image.keep();
  return messages;
}

}  // namespace parbench::plots
