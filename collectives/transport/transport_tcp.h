// The tcp transport's factory: point-to-point between the processes of a job started without MPI, over a TCP mesh.
#pragma once
#include <memory>

#include "collectives/transport/tcp_mesh.h"
#include "collectives/transport/transport.h"

namespace parbench {

// The world's transport over `mesh` (every rank of it); its splits share the mesh's connections. `companion`
// (under mpirun: the MPI transport over the same ranks, which MPI's own collectives need) is split alongside.
std::unique_ptr<Transport> make_tcp_transport(std::shared_ptr<TcpMesh> mesh, Device device,
                                              std::unique_ptr<Transport> companion = nullptr);

}  // namespace parbench
