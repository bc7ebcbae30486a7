#include "tlm/msi_sink.h"

#include "model/common/bytes.h"
#include "model/common/log.h"
#include "tlm/annotated_delay.h"

namespace vhca {

MsiSink::MsiSink(const sc_core::sc_module_name& name) : sc_module(name) {
  socket.register_b_transport(this, &MsiSink::b_transport);
}

void MsiSink::b_transport(tlm::tlm_generic_payload& tx, sc_core::sc_time& delay) {
  if (refuse_annotated_delay(name(), tx, delay)) return;
  if (!tx.is_write() || tx.get_data_length() != 4) {
    log::error("msi sink: {} of {} bytes at {:#x}: only 4-byte writes are interrupts",
               tx.is_write() ? "write" : "read", tx.get_data_length(), tx.get_address());
    tx.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  uint32_t vector = get_le32(tx.get_data_ptr());
  ++delivered_;
  log::write(log::Cat::irq, "MSI write addr={:#x} data={}", tx.get_address(), vector);
  on_message(vector);
  m_irq->raise(vector);
  tx.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace vhca
