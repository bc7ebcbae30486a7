// The S29 invariant checker (sim/invariants.h) fed each breach on purpose, from a made-up host and
// made-up traffic, to show it catches every one and stays silent on traffic that keeps the rules.
// (The checker also runs on the real model in every other test and in vhca-sim run --check.)
#include <map>

#include "sim/invariants.h"
#include "testbench/test_support.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}
using namespace vhca;

namespace {
struct FakeHost {
  std::map<uint32_t, InvariantChecker::HostCq> cqs;
  std::map<uint32_t, InvariantChecker::HostQp> qps;
};

// A checker over host 0 = `h`, told of the creation of each of h's CQs (their CQEs count from 0).
InvariantChecker checker_over(FakeHost& h) {
  InvariantChecker c;
  InvariantChecker::Host host;
  host.cq = [&h](uint32_t cqn) { return h.cqs.count(cqn) ? h.cqs[cqn] : InvariantChecker::HostCq{}; };
  host.qp = [&h](uint32_t qpn) { return h.qps.count(qpn) ? h.qps[qpn] : InvariantChecker::HostQp{}; };
  c.add_host(host);
  for (const auto& [cqn, cq] : h.cqs) c.cq_created(0, cqn);
  return c;
}

constexpr uint64_t kRing = 0x10000;
FakeHost one_cq(uint32_t size) {
  FakeHost h;
  h.cqs[1] = InvariantChecker::HostCq{true, 0, kRing, size, false};
  h.qps[7] = InvariantChecker::HostQp{true, 0x5000, false};
  return h;
}

std::array<uint8_t, 64> make_cqe(uint32_t qpn, uint16_t counter, bool send) {
  std::array<uint8_t, 64> e{};
  put_field(e.data(), cqe::qpn, qpn);
  put_field(e.data(), cqe::wqe_counter, counter);
  put_field(e.data(), cqe::opcode, send ? cqe::kReq : cqe::kRespSend);
  return e;
}

// Issues CQE number `index` of CQ 1 (its slot in the ring).
void issue(InvariantChecker& c, uint32_t size, uint32_t index, uint32_t qpn, uint16_t counter, bool send) {
  const auto e = make_cqe(qpn, counter, send);
  c.cqe_issued(0, 1, kRing + uint64_t(index % size) * 64, e.data());
}

bool reports(const InvariantChecker& c, const std::string& what) {
  for (const std::string& v : c.violations())
    if (v.find(what) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("[S29] the invariant checker: traffic that keeps the rules breaks none") {
  FakeHost h = one_cq(4);
  InvariantChecker c = checker_over(h);
  for (uint32_t i = 0; i < 12; ++i) {
    issue(c, 4, i, 7, uint16_t(i), false);  // RQ: consecutive
    h.cqs[1].ci = i + 1;                    // the host keeps up
  }
  const auto sends = {1, 2, 5, 9};          // SQ: unsignaled WQEs skipped
  uint32_t i = 12;
  for (int s : sends) {
    issue(c, 4, i++, 7, uint16_t(s), true);
    h.cqs[1].ci = i;
  }
  c.event_raised(0, DeviceEvent{eqe::kCompletion, 3, 1, 0, i});
  for (uint32_t k = 0; k < i; ++k) c.cqe_landed(0, 1, kRing);
  c.eqe_landed(0, 3);
  c.queue_seen("hca.cq.s_cpl", 16, 16);
  INFO(c.violations().size() << " violations, first: " << (c.violations().empty() ? "" : c.violations()[0]));
  CHECK(c.violations().empty());
  CHECK(c.checked() > 16);
}

// Resize copies are told apart by their source (DmaSource::cqe_copy), so a CQE outside the ring
// the device holds for its CQ is a fault, no longer taken for a copy.
TEST_CASE("[S29] the invariant checker catches a CQE written outside its CQ's ring") {
  FakeHost h = one_cq(4);
  InvariantChecker c = checker_over(h);
  const auto stray = make_cqe(7, 0, false);
  c.cqe_issued(0, 1, kRing + 4 * 64, stray.data());  // one entry past the end
  CHECK(reports(c, "CQ 1: a CQE written at 0x" + fmt::format("{:x}", kRing + 4 * 64) + ", outside its ring (0x" +
                       fmt::format("{:x}", kRing) + ", 4 entries)"));
}

// Byte counts: a receive CQE counts what its WQE's message placed (receive data is tagged with its
// QP and WQE), also when the next message's first bytes are placed before it, and when a UC
// message dropped midway is begun again in the same WQE.
TEST_CASE("[S29] the invariant checker catches a receive CQE whose byte count is not the data placed") {
  FakeHost h = one_cq(8);
  InvariantChecker c = checker_over(h);
  auto receive = [&](uint32_t index, uint16_t counter, uint32_t bytes) {
    auto e = make_cqe(7, counter, false);
    put_field(e.data(), cqe::byte_cnt, bytes);
    c.cqe_issued(0, 1, kRing + uint64_t(index) * 64, e.data());
  };
  c.data_placed(0, 7, 0, true, 4096);   // WQE 0: two packets
  c.data_placed(0, 7, 0, false, 904);
  c.data_placed(0, 7, 1, true, 64);     // WQE 1's first bytes, before WQE 0's CQE
  receive(0, 0, 5000);
  c.data_placed(0, 7, 1, true, 32);     // WQE 1 begun again: its first message was dropped (UC)
  receive(1, 1, 32);
  receive(2, 2, 0);                     // a zero-length SEND places nothing
  CHECK(c.violations().empty());
  c.data_placed(0, 7, 3, true, 100);
  receive(3, 3, 64);                    // counts less than was placed
  CHECK(reports(c, "QP 7: a receive CQE (WQE 3) counts 64 bytes, 100 were placed in its buffers"));
  receive(4, 4, 16);                    // counts bytes that were never placed
  CHECK(reports(c, "QP 7: a receive CQE (WQE 4) counts 16 bytes, 0 were placed in its buffers"));
}

TEST_CASE("[S29] the invariant checker catches a CQE overwriting an entry the host has not consumed") {
  FakeHost h = one_cq(4);
  InvariantChecker c = checker_over(h);
  for (uint32_t i = 0; i < 4; ++i) issue(c, 4, i, 7, uint16_t(i), false);
  CHECK(c.violations().empty());  // four in a ring of four: full, nothing overwritten
  issue(c, 4, 4, 7, 4, false);    // the fifth takes entry 0, which the host has not read
  CHECK(reports(c, "CQ 1: CQE 4 overwrites an entry the host has not consumed (consumer index 0, 4 entries)"));
  // An overrun-ignore CQ may (S14's exception).
  FakeHost oi = one_cq(4);
  oi.cqs[1].overrun_ignore = true;
  InvariantChecker c2 = checker_over(oi);
  for (uint32_t i = 0; i < 6; ++i) issue(c2, 4, i, 7, uint16_t(i), false);
  CHECK(c2.violations().empty());
}

TEST_CASE("[S29] the invariant checker catches a WQE completed twice, out of order, or one skipped on an RQ") {
  FakeHost h = one_cq(64);
  InvariantChecker twice = checker_over(h);
  issue(twice, 64, 0, 7, 3, true);
  issue(twice, 64, 1, 7, 3, true);
  CHECK(reports(twice, "QP 7 SQ: CQE for WQE 3 after WQE 3 (twice)"));
  InvariantChecker reordered = checker_over(h);
  issue(reordered, 64, 0, 7, 5, true);
  issue(reordered, 64, 1, 7, 4, true);
  CHECK(reports(reordered, "QP 7 SQ: CQE for WQE 4 after WQE 5 (out of order)"));
  InvariantChecker skipped = checker_over(h);
  issue(skipped, 64, 0, 7, 0, false);
  issue(skipped, 64, 1, 7, 2, false);
  CHECK(reports(skipped, "QP 7 RQ: CQE for WQE 2 after WQE 0 (out of order or one missing)"));
  // A QP made anew under the same number starts its order over; an SRQ's receives are not a QP's.
  FakeHost again = one_cq(64);
  InvariantChecker renewed = checker_over(again);
  issue(renewed, 64, 0, 7, 9, false);
  again.qps[7].generation = 0x6000;
  issue(renewed, 64, 1, 7, 0, false);
  again.qps[7].on_srq = true;
  issue(renewed, 64, 2, 7, 40, false);
  CHECK(renewed.violations().empty());
}

TEST_CASE("[S29][S24] the invariant checker catches an event raised before its CQEs, and an EQE landing before them") {
  FakeHost h = one_cq(64);
  InvariantChecker early = checker_over(h);
  issue(early, 64, 0, 7, 0, false);
  early.event_raised(0, DeviceEvent{eqe::kCompletion, 3, 1, 0, 2});  // covers two, one written
  CHECK(reports(early, "CQ 1: completion event at producer index 2 raised before its CQEs were written (1 issued)"));

  InvariantChecker landed = checker_over(h);
  issue(landed, 64, 0, 7, 0, false);
  issue(landed, 64, 1, 7, 1, false);
  landed.event_raised(0, DeviceEvent{eqe::kCompletion, 3, 1, 0, 2});
  landed.cqe_landed(0, 1, kRing);  // only the first CQE is in host memory
  landed.eqe_landed(0, 3);         // when the EQE lands
  CHECK(reports(landed, "EQ 3: the completion EQE for CQ 1 landed before its CQEs (producer index 2, 1 landed)"));
}

TEST_CASE("[S28][S29] the invariant checker catches a queue holding more than its bound") {
  FakeHost h = one_cq(4);
  InvariantChecker c = checker_over(h);
  c.queue_seen("hca.eq.s_event", 16, 17);
  CHECK(reports(c, "queue hca.eq.s_event held 17 items, more than its bound 16"));
}
