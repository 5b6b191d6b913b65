// parbench-compare OLD NEW: two collective benchmark runs row by row, each row's time ratio with a confidence
// interval, the changes outside the noise marked, and an exit status for CI (compare/compare.h says how).
#include <cstdio>
#include <string>

#include "app/cli.h"
#include "app/program.h"
#include "compare/compare.h"

using namespace parbench;
using namespace parbench::compare;

int main(int argc, char** argv) {
  std::string old_path, new_path, fail_on = "slower";
  // 10%: one run's samples say nothing of the spread between runs (placement, the host's state), which reached
  // 14% between runs of one build on a 2-core VM while each run's own interval was a few percent wide.
  double threshold_pct = 10, confidence_pct = 95;
  Settings s;
  return run_program(
      {"Two collective benchmark runs compared row by row: our --csv or --json, nccl-tests' -J JSON or its output "
       "table; exit 1 when a row is marked slower (--fail-on)",
       "parbench-compare"},
      [&](CLI::App& app) {
        app.add_option("old", old_path, "the run to compare against (the baseline)")->required();
        app.add_option("new", new_path, "the run to judge")->required();
        app.add_option("--threshold", threshold_pct, "percent: a change smaller than this is never marked")
            ->capture_default_str()
            ->check(CLI::Range(0.0, 1000.0));
        app.add_option("--confidence", confidence_pct, "percent: the interval's confidence")
            ->capture_default_str()
            ->check(CLI::Range(50.0, 99.9));
        app.add_option("--resamples", s.resamples, "bootstrap resamples per row")
            ->capture_default_str()
            ->check(integer_in(100, 1000000));
        app.add_option("--fail-on", fail_on, "exit 1 when a row is marked: slower, change (slower or faster), never")
            ->capture_default_str()
            ->check(CLI::IsMember({"slower", "change", "never"}));
      },
      argc, argv, [&](const CLI::App&) {
        s.threshold = threshold_pct / 100, s.confidence = confidence_pct / 100;
        const Run old_run = read_run(old_path), new_run = read_run(new_path);
        const Comparison c = compare_runs(old_run, new_run, s);
        std::fputs(comparison_text(old_run, new_run, c, s).c_str(), stdout);
        int slower = 0, faster = 0;
        for (const RowComparison& r : c.rows) slower += r.mark == Mark::slower, faster += r.mark == Mark::faster;
        if (fail_on == "never") return 0;
        return slower > 0 || (fail_on == "change" && faster > 0) ? 1 : 0;
      });
}
