// Fuzz target 3 (issue 14, item 4): MMIO and doorbell streams. Each input is a run of BAR writes
// (4- or 8-byte, to a register of the map or any offset of BAR0) interleaved with valid traffic:
// a CQ of the driver's, armed, receives a completion record after every write, and the harness
// polls it. Hardware answers as the register map says: read-only registers keep their values
// whatever was written, the device stays able to answer a BAR read, the host model survives, and
// the next input's boot (a RESET and a full re-initialisation) succeeds (system_harness.h).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "firmware-shim/verbs.h"
#include "testbench/fuzz/system_harness.h"

namespace {
// Offsets of the register map (docs/registers.md) most writes go to, so that every register's
// write path is reached; the rest go to any 4-byte-aligned offset below 0x30010.
constexpr uint32_t kRegisters[] = {0x00000, 0x00004, 0x00008, 0x0000c, 0x00010, 0x00014, 0x00018, 0x0001c,
                                   0x00020, 0x00024, 0x00028, 0x0002c, 0x00030, 0x00034, 0x00038, 0x0003c,
                                   0x01000, 0x01008, 0x01020, 0x01040, 0x01048, 0x01100, 0x02000, 0x02020,
                                   0x02040, 0x20000, 0x20004, 0x20008, 0x2000c, 0x20010, 0x2001c, 0x30000};
constexpr size_t kRecord = 1 + 2 + 8;  // kind, offset choice, value

struct ReadOnly {
  const char* reg;
  uint32_t value = 0;
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * kRecord) return 0;
  vhca::System& s = vhca::fuzz::sys();
  s.run([&] {
    vhca::fuzz::begin_input();
    vhca::Driver& d = s.driver;
    ReadOnly ro[] = {{vhca::reg::version}, {vhca::reg::core_clock_khz}, {vhca::reg::num_uars}, {vhca::reg::num_msix}};
    for (ReadOnly& r : ro) r.value = d.read_register(r.reg);
    vhca::Cq* cq = nullptr;
    if (vhca::verbs::create_cq(d, 64, 0, &cq) != 0 || !cq) vhca::fuzz::finding("create_cq failed on a freshly booted device");
    vhca::verbs::req_notify_cq(*cq, vhca::kNotifyNext);
    uint64_t wr = 0;
    for (size_t at = 0; at + kRecord <= size; at += kRecord) {
      const uint8_t kind = data[at];
      const uint16_t pick = uint16_t(data[at + 1] | data[at + 2] << 8);
      uint64_t value;
      std::memcpy(&value, data + at + 3, sizeof value);
      const uint32_t offset = (kind & 1) ? kRegisters[pick % std::size(kRegisters)] : (uint32_t(pick) * 4u) % 0x30010u;
      if (kind & 2) s.cpu.mmio_write64(offset, value);
      else s.cpu.mmio_write32(offset, uint32_t(value));
      // Valid traffic between the writes: a completion for the harness's CQ.
      vhca::CompletionRecord r;
      r.cqn = cq->cqn;
      r.opcode = vhca::cqe::kRespSend;
      r.wr_id = ++wr;
      r.byte_cnt = 64;
      s.hca.inject(r, s.cycle() + 10);
      sc_core::wait(1, sc_core::SC_US);
      vhca::Wc wc[16];
      (void)vhca::verbs::poll_cq(*cq, 16, wc);
    }
    for (const ReadOnly& r : ro)
      if (d.read_register(r.reg) != r.value) vhca::fuzz::finding("a read-only register changed");
    // The BAR still answers a read of a defined register (a hung BAR would hang here: the run's
    // limit turns that into an exception, a finding).
    (void)d.read_register(vhca::reg::health);
    // The CQ goes with the input. If the input reset the device, DESTROY_CQ is refused (the context
    // is gone) and the harness releases the host side itself.
    if (vhca::verbs::destroy_cq(cq) != 0) vhca::verbs::abandon_cq(cq);
  }, sc_core::sc_time(10, sc_core::SC_MS));
  return 0;
}

int sc_main(int, char*[]) { return 0; }
