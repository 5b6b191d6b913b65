// The published-table reader and the leave-one-table-out predictions (predict/validate.h): bad rows are refused
// naming the file, line and value; undoing a modelling choice changes exactly what that choice models.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "base/error.h"
#include "predict/costs.h"
#include "predict/validate.h"
#include "tests/test_files.h"

using namespace parbench;
using testing::AllOf;
using testing::HasSubstr;
using namespace parbench::predict;

namespace {

const char* kPublishedHeader =
    "table,row,system,hidden,heads,layers,seq,vocab,tp,pp,v,gpus,global_batch,micro_batch,sp,recompute,schedule,"
    "attention,p2p,zero,partition,tp_overlap,dp_overlap,measure,published,shaped_by\n";

// The tables' folder: the process's own, removed when it ends.
const pbtest::ScratchDir& tables() {
  static const pbtest::ScratchDir dir;
  return dir;
}

// A file of its own per call.
std::string write_published(const std::string& body) {
  static int calls = 0;
  const std::string path = tables().file("published_" + std::to_string(++calls) + ".csv");
  std::ofstream(path) << kPublishedHeader << body;
  return path;
}

// A table whose header has the optional `columns` (comma-separated) after the required ones, and the one `row`.
std::string write_published_with(const std::string& columns, const std::string& row) {
  const std::string path = write_published("");
  const std::string header(kPublishedHeader, std::strlen(kPublishedHeader) - 1);
  std::ofstream(path) << header << "," << columns << "\n" << row << "\n";
  return path;
}

std::string published_error(const std::string& path) {
  try {
    read_published(path);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "no error";
}

// The reader's error for a table of `body` ("no error" when it reads).
std::string refusal(const std::string& body) { return published_error(write_published(body)); }

// A 22B row on 8 GPUs with the given sequence-parallel flag, recomputation, software columns and trailing fields.
std::string row_22b(const std::string& head, const std::string& software, const std::string& tail) {
  return head + ",6144,64,48,2048,51200,8,1,1,8,4,4," + software + "," + tail + "\n";
}

}  // namespace

TEST(PredictValidate, BadRowsAreRefusedNamingLineAndValue) {
  const std::string ok =
      row_22b("t,r,dgx-a100", "1,selective,1f1b,plain,blocking,0,uniform,none,backward", "step_s,1.1,blocking_p2p");
  const std::vector<PublishedRow> rows = read_published(write_published(ok));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].shaped_by, std::set<std::string>{"blocking_p2p"});
  EXPECT_TRUE(rows[0].layout.sequence_parallel);
  EXPECT_TRUE(rows[0].layout.blocking_p2p);
  EXPECT_FALSE(rows[0].layout.model.flash_attention);
  EXPECT_FALSE(rows[0].layout.dp_reduce_at_end);
  EXPECT_TRUE(read_published(write_published(row_22b("t,r,dgx-a100", "1,none,1f1b,plain,async,0,uniform,none,after",
                                                     "step_s,1,-")))[0]
                  .layout.dp_reduce_at_end);
  EXPECT_THAT(refusal(ok + row_22b("t,r,dgx-a100", "0,none,1f1b,plain,blocking,0,uniform,none,backward",
                                   "step_s,1,magic")),
              HasSubstr(":3: modelling choice 'magic' is unknown; accepted: blocking_p2p"));
  const std::string software = ",0,none,1f1b,plain,blocking,0,uniform,none,backward,step_s,1,-\n";
  EXPECT_EQ(refusal("t,r,dgx-a100,6144,64,48,2048,51200,8,1,1,16,8,4" + software), "no error");  // dp 2
  EXPECT_THAT(refusal("t,r,dgx-a100,6144,64,48,2048,51200,3,1,1,3,4,4" + software), HasSubstr(":2: "));  // tp 3
  auto refused = [](const std::string& software_columns, const std::string& tail) {
    return refusal(row_22b("t,r,dgx-a100", software_columns, tail));
  };
  EXPECT_THAT(refused("0,none,1f1b,plain,blocking,0,uniform,none,backward", "step_s,0,-"),
              HasSubstr(":2: published must be > 0"));
  EXPECT_THAT(refused("0,none,1f1b,sdpa,blocking,0,uniform,none,backward", "step_s,1,-"),
              HasSubstr(":2: attention 'sdpa' is unknown; accepted: plain, flash"));
  EXPECT_THAT(refused("0,none,1f1b,plain,eager,0,uniform,none,backward", "step_s,1,-"),
              HasSubstr(":2: p2p 'eager' is unknown; accepted: blocking"));
  EXPECT_THAT(refused("0,none,zigzag,plain,async,0,uniform,none,backward", "step_s,1,-"),
              AllOf(HasSubstr(":2: "), HasSubstr("zigzag")));
  EXPECT_THAT(refused("0,none,1f1b,plain,async,0,uniform,forward,backward", "step_s,1,-"),
              AllOf(HasSubstr(":2: tp_overlap 'forward' is unknown; accepted: none, backward"),
                    HasSubstr("userbuffers (and the others beside theirs")));
  EXPECT_THAT(refused("0,none,1f1b,plain,async,0,uniform,none,later", "step_s,1,-"),
              HasSubstr(":2: dp_overlap 'later' is unknown; accepted: backward"));
  EXPECT_THAT(refused("0,none,1f1b,plain,async,5,uniform,none,backward", "step_s,1,-"),
              HasSubstr(":2: --zero 5 is not a ZeRO stage"));
  EXPECT_NE(published_error("/nonexistent.csv").find("cannot read /nonexistent.csv"), std::string::npos);
}

// The software columns reach the layout, and a system named by a .json path is looked up beside the table.
TEST(PredictValidate, SoftwareColumnsAndSystemFilesBesideTheTable) {
  const std::string path =
      write_published(row_22b("t,r,my_system.json", "1,full,1f1b,flash,async,1,uniform,none,backward", "step_s,1,-") +
                      row_22b("t,r,dgx-h100", "1,full,1f1b,flash,async,1,uniform,none,backward", "step_s,1,-") +
                      row_22b("t,r,/abs/sys.json", "1,full,1f1b,flash,async,1,uniform,none,backward", "step_s,1,-"));
  const std::vector<PublishedRow> rows = read_published(path);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].system, path.substr(0, path.rfind('/') + 1) + "my_system.json");
  EXPECT_EQ(rows[1].system, "dgx-h100");
  EXPECT_EQ(rows[2].system, "/abs/sys.json");
  EXPECT_TRUE(rows[0].layout.model.flash_attention);
  EXPECT_FALSE(rows[0].layout.blocking_p2p);
  EXPECT_EQ(rows[0].layout.zero_stage, 1);
  EXPECT_EQ(rows[0].layout.recompute, Recompute::full);
  const std::string two_stages = "t,r,dgx-a100,6144,64,48,2048,51200,8,2,1,16,8,1,0,none,1f1b,plain,async,0,";
  EXPECT_EQ(read_published(write_published(two_stages + "20+28,none,backward,step_s,1,-\n"))[0].layout.stage_blocks,
            (std::vector<int>{20, 28}));
  EXPECT_THAT(refusal(two_stages + "20+x,none,backward,step_s,1,-\n"),
              HasSubstr(":2: partition '20+x' is not uniform or block counts"));
  EXPECT_THAT(refusal(two_stages + ",none,backward,step_s,1,-\n"), HasSubstr(":2: partition '' is not uniform"));
  EXPECT_THAT(refusal(two_stages + "20+27,none,backward,step_s,1,-\n"),
              HasSubstr(":2: partition 20+27 does not spread --layers 48"));
}

// Undoing sp_backward_regather removes exactly the two backward all-gathers of a sequence-parallel layer; undoing
// processing_no_overlap makes every op the slower of compute and memory instead of their sum.
TEST(PredictValidate, UndoingAChoiceRemovesWhatItModels) {
  const std::string body =
      row_22b("t,b,dgx-a100", "1,none,1f1b,plain,blocking,0,uniform,none,backward",
              "layer_backward_ms,11.8,sp_backward_regather") +
      row_22b("t,f,dgx-a100", "1,none,1f1b,plain,blocking,0,uniform,none,backward",
              "layer_forward_ms,7.2,processing_no_overlap");
  const std::vector<PublishedRow> rows = read_published(write_published(body));
  const SystemModel sys = builtin_system("dgx-a100");
  Layout l = rows[0].layout;
  const PassCosts with = block_costs(l, sys);
  l.sp_backward_regather = false;
  const PassCosts without = block_costs(l, sys);
  EXPECT_GT(with.backward_tp, without.backward_tp);
  EXPECT_NEAR(predict_published(rows[0], {}) - predict_published(rows[0], {"sp_backward_regather"}),
              1e3 * (with.backward_tp - without.backward_tp), 1e-9);
  EXPECT_LT(predict_published(rows[1], {"processing_no_overlap"}), predict_published(rows[1], {}));
  const RowResult r = evaluate(rows[1]);
  EXPECT_LT(r.low, r.predicted);
  EXPECT_GT(r.high, r.predicted);
  EXPECT_NEAR(r.error, (r.predicted - 7.2) / 7.2, 1e-12);
  EXPECT_EQ(r.held_out, predict_published(rows[1], {"processing_no_overlap"}));
}

// The tp_overlap column sets the layout's overlap, and undoing tp_backward_overlap gives back exactly the backward
// tensor-parallel time it hid.
TEST(PredictValidate, TpOverlapColumnAndItsUndo) {
  const std::vector<PublishedRow> rows = read_published(write_published(row_22b(
      "t,b,dgx-a100", "0,none,1f1b,plain,blocking,0,uniform,backward,backward", "layer_backward_ms,11.9,tp_backward_overlap")));
  ASSERT_TRUE(rows[0].layout.tp_backward_overlap);
  const SystemModel sys = builtin_system("dgx-a100");
  Layout l = rows[0].layout;
  const double hidden = block_costs(l, sys).backward_tp;
  l.tp_backward_overlap = false;
  const double exposed = block_costs(l, sys).backward_tp;
  EXPECT_LT(hidden, exposed);
  EXPECT_NEAR(predict_published(rows[0], {"tp_backward_overlap"}) - predict_published(rows[0], {}),
              1e3 * (exposed - hidden), 1e-9);
  EXPECT_FALSE(rows[0].layout.tp_userbuffers);
  // userbuffers: the backward's overlap and Transformer Engine's of the rest, with sequence parallelism only.
  const PublishedRow ub = read_published(write_published(row_22b(
      "t,b,dgx-h100", "1,none,1f1b,plain,blocking,0,uniform,userbuffers,backward", "layer_backward_ms,11.9,-")))[0];
  EXPECT_TRUE(ub.layout.tp_userbuffers);
  EXPECT_TRUE(ub.layout.tp_backward_overlap);
  EXPECT_THAT(refusal(row_22b("t,b,dgx-h100", "0,none,1f1b,plain,blocking,0,uniform,userbuffers,backward",
                              "layer_backward_ms,11.9,-")),
              HasSubstr(":2: --tp-userbuffers needs sequence parallelism (--sp)"));
}

// A rate measure is the step predicted for the row, converted: rate x step is what one step amounts to (worked out
// here from the row's numbers), and the range's ends swap (the fast end is the highest rate).
TEST(PredictValidate, RateMeasuresAreThePredictedStepConverted) {
  const std::string software = "1,full,1f1b,plain,blocking,0,uniform,none,backward";
  std::string body;
  for (const char* m : {"step_s", "tokens_per_s", "samples_per_s", "megatron_tflops_per_gpu", "model_tflops_per_gpu"})
    body += row_22b("t,r,dgx-a100", software, std::string(m) + ",1,-");
  const std::vector<PublishedRow> rows = read_published(write_published(body));
  ASSERT_EQ(rows.size(), 5u);
  const RowResult step = evaluate(rows[0]);
  ASSERT_GT(step.predicted, 0);
  ASSERT_LT(step.low, step.high);
  // b 4, s 2048, l 48, h 6144, V 51200 on 8 GPUs.
  const double b = 4, s = 2048, l = 48, h = 6144, v = 51200;
  const double megatron = 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)) / 8 / 1e12;
  const double model = 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h)) / 8 / 1e12;
  const double per_step[] = {b * s, b, megatron, model};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(rows[i + 1].measure);
    const RowResult x = evaluate(rows[i + 1]);
    EXPECT_NEAR(x.predicted * step.predicted, per_step[i], 1e-12 * per_step[i]);
    EXPECT_NEAR(x.low * step.high, per_step[i], 1e-12 * per_step[i]);
    EXPECT_NEAR(x.high * step.low, per_step[i], 1e-12 * per_step[i]);
    EXPECT_DOUBLE_EQ(x.error, x.predicted / 1 - 1);  // published 1
  }
  EXPECT_NEAR(megatron / model, 4.0 / 3 * (1 + s / (6 * h) + v / (16 * l * h)) / (1 + s / (6 * h) + v / (12 * l * h)),
              1e-12);
}

// Narayanan et al.'s count reproduces the TFLOP/s that MT-NLG (126 at 60.1 s per iteration on 2240 GPUs) and BLOOM
// (149.77 at 104.70 s on 384) published beside their iteration times.
TEST(PredictValidate, MegatronFlopsReproducePublishedTflops) {
  const std::vector<PublishedRow> rows = read_published(write_published(
      "m,mt-nlg,dgx-a100,20480,128,105,2048,51200,8,35,1,2240,1920,1,0,full,1f1b,plain,blocking,1,uniform,none,after,"
      "megatron_tflops_per_gpu,126,-\n"
      "b,bloom,dgx-a100,14336,112,70,2048,250880,4,12,1,384,2048,2,0,full,1f1b,plain,blocking,1,"
      "5+6+6+6+6+6+6+6+6+6+6+5,none,after,"
      "megatron_tflops_per_gpu,149.77,-\n"));
  EXPECT_NEAR(measure_from_step(rows[0], 60.1), 126, 0.5);
  EXPECT_NEAR(measure_from_step(rows[1], 104.70), 149.77, 0.02);
  const std::vector<PublishedRow> layer = read_published(write_published(
      row_22b("t,r,dgx-a100", "1,full,1f1b,plain,blocking,0,uniform,none,backward", "layer_forward_ms,7.2,-")));
  EXPECT_THROW(measure_from_step(layer[0], 1), Error);
  EXPECT_THAT(refusal(row_22b("t,r,dgx-a100", "1,full,1f1b,plain,blocking,0,uniform,none,backward", "mfu,0.5,-")),
              AllOf(HasSubstr(":2: measure 'mfu' is unknown; accepted: "), HasSubstr("megatron_tflops_per_gpu"),
                    HasSubstr("tokens_per_s")));
}

// Undoing nccl_collectives predicts on the same system with every algorithm modelled and no step latency: for
// ZeRO-3 over 64 nodes, whose per-block all-gathers and reduce-scatters are rings of 512 ranks, a faster step.
TEST(PredictValidate, UndoingNcclCollectivesDropsTheirStepLatency) {
  const std::vector<PublishedRow> rows = read_published(write_published(
      "t,z,dgx-h100,4096,32,32,2048,50368,1,1,1,512,3072,6,0,none,1f1b,flash,async,3,uniform,none,backward,step_s,"
      "1.27,nccl_collectives\n"));
  SystemModel every = builtin_system("dgx-h100");  // written out: what undoing the choice must amount to
  every.collective_algorithms = CollectiveAlgorithms::every;
  for (NetLevel& level : every.levels) level.step_latency_us = 0;
  const double undone = predict_published(rows[0], {"nccl_collectives"});
  EXPECT_EQ(undone, predict_step(rows[0].layout, every).time.step);
  EXPECT_GT(predict_published(rows[0], {}), undone);
  EXPECT_EQ(evaluate(rows[0]).held_out, undone);
}

// The optional sharding column: absent or `-`, ZeRO as DeepSpeed runs it; `fsdp` makes a ZeRO-2 row FSDP's
// SHARD_GRAD_OP (ZeRO-3 is modelled as FULL_SHARD either way); refused on ZeRO-0/1 and with another value. Every
// other column is required, named when missing.
TEST(PredictValidate, ShardingColumnIsOptional) {
  const std::string row = "t,r,dgx-h100,2560,20,32,2048,50368,1,1,1,512,4096,8,0,none,1f1b,flash,async,";
  auto table = [&](const std::string& zero, const std::string& sharding) {
    return write_published_with("sharding", row + zero + ",uniform,none,backward,step_s,1,-," + sharding);
  };
  EXPECT_TRUE(read_published(table("2", "fsdp"))[0].layout.zero2_fsdp);
  EXPECT_FALSE(read_published(table("2", "-"))[0].layout.zero2_fsdp);
  EXPECT_FALSE(read_published(table("3", "fsdp"))[0].layout.zero2_fsdp);
  EXPECT_FALSE(read_published(write_published(row + "2,uniform,none,backward,step_s,1,-\n"))[0].layout.zero2_fsdp);
  EXPECT_THAT(published_error(table("1", "fsdp")), HasSubstr(":2: sharding fsdp needs zero 2 or 3, not 1"));
  EXPECT_THAT(published_error(table("2", "zero")),
              HasSubstr(":2: sharding 'zero' is unknown; accepted: - (ZeRO as DeepSpeed"));
  const std::string path = tables().file("published_no_p2p.csv");
  std::string no_p2p(kPublishedHeader, std::strlen(kPublishedHeader) - 1);
  no_p2p.replace(no_p2p.find(",p2p,"), 5, ",");
  std::ofstream(path) << no_p2p << "\n";
  EXPECT_THAT(published_error(path), HasSubstr("has no column 'p2p'; accepted: the columns table, row"));
}

// The data-parallel reduction's column, optional and after sharding: `-` or absent the model's type with the ZeRO
// stage's collective; a DpReduce name; anything else refused naming the line and the accepted names.
TEST(PredictValidate, DpReduceColumnIsOptional) {
  const std::string row = "t,r,dgx-a100,2048,16,24,2048,51200,1,1,1,16,64,1,0,none,1f1b,plain,async,";
  auto table = [&](const std::string& zero, const std::string& reduce) {
    return write_published_with("sharding,dp_reduce", row + zero + ",uniform,none,after,step_s,1,-,-," + reduce);
  };
  EXPECT_EQ(read_published(table("1", "fp32-allreduce"))[0].layout.dp_reduce, DpReduce::fp32_allreduce);
  EXPECT_EQ(read_published(table("0", "fp32"))[0].layout.dp_reduce, DpReduce::fp32);
  EXPECT_EQ(read_published(table("1", "-"))[0].layout.dp_reduce, DpReduce::model);
  EXPECT_EQ(read_published(write_published(row + "1,uniform,none,after,step_s,1,-\n"))[0].layout.dp_reduce,
            DpReduce::model);
  EXPECT_THAT(published_error(table("1", "bf16")),
              HasSubstr(":2: dp_reduce 'bf16' is unknown; accepted: - (model), model, fp32, allreduce, "
                        "fp32-allreduce"));
  EXPECT_THAT(published_error(table("2", "allreduce")),
              HasSubstr(":2: --dp-reduce allreduce (DeepSpeed's pipeline engine) runs with --zero 0 or 1, not "
                        "--zero 2"));
}

// When ZeRO-1/2's parameter all-gather runs, optional: `-`, `after` or absent after the optimizer; `forward` during
// the next forward, with zero 1 or 2 only.
TEST(PredictValidate, ParamGatherColumnIsOptional) {
  const std::string row = "t,r,dgx-a100,2048,16,24,2048,51200,1,1,1,16,64,1,0,none,1f1b,plain,async,";
  auto table = [&](const std::string& zero, const std::string& gather) {
    return write_published_with("param_gather", row + zero + ",uniform,none,backward,step_s,1,-," + gather);
  };
  EXPECT_TRUE(read_published(table("1", "forward"))[0].layout.param_gather_overlap);
  EXPECT_FALSE(read_published(table("1", "after"))[0].layout.param_gather_overlap);
  EXPECT_FALSE(read_published(table("1", "-"))[0].layout.param_gather_overlap);
  EXPECT_THAT(published_error(table("1", "early")),
              HasSubstr(":2: param_gather 'early' is unknown; accepted: - or after (ZeRO's parameter all-gather after "
                        "the optimizer), forward (during the next forward)"));
  EXPECT_THAT(published_error(table("3", "forward")),
              HasSubstr(":2: param_gather forward needs zero 1 or 2 without fsdp, not zero 3"));
}

// The loss kernel, optional: `-`, `fp32` or absent fp32 logits in separate passes; `fused` one kernel over the 16-bit
// logits. A table that lists fused_cross_entropy among its choices is predicted without it when held out (slower).
TEST(PredictValidate, LossColumnIsOptionalAndItsChoiceCanBeUndone) {
  const std::string row = "t,r,dgx-a100,768,12,12,2048,50368,1,1,1,8,320,40,0,none,1f1b,flash,async,3,uniform,none,"
                          "backward,step_s,1,";
  auto table = [&](const std::string& shaped_by, const std::string& loss) {
    return write_published_with("loss", row + shaped_by + "," + loss);
  };
  EXPECT_TRUE(read_published(table("-", "fused"))[0].layout.fused_cross_entropy);
  EXPECT_FALSE(read_published(table("-", "fp32"))[0].layout.fused_cross_entropy);
  EXPECT_FALSE(read_published(table("-", "-"))[0].layout.fused_cross_entropy);
  EXPECT_THAT(published_error(table("-", "xentropy")),
              HasSubstr(":2: loss 'xentropy' is unknown; accepted: - or fp32 (fp32 logits, separate passes), fused "
                        "(one kernel over the 16-bit logits)"));
  const PublishedRow shaped = read_published(table("fused_cross_entropy", "fused"))[0];
  const RowResult r = evaluate(shaped);
  EXPECT_GT(r.held_out, r.predicted);
  EXPECT_DOUBLE_EQ(r.held_out, predict_published(shaped, {"fused_cross_entropy"}));
  EXPECT_DOUBLE_EQ(r.predicted, predict_published(read_published(table("-", "fused"))[0], {}));
}

// How microbatches' weight gradients add up, optional: `-` or absent inside the GEMM (fused); a GradAccumulation
// name; anything else refused naming the line; a choice a table's shaped_by names undone when it is held out.
TEST(PredictValidate, GradAccumColumnIsOptionalAndItsChoiceCanBeUndone) {
  const std::string row = "t,r,dgx-a100,2048,16,24,2048,51200,1,2,1,16,64,1,0,none,1f1b,plain,async,";
  auto table = [&](const std::string& zero, const std::string& shaped_by, const std::string& accumulation) {
    return write_published_with("grad_accum", row + zero + ",uniform,none,after,step_s,1," + shaped_by + "," +
                                                  accumulation);
  };
  EXPECT_EQ(read_published(table("1", "-", "fp32-add"))[0].layout.grad_accumulation, GradAccumulation::fp32_add);
  EXPECT_EQ(read_published(table("0", "-", "autograd"))[0].layout.grad_accumulation, GradAccumulation::autograd);
  EXPECT_EQ(read_published(table("1", "-", "-"))[0].layout.grad_accumulation, GradAccumulation::fused);
  EXPECT_EQ(read_published(write_published(row + "1,uniform,none,after,step_s,1,-\n"))[0].layout.grad_accumulation,
            GradAccumulation::fused);
  EXPECT_THAT(published_error(table("1", "-", "main-grad")),
              HasSubstr(":2: grad_accum 'main-grad' is unknown; accepted: - (fused), fused, autograd, fp32-add"));
  EXPECT_THAT(published_error(table("2", "-", "fp32-add")),
              HasSubstr(":2: --grad-accumulation fp32-add (DeepSpeed's pipeline engine) runs with --zero 0 or 1, "
                        "not --zero 2"));
  const PublishedRow shaped = read_published(table("1", "grad_accumulation", "fp32-add"))[0];
  const RowResult r = evaluate(shaped);
  EXPECT_LT(r.held_out, r.predicted);
  EXPECT_DOUBLE_EQ(r.held_out, predict_published(read_published(table("1", "-", "fused"))[0], {}));
}

// Whether the head's weight is the embedding's, optional: `-`, `untied` or absent its own; `tied` the embedding's.
TEST(PredictValidate, EmbeddingColumnIsOptional) {
  const std::string row = "t,r,dgx-a100,2048,16,24,2048,51200,1,2,1,16,64,1,0,none,1f1b,plain,async,1,uniform,none,"
                          "after,step_s,1,-,";
  auto table = [&](const std::string& embedding) { return write_published_with("embedding", row + embedding); };
  EXPECT_TRUE(read_published(table("tied"))[0].layout.tied_embeddings);
  EXPECT_FALSE(read_published(table("untied"))[0].layout.tied_embeddings);
  EXPECT_FALSE(read_published(table("-"))[0].layout.tied_embeddings);
  EXPECT_FALSE(read_published(write_published(row.substr(0, row.size() - 1) + "\n"))[0].layout.tied_embeddings);
  EXPECT_THAT(published_error(table("shared")),
              HasSubstr(":2: embedding 'shared' is unknown; accepted: - or untied (the head's own weight), tied (the "
                        "embedding's)"));
}
