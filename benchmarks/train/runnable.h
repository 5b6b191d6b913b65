// bench_train --list-runnable: every scheme x schedule x data-parallel scheme the registries say can run, one line
// each with the fewest ranks it runs on, so the tests and the demo take their lists from the program.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace parbench::train_bench {

struct Runnable {
  std::string name;   // "ddp", "pp_1f1b", "hybrid_zero1": unique, usable in a test name
  int ranks = 1;      // the fewest ranks it runs on (with its explicit degrees, dp takes any multiple of them)
  int layers = 1;     // --layers must be a multiple of this (the pipeline's virtual stages)
  std::string family;  // "data": the batch splits over ranks; "model": microbatches; "whole": mp's whole batch
  std::vector<std::string> args;  // bench_train options that select it
};

// From parallel/scheme_kinds.* and the schedule registry: data-parallel schemes at 2 ranks (single at 1), tensor
// parallelism at --tp 2, naive model parallelism at --pp 2, every schedule on a 2-stage pipeline over 4
// microbatches (2 model chunks per stage where the schedule takes several), hybrid at --dp 2 --tp 2 per --dp-scheme.
std::vector<Runnable> runnable_combinations();

// "# name ranks layers family args" and then one line per combination: "pp_interleaved 2 4 model --scheme pp ...".
void print_runnable(std::ostream& os);

}  // namespace parbench::train_bench
