// The library's verbs that need no device: names of enum values, rate conversions, fork support,
// P_Key lookups of vhca's one-entry table. Declared by verbs.h; exported with the versions of
// verbs/libibverbs.map.
#include <cerrno>
#include <cstddef>
#include <cstdint>

#include <infiniband/verbs.h>

namespace {

// IB static rates (verbs.h ibv_rate) and a value: their data rate in Mbit/s, or (kMults) their
// multiple of 2.5 Gbit/s.
struct Rate {
  ibv_rate rate;
  int mbps;
};
constexpr Rate kRates[] = {
    {IBV_RATE_2_5_GBPS, 2500},   {IBV_RATE_5_GBPS, 5000},     {IBV_RATE_10_GBPS, 10000},
    {IBV_RATE_20_GBPS, 20000},   {IBV_RATE_30_GBPS, 30000},   {IBV_RATE_40_GBPS, 40000},
    {IBV_RATE_60_GBPS, 60000},   {IBV_RATE_80_GBPS, 80000},   {IBV_RATE_120_GBPS, 120000},
    {IBV_RATE_14_GBPS, 14062},   {IBV_RATE_56_GBPS, 56250},   {IBV_RATE_112_GBPS, 112500},
    {IBV_RATE_168_GBPS, 168750}, {IBV_RATE_25_GBPS, 25781},   {IBV_RATE_100_GBPS, 103125},
    {IBV_RATE_200_GBPS, 206250}, {IBV_RATE_300_GBPS, 309375}, {IBV_RATE_28_GBPS, 28125},
    {IBV_RATE_50_GBPS, 53125},   {IBV_RATE_400_GBPS, 425000}, {IBV_RATE_600_GBPS, 637500},
    {IBV_RATE_800_GBPS, 850000}, {IBV_RATE_1200_GBPS, 1275000},
};

// The multiples of 2.5 Gbit/s IB defines (SDR-era rates).
constexpr Rate kMults[] = {{IBV_RATE_2_5_GBPS, 1},  {IBV_RATE_5_GBPS, 2},   {IBV_RATE_10_GBPS, 4},
                           {IBV_RATE_20_GBPS, 8},   {IBV_RATE_30_GBPS, 12}, {IBV_RATE_40_GBPS, 16},
                           {IBV_RATE_60_GBPS, 24},  {IBV_RATE_80_GBPS, 32}, {IBV_RATE_120_GBPS, 48}};

// A rate's value in one of the tables (-1: not in it), and the rate with a value (IBV_RATE_MAX: none).
template <size_t N>
int value_of(const Rate (&table)[N], ibv_rate rate) {
  for (const Rate& r : table)
    if (r.rate == rate) return r.mbps;
  return -1;
}
template <size_t N>
ibv_rate rate_of(const Rate (&table)[N], int value) {
  for (const Rate& r : table)
    if (r.mbps == value) return r.rate;
  return IBV_RATE_MAX;
}

constexpr uint16_t kDefaultPkey = 0xFFFF;  // vhca's P_Key table: the full-membership default only

}  // namespace

extern "C" {

const char* ibv_wc_status_str(enum ibv_wc_status status) {
  static const char* const names[] = {"success", "local length error", "local QP operation error",
                                      "local EE context operation error", "local protection error",
                                      "Work Request Flushed Error", "memory management operation error",
                                      "bad response error", "local access error", "remote invalid request error",
                                      "remote access error", "remote operation error", "transport retry counter exceeded",
                                      "RNR retry counter exceeded", "local RDD violation error",
                                      "remote invalid RD request", "aborted error", "invalid EE context number",
                                      "invalid EE context state", "fatal error", "response timeout error",
                                      "general error", "TM error", "TM Rendezvous Pending"};
  const unsigned i = unsigned(status);
  return i < sizeof names / sizeof *names ? names[i] : "unknown";
}

const char* ibv_node_type_str(enum ibv_node_type node_type) {
  static const char* const names[] = {"unknown", "InfiniBand channel adapter", "InfiniBand switch",
                                      "InfiniBand router", "iWARP NIC", "usNIC", "usNIC UDP", "unspecified"};
  const int i = int(node_type);
  return i >= 0 && i < int(sizeof names / sizeof *names) ? names[i] : "unknown";
}

const char* ibv_port_state_str(enum ibv_port_state port_state) {
  static const char* const names[] = {"no state change (NOP)", "down", "init", "armed", "active", "active defer"};
  const unsigned i = unsigned(port_state);
  return i < sizeof names / sizeof *names ? names[i] : "unknown";
}

const char* ibv_event_type_str(enum ibv_event_type event) {
  static const char* const names[] = {"CQ error", "local work queue catastrophic error", "invalid request local work queue error",
                                      "local access violation work queue error", "communication established",
                                      "send queue drained", "path migrated", "path migration request error",
                                      "local catastrophic error", "port active", "port error", "LID change",
                                      "P_Key change", "SM change", "SRQ catastrophic error", "SRQ limit reached",
                                      "last WQE reached", "client reregistration", "GID table change",
                                      "WQ fatal"};
  const unsigned i = unsigned(event);
  return i < sizeof names / sizeof *names ? names[i] : "unknown";
}

int ibv_rate_to_mbps(enum ibv_rate rate) { return value_of(kRates, rate); }
enum ibv_rate mbps_to_ibv_rate(int mbps) { return rate_of(kRates, mbps); }
int ibv_rate_to_mult(enum ibv_rate rate) { return value_of(kMults, rate); }
enum ibv_rate mult_to_ibv_rate(int mult) { return rate_of(kMults, mult); }

// There is no kernel device behind vhca's: the usual sysfs root, where nothing of it is found.
const char* ibv_get_sysfs_path(void) { return "/sys"; }

// vhca's memory is simulated: fork needs no preparation.
int ibv_fork_init(void) { return 0; }
enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
int ibv_dontfork_range(void*, size_t) { return 0; }
int ibv_dofork_range(void*, size_t) { return 0; }

// 0, or -1 with errno set, as rdma-core.
int ibv_query_pkey(struct ibv_context*, uint8_t port_num, int index, __be16* pkey) {
  if (port_num != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *pkey = __be16(__builtin_bswap16(kDefaultPkey));
  return 0;
}

int ibv_get_pkey_index(struct ibv_context*, uint8_t port_num, __be16 pkey) {
  if (port_num == 1 && __builtin_bswap16(uint16_t(pkey)) == kDefaultPkey) return 0;
  errno = ENOENT;
  return -1;
}

}  // extern "C"
