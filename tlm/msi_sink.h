// The host's MSI target: a 32-bit memory write into its window raises the host interrupt whose
// number is the written data (as an x86 local APIC takes the vector from the MSI data).
#pragma once
#include <cstdint>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "model/common/observers.h"
#include "tlm/irq_if.h"

namespace vhca {

class MsiSink : public sc_core::sc_module {
 public:
  static constexpr uint64_t kWindowBase = 0xFEE0'0000ull;
  static constexpr uint64_t kWindowSize = 0x10'0000ull;
  tlm_utils::simple_target_socket<MsiSink> socket{"socket"};
  sc_core::sc_port<IrqIf> m_irq{"m_irq"};  // the host's interrupt controller
  // Observation: a message arrived, told before the host vector is raised.
  Observers<uint32_t> on_message;  // (host vector)

  explicit MsiSink(const sc_core::sc_module_name& name);
  uint64_t delivered() const { return delivered_; }

 private:
  void b_transport(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay);
  uint64_t delivered_ = 0;
};

}  // namespace vhca
