// The device server's completion ledger (serve/completion_ledger.h): each WQE completed exactly
// once, the latencies it reports, and the faults it must catch (a completion twice, one for a WQE
// never posted, receives out of order).
#include "testbench/test_support.h"

#include "model/regs/codes.h"
#include "serve/completion_ledger.h"

namespace vhca::test {
void configure(SystemConfig&) {}
}  // namespace vhca::test
using namespace vhca;

namespace {
Wc send_cqe(uint32_t qpn, uint16_t counter, uint8_t status = 0) {
  Wc w;
  w.qpn = qpn;
  w.opcode = status ? cqe::kReqErr : cqe::kReq;
  w.status = status;
  w.wqe_counter = counter;
  return w;
}
Wc recv_cqe(uint32_t qpn, uint16_t counter) {
  Wc w;
  w.qpn = qpn;
  w.opcode = cqe::kRespSend;
  w.wqe_counter = counter;
  return w;
}
}  // namespace

TEST_CASE("completion ledger: a signaled CQE covers the unsignaled WQEs before it, latencies from post to CQE, from the peer's post to the RECV CQE, and between posts") {
  CompletionLedger l;
  ClientLedger a, b;
  l.qp_created(0, 0x10, true, &a);
  l.qp_created(1, 0x20, true, &b);
  l.qp_connected(0, 0x10, 1, 0x20);
  l.qp_connected(1, 0x20, 0, 0x10);
  // Three SENDs and an RDMA WRITE posted by one doorbell at 1 us, one more SEND at 2 us.
  l.sends_posted(0, 0x10, 0, {sqwqe::kSend, sqwqe::kSend, sqwqe::kRdmaWrite, sqwqe::kSend}, 1.0);
  l.sends_posted(0, 0x10, 4, {sqwqe::kSendImm}, 2.0);
  // The receiver's CQEs for the four messages that consume a receive (the WRITE does not).
  l.completed(1, recv_cqe(0x20, 0), 3.0);
  l.completed(1, recv_cqe(0x20, 1), 3.5);
  l.completed(1, recv_cqe(0x20, 2), 4.0);
  l.completed(1, recv_cqe(0x20, 3), 6.5);
  // Only WQEs 2 and 4 were signaled: CQE 2 covers 0-2, CQE 4 covers 3-4.
  l.completed(0, send_cqe(0x10, 2), 5.0);
  l.completed(0, send_cqe(0x10, 4), 7.0);
  REQUIRE(a.post_interval.us.size() == 1);  // two doorbells, one interval
  CHECK(a.post_interval.us[0] == Approx(1.0));
  CHECK(a.sends_posted == 5);
  CHECK(a.sends_completed == 5);
  CHECK(a.unexpected == 0);
  REQUIRE(a.completion.us.size() == 2);
  CHECK(a.completion.us[0] == Approx(4.0));  // posted at 1, CQE at 5
  CHECK(a.completion.us[1] == Approx(5.0));  // posted at 2, CQE at 7
  CHECK(b.recvs_completed == 4);
  REQUIRE(b.message.us.size() == 4);
  CHECK(b.message.us[0] == Approx(2.0));
  CHECK(b.message.us[1] == Approx(2.5));
  CHECK(b.message.us[2] == Approx(3.0));  // the third receive is the fourth WQE's (the WRITE made none)
  CHECK(b.message.us[3] == Approx(4.5));
  const LatencySamples::Summary s = b.message.summary();
  CHECK(s.count == 4);
  CHECK(s.min == Approx(2.0));
  CHECK(s.max == Approx(4.5));
  CHECK(s.p50 == Approx(2.5));
  CHECK(s.mean == Approx(3.0));
  // What a QP leaves when it goes: posted receives not consumed (its record's producer index).
  l.qp_destroyed(1, 0x20, 10);
  CHECK(b.recvs_outstanding == 6);
  l.completed(1, recv_cqe(0x20, 4), 8.0);  // a QP the ledger no longer knows: ignored
  CHECK(b.recvs_completed == 4);
}

TEST_CASE("completion ledger catches a WQE completed twice, a completion for a WQE never posted, and receives out of order") {
  CompletionLedger l;
  ClientLedger c;
  l.qp_created(0, 7, true, &c);
  l.sends_posted(0, 7, 0, {sqwqe::kSend, sqwqe::kSend}, 1.0);
  l.completed(0, send_cqe(7, 0), 2.0);
  l.completed(0, send_cqe(7, 0), 2.5);  // the same WQE again
  CHECK(c.unexpected == 1);
  l.completed(0, send_cqe(7, 5), 3.0);  // WQE 5 was never posted
  CHECK(c.unexpected == 2);
  l.completed(0, send_cqe(7, 1, syndrome::kWrFlush), 3.5);  // an error CQE completes its WQE
  CHECK(c.error_cqes == 1);
  CHECK(c.sends_completed == 2);
  CHECK(c.completion.us.size() == 1);  // only the successful one has a latency
  l.completed(0, recv_cqe(7, 1), 4.0);  // receive 0 was never completed
  CHECK(c.unexpected == 3);
  l.qp_destroyed(0, 7, 0);
  CHECK(c.sends_outstanding == 0);
  CHECK(c.recvs_outstanding == 0);
}

TEST_CASE("completion ledger: a client's report names its counters and latencies, in JSON and in words") {
  CompletionLedger l;
  ClientLedger c;
  l.qp_created(0, 3, false, &c);
  l.sends_posted(0, 3, 0, {sqwqe::kSend}, 1.0);
  l.sends_posted(0, 3, 1, {sqwqe::kSend}, 1.5);
  l.completed(0, send_cqe(3, 0), 2.25);
  l.qp_destroyed(0, 3, 0);
  const std::string json = client_json(42, "vhca0", 9.5, c);
  CHECK(json.find("\"pid\": 42") != std::string::npos);
  CHECK(json.find("\"sends_posted\": 2, \"sends_completed\": 1, \"sends_outstanding\": 1") != std::string::npos);
  CHECK(json.find("\"completion_latency_us\": {\"count\": 1, \"min\": 1.2500") != std::string::npos);
  CHECK(json.find("\"samples\": [1.2500]") != std::string::npos);
  const std::string words = client_summary(c);
  CHECK(words.find("send WQEs 2 posted, 1 completed, 1 outstanding") != std::string::npos);
  CHECK(words.find("post-to-CQE latency p50 1.250 us") != std::string::npos);
  CHECK(words.find("one-way") == std::string::npos);  // UD: no message latency
  CHECK(words.find("post-to-post interval p50 0.500 us") != std::string::npos);
  CHECK(json.find("\"post_interval_us\": {\"count\": 1,") != std::string::npos);
}
