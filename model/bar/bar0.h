// BAR0: the device's MMIO window, a TLM target decoded by the declared register file built from
// the register table (model/regs/tables.cpp). Behaviour is bound to registers by name.
#pragma once
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "model/regs/register_file.h"

namespace vhca {

class Bar0 : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Bar0> socket{"socket"};
  RegisterFile regs;

  explicit Bar0(const sc_core::sc_module_name& name);

 private:
  void b_transport(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay);
};

}  // namespace vhca
