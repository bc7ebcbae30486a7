// Every other public verb of Debian's libibverbs, so that any verbs program loads (its binaries
// are linked BIND_NOW: one missing name@version and it does not start). These are not supported
// yet (docs/verbs-programs.md): each fails the way the verb reports an error, with errno
// EOPNOTSUPP, and says so once on standard error, so that a program stops at its first such verb
// with its own message instead of a loader error. Their parameters are not read, so no
// prototype is needed here (verbs.h is not included: the names keep their C linkage and types are
// not part of it).
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

namespace {

void refuse(const char* verb) {
  static std::mutex m;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(m);
  if (said.insert(verb).second)
    std::fprintf(stderr, "vhca libibverbs: %s is not supported yet (so far: discovery, queries, PDs, MRs, CQs, completion channels, RC, UC and UD QPs, SRQs, AHs, async events; docs/verbs-programs.md)\n",
                 verb);
  errno = EOPNOTSUPP;
}

}  // namespace

// A verb that returns an object (NULL on error, errno set).
#define VHCA_NULL(name) \
  void* name() {        \
    refuse(#name);      \
    return nullptr;     \
  }
// A verb that returns 0 or an errno value.
#define VHCA_ERRNO(name) \
  int name() {           \
    refuse(#name);       \
    return EOPNOTSUPP;   \
  }
// A verb that returns 0 or -1 with errno set (a negative count for the ssize_t ones).
#define VHCA_MINUS1(name) \
  long name() {           \
    refuse(#name);        \
    return -1;            \
  }
// A verb with no result.
#define VHCA_VOID(name) \
  void name() { refuse(#name); }

extern "C" {
VHCA_NULL(ibv_reg_dmabuf_mr)
VHCA_NULL(ibv_create_ah_from_wc)
VHCA_NULL(ibv_qp_to_qp_ex)
VHCA_NULL(ibv_import_device)
VHCA_NULL(ibv_import_pd)
VHCA_NULL(ibv_import_mr)
VHCA_NULL(ibv_import_dm)
VHCA_ERRNO(ibv_rereg_mr)
VHCA_ERRNO(ibv_resize_cq)
VHCA_ERRNO(ibv_query_qp_data_in_order)
VHCA_ERRNO(ibv_init_ah_from_wc)
VHCA_ERRNO(ibv_attach_mcast)
VHCA_ERRNO(ibv_detach_mcast)
VHCA_ERRNO(ibv_query_ece)
VHCA_ERRNO(ibv_set_ece)
VHCA_ERRNO(ibv_resolve_eth_l2_from_gid)
VHCA_MINUS1(_ibv_query_gid_table)
VHCA_VOID(ibv_unimport_pd)
VHCA_VOID(ibv_unimport_mr)
VHCA_VOID(ibv_unimport_dm)
VHCA_VOID(ibv_copy_ah_attr_from_kern)
VHCA_VOID(ibv_copy_qp_attr_from_kern)
VHCA_VOID(ibv_copy_path_rec_from_kern)
VHCA_VOID(ibv_copy_path_rec_to_kern)
}  // extern "C"
