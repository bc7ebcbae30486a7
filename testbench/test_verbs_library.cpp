// The drop-in libibverbs' helpers and refusals, called as a verbs program calls them (linked
// against the library, through verbs.h's prototypes): names of enum values and rate conversions
// as rdma-core gives them, the one-entry P_Key table, a NULL object refused with EINVAL, and an unsupported verb failing with its
// own error convention and EOPNOTSUPP.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <infiniband/verbs.h>

#undef ibv_reg_mr

namespace {
int failures = 0;
void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  }
}
}  // namespace

int main() {
  check(std::strcmp(ibv_wc_status_str(IBV_WC_SUCCESS), "success") == 0, "IBV_WC_SUCCESS name");
  check(std::strcmp(ibv_wc_status_str(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error") == 0, "WR flush name");
  check(std::strcmp(ibv_wc_status_str(ibv_wc_status(999)), "unknown") == 0, "unknown status");
  check(std::strcmp(ibv_port_state_str(IBV_PORT_ACTIVE), "active") == 0, "port active name");
  check(std::strcmp(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter") == 0, "node type name");
  check(std::strcmp(ibv_event_type_str(IBV_EVENT_PORT_ACTIVE), "port active") == 0, "event name");
  check(ibv_rate_to_mbps(IBV_RATE_100_GBPS) == 103125, "EDR 4X in Mbit/s");
  check(mbps_to_ibv_rate(25781) == IBV_RATE_25_GBPS, "25 Gb/s from Mbit/s");
  check(ibv_rate_to_mult(IBV_RATE_10_GBPS) == 4, "10 Gb/s is 4 x 2.5");
  check(mult_to_ibv_rate(4) == IBV_RATE_10_GBPS, "4 x 2.5 is 10 Gb/s");
  check(ibv_rate_to_mult(IBV_RATE_100_GBPS) == -1, "EDR is no multiple of 2.5");
  check(mult_to_ibv_rate(3) == IBV_RATE_MAX, "no rate for 3 x 2.5");
  check(ibv_fork_init() == 0 && ibv_is_fork_initialized() == IBV_FORK_UNNEEDED, "fork needs nothing");
  __be16 pkey = 0;
  check(ibv_query_pkey(nullptr, 1, 0, &pkey) == 0 && pkey == __be16(0xFFFF), "P_Key 0 is the default");
  errno = 0;
  check(ibv_query_pkey(nullptr, 1, 1, &pkey) == -1 && errno == EINVAL, "P_Key 1 does not exist");
  check(ibv_get_pkey_index(nullptr, 1, __be16(0xFFFF)) == 0, "the default P_Key's index");
  // Implemented verbs refuse a NULL object with EINVAL in their own error convention (the real
  // library would crash).
  errno = 0;
  check(ibv_create_comp_channel(nullptr) == nullptr && errno == EINVAL, "ibv_create_comp_channel refuses NULL");
  check(ibv_destroy_qp(nullptr) == EINVAL, "ibv_destroy_qp refuses NULL with its errno");
  errno = 0;
  check(ibv_reg_mr(nullptr, nullptr, 0, 0) == nullptr && errno == EINVAL, "ibv_reg_mr refuses NULL");
  errno = 0;
  check(ibv_get_cq_event(nullptr, nullptr, nullptr) == -1 && errno == EINVAL, "ibv_get_cq_event refuses NULL with -1");
  errno = 0;
  check(ibv_create_cq(nullptr, 1, nullptr, nullptr, 0) == nullptr && errno == EINVAL, "ibv_create_cq refuses NULL");
  errno = 0;
  check(ibv_create_srq(nullptr, nullptr) == nullptr && errno == EINVAL, "ibv_create_srq refuses NULL");
  check(ibv_destroy_srq(nullptr) == EINVAL, "ibv_destroy_srq refuses NULL with its errno");
  // Unsupported verbs: the verb's own error convention, errno EOPNOTSUPP.
  errno = 0;
  check(ibv_qp_to_qp_ex(nullptr) == nullptr && errno == EOPNOTSUPP, "ibv_qp_to_qp_ex refused");
  check(ibv_resize_cq(nullptr, 1) == EOPNOTSUPP, "ibv_resize_cq refused with its errno");
  errno = 0;
  check(_ibv_query_gid_table(nullptr, nullptr, 0, 0, 0) == -1 && errno == EOPNOTSUPP, "_ibv_query_gid_table refused with -1");
  errno = 0;
  check(ibv_get_async_event(nullptr, nullptr) == -1 && errno == EINVAL, "ibv_get_async_event refuses NULL with -1");
  if (failures) return 1;
  std::printf("helpers and refusals as rdma-core's conventions\n");
  return 0;
}
