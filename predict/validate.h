// Published measurements held in the repository (predict/published/*.csv) predicted row by row: per row the
// prediction, its low/high range from the system's spreads and the error; per table the mean error, and the error
// with the modelling choices taken while looking at that table undone (leave one table out).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "predict/predict.h"

namespace parbench::predict {

// Modelling choices that were made while looking at a published table, so that they can be undone for it.
//   processing_no_overlap: an op's compute and memory times add (else the system's processing is roofline);
//   sp_backward_regather: Layout::sp_backward_regather; blocking_p2p: Layout::blocking_p2p;
//   tp_backward_overlap: Layout::tp_backward_overlap (the table's tp_overlap column honoured);
//   nccl_collectives: NCCL's algorithms alone, with its per-step latency beyond two nodes (else every algorithm
//   modelled, no step latency); fused_cross_entropy: Layout::fused_cross_entropy (the table's loss column honoured);
//   grad_accumulation: Layout::grad_accumulation (the table's grad_accum column honoured).
inline const std::set<std::string> kModellingChoices = {
    "processing_no_overlap", "sp_backward_regather", "blocking_p2p",     "tp_backward_overlap",
    "nccl_collectives",      "fused_cross_entropy",  "grad_accumulation"};

// What a published number measures: a time (step_s; one block's layer_forward_ms, layer_backward_ms) or a rate
// over the step time, as the source printed it: tokens_per_s and samples_per_s of the whole job (global batch x
// sequence, global batch), megatron_tflops_per_gpu (Narayanan et al. 2021's FLOPs per iteration, which count the
// recomputed forward: 96 B s l h^2 (1 + s/6h + V/16lh)) and model_tflops_per_gpu (Korthikanti et al. 2022's model
// FLOPs, without recomputation: 72 B s l h^2 (1 + s/6h + V/12lh)), each per GPU.
inline const std::set<std::string> kMeasures = {"step_s",        "layer_forward_ms",        "layer_backward_ms",
                                                 "tokens_per_s",  "samples_per_s",           "megatron_tflops_per_gpu",
                                                 "model_tflops_per_gpu"};

struct PublishedRow {
  std::string table, row, system, measure;  // measure: one of kMeasures
  Layout layout;                           // with every modelling choice applied
  double published = 0;
  std::set<std::string> shaped_by;         // the choices made while looking at this row's table
};

// Reads a published-table CSV (columns: table,row,system,hidden,heads,layers,seq,vocab,tp,pp,v,gpus,global_batch,
// micro_batch,sp,recompute,schedule,attention,p2p,zero,partition,tp_overlap,dp_overlap,measure,published,shaped_by
// and optionally sharding, dp_reduce, embedding, param_gather, loss and grad_accum; system: a built-in name or a
// system file, a relative path taken beside the CSV; partition: uniform or block counts per virtual stage joined by
// '+'; tp_overlap: none, backward or userbuffers; dp_overlap: backward or after; sharding: - or fsdp; dp_reduce: -
// or a DpReduce name; embedding: -, untied or tied; param_gather: -, after or forward; loss: -, fp32 or fused;
// grad_accum: - or a GradAccumulation name).
// UsageError naming the file, line and bad value.
std::vector<PublishedRow> read_published(const std::string& path);

struct RowResult {
  double predicted = 0, low = 0, high = 0;  // in the row's measure; low/high: the ends the systems' spreads give
  double error = 0;                          // (predicted - published) / published
  double held_out = 0;                       // predicted with the table's own choices undone
  double held_out_error = 0;
};

// A step of `step_s` seconds of the row's layout in the row's measure (step_s or a rate; Error for a layer time).
double measure_from_step(const PublishedRow& r, double step_s);

// The row predicted on its system; `undo` lists the modelling choices to leave out.
double predict_published(const PublishedRow& r, const std::set<std::string>& undo);
RowResult evaluate(const PublishedRow& r);

}  // namespace parbench::predict
