// Launcher detection: which launcher's variables win, the values each bootstrap needs checked with the variable
// named, and Slurm's node-list syntax.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "base/error.h"
#include "collectives/launch/launcher.h"

namespace parbench {
namespace {

using Env = std::map<std::string, std::string>;

Launch detect(BootstrapKind k, const Env& env) {
  return detect_launch(k, [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

std::string usage_error(BootstrapKind k, const Env& env) {
  try {
    detect(k, env);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

const Env kTorchrun = {{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"},
                       {"TORCHELASTIC_RUN_ID", "job-7"}};
const Env kSlurm = {{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "3"}, {"SLURM_JOB_ID", "123456"},
                    {"SLURM_JOB_NODELIST", "gpu[07-09]"}};

TEST(Launcher, AutoPrefersMpirunThenTorchrunThenSlurm) {
  EXPECT_EQ(detect(BootstrapKind::automatic, {}).bootstrap, BootstrapKind::threads);
  Env both = kTorchrun;
  both.insert(kSlurm.begin(), kSlurm.end());
  const Launch t = detect(BootstrapKind::automatic, both);
  EXPECT_EQ(t.launcher, "torchrun");
  EXPECT_EQ(t.bootstrap, BootstrapKind::tcp);
  EXPECT_EQ(t.world_rank, 1);
  EXPECT_EQ(t.world_size, 4);
  EXPECT_EQ(t.store_host, "10.0.0.1");
  EXPECT_EQ(t.store_port, 29500);
  both["OMPI_COMM_WORLD_SIZE"] = "2", both["OMPI_COMM_WORLD_RANK"] = "1";
  const Launch m = detect(BootstrapKind::automatic, both);
  EXPECT_EQ(m.launcher, "mpirun");
  EXPECT_EQ(m.bootstrap, BootstrapKind::mpi);
  EXPECT_EQ(m.world_size, 2);
  // An explicit choice wins over the variables.
  EXPECT_EQ(detect(BootstrapKind::threads, both).bootstrap, BootstrapKind::threads);
  EXPECT_EQ(detect(BootstrapKind::tcp, both).launcher, "torchrun");
}

TEST(Launcher, SlurmStoreOnTheFirstNodeWithAPortFromTheJob) {
  const Launch s = detect(BootstrapKind::automatic, kSlurm);
  EXPECT_EQ(s.launcher, "srun");
  EXPECT_EQ(s.world_rank, 2);
  EXPECT_EQ(s.world_size, 3);
  EXPECT_EQ(s.store_host, "gpu07");
  EXPECT_EQ(s.store_port, kSlurmPortBase + 123456 % kSlurmPortSpan);
  EXPECT_EQ(s.token, "123456");
  Env given = kSlurm;
  given["MASTER_ADDR"] = "login1", given["MASTER_PORT"] = "4000", given["SLURM_STEP_ID"] = "3";
  const Launch g = detect(BootstrapKind::automatic, given);
  EXPECT_EQ(g.store_host, "login1");
  EXPECT_EQ(g.store_port, 4000);
  EXPECT_EQ(g.token, "123456.3");
}

// torchrun (elastic) serves torch's store on MASTER_PORT itself and says so: ours moves to the next port;
// PARBENCH_STORE_PORT overrides either launcher's port, checked like theirs.
TEST(Launcher, StorePortBesideTorchrunsAgentStoreOrGiven) {
  Env e = kTorchrun;
  e["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  const Launch a = detect(BootstrapKind::automatic, e);
  EXPECT_EQ(a.store_host, "10.0.0.1");
  EXPECT_EQ(a.store_port, 29501);
  EXPECT_NE(a.store_from.find("TORCHELASTIC_USE_AGENT_STORE"), std::string::npos) << a.store_from;
  e["MASTER_PORT"] = "65535";
  EXPECT_EQ(detect(BootstrapKind::automatic, e).store_port, 65534);
  e["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  EXPECT_EQ(detect(BootstrapKind::automatic, e).store_port, 65535);
  e["PARBENCH_STORE_PORT"] = "4242";
  EXPECT_EQ(detect(BootstrapKind::automatic, e).store_port, 4242);
  Env s = kSlurm;
  s["PARBENCH_STORE_PORT"] = "4243";
  EXPECT_EQ(detect(BootstrapKind::automatic, s).store_port, 4243);
  s["PARBENCH_STORE_PORT"] = "0";
  EXPECT_EQ(usage_error(BootstrapKind::automatic, s),
            "PARBENCH_STORE_PORT='0' (set by the user): expected an integer from 1 to 65535");
}

TEST(Launcher, JobTokenFromTheLauncherOrTheDefault) {
  EXPECT_EQ(detect(BootstrapKind::automatic, kTorchrun).token, "job-7");
  Env e = kTorchrun;
  e.erase("TORCHELASTIC_RUN_ID");
  EXPECT_EQ(detect(BootstrapKind::automatic, e).token, kDefaultJobToken);
  e["PARBENCH_JOB_TOKEN"] = "mine";
  EXPECT_EQ(detect(BootstrapKind::automatic, e).token, "mine");
}

TEST(Launcher, BadValuesNameTheVariableAndTheAcceptedForm) {
  Env e = kTorchrun;
  e["RANK"] = "x1";
  EXPECT_EQ(usage_error(BootstrapKind::automatic, e),
            "RANK='x1' (set by torchrun): expected an integer from 0 to 3 (below WORLD_SIZE=4)");
  e["RANK"] = "4";
  EXPECT_EQ(usage_error(BootstrapKind::automatic, e),
            "RANK='4' (set by torchrun): expected an integer from 0 to 3 (below WORLD_SIZE=4)");
  e = kTorchrun;
  e["WORLD_SIZE"] = "0";
  EXPECT_EQ(usage_error(BootstrapKind::automatic, e),
            "WORLD_SIZE='0' (set by torchrun): expected an integer from 1 to 1048576");
  e = kTorchrun;
  e.erase("MASTER_PORT");
  EXPECT_NE(usage_error(BootstrapKind::automatic, e).find("MASTER_PORT is not set"), std::string::npos);
  e["MASTER_PORT"] = "70000";
  EXPECT_EQ(usage_error(BootstrapKind::automatic, e),
            "MASTER_PORT='70000' (set by torchrun): expected an integer from 1 to 65535");
  Env s = kSlurm;
  s.erase("SLURM_JOB_ID");
  EXPECT_NE(usage_error(BootstrapKind::automatic, s).find("MASTER_PORT is not set"), std::string::npos);
  EXPECT_NE(usage_error(BootstrapKind::tcp, {}).find("--bootstrap tcp needs a launcher's variables"),
            std::string::npos);
  EXPECT_THROW(parse_bootstrap("ssh"), UsageError);
  EXPECT_EQ(parse_bootstrap("tcp"), BootstrapKind::tcp);
}

TEST(Launcher, NodeListsExpandWithTheirPadding) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_node_list("node[01-03,7],gpu5"), (V{"node01", "node02", "node03", "node7", "gpu5"}));
  EXPECT_EQ(expand_node_list("r[1-2]n[8-9]"), (V{"r1n8", "r1n9", "r2n8", "r2n9"}));
  EXPECT_EQ(expand_node_list("a[098-100]"), (V{"a098", "a099", "a100"}));
  EXPECT_EQ(expand_node_list("host-1.example"), (V{"host-1.example"}));
  EXPECT_EQ(expand_node_list("n[1-1000000]", 2), (V{"n1", "n2"}));
}

TEST(Launcher, UnreadableNodeListsAreRefusedNamingTheList) {
  for (const char* bad : {"", "node[01-03", "node]1", "node[3-1]", "node[a-b]", "a,,b", "a,", "n[1-2[3]]"}) {
    try {
      expand_node_list(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("SLURM_JOB_NODELIST='" + std::string(bad) + "'"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("e.g. node[01-03,7],gpu5"), std::string::npos);
    }
  }
  // Only the first host is used, but the whole list is checked.
  EXPECT_THROW(expand_node_list("node1,bad[", 1), UsageError);
}

}  // namespace
}  // namespace parbench
