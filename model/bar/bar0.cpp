#include "model/bar/bar0.h"

#include "tlm/annotated_delay.h"

namespace vhca {

Bar0::Bar0(const sc_core::sc_module_name& name) : sc_module(name), regs(bar0_registers()) {
  socket.register_b_transport(this, &Bar0::b_transport);
  regs.on_read(reg::bad_accesses, [this](const Register&) { return regs.error_count(); });
}

void Bar0::b_transport(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay) {
  if (refuse_annotated_delay(name(), tx, delay)) return;
  if (tx.get_byte_enable_ptr() || tx.get_streaming_width() != tx.get_data_length()) {
    tx.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return;
  }
  tx.set_response_status(regs.access(tx.is_write(), tx.get_address(), tx.get_data_ptr(), tx.get_data_length()));
}

}  // namespace vhca
