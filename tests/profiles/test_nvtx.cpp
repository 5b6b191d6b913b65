// NVTX ranges reach an NVTX tool: a child process runs with NVTX_INJECTION64_PATH naming the test
// tool (tests/profiles/nvtx_test_injection.cpp), which logs every domain call; we check the log.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "trace_test_util.h"

extern char** environ;

#ifdef PARBENCH_HAVE_NVTX
namespace {

struct Call {
  std::string kind;  // init, create, category, push, pop, start, end, mark
  long thread = 0;
  std::string domain;
  std::map<std::string, std::string> fields;  // key=value fields of a push
  std::string rest;                           // category: "ID NAME"; create: the domain name
};

std::vector<Call> parse_log(const std::string& text) {
  std::vector<Call> calls;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    Call c;
    in >> c.kind >> c.thread;
    if (c.kind == "create") {
      in >> c.rest;
    } else if (c.kind != "init") {
      in >> c.domain;
      std::string tail;
      std::getline(in, tail);
      if (!tail.empty() && tail[0] == ' ') tail.erase(0, 1);
      c.rest = tail;
      // push fields: key=value ... msg=<rest of line, spaces allowed>
      std::size_t pos = 0;
      while (pos < tail.size() && c.kind == "push") {
        std::size_t eq = tail.find('=', pos);
        if (eq == std::string::npos) break;
        std::string key = tail.substr(pos, eq - pos);
        if (key == "msg") {
          c.fields[key] = tail.substr(eq + 1);
          break;
        }
        std::size_t sp = tail.find(' ', eq);
        c.fields[key] = tail.substr(eq + 1, sp - eq - 1);
        pos = sp == std::string::npos ? tail.size() : sp + 1;
      }
    }
    calls.push_back(c);
  }
  return calls;
}

int run_child(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    if (s.rfind("NVTX_INJECTION64_PATH=", 0) != 0 && s.rfind("PARBENCH_NVTX_LOG=", 0) != 0)
      env_store.push_back(s);
  }
  for (const auto& s : extra_env) env_store.push_back(s);
  std::vector<char*> envp, argv;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args_store = args;
  for (auto& s : args_store) argv.push_back(s.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace
#endif

TEST(Nvtx, RangesReachTheTool) {
#ifndef PARBENCH_HAVE_NVTX
  GTEST_SKIP() << "built without NVTX headers (PARBENCH_HAVE_NVTX is OFF): ranges compile to "
                  "nothing, so there is nothing for a tool to see";
#else
  pbtest::ScratchDir dir;
  const std::string log = (dir.path() / "nvtx.log").string();
  std::mt19937_64 rng(std::random_device{}());
  const long long layer = rng() % 96, mb = rng() % 32, bytes = 1 + rng() % (1ll << 40);

  const std::vector<std::string> args = {PB_NVTX_TEST_CHILD, std::to_string(layer),
                                         std::to_string(mb), std::to_string(bytes)};
  // Without a tool the child sees NVTX inactive (exit 3) and no log appears.
  ASSERT_EQ(run_child(args, {"PARBENCH_NVTX_LOG=" + log}), 3);
  EXPECT_FALSE(std::filesystem::exists(log));

  ASSERT_EQ(run_child(args, {std::string("NVTX_INJECTION64_PATH=") + PB_NVTX_TEST_INJECTION,
                             "PARBENCH_NVTX_LOG=" + log}),
            0);
  const std::string text = pbtest::read_file(log);
  const std::vector<Call> calls = parse_log(text);
  ASSERT_FALSE(calls.empty()) << text;
  EXPECT_EQ(calls[0].kind, "init");

  // One "parbench" domain with the four categories named.
  int creates = 0;
  std::map<std::string, std::string> categories;
  for (const Call& c : calls) {
    if (c.kind == "create") {
      ++creates;
      EXPECT_EQ(c.rest, "parbench");
    }
    if (c.kind == "category") {
      EXPECT_EQ(c.domain, "parbench");
      std::istringstream in(c.rest);
      std::string id, name;
      in >> id >> name;
      categories[id] = name;
    }
    EXPECT_TRUE(c.kind != "start" && c.kind != "end" && c.kind != "mark") << c.kind;
  }
  EXPECT_EQ(creates, 1);
  EXPECT_EQ(categories, (std::map<std::string, std::string>{
                            {"1", "compute"}, {"2", "communication"}, {"3", "optimizer"},
                            {"4", "idle"}}));

  // Per thread: the push/pop sequence as an indented outline, and each push's attributes.
  std::map<long, std::string> outline;
  std::map<long, int> depth;
  std::map<std::string, std::map<std::string, std::string>> pushes;  // by message
  for (const Call& c : calls) {
    if (c.kind == "push") {
      EXPECT_EQ(c.domain, "parbench");
      outline[c.thread] += std::string(2 * depth[c.thread]++, ' ') + c.fields.at("msg") + "\n";
      pushes[c.fields.at("msg")] = c.fields;
    } else if (c.kind == "pop") {
      EXPECT_EQ(c.domain, "parbench");
      ASSERT_GT(depth[c.thread]--, 0) << "pop without push\n" << text;
    }
  }
  ASSERT_EQ(outline.size(), 2u) << text;  // the main thread and the comm thread
  const std::string fwd = "forward layer=" + std::to_string(layer) + " mb=" + std::to_string(mb);
  const std::string ar = "allreduce bytes=" + std::to_string(bytes);
  const std::string recv = "recv stage=2 bytes=" + std::to_string(bytes + 1);
  std::vector<std::string> outlines;
  for (const auto& [thread, o] : outline) outlines.push_back(o);
  std::sort(outlines.begin(), outlines.end());  // "recv..." before "step..."
  EXPECT_EQ(outlines[1], "step stage=1\n  " + fwd + "\n  " + ar + "\n  adam\n  wait chunk=0\n");
  EXPECT_EQ(outlines[0], recv + "\n  unpack stage=2\n");
  for (auto& [thread, d] : depth) EXPECT_EQ(d, 0) << "unbalanced pushes on thread " << thread;

  auto expect_push = [&](const std::string& msg, const char* cat, const char* color,
                         const std::string& ptype, const std::string& payload) {
    ASSERT_TRUE(pushes.count(msg)) << msg << "\n" << text;
    const auto& f = pushes[msg];
    EXPECT_EQ(f.at("cat"), cat) << msg;
    EXPECT_EQ(f.at("colortype"), "1") << msg;  // NVTX_COLOR_ARGB
    EXPECT_EQ(f.at("color"), color) << msg;
    EXPECT_EQ(f.at("mtype"), "1") << msg;      // NVTX_MESSAGE_TYPE_ASCII
    EXPECT_EQ(f.at("ptype"), ptype) << msg;
    if (ptype != "0") {
      EXPECT_EQ(f.at("payload"), payload) << msg;
    }
  };
  // Payload: the bytes field as NVTX_PAYLOAD_TYPE_INT64 (2) when set, otherwise none (0).
  expect_push("step stage=1", "1", "ff4caf50", "0", "");
  expect_push(fwd, "1", "ff4caf50", "0", "");
  expect_push(ar, "2", "ff2196f3", "2", std::to_string(bytes));
  expect_push("adam", "3", "ffff9800", "0", "");
  expect_push("wait chunk=0", "4", "ff9e9e9e", "0", "");
  expect_push(recv, "2", "ff2196f3", "2", std::to_string(bytes + 1));
  expect_push("unpack stage=2", "1", "ff4caf50", "0", "");
#endif
}
