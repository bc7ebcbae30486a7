#include "serve/completion_ledger.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "model/common/percentile.h"
#include "model/regs/codes.h"

namespace vhca {

LatencySamples::Summary LatencySamples::summary() const {
  Summary s;
  s.count = us.size();
  if (us.empty()) return s;
  std::vector<double> v = us;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  s.p50 = percentile(v, 0.5);
  s.p99 = percentile(v, 0.99);
  return s;
}

void CompletionLedger::qp_created(int device, uint32_t qpn, bool connected, ClientLedger* client, int srq) {
  QpBook& q = qps_[{device, qpn}];
  q = QpBook{};
  q.connected = connected;
  q.client = client;
  q.srq = srq;
}

void CompletionLedger::qp_connected(int device, uint32_t qpn, int peer_device, uint32_t peer_qpn) {
  auto it = qps_.find({device, qpn});
  if (it != qps_.end()) it->second.peer = {peer_device, peer_qpn};
}

void CompletionLedger::srq_destroyed(int device, uint32_t srqn) { srq_next_.erase({device, int(srqn)}); }

void CompletionLedger::qp_destroyed(int device, uint32_t qpn, uint16_t rq_pi) {
  auto it = qps_.find({device, qpn});
  if (it == qps_.end()) return;
  QpBook& q = it->second;
  q.client->sends_outstanding += q.send_posted_us.size();
  if (q.srq < 0) q.client->recvs_outstanding += uint16_t(rq_pi - q.next_recv);  // an SRQ's stay for its other QPs
  qps_.erase(it);
}

namespace {
// Whether a WQE of this opcode consumes a receive WQE at the peer (and so makes a RECV CQE there).
bool consumes_receive(uint8_t opcode) {
  return opcode == sqwqe::kSend || opcode == sqwqe::kSendImm || opcode == sqwqe::kRdmaWriteImm;
}
}  // namespace

void CompletionLedger::sends_posted(int device, uint32_t qpn, uint16_t first, const std::vector<uint8_t>& opcodes,
                                    double t_us) {
  auto it = qps_.find({device, qpn});
  if (it == qps_.end()) return;
  QpBook& q = it->second;
  if (opcodes.empty()) return;
  if (q.last_post_us >= 0) q.client->post_interval.us.push_back(t_us - q.last_post_us);
  q.last_post_us = t_us;
  for (uint8_t op : opcodes) {
    q.send_posted_us.push_back(t_us);
    if (q.connected && consumes_receive(op)) q.message_posted_us.push_back(t_us);
  }
  q.client->sends_posted += opcodes.size();
}

CompletionLedger::Landing CompletionLedger::completed(int device, const Wc& wc, double t_us) {
  Landing l;
  auto it = qps_.find({device, wc.qpn});
  if (it == qps_.end()) return l;  // a QP the ledger does not know (made before it, or gone)
  QpBook& q = it->second;
  if (wc.status) ++q.client->error_cqes;
  if (queue_format::is_send_completion(wc))
    l.completion_us = send_completed(q, wc, t_us);
  else
    l.message_us = recv_completed(device, q, wc, t_us);
  return l;
}

// A send CQE names the last WQE it covers; the unsignaled ones before it complete with it.
double CompletionLedger::send_completed(QpBook& q, const Wc& wc, double t_us) {
  const size_t covers = size_t(uint16_t(wc.wqe_counter - q.next_send)) + 1;
  if (covers > q.send_posted_us.size()) {
    ++q.client->unexpected;
    return -1;
  }
  const double posted = q.send_posted_us[covers - 1];
  q.send_posted_us.erase(q.send_posted_us.begin(), q.send_posted_us.begin() + long(covers));
  q.next_send = uint16_t(wc.wqe_counter + 1);
  q.client->sends_completed += covers;
  if (wc.status) return -1;
  q.client->completion.us.push_back(t_us - posted);
  return t_us - posted;
}

// Receive WQEs are consumed in order, a QP's own or its SRQ's (whichever of its QPs takes the
// next): a CQE names the next one, or it is unexpected.
double CompletionLedger::recv_completed(int device, QpBook& q, const Wc& wc, double t_us) {
  uint16_t& next = q.srq < 0 ? q.next_recv : srq_next_[{device, q.srq}];
  if (wc.wqe_counter != next) {
    ++q.client->unexpected;
    return -1;
  }
  ++next;
  ++q.client->recvs_completed;
  if (wc.status || !q.connected) return -1;
  auto peer = qps_.find(q.peer);
  if (peer == qps_.end() || peer->second.message_posted_us.empty()) return -1;
  const double latency = t_us - peer->second.message_posted_us.front();
  q.client->message.us.push_back(latency);
  peer->second.message_posted_us.pop_front();
  return latency;
}

namespace {
std::string summary_json(const LatencySamples& l) {
  const LatencySamples::Summary s = l.summary();
  std::string out = fmt::format(
      "{{\"count\": {}, \"min\": {:.4f}, \"p50\": {:.4f}, \"p99\": {:.4f}, \"max\": {:.4f}, \"mean\": {:.4f}, \"samples\": [",
      s.count, s.min, s.p50, s.p99, s.max, s.mean);
  for (size_t i = 0; i < l.us.size(); ++i) out += fmt::format("{}{:.4f}", i ? ", " : "", l.us[i]);
  return out + "]}";
}
}  // namespace

std::string client_json(int pid, const char* device, double left_at_us, const ClientLedger& c) {
  return fmt::format(
      "{{\"pid\": {}, \"device\": \"{}\", \"left_at_us\": {:.4f}, \"sends_posted\": {}, \"sends_completed\": {}, "
      "\"sends_outstanding\": {}, \"recvs_completed\": {}, \"recvs_outstanding\": {}, \"error_cqes\": {}, "
      "\"unexpected_completions\": {},\n   \"completion_latency_us\": {},\n   \"message_latency_us\": {},\n"
      "   \"post_interval_us\": {}}}",
      pid, device, left_at_us, c.sends_posted, c.sends_completed, c.sends_outstanding, c.recvs_completed,
      c.recvs_outstanding, c.error_cqes, c.unexpected, summary_json(c.completion), summary_json(c.message),
      summary_json(c.post_interval));
}

std::string client_summary(const ClientLedger& c) {
  std::string out = fmt::format("send WQEs {} posted, {} completed, {} outstanding; receives {} completed; {} error CQEs, "
                                "{} unexpected completions",
                                c.sends_posted, c.sends_completed, c.sends_outstanding, c.recvs_completed, c.error_cqes,
                                c.unexpected);
  const auto latency = [](const char* what, const LatencySamples& l) {
    const LatencySamples::Summary s = l.summary();
    return s.count ? fmt::format("; {} p50 {:.3f} us, p99 {:.3f} us (of {})", what, s.p50, s.p99, s.count) : std::string();
  };
  return out + latency("post-to-CQE latency", c.completion) + latency("one-way message latency", c.message) +
         latency("post-to-post interval", c.post_interval);
}

}  // namespace vhca
