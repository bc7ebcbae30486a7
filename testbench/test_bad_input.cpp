// Bad input: every command field out of range, unknown objects, bad doorbells, bad BAR accesses,
// DMA to unmapped memory. Each gets its status, syndrome or async error; the model keeps running
// and no CQE of a healthy CQ is lost.
#include "testbench/test_support.h"

#include <cerrno>

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;
using namespace vhca::test;

namespace {
struct BadField {
  uint16_t opcode;
  Driver::Input in;
  uint8_t status;
  const char* message;
};

// A healthy CQ keeps working after whatever went before.
void check_still_healthy() {
  Cq* cq = make_cq(8);
  EventLog ev;
  ev.attach();
  verbs::req_notify_cq(*cq, kNotifyNext);
  wait_us(1);
  for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, 500 + i), soon() + i);
  wait_us(4);
  CHECK(ev.count() == 1);
  auto w = drain(*cq);
  REQUIRE(w.size() == 3);
  CHECK(w[2].wr_id == 502);
}
}  // namespace

TEST_CASE("every command field out of range is refused with a status and a syndrome naming the field") {
  sys().run([] {
    boot();
    const uint32_t eqn = sys().driver.eqn_for_vector(0);
    const uint32_t async = sys().driver.async_eqn();
    Cq* cq = make_cq(8);
    const uint32_t n = cq->cqn;
    const uint32_t b = 0x1000;  // a page-aligned low address for fields that must look valid
    const std::vector<BadField> cases = {
        {0x999, {}, cmd::kBadOp, "BAD_OP: opcode 0x999: no such object"},
        {cmd::kInit, {}, cmd::kBadSysState, "BAD_SYS_STATE: INIT: wrong state"},
        {cmd::kQueryCap, {1}, cmd::kBadParam, "BAD_PARAM: QUERY_CAP in[0] reserved: reserved bits or unused field not zero"},
        {cmd::kCreateEq, {0, 0, b, 1, 1}, cmd::kBadParam, "BAD_PARAM: CREATE_EQ in[0] log_size: out of range"},
        {cmd::kCreateEq, {17, 0, b, 1, 1}, cmd::kBadParam, "BAD_PARAM: CREATE_EQ in[0] log_size: out of range"},
        {cmd::kCreateEq, {4, 0, 0, 1, 1}, cmd::kBadParam, "BAD_PARAM: CREATE_EQ in[2] base_lo: out of range"},
        {cmd::kCreateEq, {4, 0, b + 64, 1, 1}, cmd::kBadParam, "BAD_PARAM: CREATE_EQ in[2] base_lo: misaligned"},
        {cmd::kCreateEq, {4, 0, b, 32, 1}, cmd::kBadParam, "BAD_PARAM: CREATE_EQ in[3] vector: out of range"},
        {cmd::kCreateEq, {4, 0, b, 1, 0}, cmd::kBadParam, "BAD_PARAM: CREATE_EQ in[4] event_mask: out of range"},
        {cmd::kCreateEq, {4, 0, b, 1, 8}, cmd::kBadParam, "BAD_PARAM: CREATE_EQ in[4] event_mask: reserved bits or unused field not zero"},
        {cmd::kCreateEq, {4, 0, b, 1, 2}, cmd::kResourceBusy, "RESOURCE_BUSY: CREATE_EQ in[4] event_mask: object in use"},
        {cmd::kCreateEq, {4, 0, b, 1, 1, 5}, cmd::kBadParam, "BAD_PARAM: CREATE_EQ in[5] reserved: reserved bits or unused field not zero"},
        {cmd::kDestroyEq, {60}, cmd::kBadResource, "BAD_RESOURCE: DESTROY_EQ in[0] eqn: no such object"},
        {cmd::kDestroyEq, {eqn}, cmd::kResourceBusy, "RESOURCE_BUSY: DESTROY_EQ in[0] eqn: object in use"},
        {cmd::kQueryEq, {60}, cmd::kBadResource, "BAD_RESOURCE: QUERY_EQ in[0] eqn: no such object"},
        {cmd::kCreateCq, {23, 0, b, 0, b, eqn}, cmd::kBadParam, "BAD_PARAM: CREATE_CQ in[0] log_size: out of range"},
        {cmd::kCreateCq, {3, 0, 0, 0, b, eqn}, cmd::kBadParam, "BAD_PARAM: CREATE_CQ in[2] base_lo: out of range"},
        {cmd::kCreateCq, {3, 0, b + 8, 0, b, eqn}, cmd::kBadParam, "BAD_PARAM: CREATE_CQ in[2] base_lo: misaligned"},
        {cmd::kCreateCq, {3, 0, b, 0, 0, eqn}, cmd::kBadParam, "BAD_PARAM: CREATE_CQ in[4] dbr_lo: out of range"},
        {cmd::kCreateCq, {3, 0, b, 0, b + 4, eqn}, cmd::kBadParam, "BAD_PARAM: CREATE_CQ in[4] dbr_lo: misaligned"},
        {cmd::kCreateCq, {3, 0, b, 0, b, 60}, cmd::kBadParam, "BAD_PARAM: CREATE_CQ in[5] eqn: no such object"},
        {cmd::kCreateCq, {3, 0, b, 0, b, async}, cmd::kBadParam, "BAD_PARAM: CREATE_CQ in[5] eqn: wrong state"},
        {cmd::kCreateCq, {3, 0, b, 0, b, eqn, 0x10000}, cmd::kBadParam, "BAD_PARAM: CREATE_CQ in[6] mod_count: out of range"},
        {cmd::kCreateCq, {3, 0, b, 0, b, eqn, 0, 0x1000}, cmd::kBadParam, "BAD_PARAM: CREATE_CQ in[7] mod_period: out of range"},
        {cmd::kCreateCq, {3, 0, b, 0, b, eqn, 0, 0, 8}, cmd::kBadParam, "BAD_PARAM: CREATE_CQ in[8] flags: reserved bits or unused field not zero"},
        {cmd::kDestroyCq, {0}, cmd::kBadResource, "BAD_RESOURCE: DESTROY_CQ in[0] cqn: no such object"},
        {cmd::kDestroyCq, {0xFFFFFF}, cmd::kBadResource, "BAD_RESOURCE: DESTROY_CQ in[0] cqn: no such object"},
        {cmd::kQueryCq, {4242}, cmd::kBadResource, "BAD_RESOURCE: QUERY_CQ in[0] cqn: no such object"},
        {cmd::kModifyCq, {4242, 1}, cmd::kBadResource, "BAD_RESOURCE: MODIFY_CQ in[0] cqn: no such object"},
        {cmd::kModifyCq, {n, 0}, cmd::kBadParam, "BAD_PARAM: MODIFY_CQ in[1] select: out of range"},
        {cmd::kModifyCq, {n, 4}, cmd::kBadParam, "BAD_PARAM: MODIFY_CQ in[1] select: reserved bits or unused field not zero"},
        {cmd::kModifyCq, {n, 1, 0x10000}, cmd::kBadParam, "BAD_PARAM: MODIFY_CQ in[2] mod_count: out of range"},
        {cmd::kModifyCq, {n, 1, 0, 0x1000}, cmd::kBadParam, "BAD_PARAM: MODIFY_CQ in[3] mod_period: out of range"},
        {cmd::kModifyCq, {n, 1, 0, 0, 2}, cmd::kBadParam, "BAD_PARAM: MODIFY_CQ in[4] flags: reserved bits or unused field not zero"},
        {cmd::kModifyCq, {n, 1, 0, 0, 0, 3}, cmd::kBadParam, "BAD_PARAM: MODIFY_CQ in[5] log_size: reserved bits or unused field not zero"},
        {cmd::kModifyCq, {n, 2, 4}, cmd::kBadParam, "BAD_PARAM: MODIFY_CQ in[2] mod_count: reserved bits or unused field not zero"},
        {cmd::kModifyCq, {n, 2, 0, 0, 0, 23, 0, b}, cmd::kBadParam, "BAD_PARAM: MODIFY_CQ in[5] log_size: out of range"},
        {cmd::kModifyCq, {n, 2, 0, 0, 0, 3, 0, 0}, cmd::kBadParam, "BAD_PARAM: MODIFY_CQ in[7] base_lo: out of range"},
        {cmd::kModifyCq, {n, 2, 0, 0, 0, 3, 0, b + 64}, cmd::kBadParam, "BAD_PARAM: MODIFY_CQ in[7] base_lo: misaligned"},
    };
    for (const BadField& c : cases) {
      CommandResult r = sys().driver.exec(c.opcode, c.in);
      INFO("opcode " << c.opcode << " expected: " << c.message);
      CHECK(r.status == c.status);
      CHECK(r.message() == c.message);
    }
    CHECK(sys().hca.cmd.refused() >= cases.size());
    check_still_healthy();
  });
}

TEST_CASE("commands before INIT are refused, and a non-zero op_mod names the header field") {
  sys().run([] {
    boot();
    REQUIRE(sys().driver.teardown().ok());
    CommandResult r = sys().driver.exec(cmd::kCreateCq, {3, 0, 0x1000, 0, 0x1000, 1});
    CHECK(r.message() == "BAD_SYS_STATE: CREATE_CQ: wrong state");
    CHECK(sys().driver.exec(cmd::kQueryCap).ok());  // allowed before INIT
    REQUIRE(sys().driver.exec(cmd::kInit).ok());
    boot();
    check_still_healthy();
  });
}

TEST_CASE("doorbells for CQs and EQs that do not exist, bad indices and bad commands are counted and ignored") {
  sys().run([] {
    boot();
    const uint32_t before = sys().driver.read_register(reg::bad_doorbells);
    uint64_t db = with_bits(0, armdb::cqn, 777);
    sys().cpu.mmio_write64(Driver::offset_of(reg::cq_arm_db), db);
    wait_us(1);
    CHECK(sys().driver.read_register(reg::bad_doorbells) == before + 1);
    CHECK(sys().driver.read_register(reg::last_bad_doorbell) == (1u << 24 | 777));
    sys().cpu.mmio_write32(Driver::offset_of(reg::eq_db_arm), 55u << 24);
    wait_us(1);
    CHECK(sys().driver.read_register(reg::last_bad_doorbell) == (1u << 24 | 55));
    Cq* cq = make_cq(8);
    db = with_bits(with_bits(0, armdb::cqn, cq->cqn), armdb::arm_ci, 100);  // ci beyond pi
    sys().cpu.mmio_write64(Driver::offset_of(reg::cq_arm_db), db);
    wait_us(1);
    CHECK(sys().driver.read_register(reg::last_bad_doorbell) == (3u << 24 | cq->cqn));
    db = with_bits(with_bits(0, armdb::cqn, cq->cqn), armdb::arm_cmd, 7);  // no such arm command
    sys().cpu.mmio_write64(Driver::offset_of(reg::cq_arm_db), db);
    wait_us(1);
    CHECK(sys().driver.read_register(reg::bad_doorbells) == before + 4);
    check_still_healthy();
  });
}

TEST_CASE("BAR accesses to undefined offsets, with the wrong size, or against the access policy get error responses") {
  sys().run([] {
    boot();
    uint32_t v = 0;
    const uint64_t errors = sys().hca.bar0.regs.error_count();
    CHECK_FALSE(sys().cpu.mmio_read32(0x0F00, v));                               // no register there
    CHECK_FALSE(sys().cpu.mmio_read32(Driver::offset_of(reg::cmd_doorbell), v));  // write-only
    CHECK(sys().cpu.mmio_write32(Driver::offset_of(reg::version), 5));            // posted: the error is not seen here...
    sys().cpu.mmio_write32(Driver::offset_of(reg::cq_arm_db), 1);                 // 4 bytes to an 8-byte doorbell
    wait_us(1);
    CHECK(sys().hca.bar0.regs.error_count() == errors + 4);                       // ...but counted
    CHECK(sys().driver.read_register(reg::bad_accesses) == errors + 4);
    CHECK(sys().driver.read_register(reg::version) == kDeviceVersion);            // unchanged
    check_still_healthy();
  });
}

TEST_CASE("DMA to unmapped memory: a CQ buffer that vanished puts that CQ in error with an async event, others go on") {
  sys().run([] {
    boot();
    std::vector<AsyncEvent> events;
    sys().driver.async_handler = [&](const AsyncEvent& e) { events.push_back(e); };
    Cq* doomed = make_cq(8);
    sys().memory.unmap(doomed->buf, 8 * 64);  // a buggy driver freed the buffer
    sys().hca.inject(recv_record(doomed->cqn, 1), soon());
    wait_us(3);
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == eqe::kCqError);
    CHECK(events[0].cqn == doomed->cqn);
    CHECK(events[0].syndrome == eqe::kCqAccessViolation);
    check_still_healthy();
  });
}

TEST_CASE("an unreadable doorbell record during a consumer-index refresh puts the CQ in error, never a hang") {
  sys().run([] {
    boot();
    std::vector<AsyncEvent> events;
    sys().driver.async_handler = [&](const AsyncEvent& e) { events.push_back(e); };
    Cq* cq = make_cq(2);
    sys().memory.unmap(cq->dbr, 64);
    for (int i = 0; i < 3; ++i) sys().hca.inject(recv_record(cq->cqn, i), soon() + i);
    wait_us(5);
    REQUIRE(events.size() == 1);
    CHECK(events[0].syndrome == eqe::kCqAccessViolation);
    check_still_healthy();
  });
}

TEST_CASE("a completion record for a CQ that does not exist is dropped with an error, the writer goes on") {
  sys().run([] {
    boot();
    const uint64_t errors = log::error_count();
    sys().hca.inject(recv_record(31337, 1), soon());
    wait_us(1);
    CHECK(sys().hca.cq.stats().bad_records == 1);
    CHECK(log::error_count() == errors + 1);
    check_still_healthy();
  });
}

TEST_CASE("a command block at a misaligned address or not owned by the device is ignored and counted") {
  sys().run([] {
    boot();
    const uint32_t before = sys().driver.read_register(reg::bad_doorbells);
    const uint32_t lo = sys().driver.read_register(reg::cmdq_addr_lo);
    sys().cpu.mmio_write32(Driver::offset_of(reg::cmdq_addr_lo), lo + 4);
    sys().cpu.mmio_write32(Driver::offset_of(reg::cmd_doorbell), 1);
    wait_us(5);
    CHECK(sys().driver.read_register(reg::bad_doorbells) == before + 1);
    sys().cpu.mmio_write32(Driver::offset_of(reg::cmdq_addr_lo), lo);
    sys().cpu.mmio_write32(Driver::offset_of(reg::cmd_doorbell), 1);  // ownership bit is 0 now
    wait_us(5);
    CHECK(sys().driver.read_register(reg::bad_doorbells) == before + 2);
    check_still_healthy();
  });
}

TEST_CASE("a configuration with a queue of depth 0 or an outbox smaller than one packet is refused with the field named") {
  CHECK(hca_config_error(HcaConfig{}) == "");
  struct Case {
    const char* field;
    void (*spoil)(HcaConfig&);
  };
  const Case cases[] = {
      {"clock_mhz", [](HcaConfig& c) { c.clock_mhz = 0; }},
      {"num_qps", [](HcaConfig& c) { c.num_qps = 0; }},
      {"cq.input_depth", [](HcaConfig& c) { c.cq.input_depth = 0; }},
      {"cq.control_depth", [](HcaConfig& c) { c.cq.control_depth = 0; }},
      {"cq.access_error_depth", [](HcaConfig& c) { c.cq.access_error_depth = 0; }},
      {"eq.event_depth", [](HcaConfig& c) { c.eq.event_depth = 0; }},
      {"eq.report_depth", [](HcaConfig& c) { c.eq.report_depth = 0; }},
      {"dma.write_queue_depth", [](HcaConfig& c) { c.dma.write_queue_depth = 0; }},
      {"arbiter.transport_depth", [](HcaConfig& c) { c.arbiter.transport_depth = 0; }},
      {"msix.request_depth", [](HcaConfig& c) { c.msix.request_depth = 0; }},
      {"transport.fetch_burst", [](HcaConfig& c) { c.transport.fetch_burst = 0; }},
      {"transport.rx_fifo_depth", [](HcaConfig& c) { c.transport.rx_fifo_depth = 0; }},
      {"transport.outbox_depth", [](HcaConfig& c) { c.transport.outbox_depth = 5; }},
  };
  for (const Case& k : cases) {
    INFO(k.field);
    HcaConfig c;
    k.spoil(c);
    const std::string error = hca_config_error(c);
    CHECK(error.rfind(std::string(k.field) + " must be", 0) == 0);
  }
  HcaConfig least;
  least.transport.outbox_depth = 6;  // one packet's pieces and its CQE: enough
  CHECK(hca_config_error(least) == "");
}
