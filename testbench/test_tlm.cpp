#include "testbench/test_support.h"
#include "sim/fabric.h"
#include "model/common/action_queue.h"
#include "model/common/earliest_timer.h"

namespace vhca::test {
ActionQueue* g_actions = nullptr;  // made during elaboration, for the ActionQueue case below
void configure(SystemConfig&) { g_actions = new ActionQueue("ordered_actions"); }
}
using namespace vhca;
using namespace vhca::test;

TEST_CASE("host memory maps pages on demand and answers unmapped accesses with an error") {
  sys().run([] {
  HostMemory& m = sys().memory;
  uint64_t a = m.allocate(100);
  CHECK(a % 4096 == 0);
  CHECK(m.mapped(a, 100));
  CHECK_FALSE(m.mapped(a + 4096, 1));
  uint8_t buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  CHECK(m.write(a + 4090, buf, 6));
  CHECK_FALSE(m.write(a + 4094, buf, 4));  // crosses into an unmapped page: nothing written
  tlm::tlm_generic_payload tx;
  tx.set_command(tlm::TLM_READ_COMMAND);
  tx.set_address(0xDEAD0000);
  tx.set_data_ptr(buf);
  tx.set_data_length(4);
  tx.set_streaming_width(4);
  sc_core::sc_time d;
  uint64_t errors = log::error_count();
  sys().cpu.mem->b_transport(tx, d);  // through the host router
  CHECK(tx.get_response_status() == tlm::TLM_ADDRESS_ERROR_RESPONSE);
  CHECK(log::error_count() == errors + 1);
  });
}

TEST_CASE("host memory keeps mapped ranges and gives a page storage only when it is first written: unwritten and re-mapped pages read as zeros") {
  sys().run([] {
    HostMemory& m = sys().memory;
    const uint64_t backed0 = m.pages_backed(), mapped0 = m.pages_mapped();
    const uint64_t a = m.allocate(64 << 20);  // 16,384 pages
    CHECK(m.pages_mapped() == mapped0 + 16384);
    CHECK(m.pages_backed() == backed0);  // a range, no page yet
    CHECK(m.mapped(a, 64 << 20));
    CHECK_FALSE(m.mapped(a, (64 << 20) + 1));
    uint8_t got[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    REQUIRE(m.read(a + 12345, got, 8));
    CHECK(std::count(got, got + 8, 0) == 8);
    const uint8_t one[4] = {1, 2, 3, 4};
    REQUIRE(m.write(a + 4096 * 5 + 4094, one, 4));  // across two pages: both get storage
    CHECK(m.pages_backed() == backed0 + 2);
    REQUIRE(m.read(a + 4096 * 5 + 4094, got, 4));
    CHECK(std::equal(one, one + 4, got));
    // Unmapping a middle page splits the range; mapping it again gives zeros back.
    m.unmap(a + 4096 * 6, 1);
    CHECK_FALSE(m.mapped(a + 4096 * 6, 1));
    CHECK(m.mapped(a, 4096 * 6));
    CHECK(m.mapped(a + 4096 * 7, 4096));
    CHECK_FALSE(m.write(a + 4096 * 6 - 2, one, 4));  // into the hole: refused, nothing written
    m.map(a + 4096 * 6, 4096);
    CHECK(m.mapped(a, 64 << 20));  // merged again
    REQUIRE(m.read(a + 4096 * 6, got, 2));
    CHECK((got[0] == 0 && got[1] == 0));
    m.unmap(a, 64 << 20);
    CHECK(m.pages_mapped() == mapped0);
    CHECK(m.pages_backed() == backed0);
  });
}

namespace {
// An external backing as a test sees it: a vector, and a switch that makes it unreachable (as a
// verbs program that exited or unmapped its buffer).
struct VectorMemory : ExternalMemory {
  std::vector<uint8_t> bytes;
  bool reachable = true;
  explicit VectorMemory(size_t n) : bytes(n) {}
  bool read(uint64_t off, void* dst, uint64_t len) override {
    if (!reachable) return false;
    std::memcpy(dst, bytes.data() + off, len);
    return true;
  }
  bool write(uint64_t off, const void* src, uint64_t len) override {
    if (!reachable) return false;
    std::memcpy(bytes.data() + off, src, len);
    return true;
  }
};
}  // namespace

TEST_CASE("host memory: an attached range lives in its backing, an access must lie wholly in it, an unreachable backing is an address error, detach leaves a hole") {
  sys().run([] {
    HostMemory& m = sys().memory;
    VectorMemory ext(5000);
    const uint64_t a = m.attach(5000, ext);
    CHECK(a % HostMemory::kPageSize == 0);
    const uint64_t after = m.allocate(4096);
    CHECK(after >= a + 8192);  // allocations go around it
    const uint8_t in[4] = {1, 2, 3, 4};
    REQUIRE(m.write(a + 4998 - 2, in, 4));
    CHECK(ext.bytes[4996] == 1);
    CHECK(ext.bytes[4999] == 4);
    uint8_t got[4] = {};
    REQUIRE(m.read(a + 4996, got, 4));
    CHECK(std::equal(in, in + 4, got));
    CHECK_FALSE(m.write(a + 4998, in, 4));  // past its end: refused, the backing untouched
    CHECK_FALSE(m.read(a - 2, got, 4));     // begins before it
    // Through the TLM socket, as the HCA's DMA reaches it; a watch on the range fires.
    sc_core::sc_event written;
    bool fired = false;
    m.watch(a, 5000, written);
    sc_core::sc_spawn([&] {
      sc_core::wait(written);
      fired = true;
    });
    tlm::tlm_generic_payload tx;
    uint8_t data[8] = {9, 8, 7, 6, 5, 4, 3, 2};
    tx.set_command(tlm::TLM_WRITE_COMMAND);
    tx.set_address(a + 100);
    tx.set_data_ptr(data);
    tx.set_data_length(8);
    tx.set_streaming_width(8);
    sc_core::sc_time d;
    sys().cpu.mem->b_transport(tx, d);
    CHECK(tx.get_response_status() == tlm::TLM_OK_RESPONSE);
    CHECK(ext.bytes[107] == 2);
    sc_core::wait(sc_core::SC_ZERO_TIME);
    sc_core::wait(sc_core::SC_ZERO_TIME);
    CHECK(fired);
    m.unwatch(a, written);
    // No DMI into it: every access goes through the backing.
    tlm::tlm_dmi dmi;
    tx.set_address(a);
    CHECK_FALSE(sys().cpu.mem->get_direct_mem_ptr(tx, dmi));
    // An unreachable backing answers like unmapped memory.
    ext.reachable = false;
    uint64_t errors = log::error_count();
    tx.set_address(a + 100);
    tx.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sys().cpu.mem->b_transport(tx, d);
    CHECK(tx.get_response_status() == tlm::TLM_ADDRESS_ERROR_RESPONSE);
    CHECK(log::error_count() == errors + 1);
    ext.reachable = true;
    m.detach(a);
    CHECK_FALSE(m.read(a, got, 4));
    m.unmap(after, 4096);
  });
}

// Link timing, docs/timing.md: a write queued on cycle c leaves the DMA engine on cycle c+1, is
// serialized on the upstream direction ((64 + 24) B / 31.5 GB/s = 2794 ps) and lands 200 ns later.
TEST_CASE("a 64-byte DMA write lands exactly one serialization time plus the link latency after issue") {
  sys().run([] {
    const uint64_t addr = sys().memory.allocate(4096);
    const uint64_t c0 = sys().cycle() + 100;
    sys().wait_cycle(c0);
    DmaWrite w;
    w.addr = addr;
    w.len = 64;
    w.data[0] = 0xAB;
    sys().hca.dma.s_write->push(w, c0);  // queued on cycle c0, issued on cycle c0+1
    const sc_core::sc_time issue = sys().hca.clock.at(c0 + 1);
    const sc_core::sc_time lands = issue + sc_core::sc_time(2794, sc_core::SC_PS) + sc_core::sc_time(200, sc_core::SC_NS);
    uint8_t b = 0;
    sc_core::wait(lands - sc_core::sc_time_stamp() - sc_core::sc_time(1, sc_core::SC_PS));
    sys().memory.read(addr, &b, 1);
    CHECK(b == 0);  // not yet
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_PS));
    sys().memory.read(addr, &b, 1);
    CHECK(b == 0xAB);
    CHECK(sys().link.bytes_on_wire(true) % 88 == 0);  // 64 B payload + 24 B TLP overhead
  });
}

namespace {
// Queues a 64-byte DMA write of `tag` on the next cycle and returns when it arrives at host
// memory: issued the cycle after, 2794 ps on the wire (64 B + 24 B of TLP), 200 ns of latency.
sc_core::sc_time dma_write_64(uint64_t addr, uint8_t tag) {
  const uint64_t c0 = sys().cycle() + 1;
  sys().wait_cycle(c0);
  DmaWrite w;
  w.addr = addr;
  w.len = 64;
  w.data[0] = tag;
  sys().hca.dma.s_write->push(w, c0);
  return sys().hca.clock.at(c0 + 1) + sc_core::sc_time(2794, sc_core::SC_PS) + sc_core::sc_time(200, sc_core::SC_NS);
}
void wait_until(const sc_core::sc_time& t) { sc_core::wait(t - sc_core::sc_time_stamp()); }
}  // namespace

// The link remembers the pages it found quiet whole; a watch or an unmap that touches them makes
// it ask again, one elsewhere does not.
TEST_CASE("quiet writes: pages found quiet are asked again after a watch or an unmap touching them") {
  sys().run([] {
    PcieLink& link = sys().link;
    HostMemory& m = sys().memory;
    const uint64_t a = m.allocate(3 * 4096);
    // Sent, then counted two cycles later (issued), then landed by the host's read.
    auto quiet_after_write = [&](uint64_t addr) {
      const sc_core::sc_time arrival = dma_write_64(addr, 0x5C);
      sys().wait_cycle(sys().cycle() + 2);
      const bool quiet = link.quiet_in_flight() == 1;
      wait_until(arrival + sc_core::sc_time(1, sc_core::SC_US));
      uint8_t b = 0;
      sys().cpu.read(addr, &b, 1);
      CHECK(b == 0x5C);
      return quiet;
    };
    CHECK(quiet_after_write(a + 64));        // page 0 remembered
    CHECK(quiet_after_write(a + 4096));      // page 1 remembered
    sc_core::sc_event written;
    m.watch(a + 256, 8, written);
    CHECK_FALSE(quiet_after_write(a + 256));  // on the watch: told on time
    CHECK(quiet_after_write(a + 512));        // beside it, on the watched page
    CHECK(quiet_after_write(a + 4096 + 64));  // page 1 still remembered
    m.unwatch(a + 256, written);
    CHECK(quiet_after_write(a + 256));
    m.unmap(a + 2 * 4096, 4096);               // elsewhere
    CHECK(quiet_after_write(a + 4096 + 128));  // page 1 still remembered
    m.unmap(a + 4096, 4096);                   // page 1 itself: a write into it fails, on time
    const uint64_t errors = log::error_count();
    const sc_core::sc_time lost = dma_write_64(a + 4096 + 256, 0x5D);
    sys().wait_cycle(sys().cycle() + 2);
    CHECK(link.quiet_in_flight() == 0);
    wait_until(lost + sc_core::sc_time(1, sc_core::SC_US));
    CHECK(log::error_count() > errors);
    CHECK(quiet_after_write(a + 64));
    m.unmap(a, 4096);
  });
}

TEST_CASE("quiet writes: a DMA write into plain host memory lands when the host looks, at its arrival and not before, and with the next write sent") {
  sys().run([] {
    PcieLink& link = sys().link;
    const uint64_t addr = sys().memory.allocate(4096);
    const uint64_t errors = log::error_count();
    uint8_t b = 0;
    sys().cpu.read(addr, &b, 1);
    REQUIRE(link.quiet_in_flight() == 0);  // nothing from before this test is waiting
    const sc_core::sc_time arrival = dma_write_64(addr, 0x11);
    sys().wait_cycle(sys().cycle() + 2);  // issued
    CHECK(link.quiet_in_flight() == 1);
    wait_until(arrival + sc_core::sc_time(1, sc_core::SC_US));
    CHECK(link.quiet_in_flight() == 1);  // arrived, and the link did not wake to land it
    sys().cpu.read(addr, &b, 1);  // the host CPU's DMI read lands it first
    CHECK(b == 0x11);
    CHECK(link.quiet_in_flight() == 0);

    // Seen by the host CPU exactly from its arrival.
    const sc_core::sc_time second = dma_write_64(addr, 0x22);
    wait_until(second - sc_core::sc_time(1, sc_core::SC_PS));
    sys().cpu.read(addr, &b, 1);
    CHECK(b == 0x11);
    wait_until(second);
    sys().cpu.read(addr, &b, 1);
    CHECK(b == 0x22);

    // A host write lands what arrived before it first: the host's value is the one that stays.
    const sc_core::sc_time third = dma_write_64(addr, 0x33);
    wait_until(third + sc_core::sc_time(10, sc_core::SC_NS));
    const uint8_t mine = 0x44;
    sys().cpu.write(addr, &mine, 1);
    CHECK(link.quiet_in_flight() == 0);
    sys().memory.read(addr, &b, 1);
    CHECK(b == 0x44);

    // Nothing waits in flight beyond the link's window: sending the next write lands those due.
    const sc_core::sc_time fourth = dma_write_64(addr + 64, 0x55);
    wait_until(fourth + sc_core::sc_time(10, sc_core::SC_NS));
    CHECK(link.quiet_in_flight() == 1);
    dma_write_64(addr + 128, 0x66);
    sys().wait_cycle(sys().cycle() + 2);
    CHECK(link.quiet_in_flight() == 1);  // the fourth landed as the fifth was sent
    sys().memory.read(addr + 64, &b, 1);
    CHECK(b == 0x55);
    CHECK(log::error_count() == errors);
  });
}

TEST_CASE("quiet writes: a watch or an unmap while a quiet write is in flight makes it land on time, telling the watch or failing at its arrival") {
  sys().run([] {
    PcieLink& link = sys().link;
    const uint64_t addr = sys().memory.allocate(4096);
    const sc_core::sc_time arrival = dma_write_64(addr, 0x77);
    sys().wait_cycle(sys().cycle() + 2);
    REQUIRE(link.quiet_in_flight() == 1);
    sc_core::sc_time told;
    sys().memory.watch(addr, 64, [&told] { told = sc_core::sc_time_stamp(); });
    CHECK(link.quiet_in_flight() == 0);
    wait_until(arrival + sc_core::sc_time(1, sc_core::SC_US));
    CHECK(told == arrival);  // the link woke for it

    // A write to memory unmapped while it is in flight fails at its arrival, as one to memory
    // never mapped does (unmapping takes whole pages).
    const uint64_t gone = sys().memory.allocate(4096);
    sc_core::sc_time failed;
    const size_t failure_tap = link.on_upstream_write_failed.add([&](DmaSource, uint32_t, uint64_t) { failed = sc_core::sc_time_stamp(); });
    const uint64_t errors = log::error_count();
    const sc_core::sc_time lost = dma_write_64(gone + 1024, 0x88);
    sys().wait_cycle(sys().cycle() + 2);
    REQUIRE(link.quiet_in_flight() == 1);
    sys().memory.unmap(gone, 64);  // takes the whole page, the write's bytes too
    CHECK(link.quiet_in_flight() == 0);
    wait_until(lost + sc_core::sc_time(1, sc_core::SC_US));
    CHECK(failed == lost);
    CHECK(log::error_count() > errors);
    link.on_upstream_write_failed.remove(failure_tap);
  });
}

// The link keeps the host memory pages it was granted for quiet landings; an unmap revokes them,
// so a write after the page is mapped again lands in the new page, not the freed one.
TEST_CASE("quiet writes: a small write lands by DMI into a granted page and an unmap revokes the grant") {
  sys().run([] {
    PcieLink& link = sys().link;
    const uint64_t page = sys().memory.allocate(4096);
    uint8_t b = 0;
    const uint64_t by_dmi = link.landed_by_dmi();
    wait_until(dma_write_64(page, 0x5A));
    sys().memory.read(page, &b, 1);
    CHECK(b == 0x5A);
    CHECK(link.landed_by_dmi() == by_dmi + 1);
    sys().memory.unmap(page, 4096);
    sys().memory.map(page, 4096);
    sys().memory.read(page, &b, 1);
    CHECK(b == 0);  // a fresh page
    wait_until(dma_write_64(page + 64, 0x6B));
    sys().memory.read(page + 64, &b, 1);
    CHECK(b == 0x6B);  // in the page mapped now
    CHECK(link.landed_by_dmi() == by_dmi + 2);
    sys().memory.unmap(page, 4096);
  });
}

TEST_CASE("quiet writes: an on-time landing observer makes every write land on time, one told the arrival lets them land quietly") {
  sys().run([] {
    PcieLink& link = sys().link;
    const uint64_t addr = sys().memory.allocate(4096);
    std::vector<sc_core::sc_time> late;
    const size_t at_id = link.on_upstream_landed_at.add(
        [&late](DmaSource, uint32_t, uint64_t, const sc_core::sc_time& at) { late.push_back(at); });
    const sc_core::sc_time arrival = dma_write_64(addr, 1);
    wait_until(arrival + sc_core::sc_time(1, sc_core::SC_US));
    CHECK(late.empty());  // quiet: not landed yet
    uint8_t b = 0;
    sys().cpu.read(addr, &b, 1);
    REQUIRE(late.size() == 1);
    CHECK(late[0] == arrival);  // told late, with its arrival
    link.on_upstream_landed_at.remove(at_id);

    std::vector<sc_core::sc_time> now;
    const size_t id = link.on_upstream_landed.add([&now](DmaSource, uint32_t, uint64_t) { now.push_back(sc_core::sc_time_stamp()); });
    const sc_core::sc_time second = dma_write_64(addr, 2);
    sys().wait_cycle(sys().cycle() + 2);
    CHECK(link.quiet_in_flight() == 0);
    wait_until(second + sc_core::sc_time(1, sc_core::SC_US));
    REQUIRE(now.size() == 1);
    CHECK(now[0] == second);
    link.on_upstream_landed.remove(id);
  });
}

TEST_CASE("back-to-back writes serialize on the link and arrive in order") {
  sys().run([] {
    const uint64_t addr = sys().memory.allocate(4096);
    const uint64_t c0 = sys().cycle() + 10;
    sys().wait_cycle(c0);
    for (int i = 0; i < 4; ++i) {
      DmaWrite w;
      w.addr = addr;
      w.len = 64;
      w.data[0] = uint8_t(i + 1);
      sys().hca.dma.s_write->push(w, sys().cycle());
    }
    // One write per cycle from cycle 11; each 88 B TLP takes 2794 ps > one 2 ns cycle, so the
    // serializer is the bottleneck: the 4th lands at 22 ns + 4 x 2794 ps + 200 ns.
    const sc_core::sc_time last = sys().hca.clock.at(c0 + 1) + sc_core::sc_time(4 * 2794, sc_core::SC_PS) +
                                  sc_core::sc_time(200, sc_core::SC_NS);
    sc_core::wait(last - sc_core::sc_time_stamp() - sc_core::sc_time(1, sc_core::SC_PS));
    uint8_t b = 0;
    sys().memory.read(addr, &b, 1);
    CHECK(b == 3);
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_PS));
    sys().memory.read(addr, &b, 1);
    CHECK(b == 4);
  });
}

TEST_CASE("a write to the MSI window raises the host interrupt named by its data") {
  sys().run([] {
    int fired = -1;
    sc_core::sc_time at;
    sys().cpu.set_irq_handler(7, [&] {
      fired = 7;
      at = sc_core::sc_time_stamp();
    });
    const uint64_t c0 = sys().cycle() + 1;
    sys().wait_cycle(c0);
    DmaWrite w;
    w.addr = MsiSink::kWindowBase;
    w.len = 4;
    w.data[0] = 7;
    sys().hca.dma.s_write->push(w, c0);
    wait_us(3);
    CHECK(fired == 7);
    // issued on cycle 1 (2 ns), (4 + 24) B serialized (889 ps), 200 ns link, 1 us delivery, 300 ns handler entry
    CHECK(at - sys().hca.clock.at(c0) == sc_core::sc_time(2000 + 889 + 200000 + 1000000 + 300000, sc_core::SC_PS));
    CHECK(sys().msi.delivered() == 1);
  });
}

TEST_CASE("an MMIO read of a BAR register returns after the round trip") {
  sys().run([] {
    uint32_t v = 0;
    sc_core::sc_time t0 = sc_core::sc_time_stamp();
    REQUIRE(sys().cpu.mmio_read32(Driver::offset_of(reg::version), v));
    CHECK(v == kDeviceVersion);
    // request 24 B down (762 ps) + 200 ns, 120 ns access, completion 4+20 B up (762 ps) + 200 ns
    CHECK(sc_core::sc_time_stamp() - t0 == sc_core::sc_time(762 + 200000 + 120000 + 762 + 200000, sc_core::SC_PS));
  });
}

TEST_CASE("a DMA read does not pass an earlier posted write to the same address") {
  sys().run([] {
    const uint64_t addr = sys().memory.allocate(4096);
    sys().wait_cycle(5);
    DmaWrite w;
    w.addr = addr;
    w.len = 4;
    w.data[0] = 0x5A;
    sys().hca.dma.s_write->push(w, sys().cycle());
    uint8_t got[4] = {};
    REQUIRE(sys().hca.dma.read_blocking(addr, got, 4));
    CHECK(got[0] == 0x5A);
    uint8_t bad[4];
    CHECK_FALSE(sys().hca.dma.read_blocking(0x7000'0000'0000ull, bad, 4));  // unmapped: error, no crash
    CHECK(sys().hca.dma.read_errors() == 1);
  });
}

TEST_CASE("TLM non-blocking DMA reads: the callback runs on the edge a blocking read returns, many in flight, a fenced read sees earlier writes") {
  sys().run([] {
    const uint64_t addr = sys().memory.allocate(4096);
    sys().wait_cycle(5);
    DmaEngine& dma = sys().hca.dma;
    // A blocking read of 64 bytes (the firmware's), issued on an edge, measured in cycles.
    uint8_t buf[64];
    const uint64_t c0 = sys().cycle();
    REQUIRE(dma.read_blocking(addr, buf, 64));
    const uint64_t blocking = sys().cycle() - c0;
    // 24 B request (762 ps) + 200 ns + 120 ns + (64 + 20) B completion (2667 ps) + 200 ns = 523.4 ns:
    // usable from the next edge, cycle 262.
    CHECK(blocking == 262);
    // Four reads issued together on one edge, without a thread waiting: each completes by its
    // callback; the link carries them concurrently, so the fourth is not four round trips late.
    sys().wait_cycle(sys().cycle() + 1);
    const uint64_t c1 = sys().cycle();
    std::vector<uint64_t> done_at;
    uint8_t many[4][64];
    for (int i = 0; i < 4; ++i)
      dma.read(addr + 64 * i, many[i], 64, false, [&](bool ok) {
        CHECK(ok);
        CHECK(sc_core::sc_time_stamp() == sys().hca.clock.at(sys().hca.clock.now()));  // on an edge
        done_at.push_back(sys().cycle() - c1);
      });
    CHECK(done_at.empty());  // nothing completes inside the call
    sys().wait_cycle(sys().cycle() + 400);
    REQUIRE(done_at.size() == 4);
    // The requests leave 762 ps apart; the completions queue on the downstream wire (2667 ps
    // each): arrivals at 523.4, 526.1, 528.8 and 531.4 ns, usable on the next edges.
    CHECK(done_at == std::vector<uint64_t>{blocking, 264, 265, 266});
    // A fenced read waits for the write queued before it; an unfenced one issued with it does not
    // (it reads the old value).
    DmaWrite w;
    w.addr = addr + 128;
    w.len = 4;
    w.data[0] = 0xC3;
    dma.s_write->push(w, sys().cycle());
    uint8_t fenced[4] = {}, unfenced[4] = {};
    bool f_done = false, u_done = false;
    dma.read(addr + 128, unfenced, 4, false, [&](bool) { u_done = true; });
    dma.read(addr + 128, fenced, 4, true, [&](bool) { f_done = true; });
    sys().wait_cycle(sys().cycle() + 400);
    REQUIRE(f_done);
    REQUIRE(u_done);
    CHECK(fenced[0] == 0xC3);
    CHECK(unfenced[0] != 0xC3);
    // An unmapped address: the callback reports the error.
    bool bad_ok = true, bad_done = false;
    uint8_t bad[4];
    dma.read(0x7000'0000'0000ull, bad, 4, false, [&](bool ok) { bad_ok = ok, bad_done = true; });
    sys().wait_cycle(sys().cycle() + 400);
    CHECK(bad_done);
    CHECK_FALSE(bad_ok);
  });
}

// docs/decisions.md 40: TLPs entering one wire at one instant go by a rule, not by which sender
// SystemC ran first. Two processes, spawned in one order and then in the other, each issue a
// 64-byte read on the same edge: the one named first (alpha) gets the first request slot both
// times (its data usable 262 cycles later, the other's 264: the request 762 ps behind, the
// completion queued behind the first's on the downstream wire). In the round where SystemC runs
// zeta first, alpha's request takes its place (one pass).
TEST_CASE("same-instant TLPs: two senders' reads take the upstream wire by the sender's name whichever SystemC runs first") {
  sys().run([] {
    const uint64_t addr = sys().memory.allocate(4096);
    DmaEngine& dma = sys().hca.dma;
    const uint64_t passes_before = sys().link.placed_before_others();
    for (int round = 0; round < 2; ++round) {
      sys().wait_cycle(sys().cycle() + 1);
      const uint64_t c0 = sys().cycle();
      uint64_t alpha_done = 0, zeta_done = 0;
      uint8_t a[64], z[64];
      auto spawn = [&](const std::string& name, uint8_t* buf, uint64_t* done_at) {
        sc_core::sc_spawn_options o;
        o.spawn_method();
        sc_core::sc_spawn(
            [&dma, addr, buf, done_at, c0] {
              dma.read(addr, buf, 64, false, [done_at, c0](bool ok) {
                CHECK(ok);
                *done_at = sys().cycle() - c0;
              });
            },
            name.c_str(), &o);
      };
      const std::string n = std::to_string(round);
      if (round == 0) {
        spawn("alpha" + n, a, &alpha_done);
        spawn("zeta" + n, z, &zeta_done);
      } else {
        spawn("zeta" + n, z, &zeta_done);
        spawn("alpha" + n, a, &alpha_done);
      }
      sys().wait_cycle(c0 + 400);
      CHECK(alpha_done == 262);
      CHECK(zeta_done == 264);
    }
    CHECK(sys().link.placed_before_others() == passes_before + 1);
  });
}

// The same rule between kinds: a read request never passes a posted write (PCIe ordering), so a
// read entering the upstream wire on the instant a write does leaves behind it, whichever SystemC
// runs first; placed first, it is passed (one pass). The write comes from a process named after
// the reader: by name alone the read would go first.
TEST_CASE("same-instant TLPs: a read request leaves behind a posted write of its instant whichever SystemC runs first") {
  sys().run([] {
    const uint64_t addr = sys().memory.allocate(4096);
    DmaEngine& dma = sys().hca.dma;
    const uint64_t passes_before = sys().link.placed_before_others();
    uint64_t read_done[2] = {};
    for (int round = 0; round < 2; ++round) {
      sys().wait_cycle(sys().cycle() + 1);
      const uint64_t c0 = sys().cycle();
      uint8_t got[64];
      uint8_t payload[64] = {0x33};
      bool written = false;
      auto spawn = [](const std::string& name, std::function<void()> body) {
        sc_core::sc_spawn_options o;
        o.spawn_method();
        sc_core::sc_spawn(std::move(body), name.c_str(), &o);
      };
      auto reader = [&, round] {
        dma.read(addr, got, 64, false, [&read_done, round, c0](bool ok) {
          CHECK(ok);
          read_done[round] = sys().cycle() - c0;
        });
      };
      auto writer = [&] {
        tlm::tlm_generic_payload tx;
        tx.set_command(tlm::TLM_WRITE_COMMAND);
        tx.set_address(addr + 2048);
        tx.set_data_ptr(payload);
        tx.set_data_length(64);
        tx.set_streaming_width(64);
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        dma.socket->b_transport(tx, delay);
        written = tx.is_response_ok();
      };
      const std::string n = std::to_string(round);
      if (round == 0) {
        spawn("alpha_reader" + n, reader);
        spawn("zeta_writer" + n, writer);
      } else {
        spawn("zeta_writer" + n, writer);
        spawn("alpha_reader" + n, reader);
      }
      sys().wait_cycle(c0 + 400);
      CHECK(written);
    }
    // Alone the read is usable 262 cycles on; the write's 88 bytes (2794 ps) ahead of it make 264.
    CHECK(read_done[0] == 264);
    CHECK(read_done[1] == 264);
    CHECK(sys().link.placed_before_others() == passes_before + 1);
  });
}

// A read's completion told early is scheduled at the far-side stage but stands for the moment the
// completion entered the wire: at its instant it runs in that moment's place (tlm/early_completion.h).
TEST_CASE("ActionQueue: an action scheduled ahead of the moment it stands for runs in that moment's order") {
  sys().run([] {
    using sc_core::SC_NS;
    std::string ran;
    const sc_core::sc_time t0 = sc_core::sc_time_stamp(), due = t0 + sc_core::sc_time(100, SC_NS);
    g_actions->at_ordered(due, [&] { ran += 'a'; }, t0 + sc_core::sc_time(50, SC_NS));
    sc_core::wait(sc_core::sc_time(10, SC_NS));
    g_actions->at(due, [&] { ran += 'b'; });  // scheduled before the moment 'a' stands for
    sc_core::wait(sc_core::sc_time(50, SC_NS));
    g_actions->at(due, [&] { ran += 'c'; });  // after it
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_US));
    CHECK(ran == "bac");  // in the order they were scheduled: "abc"
  });
}

TEST_CASE("EarliestTimer: a deadline armed while a notification for this instant is pending is not lost") {
  sys().run([] {
    // The ActionQueue pattern: a waiter runs what is due and arms the timer for the next deadline.
    struct Waiter {
      EarliestTimer timer;
      std::vector<sc_core::sc_time> due, ran;
      void run() {
        timer.fired();
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        while (!due.empty() && due.front() <= now) {
          ran.push_back(now);
          due.erase(due.begin());
        }
        if (!due.empty()) timer.arm(due.front());
      }
    };
    auto* w = new Waiter;  // lives as long as the simulation
    sc_core::sc_spawn_options o;
    o.spawn_method();
    o.dont_initialize();
    o.set_sensitivity(&w->timer.near_event());
    o.set_sensitivity(&w->timer.far_event());
    sc_core::sc_spawn([w] { w->run(); }, "timer_waiter", &o);
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    const sc_core::sc_time later = t0 + sc_core::sc_time(5, sc_core::SC_NS);
    // A deadline now (a delta notification), then, before it fires, one 5 ns later.
    w->due = {t0, later};
    w->timer.arm(t0);
    w->timer.arm(later);
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_US));
    // Before the fix the second arm() took the pending delta notification for fired, its timed
    // notify was ignored by SystemC, and the 5 ns deadline never ran.
    CHECK(w->ran == std::vector<sc_core::sc_time>{t0, later});
  });
}

TEST_CASE("the register file finds registers by name and array index, and binds behaviour to declared names only") {
  static const std::vector<RegSpec> specs = {
      {"PLAIN", 0x0, 4, 1, 0, 7, Access::rw, "a plain register"},
      {"ARR", 0x100, 8, 4, 0x10, 0, Access::rw, "an array of four"},
  };
  RegisterFile regs(specs);
  CHECK(regs.value("PLAIN") == 7);
  CHECK(regs.at("ARR", 3).offset == 0x130);
  CHECK(regs.at("ARR", 3).name == "ARR[3]");
  CHECK_THROWS_WITH(regs.at("ARR", 4), "no register ARR[4]");
  CHECK_THROWS_WITH(regs.at("NOPE"), "no register NOPE");
  CHECK_THROWS_WITH(regs.on_write("NOPE", [](Register&, uint64_t) {}), "no register NOPE");
  // A hook bound to an array serves every member, each with its own register.
  std::vector<uint32_t> written;
  regs.on_write("ARR", [&](Register& r, uint64_t v) {
    written.push_back(r.index);
    r.value = v + 1;
  });
  uint64_t v = 41;
  CHECK(regs.access(true, 0x120, reinterpret_cast<uint8_t*>(&v), 8) == tlm::TLM_OK_RESPONSE);
  CHECK(written == std::vector<uint32_t>{2});
  CHECK(regs.value("ARR", 2) == 42);
  CHECK(regs.value("ARR", 1) == 0);
}

// The PCIe link honours an annotated delay (loosely-timed initiators run ahead of SystemC's time);
// the endpoints, which act at the time of the call, refuse one with an error response.
TEST_CASE("TLM: the PCIe link starts a posted write at now + its annotated delay, and BAR, memory and MSI sink refuse a non-zero delay") {
  sys().run([] {
    const uint64_t addr = sys().memory.allocate(4096);
    sys().wait_cycle(sys().cycle() + 100);
    uint8_t data[64] = {0xCD};
    tlm::tlm_generic_payload tx;
    tx.set_command(tlm::TLM_WRITE_COMMAND);
    tx.set_address(addr);
    tx.set_data_ptr(data);
    tx.set_data_length(64);
    tx.set_streaming_width(64);
    sc_core::sc_time delay(100, sc_core::SC_NS);
    const sc_core::sc_time issued = sc_core::sc_time_stamp();
    sys().hca.dma.socket->b_transport(tx, delay);  // into the upstream direction, as the DMA engine would
    REQUIRE(tx.is_response_ok());
    CHECK(delay == sc_core::sc_time(100, sc_core::SC_NS));  // a posted write leaves it to the initiator
    const sc_core::sc_time lands = issued + sc_core::sc_time(100, sc_core::SC_NS) +
                                   sc_core::sc_time(2794, sc_core::SC_PS) + sc_core::sc_time(200, sc_core::SC_NS);
    uint8_t b = 0;
    sc_core::wait(lands - sc_core::sc_time_stamp() - sc_core::sc_time(1, sc_core::SC_PS));
    sys().memory.read(addr, &b, 1);
    CHECK(b == 0);
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_PS));
    sys().memory.read(addr, &b, 1);
    CHECK(b == 0xCD);

    const uint64_t errors = log::error_count();
    auto refused = [&](auto& socket, uint64_t address) {
      uint32_t v = 1;
      tlm::tlm_generic_payload t;
      t.set_command(tlm::TLM_WRITE_COMMAND);
      t.set_address(address);
      t.set_data_ptr(reinterpret_cast<uint8_t*>(&v));
      t.set_data_length(4);
      t.set_streaming_width(4);
      sc_core::sc_time d(10, sc_core::SC_NS);
      socket->b_transport(t, d);
      return t.get_response_status() == tlm::TLM_GENERIC_ERROR_RESPONSE;
    };
    CHECK(refused(sys().link.down_out, Driver::offset_of(reg::cmdq_addr_lo)));  // into BAR0
    CHECK(sys().driver.read_register(reg::cmdq_addr_lo) == 0);                  // not applied
    CHECK(refused(sys().router.to_memory, addr));
    CHECK(refused(sys().router.to_msi, MsiSink::kWindowBase));
    CHECK(log::error_count() == errors + 3);
  });
}

TEST_CASE("host CPU: work charged at the instant of a busy() snapshot is not in it, whichever thread runs first") {
  sys().run([] {
    const sc_core::sc_time at = sc_core::sc_time_stamp() + sc_core::sc_time(1, sc_core::SC_US);
    sc_core::sc_time seen[2];
    for (int order = 0; order < 2; ++order) {
      const sc_core::sc_time t = at + sc_core::sc_time(order, sc_core::SC_US);
      auto charger = [t] {
        sc_core::wait(t - sc_core::sc_time_stamp());
        sys().cpu.charge(CpuContext::app, sc_core::sc_time(40, sc_core::SC_NS));
      };
      auto snapshot = [t, &seen, order] {
        sc_core::wait(t - sc_core::sc_time_stamp());
        seen[order] = sys().cpu.busy(CpuContext::app);
      };
      // Spawned in both orders: SystemC runs them in some order at the same instant.
      if (order == 0) {
        sc_core::sc_spawn(charger);
        sc_core::sc_spawn(snapshot);
      } else {
        sc_core::sc_spawn(snapshot);
        sc_core::sc_spawn(charger);
      }
    }
    sc_core::wait(at + sc_core::sc_time(3, sc_core::SC_US) - sc_core::sc_time_stamp());
    CHECK(seen[1] - seen[0] == sc_core::sc_time(40, sc_core::SC_NS));  // the first charge only
    CHECK(sys().cpu.busy(CpuContext::app) - seen[1] == sc_core::sc_time(40, sc_core::SC_NS));
  });
}

// charge_pieces (a verb's WQEs charged in one wait) against the charges it stands for, one at a
// time: the thread goes on at the same instant, and a snapshot of busy() every 10 ns, taken before
// and after the charging thread at each instant, reads the same. Fails if the pieces counted all
// at once, or none until the end, or from their own instant.
TEST_CASE("host CPU: pieces charged in one wait end when the charges one at a time would, and busy() sees them one at a time") {
  sys().run([] {
    using sc_core::sc_time;
    const sc_time each(40, sc_core::SC_NS), tick(10, sc_core::SC_NS);
    constexpr uint32_t kPieces = 5;
    struct Seen {
      std::vector<sc_time> before, after;  // busy() at each tick, snapshots spawned before / after the charger
      sc_time ended;
    };
    auto run = [&](bool in_one_wait) {
      Seen s;
      const sc_time t0 = sc_core::sc_time_stamp() + sc_time(1, sc_core::SC_US);
      const sc_time base = sys().cpu.busy(CpuContext::app);
      auto snapshots = [&, t0, base](std::vector<sc_time>* out) {
        for (uint32_t k = 0; k <= kPieces * 4 + 2; ++k) {
          sc_core::wait(t0 + tick * double(k) - sc_core::sc_time_stamp());
          out->push_back(sys().cpu.busy(CpuContext::app) - base);
        }
      };
      sc_core::sc_spawn([&] { snapshots(&s.before); });
      sc_core::sc_spawn([&, t0] {
        sc_core::wait(t0 - sc_core::sc_time_stamp());
        if (in_one_wait) {
          sys().cpu.charge_pieces(CpuContext::app, each, kPieces);
        } else {
          for (uint32_t i = 0; i < kPieces; ++i) sys().cpu.charge(CpuContext::app, each);
        }
        s.ended = sc_core::sc_time_stamp() - t0;
      });
      sc_core::sc_spawn([&] { snapshots(&s.after); });
      sc_core::wait(t0 + sc_time(1, sc_core::SC_US) - sc_core::sc_time_stamp());
      return s;
    };
    const Seen one_at_a_time = run(false), pieces = run(true);
    CHECK(one_at_a_time.ended == each * double(kPieces));
    CHECK(pieces.ended == one_at_a_time.ended);
    CHECK(pieces.before == one_at_a_time.before);
    CHECK(pieces.after == one_at_a_time.after);
    REQUIRE(pieces.after.size() == kPieces * 4 + 3);
    CHECK(pieces.after[0] == sc_time());        // a charge counts after its own instant
    CHECK(pieces.after[1] == each);             // the first piece, 10 ns in
    CHECK(pieces.after[4] == each);             // 40 ns: the second piece begins, not yet counted
    CHECK(pieces.after[5] == each * 2.0);
    CHECK(pieces.after.back() == each * double(kPieces));
  });
}

// A receive queue that looks full while a post_recv's WQE charges are owed: a slot the pollers free
// meanwhile (here, 20 ns into the first WQE's 40) is seen where a wait apiece would have seen it,
// so the second WQE is posted. Fails when the verb decides full on the index it read at the start.
TEST_CASE("verbs: a post that finds its queue full looks again once the WQEs built so far are charged") {
  sys().run([] {
    boot();
    namespace fb = fabric;
    Pd* pd = fb::alloc_pd(sys().driver);
    Cq* cq = fb::create_cq(sys().driver, 64);
    Qp* qp = fb::create_qp(*pd, cq, cq, QpType::rc, 8);
    QpAttr init;
    init.cur_state = QpState::reset;
    init.new_state = QpState::init;
    REQUIRE(verbs::modify_qp(*qp, init) == 0);
    fb::Buffer buf = fb::reg_buffer(*pd, 4096);
    while (uint32_t(uint16_t(qp->rq_pi - qp->rq_ci)) + 1 < qp->rq_depth) fb::post_recv(*qp, RecvWr{0, {buf.sge(0, 64)}});
    const sc_core::sc_time each = sys().cpu.config().post_wr_cost;
    sc_core::sc_spawn([qp, each] {
      sc_core::wait(each / 2.0);
      ++qp->rq_ci;  // as note_completion does for a receive CQE polled by another context
    });
    const std::vector<RecvWr> two(2, RecvWr{0, {buf.sge(0, 64)}});
    size_t posted = 0;
    CHECK(verbs::post_recv(*qp, two, &posted) == 0);
    CHECK(posted == 2);
    CHECK(uint16_t(qp->rq_pi - qp->rq_ci) == qp->rq_depth);
  });
}
