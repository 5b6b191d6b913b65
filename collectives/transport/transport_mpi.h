// The MPI transport's class, for the code that needs its MPI_Comm (the mpi library algorithm, the bootstrap).
#pragma once
#ifdef PARBENCH_HAVE_MPI
#include <mpi.h>

#include <string>

#include "collectives/transport/transport.h"

namespace parbench {

// The MPI_Comm behind `t`, or MPI_COMM_NULL when `t` is not the MPI transport.
MPI_Comm mpi_comm_of(const Transport& t);

// Polls `reqs` (yielding the CPU between tests) until all completed (true) or `deadline` passed (false; the
// requests are left as they are, the completed ones included, so that the caller can tell which are late).
bool mpi_test_until(MPI_Request* reqs, int count, Deadline deadline);
// mpi_test_until after polling without yielding for up to `spin_ns` (see poll_spin_ns).
bool mpi_poll_until(MPI_Request* reqs, int count, Deadline deadline, long spin_ns);
long poll_spin_ns();
// Completes `reqs` by polling (yielding the CPU between tests) until `deadline`; then TimeoutError naming `what`.
void mpi_wait_all(MPI_Request* reqs, int count, Deadline deadline, const std::string& what);

}  // namespace parbench
#endif
