// A TCP rendezvous store for starting ranks without MPI, on the model of torch.distributed's TCPStore: rank 0
// serves a key-value table, every rank connects and presents the job's token, then sets keys, gets them (waiting
// until some rank has set them), adds to counters and meets at barriers, each within a timeout.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "collectives/launch/store_protocol.h"

namespace parbench {

class StoreServer {
 public:
  // Listens on every interface at `port` (0: a free port, see port()) for the `world_size` ranks of the job whose
  // token is `token`. Any other connection (another job's rank, a port scanner, bytes that are not our frames,
  // silence for `hello_timeout_s`) is logged on stderr and dropped; none stops, blocks or changes the store.
  StoreServer(int port, std::string token, int world_size, double hello_timeout_s = 10);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  int port() const;
  int dropped() const;  // connections dropped so far

  struct Impl;  // the server's state, shared with its sessions (store_server.cpp)

 private:
  std::shared_ptr<Impl> impl_;
};

class StoreClient {
 public:
  // Connects to host:port, retrying while nothing listens there yet, and joins as `rank` of `world_size`; Error
  // naming the address, the rank and what failed when it cannot within `timeout_s` (also the limit of every later
  // call) or when the store refuses it (wrong token, a rank already joined, another world size).
  StoreClient(const std::string& host, int port, const std::string& token, int rank, int world_size,
              double timeout_s);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const std::string& value);
  std::string get(const std::string& key);  // waits until some rank has set `key`
  std::int64_t add(const std::string& key, std::int64_t delta);
  void barrier();  // every rank calls its barriers in the same order; returns once all ranks reached this one
  // The numeric address of this end of the connection: where the store's host reaches this rank.
  std::string local_address() const;

 private:
  store::Reply call(const store::Request& request, const std::string& what);
  [[noreturn]] void fail(const std::string& what) const;

  int fd_ = -1;
  std::string where_;  // "host:port"
  int rank_, world_size_;
  double timeout_s_;
  int barriers_ = 0;
};

}  // namespace parbench
