// EQs and MSI-X: S21 async events, S24 vectors, masking, pending bits, ordering; EQ doorbells.
#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;
using namespace vhca::test;

namespace {
uint32_t eq_pi(uint32_t eqn) { return sys().hca.eq.context(eqn).pi; }
}

TEST_CASE("[S24] the MSI-X write lands after its EQE, which lands after its CQE, exact landing and handler times") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    EventLog ev;
    ev.attach();
    const uint32_t eqn = sys().driver.eqn_for_vector(0);
    uint32_t eq_pi_at_msi = 0;
    bool cqe_visible_at_msi = false;
    sc_core::sc_time msi_at;
    const size_t told = sys().msi.on_message.add([&](uint32_t) {
      msi_at = sc_core::sc_time_stamp();
      eq_pi_at_msi = eq_pi(eqn);
      cqe_visible_at_msi = verbs::peek_cq(*cq, 1) == 1;
    });
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(1);
    const uint64_t k = soon();
    sys().hca.inject(recv_record(cq->cqn, 1), k);
    wait_us(3);
    REQUIRE(ev.count() == 1);
    CHECK(cqe_visible_at_msi);
    CHECK(eq_pi_at_msi == eq_pi(eqn));
    // CQE acted on k+4 (test_support.h), out of the writer's skid buffer on k+5, issued on k+6
    // (2794 ps on the wire), EQE on k+7 waits for the wire (2794 ps), MSI on k+8 waits too
    // (4+24 B: 889 ps): the MSI lands 2794+2794+889 ps + 200 ns after cycle k+6.
    const sc_core::sc_time t6 = sys().hca.clock.at(k + kCompletionActs + 2);
    CHECK(msi_at - t6 == sc_core::sc_time(2794 + 2794 + 889 + 200000, sc_core::SC_PS));
    // The handler runs 1 us (delivery) + 300 ns (entry) + 40 ns (one EQE) later.
    CHECK(ev.times[0] - msi_at == sc_core::sc_time(1340, sc_core::SC_NS));
    sys().msi.on_message.remove(told);
  });
}

TEST_CASE("[S24] a masked vector sets its pending bit, unmasking delivers the message") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    EventLog ev;
    ev.attach();
    const uint32_t vector = 1;  // completion vector 0 uses MSI-X vector 1 (vector 0 is async)
    sys().cpu.mmio_write32(Driver::offset_of(reg::msix_ctrl, vector), 1);
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(1);
    const uint64_t msgs = sys().hca.msix.messages();
    sys().hca.inject(recv_record(cq->cqn, 1), soon());
    wait_us(5);
    CHECK(ev.count() == 0);
    CHECK(sys().hca.msix.messages() == msgs);
    CHECK(((sys().driver.read_register(reg::msix_pba, 0) >> vector) & 1) == 1);
    sys().cpu.mmio_write32(Driver::offset_of(reg::msix_ctrl, vector), 0);
    wait_us(3);
    CHECK(ev.count() == 1);
    CHECK(sys().hca.msix.messages() == msgs + 1);
    CHECK(((sys().driver.read_register(reg::msix_pba, 0) >> vector) & 1) == 0);
  });
}

TEST_CASE("EQ doorbells: update without re-arm raises nothing, arming behind the producer interrupts at once") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    const uint32_t eqn = sys().driver.eqn_for_vector(1);
    Cq* cq2 = nullptr;
    REQUIRE(verbs::create_cq(sys().driver, 16, 1, &cq2) == 0);
    int irqs = 0;
    sys().cpu.set_irq_handler(2, [&] { ++irqs; });  // takes the interrupt, never re-arms
    verbs::req_notify_cq(*cq2, kNotifyNext);
    wait_us(1);
    sys().hca.inject(recv_record(cq2->cqn, 1), soon());
    wait_us(3);
    CHECK(irqs == 1);
    CHECK_FALSE(sys().hca.eq.context(eqn).armed);
    cq2->arm_sn = (cq2->arm_sn + 1) & 3;  // what the driver's dispatch would have done
    drain(*cq2);
    verbs::req_notify_cq(*cq2, kNotifyNext);
    wait_us(1);
    sys().hca.inject(recv_record(cq2->cqn, 2), soon());
    wait_us(3);
    CHECK(eq_pi(eqn) == 2);  // the EQE is written...
    CHECK(irqs == 1);        // ...but the EQ is not armed: no interrupt
    sys().cpu.mmio_write32(Driver::offset_of(reg::eq_db_noarm), eqn << 24 | 1);
    wait_us(3);
    CHECK(irqs == 1);
    CHECK(sys().hca.eq.context(eqn).ci == 1);
    sys().cpu.mmio_write32(Driver::offset_of(reg::eq_db_arm), eqn << 24 | 1);  // one EQE beyond ci
    wait_us(3);
    CHECK(irqs == 2);  // fired at once
    (void)cq;
  });
}

TEST_CASE("[S21] an asynchronous CQ error reaches the registered async handler through the async EQ") {
  sys().run([] {
    boot();
    std::vector<AsyncEvent> events;
    sys().driver.async_handler = [&](const AsyncEvent& e) { events.push_back(e); };
    Cq* cq = make_cq(2);
    for (int i = 0; i < 3; ++i) sys().hca.inject(send_record(cq->cqn, i), soon() + i);
    wait_us(5);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == eqe::kCqError);
    CHECK(events[0].cqn == cq->cqn);
    CHECK(sys().hca.eq.context(sys().driver.async_eqn()).eqes >= 1);
  });
}

TEST_CASE("[S24] unmasking twice delivers a pending message once, an MSI-X address is DWORD aligned") {
  sys().run([] {
    boot();
    Cq* cq = make_cq(16);
    EventLog ev;
    ev.attach();
    const uint32_t vector = 1;
    sys().cpu.mmio_write32(Driver::offset_of(reg::msix_ctrl, vector), 1);
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(1);
    sys().hca.inject(recv_record(cq->cqn, 1), soon());
    wait_us(3);
    const uint64_t msgs = sys().hca.msix.messages();
    sys().cpu.mmio_write32(Driver::offset_of(reg::msix_ctrl, vector), 0);
    sys().cpu.mmio_write32(Driver::offset_of(reg::msix_ctrl, vector), 0);
    wait_us(3);
    CHECK(sys().hca.msix.messages() == msgs + 1);
    CHECK(ev.count() == 1);
    // A misaligned, wrapping address: the low bits are dropped and the write fails cleanly at
    // the host (unmapped), never a crash.
    sys().cpu.mmio_write32(Driver::offset_of(reg::msix_addr_lo, vector), 0xFFFFFFFE);
    sys().cpu.mmio_write32(Driver::offset_of(reg::msix_addr_hi, vector), 0xFFFFFFFF);
    drain(*cq);
    verbs::req_notify_cq(*cq, kNotifyNext);
    wait_us(1);
    const uint64_t errors = log::error_count();
    sys().hca.inject(recv_record(cq->cqn, 2), soon());
    wait_us(3);
    CHECK(sys().hca.msix.messages() == msgs + 2);
    CHECK(log::error_count() > errors);
    CHECK(ev.count() == 1);
  });
}

// Decision 8: the driver polls its commands; the device posts a command-completion EQE only to an
// EQ that takes command events, and generates none when no EQ does.
TEST_CASE("[decision 8] a command-completion EQE goes to an EQ that takes command events, and with none a command does not wake the EQ engine") {
  sys().run([] {
    boot();
    wait_us(5);  // the boot's EQ doorbells have been applied
    Hca& hca = sys().hca;
    const uint64_t before = hca.eq.activations();
    REQUIRE(sys().driver.exec(cmd::kQueryCap).ok());
    wait_us(1);
    CHECK(hca.eq.activations() == before);  // no event generated, none discarded
    // An EQ of 16 entries for command events only (vector 0, never armed: no interrupt).
    const uint64_t base = sys().memory.allocate(eqe::kSize * 16);
    uint8_t init[eqe::kSize] = {};
    put_field(init, eqe::owner, 1);
    for (uint32_t i = 0; i < 16; ++i) sys().driver.cpu().write(base + i * eqe::kSize, init, eqe::kSize);
    const CommandResult r =
        sys().driver.exec(cmd::kCreateEq, {4, uint32_t(base >> 32), uint32_t(base), 0, kEqMaskCommand});
    REQUIRE(r.ok());
    const uint32_t eqn = r.out[0];
    REQUIRE(sys().driver.exec(cmd::kQueryCap).ok());
    wait_us(1);
    // CREATE_EQ's own completion first (the EQ exists when it completes), then QUERY_CAP's: status
    // OK, the data the command's token (one more each command).
    REQUIRE(hca.eq.context(eqn).pi == 2);
    uint8_t e[2][eqe::kSize];
    for (uint32_t i = 0; i < 2; ++i) {
      sys().driver.cpu().read(base + i * eqe::kSize, e[i], eqe::kSize);
      CHECK(get_field(e[i], eqe::event_type) == eqe::kCommandDone);
      CHECK(get_field(e[i], eqe::syndrome) == cmd::kOk);
    }
    CHECK(uint8_t(get_field(e[1], eqe::data)) == uint8_t(get_field(e[0], eqe::data) + 1));
  });
}
