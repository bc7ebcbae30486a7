#include "tlm/host_router.h"

#include "tlm/msi_sink.h"

namespace vhca {

HostRouter::HostRouter(const sc_core::sc_module_name& name) : sc_module(name) {
  in.register_b_transport(this, &HostRouter::b_transport);
  in.register_get_direct_mem_ptr(this, &HostRouter::get_direct_mem_ptr);
  in.register_transport_dbg(this, &HostRouter::transport_dbg);
  to_memory.register_invalidate_direct_mem_ptr(this, &HostRouter::invalidate);
}

bool HostRouter::is_msi(uint64_t addr) const {
  return addr >= MsiSink::kWindowBase && addr < MsiSink::kWindowBase + MsiSink::kWindowSize;
}

void HostRouter::b_transport(int, tlm::tlm_generic_payload& tx, sc_core::sc_time& delay) {
  if (is_msi(tx.get_address()))
    to_msi->b_transport(tx, delay);
  else
    to_memory->b_transport(tx, delay);
}

bool HostRouter::get_direct_mem_ptr(int, tlm::tlm_generic_payload& tx, tlm::tlm_dmi& dmi) {
  if (is_msi(tx.get_address())) return false;
  return to_memory->get_direct_mem_ptr(tx, dmi);
}

unsigned HostRouter::transport_dbg(int, tlm::tlm_generic_payload& tx) {
  if (is_msi(tx.get_address())) return 0;
  return to_memory->transport_dbg(tx);
}

void HostRouter::invalidate(sc_dt::uint64 start, sc_dt::uint64 end) {
  for (unsigned i = 0; i < in.size(); ++i) in[i]->invalidate_direct_mem_ptr(start, end);
}

}  // namespace vhca
