#include "tools/traffic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <vector>

#include "testbench/fabric.h"
#include "testbench/rtl_cq_writer.h"
#include "testbench/system.h"

namespace vhca {
namespace {

namespace fb = fabric;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  const size_t i = size_t(std::ceil(p * double(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + long(i), v.end());
  return v[i];
}

// The bytes of message `seq` on QP `qp`: every message differs, so a misplaced one shows.
void pattern(std::vector<uint8_t>& out, int qp, uint64_t seq) {
  uint64_t x = (uint64_t(qp) << 40) ^ (seq * 0x9E3779B97F4A7C15ull);
  for (auto& b : out) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = uint8_t(x);
  }
}

struct Latencies {
  std::vector<double> to_cqe_ns, to_handler_ns;  // post -> CQE landed in host memory, -> done callback
};

// When each CQE became visible to the host: the PCIe link reports every CQE write as it lands;
// a CQ's CQEs are polled in the order they landed, so each done callback takes the oldest.
class CqeVisibility {
 public:
  void attach(PcieLink& link) {
    link.on_upstream_landed = [this](DmaSource s, uint32_t cqn, uint64_t) {
      if (s == DmaSource::cqe) landed_[cqn].push_back(sc_core::sc_time_stamp());
    };
  }
  sc_core::sc_time take(uint32_t cqn) {
    auto& q = landed_[cqn];
    if (q.empty()) return sc_core::sc_time_stamp();
    const sc_core::sc_time t = q.front();
    q.pop_front();
    return t;
  }

 private:
  std::map<uint32_t, std::deque<sc_core::sc_time>> landed_;
};

struct Message {
  int qp = 0;
  uint64_t seq = 0;  // per QP
  uint8_t opcode = 0;
  sc_core::sc_time posted;
  CqeDone done;
};

struct Counters {
  uint64_t posted = 0, refused = 0, completed = 0, recvs = 0, errors = 0, misordered = 0, data_errors = 0;
};

}  // namespace

int run_traffic(const TrafficOptions& o) {
  SystemConfig cfg;
  cfg.hosts = 2;
  cfg.driver.num_comp_vectors = uint32_t(o.vectors);
  if (o.rtl) {
    cfg.hca.cq.num_cqs = RtlCqWriter::kRtlNumCqs;
    cfg.hca.cq_engine = [](const CqeWriterConfig& c) { return std::make_unique<RtlCqWriter>(c); };
  }
  System sys(cfg);
  Node& h0 = sys.node(0);
  Node& h1 = sys.node(1);
  const uint64_t slots = uint64_t(o.qps) * uint64_t(o.depth);

  std::deque<Message> messages;  // stable addresses: each holds the CqeDone its wr_id names
  std::vector<std::deque<Message*>> sends_in_flight(size_t(o.qps));
  std::vector<uint64_t> next_seq(size_t(o.qps), 0), next_done(size_t(o.qps), 0);
  std::vector<CqeDone> recv_done(slots);
  Latencies lat_send, lat_write, lat_recv;
  CqeVisibility visible0, visible1;
  visible0.attach(h0.link);
  visible1.attach(h1.link);
  Counters n;
  bool setup_ok = true;
  double wall_s = 0;
  sc_core::sc_time sim_start, sim_end;

  sys.run([&] {
    try {
      for (Node* h : {&h0, &h1}) {
        CommandResult r = h->driver.boot();
        if (!r.ok()) throw std::runtime_error("boot failed: " + r.message());
      }
      CqPool pool0(h0.driver), pool1(h1.driver);
      std::vector<IbCq*> cq0, cq1;
      const CqModeration mod{o.mod_count, o.mod_period_us, o.mode};
      for (int i = 0; i < o.cqs; ++i) {
        cq0.push_back(pool0.alloc_cq(o.cq_size, uint32_t(i % o.vectors), o.context, mod));
        cq1.push_back(pool1.alloc_cq(o.cq_size, uint32_t(i % o.vectors), o.context, mod));
        if (!cq0.back() || !cq1.back()) throw std::runtime_error("alloc_cq failed");
      }
      Pd* pd0 = fb::alloc_pd(h0.driver);
      Pd* pd1 = fb::alloc_pd(h1.driver);
      fb::Buffer src = fb::reg_buffer(*pd0, slots * o.msg_size);
      fb::Buffer recv_buf = fb::reg_buffer(*pd1, slots * o.msg_size);
      fb::Buffer write_buf = fb::reg_buffer(*pd1, slots * o.msg_size);
      std::vector<Qp*> qa, qb;
      for (int q = 0; q < o.qps; ++q) {
        qa.push_back(fb::create_qp(*pd0, cq0[size_t(q % o.cqs)]->cq, cq0[size_t(q % o.cqs)]->cq, QpType::rc,
                                   uint32_t(o.depth)));
        qb.push_back(fb::create_qp(*pd1, cq1[size_t(q % o.cqs)]->cq, cq1[size_t(q % o.cqs)]->cq, QpType::rc,
                                   uint32_t(o.depth)));
        fb::connect_rc(*qa.back(), *qb.back());
      }
      auto slot_of = [&](int q, uint64_t seq) { return (uint64_t(q) * uint64_t(o.depth) + seq % uint64_t(o.depth)) * o.msg_size; };
      std::vector<uint8_t> expect(o.msg_size), got(o.msg_size);
      auto check_data = [&](Driver& dev, uint64_t addr, int q, uint64_t seq) {
        pattern(expect, q, seq);
        dev.memory().read(addr, got.data(), o.msg_size);
        if (got != expect) ++n.data_errors;
      };

      // Host 1 keeps every RQ full: a receive's done callback checks the data it holds against
      // the SEND it must be (the oldest in flight on that QP) and posts the slot again.
      std::vector<uint64_t> recv_posted(size_t(o.qps), 0);
      auto post_receive = [&](int q) {
        const uint64_t k = recv_posted[size_t(q)]++;
        const uint64_t slot = uint64_t(q) * uint64_t(o.depth) + k % uint64_t(o.depth);
        fb::post_recv(*qb[size_t(q)], RecvWr{CqPool::wr_id_of(recv_done[slot]), {recv_buf.sge(slot * o.msg_size, o.msg_size)}});
      };
      for (int q = 0; q < o.qps; ++q) {
        for (int j = 0; j < o.depth; ++j) {
          CqeDone& d = recv_done[size_t(q) * size_t(o.depth) + size_t(j)];
          pool1.track(d);
          d.done = [&, q, j](IbCq& cq, const Wc& wc) {
            ++n.recvs;
            const sc_core::sc_time visible = visible1.take(cq.cq->cqn);
            if (wc.status != 0 || sends_in_flight[size_t(q)].empty()) {
              ++n.errors;
              return;
            }
            Message* m = sends_in_flight[size_t(q)].front();
            sends_in_flight[size_t(q)].pop_front();
            check_data(h1.driver, recv_buf.addr + (uint64_t(q) * uint64_t(o.depth) + uint64_t(j)) * o.msg_size, q, m->seq);
            lat_recv.to_cqe_ns.push_back((visible - m->posted).to_seconds() * 1e9);
            lat_recv.to_handler_ns.push_back((sc_core::sc_time_stamp() - m->posted).to_seconds() * 1e9);
            post_receive(q);
          };
        }
        for (int j = 0; j < o.depth; ++j) post_receive(q);
      }

      // Poisson arrivals over all QPs from a fully specified generator (mt19937_64, inverse-CDF
      // sampling), so that every platform produces the same workload.
      std::mt19937_64 rng(o.seed);
      auto uniform = [&] { return (double(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
      const double mean_gap_ns = 1e6 / o.rate_kmsg;
      sim_start = sc_core::sc_time_stamp();
      const auto wall0 = std::chrono::steady_clock::now();
      const sc_core::sc_time end = sim_start + sc_core::sc_time(o.duration_us, sc_core::SC_US);
      std::vector<uint8_t> data(o.msg_size);
      for (sc_core::sc_time t = sim_start;;) {
        t += sc_core::sc_time(-std::log(uniform()) * mean_gap_ns, sc_core::SC_NS);
        if (t >= end) break;
        const int q = int(rng() % uint64_t(o.qps));
        const bool write = uniform() < o.write_fraction;
        if (t > sc_core::sc_time_stamp()) sc_core::wait(t - sc_core::sc_time_stamp());
        Qp& qp = *qa[size_t(q)];
        if (uint16_t(qp.sq_pi - qp.sq_ci) >= qp.sq_depth) {
          ++n.refused;  // the application finds its send queue full: this arrival is lost
          continue;
        }
        messages.push_back(Message{q, next_seq[size_t(q)]++, write ? sqwqe::kRdmaWrite : sqwqe::kSend,
                                   sc_core::sc_time_stamp(), {}});
        Message& m = messages.back();
        const uint64_t off = slot_of(q, m.seq);
        pattern(data, q, m.seq);
        h0.driver.memory().write(src.addr + off, data.data(), o.msg_size);
        m.done.done = [&, mp = &m](IbCq& cq, const Wc& wc) {
          ++n.completed;
          const sc_core::sc_time visible = visible0.take(cq.cq->cqn);
          if (wc.status != 0) ++n.errors;
          if (mp->seq != next_done[size_t(mp->qp)]) ++n.misordered;
          next_done[size_t(mp->qp)] = mp->seq + 1;
          Latencies& l = mp->opcode == sqwqe::kRdmaWrite ? lat_write : lat_send;
          l.to_cqe_ns.push_back((visible - mp->posted).to_seconds() * 1e9);
          l.to_handler_ns.push_back((sc_core::sc_time_stamp() - mp->posted).to_seconds() * 1e9);
          if (mp->opcode == sqwqe::kRdmaWrite)
            check_data(h1.driver, write_buf.addr + slot_of(mp->qp, mp->seq), mp->qp, mp->seq);
          pool0.untrack(mp->done);
        };
        pool0.track(m.done);
        SendWr wr;
        wr.wr_id = CqPool::wr_id_of(m.done);
        wr.opcode = m.opcode;
        wr.flags = kSendSignaled;
        wr.sg_list = {src.sge(off, o.msg_size)};
        wr.remote_addr = write_buf.addr + off;
        wr.rkey = write_buf.mr->rkey;
        if (!write) sends_in_flight[size_t(q)].push_back(&m);
        fb::post_send(qp, wr);
        ++n.posted;
      }
      // Let the last completions through the wire, moderation and polling.
      const sc_core::sc_time drain_end = sc_core::sc_time_stamp() + sc_core::sc_time(o.mod_period_us + 1000, sc_core::SC_US);
      while ((n.completed < n.posted || n.recvs < n.posted - lat_write.to_cqe_ns.size()) &&
             sc_core::sc_time_stamp() < drain_end)
        sc_core::wait(sc_core::sc_time(10, sc_core::SC_US));
      wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
      sim_end = sc_core::sc_time_stamp();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vhca-sim: %s\n", e.what());
      setup_ok = false;
    }
  }, sc_core::sc_time(o.duration_us + 100000, sc_core::SC_US));

  const bool ok = setup_ok && n.completed == n.posted && n.recvs == n.posted - uint64_t(lat_write.to_cqe_ns.size()) &&
                  n.errors == 0 && n.misordered == 0 && n.data_errors == 0 && h0.hca.cq.stats().overflows == 0 &&
                  h1.hca.cq.stats().overflows == 0;
  const double sim_s = (sim_end - sim_start).to_seconds();
  std::printf("vhca-sim%s: 2 HCAs, %d RC QPs on %d CQs per host (%d vectors), %u-byte messages, %.0f%% RDMA WRITE / "
              "%.0f%% SEND, Poisson %.0f k msg/s for %.0f us, moderation %u CQEs / %u us (%s mode), %s polling, seed %llu\n",
              o.rtl ? " (RTL CQ writers in the loop)" : "", o.qps, o.cqs, o.vectors, o.msg_size, o.write_fraction * 100,
              (1 - o.write_fraction) * 100, o.rate_kmsg, o.duration_us, o.mod_count, o.mod_period_us,
              o.mode == PeriodMode::eqe ? "EQE" : "CQE", poll_context_name(o.context),
              static_cast<unsigned long long>(o.seed));
  auto row = [](const char* name, double v, const char* unit) { std::printf("  %-40s %12.3f %s\n", name, v, unit); };
  auto count = [](const char* name, uint64_t v) {
    std::printf("  %-40s %12llu\n", name, static_cast<unsigned long long>(v));
  };
  count("messages posted", n.posted);
  count("arrivals refused (send queue full)", n.refused);
  count("send completions (SEND + WRITE)", n.completed);
  count("receive completions", n.recvs);
  count("completion errors", n.errors);
  count("out-of-order completions", n.misordered);
  count("messages with wrong data", n.data_errors);
  const TransportStats& t0 = h0.hca.transport.stats();
  const TransportStats& t1 = h1.hca.transport.stats();
  count("packets host0 -> host1", t0.packets_sent);
  count("packets host1 -> host0 (ACKs)", t1.packets_sent);
  row("link utilisation host0 -> host1", sim_s > 0 ? double(sys.ib.stats(0).bytes) * 8 / sim_s / 1e9 : 0, "Gb/s");
  for (int h = 0; h < 2; ++h) {
    Node& node = sys.node(uint32_t(h));
    const auto& st = node.hca.cq.stats();
    std::printf("  host%d: %llu CQEs, %llu events, %llu interrupts (%.1f k/s, %.2f CQEs each), CPU busy %.2f %%\n", h,
                static_cast<unsigned long long>(st.cqes), static_cast<unsigned long long>(st.events),
                static_cast<unsigned long long>(node.cpu.interrupts()),
                sim_s > 0 ? double(node.cpu.interrupts()) / sim_s / 1e3 : 0.0,
                node.cpu.interrupts() ? double(st.cqes) / double(node.cpu.interrupts()) : 0.0,
                sim_s > 0 ? node.cpu.busy_total().to_seconds() / sim_s * 100 : 0.0);
  }
  std::printf("  latency from post, us: CQE visible in host memory, then handler (done callback)\n");
  std::printf("  %-40s %10s %10s %10s %10s %10s %10s\n", "", "CQE p50", "CQE p99", "CQE max", "hdlr p50", "hdlr p99",
              "hdlr max");
  for (auto [name, l] : {std::pair<const char*, Latencies*>{"SEND (requester, after the ACK)", &lat_send},
                         {"RDMA WRITE (requester, after the ACK)", &lat_write},
                         {"RECV (responder, data placed)", &lat_recv}}) {
    const auto& c = l->to_cqe_ns;
    const auto& hd = l->to_handler_ns;
    std::printf("  %-40s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", name, percentile(c, 0.5) / 1e3,
                percentile(c, 0.99) / 1e3, c.empty() ? 0 : *std::max_element(c.begin(), c.end()) / 1e3,
                percentile(hd, 0.5) / 1e3, percentile(hd, 0.99) / 1e3,
                hd.empty() ? 0 : *std::max_element(hd.begin(), hd.end()) / 1e3);
  }
  row("simulated time", sim_s * 1e3, "ms");
  row("wall time", wall_s, "s");
  row("simulated messages per wall second", wall_s > 0 ? double(n.completed) / wall_s : 0.0, "");
  std::printf("  %-40s %12s\n", "every message intact, completed once, in order", ok ? "yes" : "NO");
  return ok ? 0 : 1;
}

}  // namespace vhca
