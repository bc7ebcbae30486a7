// S28 end to end over PCIe: the link's flow-control credits hold the DMA engine (upstream) and the
// CPU (downstream) when the far side cannot take more. The link here is slow (1 GB/s) with small
// credit budgets, and the DMA write queue is 8 deep, so a burst fills every queue on the path:
// link credits, the DMA write queue, the CQ writer's output, its input.
#include "testbench/test_support.h"
#include "tlm/credit_returns.h"

namespace vhca::test {
void configure(SystemConfig& cfg) {
  cfg.link.gbytes_per_s = 1.0;
  cfg.link.up_posted_headers = 4;
  cfg.link.up_posted_data = 16;  // 256 bytes
  cfg.link.down_posted_headers = 2;
  cfg.hca.dma.write_queue_depth = 8;
  cfg.cpu.mmio_write_cost = sc_core::SC_ZERO_TIME;
}
}  // namespace vhca::test
using namespace vhca;
using namespace vhca::test;

TEST_CASE("[S28] a burst of CQEs onto a slow link: credits run out, the DMA queue fills, the CQ writer is held, every CQE lands once, in order") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(512);
    wait_us(5);
    const uint64_t stalls = sys().hca.dma.credit_stalls(), out_stalls = sys().hca.cq.stats().output_stalls;
    constexpr int kCqes = 300;
    const uint64_t k = soon();
    for (int i = 0; i < kCqes; ++i) sys().hca.inject(recv_record(cq->cqn, uint64_t(i)), k);
    wait_us(200);
    auto wcs = drain(*cq);
    REQUIRE(wcs.size() == size_t(kCqes));
    for (int i = 0; i < kCqes; ++i) CHECK(wcs[size_t(i)].wr_id == uint64_t(i));
    CHECK(sys().hca.dma.credit_stalls() > stalls);                      // the link held the DMA engine
    CHECK(sys().hca.dma.turns_slept_for_credits() > 0);                 // through turns known to find none
    CHECK(sys().hca.dma.s_write->high_water() == 8);                    // which filled its queue
    CHECK(sys().hca.cq.stats().output_stalls > out_stalls);             // which held the CQ writer
    CHECK(sys().hca.cq.s_cpl->high_water() == sys().hca.cq.s_cpl->depth());  // which filled its input
    CHECK(sys().link.credit_overdrafts(true) == 0);
    CHECK(sys().link.posted_data_in_use_max(true) <= 16);
    CHECK(sys().hca.cq.stats().dropped == 0);
  });
}

TEST_CASE("[S28] a sender that knows it will be refused at an instant is woken by the first credit return after it, or by one given back later, unless another sender refused now wants an earlier one") {
  sys().run([] {
    using sc_core::SC_NS;
    using sc_core::sc_time;
    const sc_time t0 = sc_core::sc_time_stamp();
    auto returns_at_10_20_30 = [&](CreditReturns<uint32_t>& r) {
      r.give_back(t0 + sc_time(10, SC_NS), 1);
      r.give_back(t0 + sc_time(20, SC_NS), 2);
      r.give_back(t0 + sc_time(30, SC_NS), 4);
    };
    uint32_t applied = 0;
    auto apply = [&](uint32_t a) { applied += a; };

    CreditReturns<uint32_t> late;
    returns_at_10_20_30(late);
    uint32_t by_25 = 0, first_only = 0;
    late.for_each_due_by(t0 + sc_time(25, SC_NS), [&](uint32_t a) { by_25 += a; return true; });
    late.for_each_due_by(t0 + sc_time(25, SC_NS), [&](uint32_t a) { first_only += a; return false; });
    CHECK(by_25 == 3);
    CHECK(first_only == 1);
    late.want_wake_after(t0 + sc_time(15, SC_NS));  // refused at 15: the return at 10 does not wake it
    sc_core::wait(late.due_event());
    CHECK(sc_core::sc_time_stamp() - t0 == sc_time(20, SC_NS));
    late.process(apply);
    CHECK(applied == 3);

    CreditReturns<uint32_t> shared;
    const sc_time t1 = sc_core::sc_time_stamp();
    shared.give_back(t1 + sc_time(10, SC_NS), 1);
    shared.give_back(t1 + sc_time(20, SC_NS), 2);
    shared.want_wake_after(t1 + sc_time(15, SC_NS));
    shared.want_wake();  // another sender, refused now, wants the next return
    sc_core::wait(shared.due_event());
    CHECK(sc_core::sc_time_stamp() - t1 == sc_time(10, SC_NS));

    // Nothing scheduled after the instant it slept past: a return given back later wakes it, though
    // the unapplied one before that instant is still the first in line.
    CreditReturns<uint32_t> given_later;
    const sc_time t2 = sc_core::sc_time_stamp();
    given_later.give_back(t2 + sc_time(10, SC_NS), 1);
    given_later.want_wake_after(t2 + sc_time(15, SC_NS));
    given_later.give_back(t2 + sc_time(40, SC_NS), 2);
    sc_core::wait(sc_time(100, SC_NS), given_later.due_event());  // not forever, were the wake lost
    CHECK(sc_core::sc_time_stamp() - t2 == sc_time(40, SC_NS));
  });
}

namespace {
// Doorbells that only update EQ 0's consumer index (to its current value): harmless, and counted
// as the device takes them.
struct NoArmDoorbells {
  static constexpr int kCount = 12;
  uint64_t entered = 0;
  uint32_t value = 0;
  NoArmDoorbells() {
    sys().hca.eq.s_db->on_push.add([this](const EqDoorbell& d, uint64_t) { entered += d.eqn == 0 && !d.arm; });
    value = uint32_t(with_bits(with_bits(0, eqdb::eqn, 0), eqdb::consumer_index, sys().hca.eq.context(0).ci));
  }
  void write(CpuContext ctx = CpuContext::app) const {
    sys().cpu.mmio_write32(Driver::offset_of(reg::eq_db_noarm), value, ctx);
  }
};
// Two writes per credit loop: a credit returns one latency (200 ns) after its write reached the
// device, itself 200 ns + 36 ns of wire after it left. Twelve writes wait for five loops.
const sc_core::sc_time kFiveCreditLoops(5 * 400, sc_core::SC_NS);
}  // namespace

TEST_CASE("[S28] downstream credits: with 2 posted header credits the CPU's doorbell writes stall until credits return, none is lost") {
  sys().run([] {
    boot();
    wait_us(2);
    NoArmDoorbells doorbells;
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    for (int i = 0; i < NoArmDoorbells::kCount; ++i) doorbells.write();
    CHECK(sc_core::sc_time_stamp() - t0 >= kFiveCreditLoops);
    wait_us(2);
    CHECK(doorbells.entered == uint64_t(NoArmDoorbells::kCount));
    CHECK(sys().link.credit_overdrafts(false) == 0);
  });
}

TEST_CASE("[S28] downstream credits hold kernel work too: a step's doorbell writes that find no credits stall its core, none is lost or queued aside") {
  sys().run([] {
    boot();
    wait_us(2);
    NoArmDoorbells doorbells;
    HostCpu& cpu = sys().cpu;
    std::unique_ptr<CpuCore> lane = cpu.make_lane("kernel_work");
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    sc_core::sc_time next_step;
    CpuWork work;
    work.ctx = CpuContext::softirq;
    work.next = [&] {
      // Free writes (mmio_write_cost 0): all due at once.
      for (int i = 0; i < NoArmDoorbells::kCount; ++i) doorbells.write(CpuContext::softirq);
      cpu.then([&] { next_step = sc_core::sc_time_stamp(); });
    };
    cpu.start(work, *lane);
    wait_us(5);
    // As the thread above, the step's core stalled for the credit loops before its last write
    // left, and only then could its next step run.
    CHECK(next_step >= t0 + kFiveCreditLoops);
    CHECK(doorbells.entered == uint64_t(NoArmDoorbells::kCount));
    CHECK(sys().link.credit_overdrafts(false) == 0);
  });
}
