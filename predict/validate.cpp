// Published rows predicted with and without the modelling choices their table shaped (predict/validate.h).
// Every file that includes fccp must agree on CSV_IO_NO_THREAD (the reader's layout depends on it): see calibrate.cpp.
#define CSV_IO_NO_THREAD
#include "predict/validate.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <tuple>

#include <libfccp/csv.h>

#include "base/error.h"
#include "base/text.h"
#include "predict/costs.h"

namespace parbench::predict {

namespace {

// A system file named by a relative path is looked up beside the table that names it; a built-in name stays.
std::string system_beside(const std::string& system, const std::string& table_path) {
  if (!names_system_file(system) || system.front() == '/') return system;
  const auto slash = table_path.rfind('/');
  return slash == std::string::npos ? system : table_path.substr(0, slash + 1) + system;
}

// The partition column: "uniform" (no counts: layers / virtual stages each) or block counts per virtual stage
// joined by '+' (checked against the layers by validate_layout).
std::vector<int> parse_partition(const std::string& text, const std::string& where) {
  if (text == "uniform") return {};
  const UsageError bad(where + ": partition '" + text + "' is not uniform or block counts joined by '+' (e.g. 5+6+5)");
  std::vector<int> blocks;
  std::istringstream in(text);
  for (std::string count; std::getline(in, count, '+');) {
    const std::optional<int> v = parse_int_text(count);
    if (!v || *v < 1) throw bad;
    blocks.push_back(*v);
  }
  if (blocks.empty()) throw bad;
  return blocks;
}

// A software column with two values: whether it says `yes` (else `no`); any other value is refused, naming the
// column, the value and `accepted`.
bool column_says(const std::string& value, const std::string& yes, const std::string& no, const std::string& column,
                 const std::string& accepted, const std::string& where) {
  if (value != yes && value != no)
    throw UsageError(where + ": " + column + " '" + value + "' is unknown; accepted: " + accepted);
  return value == yes;
}

// An optional software column of several values, read by `parse`: absent or `-` says `fallback`; a value `parse`
// refuses is refused naming the column, the value and `accepted`.
template <class T, class Parse>
T optional_column(const std::string& value, T fallback, Parse parse, const std::string& column,
                  const std::string& accepted, const std::string& where) {
  if (value.empty() || value == "-") return fallback;
  try {
    return parse(value);
  } catch (const UsageError&) {
    throw UsageError(where + ": " + column + " '" + value + "' is unknown; accepted: " + accepted);
  }
}

// An optional software column of two values: absent or `-` says `no`.
bool optional_column_says(const std::string& value, const std::string& yes, const std::string& no,
                          const std::string& column, const std::string& accepted, const std::string& where) {
  return column_says(value.empty() || value == "-" ? no : value, yes, no, column, accepted, where);
}

struct RawRow {
  std::string table, row, system, recompute, schedule, attention, p2p, partition, tp_overlap, dp_overlap, measure,
      shaped_by, sharding, dp_reduce, embedding, param_gather, loss, grad_accum;
  int hidden = 0, heads = 0, layers = 0, seq = 0, vocab = 0, tp = 0, pp = 0, v = 0, gpus = 0, batch = 0, mbs = 0,
      sp = 0, zero = 0;
  double published = 0;
};

std::set<std::string> parse_choices(const std::string& text, const std::string& where) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string c; in >> c;) {
    if (c == "-") continue;
    if (!kModellingChoices.count(c))
      throw UsageError(where + ": modelling choice '" + c + "' is unknown; accepted: " +
                       join(std::vector<std::string>(kModellingChoices.begin(), kModellingChoices.end())) +
                       " (space-separated) or -");
    out.insert(c);
  }
  return out;
}

PublishedRow to_row(const RawRow& r, const std::string& where) {
  if (!kMeasures.count(r.measure))
    throw UsageError(where + ": measure '" + r.measure + "' is unknown; accepted: " +
                     join(std::vector<std::string>(kMeasures.begin(), kMeasures.end())));
  if (!(r.published > 0)) throw UsageError(where + ": published must be > 0");
  PublishedRow p{r.table, r.row, r.system, r.measure, {}, r.published, parse_choices(r.shaped_by, where)};
  Layout& l = p.layout;
  l.model.kind = ModelKind::gpt;
  l.model.hidden = r.hidden, l.model.heads = r.heads, l.model.layers = r.layers, l.model.seq = r.seq;
  l.model.vocab = r.vocab, l.model.dtype = DType::bf16;  // bf16 stands for fp16: the same speed
  l.model.flash_attention = column_says(r.attention, "flash", "plain", "attention", "plain, flash", where);
  l.blocking_p2p =
      column_says(r.p2p, "blocking", "async", "p2p", "blocking (a send holds its stage), async", where);
  // tp_overlap userbuffers: the backward's overlap and Transformer Engine's of the other collectives.
  l.tp_userbuffers = r.tp_overlap == "userbuffers";
  l.tp_backward_overlap = l.tp_userbuffers ||
                          column_says(r.tp_overlap, "backward", "none", "tp_overlap",
                                      "none, backward (the column-parallel backward collectives beside that "
                                      "linear's GEMMs), userbuffers (and the others beside theirs, as Transformer "
                                      "Engine's userbuffers)", where);
  l.dp_reduce_at_end = column_says(r.dp_overlap, "after", "backward", "dp_overlap",
                                   "backward (the data-parallel reduction in buckets during the backward), after "
                                   "(once the last backward ended)", where);
  l.gpus = r.gpus, l.tp = r.tp, l.pp = r.pp, l.dp = r.gpus / std::max(1, r.tp * r.pp), l.virtual_stages = r.v;
  l.global_batch = r.batch, l.micro_batch = r.mbs, l.sequence_parallel = r.sp != 0, l.zero_stage = r.zero;
  // Optional column: absent or `-`, ZeRO as DeepSpeed and Megatron run it; `fsdp`, as PyTorch FSDP's units
  // (SHARD_GRAD_OP for ZeRO-2; ZeRO-3's FULL_SHARD is modelled so either way).
  const bool fsdp = optional_column_says(r.sharding, "fsdp", "-", "sharding",
                                         "- (ZeRO as DeepSpeed runs it), fsdp (PyTorch FSDP's units, with zero 2 or 3)",
                                         where);
  if (fsdp && r.zero < 2) throw UsageError(where + ": sharding fsdp needs zero 2 or 3, not " + std::to_string(r.zero));
  l.zero2_fsdp = fsdp && r.zero == 2;
  // Optional columns: absent or `-`, the gradients reduced in the model's type with the ZeRO stage's collective, and
  // each microbatch's weight gradients accumulated inside the GEMM.
  l.dp_reduce = optional_column(r.dp_reduce, DpReduce::model, parse_dp_reduce, "dp_reduce",
                                "- (model), model, fp32, allreduce, fp32-allreduce", where);
  l.grad_accumulation = optional_column(r.grad_accum, GradAccumulation::fused, parse_grad_accumulation, "grad_accum",
                                        "- (fused), fused, autograd, fp32-add", where);
  // Optional column: absent or `-`, the head's own weight (untied); `tied`, the embedding's.
  l.tied_embeddings = optional_column_says(r.embedding, "tied", "untied", "embedding",
                                           "- or untied (the head's own weight), tied (the embedding's)", where);
  // Optional column: absent, `-` or `after`, ZeRO-1/2's parameter all-gather after the optimizer; `forward`, during
  // the next step's forward.
  l.param_gather_overlap = optional_column_says(r.param_gather, "forward", "after", "param_gather",
                                                "- or after (ZeRO's parameter all-gather after the optimizer), forward "
                                                "(during the next forward)", where);
  if (l.param_gather_overlap && (r.zero < 1 || r.zero > 2 || fsdp))
    throw UsageError(where + ": param_gather forward needs zero 1 or 2 without fsdp, not zero " +
                     std::to_string(r.zero) + (fsdp ? " with fsdp" : ""));
  // Optional column: absent, `-` or `fp32`, the loss over fp32 logits; `fused`, one kernel over the 16-bit logits.
  l.fused_cross_entropy = optional_column_says(r.loss, "fused", "fp32", "loss",
                                               "- or fp32 (fp32 logits, separate passes), fused (one kernel over the "
                                               "16-bit logits)", where);
  l.stage_blocks = parse_partition(r.partition, where);
  try {
    l.schedule = ScheduleRef::parse(r.schedule);
    l.recompute = parse_recompute(r.recompute);
    validate_layout(l);
  } catch (const UsageError& e) {
    throw UsageError(where + ": " + e.what());
  }
  l.sp_backward_regather = true;
  return p;
}

}  // namespace

std::vector<PublishedRow> read_published(const std::string& path) {
  if (!std::ifstream(path)) throw UsageError("cannot read " + path + "; accepted: a published-table CSV");
  std::vector<PublishedRow> out;
  try {
    // Every column but the last six (sharding, dp_reduce, embedding, param_gather, loss, grad_accum: optional) must
    // be there.
    static constexpr std::array<const char*, 32> kColumns = {
        "table",     "row",         "system",    "hidden",     "heads",      "layers",   "seq",
        "vocab",     "tp",          "pp",        "v",          "gpus",       "global_batch",
        "micro_batch", "sp",        "recompute", "schedule",   "attention",  "p2p",      "zero",
        "partition", "tp_overlap",  "dp_overlap", "measure",   "published",  "shaped_by", "sharding",
        "dp_reduce", "embedding", "param_gather", "loss", "grad_accum"};
    const std::vector<std::string> required(kColumns.begin(), kColumns.end() - 6);
    io::CSVReader<kColumns.size(), io::trim_chars<' ', '\t'>, io::double_quote_escape<',', '"'>> in(path);
    std::apply([&](auto... name) { in.read_header(io::ignore_missing_column, name...); }, kColumns);
    for (const std::string& column : required)
      if (!in.has_column(column))
        throw UsageError(path + " has no column '" + column + "'; accepted: the columns " + join(required) +
                         " and optionally sharding, dp_reduce, embedding, param_gather, loss and grad_accum");
    RawRow r;
    while (in.read_row(r.table, r.row, r.system, r.hidden, r.heads, r.layers, r.seq, r.vocab, r.tp, r.pp, r.v, r.gpus,
                       r.batch, r.mbs, r.sp, r.recompute, r.schedule, r.attention, r.p2p, r.zero, r.partition,
                       r.tp_overlap, r.dp_overlap, r.measure, r.published, r.shaped_by, r.sharding, r.dp_reduce,
                       r.embedding, r.param_gather, r.loss, r.grad_accum)) {
      out.push_back(to_row(r, path + ":" + std::to_string(in.get_file_line())));
      out.back().system = system_beside(out.back().system, path);
    }
  } catch (const io::error::base& e) {
    throw UsageError(path + ": " + e.what());
  }
  if (out.empty()) throw UsageError(path + " has no rows");
  return out;
}

namespace {

// What one step of the row's layout amounts to in a rate measure (the rate is that over the step time); 0 for the
// measures that are times.
double amount_per_step(const PublishedRow& r) {
  const ModelConfig& m = r.layout.model;
  const double b = r.layout.global_batch, s = m.seq, l = m.layers, h = m.hidden, v = m.vocab;
  if (r.measure == "tokens_per_s") return b * s;
  if (r.measure == "samples_per_s") return b;
  // Narayanan et al. 2021: forward, backward and the recomputed forward; Korthikanti et al. 2022's model FLOPs:
  // forward and backward only. Per GPU, in TFLOP.
  if (r.measure == "megatron_tflops_per_gpu")
    return 96 * b * s * l * h * h * (1 + s / (6 * h) + v / (16 * l * h)) / r.layout.gpus / 1e12;
  if (r.measure == "model_tflops_per_gpu")
    return 72 * b * s * l * h * h * (1 + s / (6 * h) + v / (12 * l * h)) / r.layout.gpus / 1e12;
  return 0;
}

double predict_on(const PublishedRow& r, const Layout& l, const SystemModel& sys) {
  if (r.measure == "layer_forward_ms" || r.measure == "layer_backward_ms") {
    const PassCosts c = block_costs(l, sys);
    if (r.measure == "layer_forward_ms") return 1e3 * (c.forward + c.forward_tp);
    return 1e3 * (c.backward_input + c.backward_weight + c.backward_tp + c.recompute + c.recompute_tp);
  }
  return measure_from_step(r, predict_step(l, sys).time.step);
}

}  // namespace

double measure_from_step(const PublishedRow& r, double step_s) {
  if (r.measure == "step_s") return step_s;
  const double amount = amount_per_step(r);
  if (amount == 0) throw Error("measure " + r.measure + " is not a step time or a rate over it");
  return amount / step_s;
}

double predict_published(const PublishedRow& r, const std::set<std::string>& undo) {
  SystemModel sys = load_system(r.system);
  Layout l = r.layout;
  if (undo.count("processing_no_overlap")) sys.gpu.processing = Processing::roofline;
  if (undo.count("nccl_collectives")) sys = without_nccl_collectives(sys);
  if (undo.count("sp_backward_regather")) l.sp_backward_regather = false;
  if (undo.count("blocking_p2p")) l.blocking_p2p = false;
  if (undo.count("tp_backward_overlap")) l.tp_backward_overlap = false;
  if (undo.count("fused_cross_entropy")) l.fused_cross_entropy = false;
  if (undo.count("grad_accumulation")) l.grad_accumulation = GradAccumulation::fused;
  return predict_on(r, l, sys);
}

RowResult evaluate(const PublishedRow& r) {
  const SystemModel sys = load_system(r.system);
  RowResult out;
  out.predicted = predict_on(r, r.layout, sys);
  // The two ends of every source's spread: the lowest and highest time, the highest and lowest rate.
  const double fast = predict_on(r, r.layout, shifted_system(sys, +1));
  const double slow = predict_on(r, r.layout, shifted_system(sys, -1));
  out.low = std::min(fast, slow);
  out.high = std::max(fast, slow);
  out.error = (out.predicted - r.published) / r.published;
  out.held_out = predict_published(r, r.shaped_by);
  out.held_out_error = (out.held_out - r.published) / r.published;
  return out;
}

}  // namespace parbench::predict
