// Under mpirun, which rank is late: a thread per process answers other ranks' "are you there, what are you
// measuring" probes, so that a rank whose wait timed out (or whose watchdog fired on a library call, which does
// not say which rank it waits for) can name the ranks that did not answer: stopped, hung outside MPI, or gone.
// The thread sleeps between looks (one MPI_Iprobe every 50 ms) and is stopped before MPI_Finalize.
#pragma once
#ifdef PARBENCH_HAVE_MPI
#include <mpi.h>

#include <string>

namespace parbench {

// Starts the answering thread over a duplicate of `world`; the calling thread is the rank whose measurement
// (measurement.h) the answers carry.
void liveness_start(MPI_Comm world);
// Stops it (before MPI_Finalize; safe to call more than once, or without a start).
void liveness_stop();
// Probes every other rank and waits up to `wait_s` for the answers: "rank 1 did not answer within 1 s (stopped,
// hung outside MPI, or gone)", plus what each answering rank was measuring when that differs from this rank's.
// "" before liveness_start.
std::string liveness_report(double wait_s);

}  // namespace parbench
#endif
