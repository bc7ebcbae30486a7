// S28 nothing dropped in silence: every queue between blocks is finite, and a full one holds its
// producer or records the loss where a user reads it. Each case fills one queue (the depths are
// cut down here so that a burst fills them), shows the stall, and shows that nothing was lost.
#include <algorithm>

#include "testbench/test_support.h"
#include "testbench/wr_test_support.h"
#include "model/common/topology.h"

namespace vhca::test {
void configure(SystemConfig& cfg) {
  cfg.hosts = 2;
  cfg.hca.cq.input_depth = 2;            // s_cpl and s_arm
  cfg.hca.arbiter.transport_depth = 2;   // completions the transport may have waiting
  cfg.hca.transport.outbox_depth = 6;    // one packet's data pieces and CQE, no more
  // Doorbells leave the CPU back to back (about 1 ns apart on the PCIe wire), faster than a
  // block takes them (one a 2 ns cycle).
  cfg.cpu.mmio_write_cost = sc_core::SC_ZERO_TIME;
}
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

TEST_CASE("[S28] a flush of a whole ring fills the CQ writer's input: the transport is held, every flush CQE arrives once, in order") {
  sys().run([] {
    auto [a, b] = rc_pair();
    constexpr uint64_t kWqes = 60;
    for (uint64_t i = 0; i < kWqes; ++i) fb::post_recv(*a.qp, RecvWr{0x100 + i, {a.buf.sge(0, 64)}});
    wait_us(5);
    const CompletionArbiter& arb = sys().node(0).hca.arbiter;
    const uint64_t stalls_before = arb.transport_stalls();
    REQUIRE(verbs::modify_qp(*a.qp, rts_to_error()) == 0);
    auto r = poll_n(*a.rcq, kWqes);
    REQUIRE(r.size() == kWqes);
    for (uint64_t i = 0; i < kWqes; ++i) {
      CHECK(r[i].wr_id == 0x100 + i);
      CHECK(r[i].status == syndrome::kWrFlush);
    }
    // The flush produced 60 records at once into a queue of 2: the transport was held, and the
    // queue never went past its bound.
    CHECK(arb.transport_stalls() > stalls_before);
    CHECK(arb.transport_high_water() == 2);
    CHECK(sys().node(0).hca.cq.s_cpl->high_water() <= 2);
    wait_us(20);
    CHECK(verbs::peek_cq(*a.rcq, 16) == 0);  // nothing twice
    CHECK(sys().node(0).hca.cq.stats().dropped == 0);
  });
}

TEST_CASE("[S28] a send queue of 60 outstanding WQEs flushes through a 6-deep outbox: handed on a few at a time, every CQE once, in order") {
  sys().run([] {
    auto [a, b] = rc_pair();
    // The responder's QP answers nothing in ERR: every WRITE stays outstanding at the requester.
    REQUIRE(verbs::modify_qp(*b.qp, rts_to_error()) == 0);
    constexpr uint64_t kWqes = 60;
    for (uint64_t i = 0; i < kWqes; ++i)
      fb::post_send(*a.qp, remote_wr(0x200 + i, a.buf.sge(0, 64), sqwqe::kRdmaWrite, b.buf, 0));
    wait_us(40);
    const TransportStats& ta = sys().node(0).hca.transport.stats();
    REQUIRE(ta.wqes_fetched == kWqes);
    REQUIRE(ta.packets_sent >= kWqes);  // all sent, none acknowledged
    REQUIRE(verbs::peek_cq(*a.scq, 16) == 0);
    Outbox& box = sys().node(0).hca.transport.requester.outbox();
    const uint64_t holds_before = box.holds();
    REQUIRE(verbs::modify_qp(*a.qp, rts_to_error()) == 0);
    auto r = poll_n(*a.scq, kWqes);
    REQUIRE(r.size() == kWqes);
    for (uint64_t i = 0; i < kWqes; ++i) {
      CHECK(r[i].wr_id == 0x200 + i);
      CHECK(r[i].status == syndrome::kWrFlush);
    }
    // 60 completions at once: the requester handed them to its outbox while it had room, the
    // outbox was held by the CQ writer's full input, and neither went past its bound.
    CHECK(box.holds() > holds_before);
    CHECK(box.s_items.high_water() == 6);
    CHECK(box.overflows() == 0);
    CHECK(sys().node(0).hca.arbiter.transport_high_water() == 2);
    wait_us(20);
    CHECK(verbs::peek_cq(*a.scq, 16) == 0);  // nothing twice
  });
}

TEST_CASE("[S28] a full shared stream wakes only the producer it refused: CQEs backed up in the DMA write queue do not wake the EQ engine or MSI-X") {
  sys().run([] {
    REQUIRE(sys().driver.boot().ok());
    Cq* cq[2] = {nullptr, nullptr};
    for (Cq*& c : cq)
      REQUIRE(verbs::create_cq(sys().driver, 4096, 0, &c, {}, cmd::kCqFlagOverrunIgnore) == 0);  // no events
    wait_us(5);
    Hca& hca = sys().hca;
    const uint64_t eq0 = hca.eq.activations(), msix0 = hca.msix.activations(), cqes0 = hca.cq.stats().cqes;
    CompletionRecord r;
    r.opcode = cqe::kRespSend;
    const uint64_t base = sys().cycle() + 1;
    // One a cycle, alternating two CQs (the writer takes two CQEs for one CQ only every other
    // cycle): faster than the link takes CQEs.
    for (uint64_t i = 0; i < 2000; ++i) {
      r.cqn = cq[i % 2]->cqn;
      hca.inject(r, base + i);
    }
    wait_us(20);
    REQUIRE(hca.cq.stats().cqes - cqes0 == 2000);
    CHECK(hca.dma.s_write->high_water() == hca.dma.s_write->depth());  // the queue was full: the writer held
    // The EQ engine and MSI-X share the DMA write queue but had nothing to write: not woken once.
    CHECK(hca.eq.activations() == eq0);
    CHECK(hca.msix.activations() == msix0);
  });
}

TEST_CASE("[S28] injections held by a full completion input wait without waking the arbiter: passed on as slots free, the held cycles counted") {
  sys().run([] {
    REQUIRE(sys().driver.boot().ok());
    Cq* cq = nullptr;
    REQUIRE(verbs::create_cq(sys().driver, 4096, 0, &cq, {}, cmd::kCqFlagOverrunIgnore) == 0);  // no events
    wait_us(5);
    Hca& hca = sys().hca;
    constexpr uint64_t kRecords = 2000;
    std::vector<uint64_t> pushed_at(kRecords, 0);
    const size_t tap = hca.cq.s_cpl.stream().on_push.add(
        [&](const CompletionRecord& r, uint64_t c) { pushed_at.at(r.wr_id) = c; });
    const uint64_t activations0 = hca.arbiter.activations(), stalls0 = hca.arbiter.injection_stalls();
    CompletionRecord r;
    r.opcode = cqe::kRespSend;
    r.cqn = cq->cqn;
    const uint64_t base = sys().cycle() + 1;
    for (uint64_t i = 0; i < kRecords; ++i) {  // one a cycle: faster than the link takes CQEs
      r.wr_id = i;
      hca.inject(r, base + i);
    }
    wait_us(30);
    hca.cq.s_cpl.stream().on_push.remove(tap);
    REQUIRE(hca.arbiter.injected() >= kRecords);
    // Held from the cycle the first record that had to wait was due until the last one entered.
    uint64_t first_held = 0;
    while (first_held < kRecords && pushed_at[first_held] == base + first_held) ++first_held;
    REQUIRE(first_held < kRecords);  // the flood did back up
    CHECK(hca.arbiter.injection_stalls() - stalls0 == pushed_at[kRecords - 1] - (base + first_held));
    // A full s_cpl does not wake it for each record: when the writer takes one, the next due is
    // passed on at once for the cycle after (hca.early_injection). Woken for each, it would take
    // an activation a record; polling through the held cycles, about two.
    CHECK(hca.arbiter.passed_on_early() > kRecords / 2);
    CHECK(hca.arbiter.activations() - activations0 <= 20);
  });
}

// A record put on an edge with nothing waiting is passed on at once, without the arbiter's turn
// (hca.early_injection); a record of the other source given later for the same cycle takes it
// back, so the round robin between them is the turn's: the transport first on the first cycle
// both have a record, the injection on the next, the transport on the third. A record given after
// the turn would have run (two delta cycles later) is not part of it.
TEST_CASE("[S28] the round robin holds: a record passed on at once is taken back for one of the other source due on its cycle") {
  sys().run([] {
    REQUIRE(sys().driver.boot().ok());
    Cq* cq = nullptr;
    REQUIRE(verbs::create_cq(sys().driver, 64, 0, &cq, {}, cmd::kCqFlagOverrunIgnore) == 0);
    wait_us(5);
    CompletionArbiter& arb = sys().hca.arbiter;
    auto record = [&](uint64_t wr_id) { return recv_record(cq->cqn, wr_id); };
    const uint64_t activations0 = arb.activations(), at_once0 = arb.passed_at_once();
    // Alone: pushed at once, no activation of the arbiter.
    sys().wait_cycle(sys().cycle() + 2);
    REQUIRE(arb.try_put(record(1)));
    wait_us(1);
    CHECK(arb.passed_at_once() - at_once0 == 1);
    CHECK(arb.activations() == activations0);
    // Both on one cycle, twice: the transport's record first, then the injection's.
    const uint64_t back0 = arb.taken_back_at_once();
    for (uint64_t wr : {2, 4}) {
      sys().wait_cycle(sys().cycle() + 2);
      REQUIRE(arb.try_put(record(wr)));
      arb.inject(record(wr + 1), sys().cycle());
      sys().wait_cycle(sys().cycle() + 2);
    }
    // The injection first, then the transport's record: the injection passed on at once goes back.
    const uint64_t injections0 = arb.injections_at_once();
    sys().wait_cycle(sys().cycle() + 2);
    arb.inject(record(7), sys().cycle());
    CHECK(arb.injections_at_once() - injections0 == 1);
    REQUIRE(arb.try_put(record(6)));
    CHECK(arb.injections_at_once() - injections0 == 0);
    CHECK(arb.taken_back_at_once() - back0 == 3);
    // The injection's turn now; but one given two delta cycles after the transport's record comes
    // after it, as after the turn that would have run in between: no take-back.
    sys().wait_cycle(sys().cycle() + 2);
    REQUIRE(arb.try_put(record(8)));
    sc_core::wait(sc_core::SC_ZERO_TIME);
    sc_core::wait(sc_core::SC_ZERO_TIME);
    arb.inject(record(9), sys().cycle());
    CHECK(arb.taken_back_at_once() - back0 == 3);
    const std::vector<Wc> wc = poll_n(*cq, 9);
    REQUIRE(wc.size() == 9);
    std::vector<uint64_t> order;
    for (const Wc& w : wc) order.push_back(w.wr_id);
    CHECK(order == std::vector<uint64_t>{1, 2, 3, 5, 4, 6, 7, 8, 9});
  });
}

TEST_CASE("[S28] arm doorbells to a full arm FIFO are held in the PCIe link, none is dropped, each arm takes effect") {
  sys().run([] {
    REQUIRE(sys().driver.boot().ok());
    constexpr int kCqs = 24;
    std::vector<Cq*> cqs;
    for (int i = 0; i < kCqs; ++i) cqs.push_back(make_cq(16));
    EventLog ev;
    ev.attach();
    wait_us(2);
    const uint64_t arms = sys().hca.cq.stats().arms, stalls = sys().link.down_stalls();
    const uint64_t bad = sys().driver.read_register(reg::bad_doorbells);
    // 24 posted 8-byte writes leave the host back to back (about 1 ns apart on the wire); the
    // CQ writer takes one arm a cycle (2 ns) into a FIFO of 2.
    for (Cq* cq : cqs) verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(2);
    CHECK(sys().link.down_stalls() > stalls);
    CHECK(sys().hca.cq.stats().arms == arms + kCqs);
    CHECK(sys().driver.read_register(reg::bad_doorbells) == bad);
    CHECK(sys().hca.cq.s_arm->high_water() <= 2);
    // Every CQ is armed: one CQE each raises one event each.
    for (Cq* cq : cqs) sys().hca.inject(recv_record(cq->cqn, 1), soon());
    wait_us(20);
    CHECK(ev.count() == size_t(kCqs));
  });
}

TEST_CASE("[S28] EQ doorbells to a full EQ doorbell FIFO are held in the PCIe link, none is dropped") {
  sys().run([] {
    REQUIRE(sys().driver.boot().ok());
    wait_us(2);
    uint64_t entered = 0;  // this test's doorbells (EQ 0, no re-arm) that entered the FIFO
    sys().hca.eq.s_db->on_push.add([&](const EqDoorbell& d, uint64_t) { entered += d.eqn == 0 && !d.arm; });
    const uint64_t stalls = sys().link.down_stalls();
    const uint64_t bad = sys().driver.read_register(reg::bad_doorbells);
    // Consumer-index updates without re-arm for the async EQ (EQ 0), at its current index.
    const uint32_t ci = sys().hca.eq.context(0).ci;
    constexpr int kDoorbells = 48;  // twice what fills the 16-deep FIFO at this rate
    for (int i = 0; i < kDoorbells; ++i)
      sys().cpu.mmio_write32(Driver::offset_of(reg::eq_db_noarm),
                             uint32_t(with_bits(with_bits(0, eqdb::eqn, 0), eqdb::consumer_index, ci)));
    wait_us(2);
    CHECK(sys().link.down_stalls() > stalls);
    CHECK(entered == uint64_t(kDoorbells));
    CHECK(sys().hca.eq.s_db->empty());
    CHECK(sys().driver.read_register(reg::bad_doorbells) == bad);
    // Full: a slot freed on a cycle is usable on the next, so the link holds a write at depth - 1.
    CHECK(sys().hca.eq.s_db->high_water() >= sys().hca.eq.s_db->depth() - 1);
    CHECK(sys().hca.eq.s_db->high_water() <= sys().hca.eq.s_db->depth());
  });
}

TEST_CASE("[S28][S24] unmasking 32 vectors with pending bits at once delivers every message once, from the pending bits") {
  sys().run([] {
    REQUIRE(sys().driver.boot().ok());
    wait_us(2);
    std::vector<uint32_t> raised;
    const size_t told = sys().msi.on_message.add([&](uint32_t v) { raised.push_back(v); });
    for (uint32_t v = 0; v < kNumMsixVectors; ++v) sys().cpu.set_irq_handler(100 + v, [] {});  // the host takes them
    for (uint32_t v = 0; v < kNumMsixVectors; ++v) {
      sys().cpu.mmio_write32(Driver::offset_of(reg::msix_addr_lo, v), uint32_t(MsiSink::kWindowBase));
      sys().cpu.mmio_write32(Driver::offset_of(reg::msix_addr_hi, v), 0);
      sys().cpu.mmio_write32(Driver::offset_of(reg::msix_data, v), 100 + v);
      sys().cpu.mmio_write32(Driver::offset_of(reg::msix_ctrl, v), 1);  // masked
    }
    wait_us(2);
    // Every vector is asked for while masked (as the EQ engine would): each sets its pending bit.
    Stream<uint32_t>& irq = sys().hca.msix.s_irq.stream();
    for (uint32_t v = 0; v < kNumMsixVectors; ++v) {
      while (!irq.can_push(sys().cycle())) sys().wait_cycle(sys().cycle() + 1);
      irq.push(v, sys().cycle());
    }
    wait_us(1);
    CHECK(sys().driver.read_register(reg::msix_pba, 0) == 0xFFFFFFFFu);
    const uint64_t msgs = sys().hca.msix.messages();
    // 32 unmasks back to back: more than the 16 requests the MSI-X input can hold.
    for (uint32_t v = 0; v < kNumMsixVectors; ++v) sys().cpu.mmio_write32(Driver::offset_of(reg::msix_ctrl, v), 0);
    wait_us(2);
    CHECK(sys().hca.msix.messages() == msgs + kNumMsixVectors);
    CHECK(sys().driver.read_register(reg::msix_pba, 0) == 0);
    REQUIRE(raised.size() == kNumMsixVectors);
    std::sort(raised.begin(), raised.end());
    for (uint32_t v = 0; v < kNumMsixVectors; ++v) CHECK(raised[v] == 100 + v);
    // Unmasking again sends nothing more: the pending bits were the only record.
    for (uint32_t v = 0; v < kNumMsixVectors; ++v) sys().cpu.mmio_write32(Driver::offset_of(reg::msix_ctrl, v), 0);
    wait_us(2);
    CHECK(raised.size() == kNumMsixVectors);
    wait_us(20);  // one core takes them one after the other
    for (uint32_t v = 0; v < kNumMsixVectors; ++v) CHECK(sys().cpu.interrupts_on(100 + v) == 1);
    sys().msi.on_message.remove(told);
  });
}

TEST_CASE("[S28] error reports that find the pending list full are counted in LOST_EVENTS, the first 16 reach the async EQ") {
  sys().run([] {
    REQUIRE(sys().driver.boot().ok());
    wait_us(2);
    const uint64_t eqes = sys().hca.eq.context(0).eqes;  // the async EQ
    REQUIRE(sys().driver.read_register(reg::lost_events) == 0);
    // 20 failed posted writes reported by the link in one instant (the test plays the link).
    for (int i = 0; i < 20; ++i) sys().hca.upstream_write_failed(DmaSource::other, 0, 0xDEAD0000 + 64 * i);
    wait_us(5);
    CHECK(sys().hca.eq.reports_lost() == 4);
    CHECK(sys().driver.read_register(reg::lost_events) == 4);
    CHECK(sys().hca.eq.context(0).eqes == eqes + 16);
  });
}

TEST_CASE("[S28] every queue between blocks is finite and fed: the hierarchy names its producers, its depth and high-water mark") {
  sys().run([] {
    REQUIRE(sys().driver.boot().ok());
    const std::vector<QueueLink> links = queue_links({&sys().node(0).hca});
    // The HCA's queues: DMA writes and CI requests, the arbiter's transport side, the CQ writer's
    // five inputs, the EQ engine's two, MSI-X requests, SQ/RQ doorbells, and the transport's own:
    // the two outboxes, the packets built ahead, the rx FIFO, the WQE fetch's QP lists and event
    // queue, and the responder's ACKs due and responses owed.
    REQUIRE(links.size() == 21);
    for (const QueueLink& l : links) {
      INFO(l.queue);
      CHECK(l.depth > 0);
      CHECK(l.high_water <= l.depth);
      CHECK((!l.producers.empty() || !l.fed_by.empty()));
    }
    auto find = [&](const std::string& name) {
      for (const QueueLink& l : links)
        if (l.queue == name) return l;
      FAIL("no queue " << name);
      return QueueLink{};
    };
    const std::string hca = sys().node(0).hca.name();
    CHECK(find(hca + ".dma.s_write").producers ==
          std::vector<std::string>{hca + ".cq.m_dma", hca + ".eq.m_dma", hca + ".msix.m_dma",
                                   hca + ".transport.requester.outbox.m_dma", hca + ".transport.responder.outbox.m_dma",
                                   hca + ".cmd.m_dma"});
    CHECK(find(hca + ".cq.s_cpl").producers == std::vector<std::string>{hca + ".arbiter.m_cpl"});
    CHECK(find(hca + ".arbiter.s_transport").producers == std::vector<std::string>{hca + ".transport.m_cpl"});
    CHECK(find(hca + ".eq.s_event").producers ==
          std::vector<std::string>{hca + ".cq.m_event", hca + ".transport.m_event", hca + ".cmd.m_event"});
    CHECK(find(hca + ".cq.s_arm").depth == 2);  // configured above
    const TransportConfig& tc = sys().node(0).hca.transport.config();
    CHECK(find(hca + ".transport.requester.outbox.s_items").depth == tc.outbox_depth);
    CHECK(find(hca + ".transport.responder.outbox.s_items").depth == tc.outbox_depth);
    CHECK(find(hca + ".transport.tx.s_built").depth == tc.tx_read_tags);
    CHECK(find(hca + ".transport.rx.s_fifo").depth == tc.rx_fifo_depth);
    const size_t qps = sys().node(0).hca.qp_tables.qps.size();
    CHECK(find(hca + ".transport.fetch.s_events").depth ==
          2 * qps + sys().node(0).hca.qp_tables.srqs.size() + WqeFetch::kPortEventSlack);
    CHECK(find(hca + ".transport.responder.s_responses").depth == qps * 2 * kMaxRdAtomic);
    make_cq(16);  // CREATE_CQ reaches the CQ writer as a control op: the counters are live
    CHECK(find(hca + ".cq.s_ctl").pushed == 0);  // the snapshot above was taken before
    const std::vector<QueueLink> after = queue_links({&sys().node(0).hca});
    for (const QueueLink& l : after)
      if (l.queue == hca + ".cq.s_ctl") CHECK(l.pushed == 1);
  });
}

TEST_CASE("[S28] the transport's event queue is finite: events past its bound are counted in LOST_EVENTS, not dropped in silence") {
  sys().run([] {
    REQUIRE(sys().driver.boot().ok());
    wait_us(2);
    WqeFetch& fetch = sys().hca.transport.fetch;
    const uint64_t lost0 = sys().driver.read_register(reg::lost_events);
    const uint64_t stat0 = sys().hca.transport.stats().events_lost;
    // A burst no port makes: more events in one instant than the queue holds.
    const size_t burst = fetch.s_events.depth() + 3;
    for (size_t i = 0; i < burst; ++i) fetch.post_event(DeviceEvent{eqe::kPortChange, 0, 0, eqe::kPortActive, 1});
    CHECK(sys().hca.transport.stats().events_lost - stat0 == 3);
    CHECK(fetch.s_events.high_water() == fetch.s_events.depth());
    wait_us(50);
    CHECK(sys().driver.read_register(reg::lost_events) >= lost0 + 3);
  });
}
