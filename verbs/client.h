// The library's connection to the device server, shared by the device functions
// (verbs/libibverbs.cpp) and the provider (verbs/provider.cpp): a context and its requests.
#pragma once
#include <pthread.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include <infiniband/verbs.h>

#include "verbs/protocol.h"

namespace vhca::client {

struct Cq;
struct Qp;
struct Srq;

// A device context: the verbs.h struct first (programs see only that), its connection, and the
// objects the data path looks up by number (a CQE names its QP, an event its CQ).
struct Context {
  ibv_context ctx;
  int fd;  // this context's connection to the server
  uint32_t index;
  pthread_mutex_t objects_lock;
  std::map<uint32_t, Cq*> cqs;
  std::map<uint32_t, Qp*> qps;
  std::map<uint32_t, Srq*> srqs;
};

inline Context* context_of(ibv_context* c) { return reinterpret_cast<Context*>(c); }

// One request and its reply; returns 0 or an errno (EIO if the server broke the protocol). A
// descriptor passed with the reply lands in *passed (else -1); `pass` (if not -1) goes with the
// request. Requests carry the calling thread's id (the time rule).
int call(int fd, wire::Op op, const void* body, uint32_t len, std::vector<uint8_t>& out, int* passed = nullptr,
         int pass = -1);

// A request on a context's connection, one thread at a time (threads may share a context); the
// reply's body must be `T` (or empty, for the overload without one).
int context_call(ibv_context* c, wire::Op op, const void* body, uint32_t len, std::vector<uint8_t>& out,
                 int* passed = nullptr, int pass = -1);
int context_call(ibv_context* c, wire::Op op, const void* body, uint32_t len);
template <typename T>
int context_call(ibv_context* c, wire::Op op, const void* body, uint32_t len, T& out, int* passed = nullptr,
                 int pass = -1) {
  std::vector<uint8_t> reply;
  const int rc = context_call(c, op, body, len, reply, passed, pass);
  if (rc) return rc;
  if (reply.size() != sizeof(T)) return EIO;
  std::memcpy(&out, reply.data(), sizeof(T));
  return 0;
}
// A posted request (a doorbell): sent, not answered.
int context_post(ibv_context* c, wire::Op op, const void* body, uint32_t len);

// Fills the context's data-path operations (ibv_context.ops: poll, arm, post).
void install_data_path(ibv_context* c);

// A socket pair whose other end went to the server with `op` (a completion channel, the async
// event channel): returns the end the program keeps, or -1 with errno set (the reply's body, if
// any, in `reply`).
int open_event_socket(ibv_context* c, wire::Op op, std::vector<uint8_t>& reply);

}  // namespace vhca::client
