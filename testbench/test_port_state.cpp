// The port follows its IB link: a link that goes down (a cable pulled) takes the ports at both ends
// down at once (PORT_STATE reads 1) and raises a port change EQE at each (syndrome: the new state,
// data: the port), as does its return; packets sent while it is down, and those on the wire when
// it went, are lost and counted, and RC recovers them by retransmission once it is back, or ends
// the WQE with a retry-exceeded error when the outage outlasts its retries: never a lost completion.
#include "testbench/test_support.h"

#include "testbench/wr_test_support.h"

namespace vhca::test {
void configure(SystemConfig& cfg) { cfg.hosts = 2; }
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

namespace {
struct PortEvent {
  uint8_t state;
  uint64_t port;
  sc_core::sc_time at;
};

// Boots both hosts (once) and records each driver's port change events.
std::vector<std::vector<PortEvent>>& port_events() {
  static std::vector<std::vector<PortEvent>> events(2);
  static bool booted = false;
  if (!booted) {
    for (uint32_t h = 0; h < 2; ++h) {
      CommandResult r = sys().node(h).driver.boot();
      INFO(r.message());
      REQUIRE(r.ok());
      sys().node(h).driver.async_handler = [h](const AsyncEvent& ev) {
        if (ev.type == eqe::kPortChange) events[h].push_back({ev.syndrome, ev.data, sc_core::sc_time_stamp()});
      };
    }
    booted = true;
  }
  return events;
}

// Boots (once) and connects an RC pair, host 0 to host 1, with a 16 us ACK timeout.
std::pair<Side, Side> rc_pair_with_retries(uint8_t retry_cnt) {
  port_events();
  fb::RcParams p;
  p.timeout = 2;  // 4.096 us * 4
  p.retry_cnt = retry_cnt;
  Side a = make_side(0, 1 << 16), b = make_side(1, 1 << 16);
  fb::connect_rc(*a.qp, *b.qp, p);
  return {a, b};
}

uint32_t port_state_read(uint32_t host) { return sys().node(host).driver.read_register(reg::port_state); }
}  // namespace

TEST_CASE("[S27] a link going down takes both its ports down at once, each with a port change event, and its return brings them back") {
  sys().run([] {
    auto& events = port_events();
    for (uint32_t h = 0; h < 2; ++h) CHECK(port_state_read(h) == eqe::kPortActive);
    const size_t before0 = events[0].size(), before1 = events[1].size();
    const sc_core::sc_time down_at = sc_core::sc_time_stamp();
    sys().ib.set_up(false);
    for (uint32_t h = 0; h < 2; ++h) {
      CHECK(!sys().node(h).hca.port_active());
      CHECK(sys().node(h).hca.bar0.regs.value(reg::port_state) == eqe::kPortDown);  // at once
    }
    wait_us(20);
    for (uint32_t h = 0; h < 2; ++h) {
      CHECK(port_state_read(h) == eqe::kPortDown);  // through the BAR, as a driver reads it
      REQUIRE(events[h].size() == (h ? before1 : before0) + 1);
      CHECK(events[h].back().state == eqe::kPortDown);
      CHECK(events[h].back().port == 1);
      // The EQE, its MSI-X and the handler: within the interrupt path's few microseconds.
      CHECK(events[h].back().at > down_at);
      CHECK(events[h].back().at < down_at + sc_core::sc_time(5, sc_core::SC_US));
    }
    sys().ib.set_up(true);
    wait_us(20);
    for (uint32_t h = 0; h < 2; ++h) {
      CHECK(port_state_read(h) == eqe::kPortActive);
      REQUIRE(events[h].size() == (h ? before1 : before0) + 2);
      CHECK(events[h].back().state == eqe::kPortActive);
    }
    // Telling a port the state it has raises nothing.
    sys().ib.set_up(true);
    wait_us(20);
    CHECK(events[0].size() == before0 + 2);
  });
}

TEST_CASE("[S19] a SEND posted while the link is down is lost on the wire and retransmitted once it is back: it completes once, successfully") {
  sys().run([] {
    auto [a, b] = rc_pair_with_retries(7);
    fb::post_recv(*b.qp, RecvWr{1, {b.buf.sge(0, 256)}});
    wait_us(2);
    const uint64_t lost0 = sys().ib.stats(0).link_down;
    const uint64_t retransmits0 = sys().node(0).hca.transport.stats().retransmits;
    sys().ib.set_up(false);
    fb::post_send(*a.qp, send_wr(0x5E, a.buf.sge(0, 64)));
    wait_us(30);
    CHECK(sys().ib.stats(0).link_down > lost0);
    CHECK(poll_n(*b.rcq, 1, 1).empty());
    sys().ib.set_up(true);
    auto swc = poll_n(*a.scq, 1, 500);
    REQUIRE(swc.size() == 1);
    CHECK(swc[0].wr_id == 0x5E);
    CHECK(swc[0].status == 0);
    CHECK(poll_n(*b.rcq, 1, 10).size() == 1);
    CHECK(poll_n(*b.rcq, 1, 50).empty());  // delivered once
    CHECK(sys().node(0).hca.transport.stats().retransmits > retransmits0);
  });
}

TEST_CASE("[S19] an outage longer than RC's retries ends the WQE with a retry-exceeded error completion") {
  sys().run([] {
    auto [a, b] = rc_pair_with_retries(2);
    wait_us(2);
    sys().ib.set_up(false);
    fb::post_send(*a.qp, send_wr(0xDEAD, a.buf.sge(0, 64)));
    auto swc = poll_n(*a.scq, 1, 500);
    sys().ib.set_up(true);
    REQUIRE(swc.size() == 1);
    CHECK(swc[0].wr_id == 0xDEAD);
    CHECK(swc[0].status == syndrome::kRetryExceeded);
  });
}
