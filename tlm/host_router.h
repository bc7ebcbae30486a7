// The host's address decoder: the MSI window goes to the MSI sink, everything else to host
// memory. Any number of initiators (the PCIe link, the host CPU) bind to `in`; DMI requests and
// revocations are forwarded so that the CPU side gets direct pointers into memory pages.
#pragma once
#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

namespace vhca {

class HostRouter : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<HostRouter> in{"in"};
  tlm_utils::simple_initiator_socket<HostRouter> to_memory{"to_memory"};
  tlm_utils::simple_initiator_socket<HostRouter> to_msi{"to_msi"};

  explicit HostRouter(const sc_core::sc_module_name& name);
  bool is_msi(uint64_t addr) const;  // the MSI window: a write there is an interrupt

 private:
  void b_transport(int id, tlm::tlm_generic_payload& tx, sc_core::sc_time& delay);
  bool get_direct_mem_ptr(int id, tlm::tlm_generic_payload& tx, tlm::tlm_dmi& dmi);
  unsigned transport_dbg(int id, tlm::tlm_generic_payload& tx);
  void invalidate(sc_dt::uint64 start, sc_dt::uint64 end);
};

}  // namespace vhca
