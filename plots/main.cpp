// parbench-plot: figures from parbench's CSV results and Chrome traces, one subcommand per figure (plots/cli.*).
#include "plots/cli.h"

int main(int argc, char** argv) { return parbench::plots::plot_main(argc, argv); }
