// A host interrupt controller's input: the MSI sink raises the host vector a message wrote.
#pragma once
#include <cstdint>
#include <systemc>

namespace vhca {

class IrqIf : public virtual sc_core::sc_interface {
 public:
  virtual void raise(uint32_t host_vector) = 0;
};

}  // namespace vhca
