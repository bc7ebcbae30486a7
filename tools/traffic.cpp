#include "tools/traffic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <memory>
#include <random>
#include <sstream>
#include <vector>

#include "testbench/fabric.h"
#include "testbench/rtl_cq_writer.h"
#include "testbench/system.h"

namespace vhca {

const char* arrival_name(Arrival a) {
  switch (a) {
    case Arrival::poisson: return "poisson";
    case Arrival::constant: return "constant";
    case Arrival::onoff: return "onoff";
    case Arrival::pingpong: return "pingpong";
  }
  return "?";
}

namespace {

namespace fb = fabric;
using sc_core::sc_time;

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = size_t(std::ceil(p * double(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + long(i), v.end());
  return v[i];
}

// The bytes of message `seq` on QP `qp`: every message differs, so a misplaced one shows.
void pattern(std::vector<uint8_t>& out, int qp, uint64_t seq) {
  uint64_t x = (uint64_t(qp) << 40) ^ (seq * 0x9E3779B97F4A7C15ull) ^ 0x5DEECE66Dull;
  for (auto& b : out) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = uint8_t(x);
  }
}
constexpr uint64_t kReadTag = uint64_t(1) << 32;  // READ sources use their own patterns

struct Samples {
  std::vector<double> to_cqe_ns, to_handler_ns;
  LatencyStats stats() {
    LatencyStats s;
    s.samples = to_cqe_ns.size();
    auto fill = [](std::vector<double>& v, double& p50, double& p90, double& p99, double& p999, double& mx) {
      p50 = percentile(v, 0.5) / 1e3;
      p90 = percentile(v, 0.9) / 1e3;
      p99 = percentile(v, 0.99) / 1e3;
      p999 = percentile(v, 0.999) / 1e3;
      mx = v.empty() ? 0 : *std::max_element(v.begin(), v.end()) / 1e3;
    };
    fill(to_cqe_ns, s.cqe_p50, s.cqe_p90, s.cqe_p99, s.cqe_p999, s.cqe_max);
    fill(to_handler_ns, s.hdl_p50, s.hdl_p90, s.hdl_p99, s.hdl_p999, s.hdl_max);
    return s;
  }
};

// A Perfetto / Chrome trace-event timeline (JSON, opens in ui.perfetto.dev): one process per
// host, one track per CQ (CQE landed, polling turns), EQ (EQE landed), MSI-X vector (message
// landed) and interrupt handler. Timestamps are simulated microseconds.
class Timeline {
 public:
  bool enabled() const { return enabled_; }
  void enable() { enabled_ = true; }
  void instant(int host, const std::string& track, const char* name) {
    events_.push_back(Event{host, tid(host, track), name, sc_core::sc_time_stamp(), sc_core::SC_ZERO_TIME, false, 0});
  }
  void span(int host, const std::string& track, const char* name, const sc_time& begin, int64_t arg = -1) {
    events_.push_back(Event{host, tid(host, track), name, begin, sc_core::sc_time_stamp() - begin, true, arg});
  }
  bool write(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return false;
    std::fprintf(f, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
    bool first = true;
    auto sep = [&] {
      if (!first) std::fprintf(f, ",\n");
      first = false;
    };
    for (int h = 0; h < 2; ++h) {
      sep();
      std::fprintf(f, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"args\": {\"name\": \"host%d\"}}", h, h);
    }
    for (const auto& [key, id] : tids_) {
      sep();
      std::fprintf(f, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                   key.first, id, key.second.c_str());
    }
    for (const Event& e : events_) {
      sep();
      const double ts = e.at.to_seconds() * 1e6;
      if (e.span) {
        std::fprintf(f, "{\"ph\": \"X\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f", e.name,
                     e.host, e.tid, ts, e.dur.to_seconds() * 1e6);
        if (e.arg >= 0) std::fprintf(f, ", \"args\": {\"cqes\": %lld}", static_cast<long long>(e.arg));
        std::fprintf(f, "}");
      } else {
        std::fprintf(f, "{\"ph\": \"i\", \"s\": \"t\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f}", e.name,
                     e.host, e.tid, ts);
      }
    }
    std::fprintf(f, "\n]}\n");
    return std::fclose(f) == 0;
  }

 private:
  struct Event {
    int host, tid;
    const char* name;
    sc_time at, dur;
    bool span;
    int64_t arg;
  };
  int tid(int host, const std::string& track) {
    auto [it, added] = tids_.emplace(std::make_pair(host, track), int(tids_.size()) + 1);
    return it->second;
  }
  bool enabled_ = false;
  std::map<std::pair<int, std::string>, int> tids_;
  std::vector<Event> events_;
};

// When each CQE became visible to the host: the PCIe link reports every CQE write as it lands;
// a CQ's CQEs are polled in the order they landed, so each done callback takes the oldest. The
// same reports feed the timeline.
class CqeVisibility {
 public:
  void attach(PcieLink& link, Timeline& timeline, int host) {
    link.on_upstream_landed = [this, &timeline, host](DmaSource s, uint32_t id, uint64_t) {
      if (s == DmaSource::cqe) landed_[id].push_back(sc_core::sc_time_stamp());
      if (!timeline.enabled()) return;
      if (s == DmaSource::cqe) timeline.instant(host, "CQ " + std::to_string(id), "CQE");
      if (s == DmaSource::eqe) timeline.instant(host, "EQ " + std::to_string(id), "EQE");
      if (s == DmaSource::msix) timeline.instant(host, "MSI-X " + std::to_string(id), "MSI-X");
    };
  }
  sc_time take(uint32_t cqn) {
    auto& q = landed_[cqn];
    if (q.empty()) return sc_core::sc_time_stamp();
    const sc_time t = q.front();
    q.pop_front();
    return t;
  }

 private:
  std::map<uint32_t, std::deque<sc_time>> landed_;
};

// Counters of one host at a moment, so that the measured window excludes the warm-up.
struct Snapshot {
  uint64_t cqes = 0, events = 0, interrupts = 0;
  sc_time busy[5];
  sc_time at;
};

class TrafficRun {
 public:
  explicit TrafficRun(const TrafficOptions& o) : o_(o), sys_(system_config(o)), h_{&sys_.node(0), &sys_.node(1)} {
    if (!o.trace_path.empty()) timeline_.enable();
  }

  TrafficResult run() {
    bool setup_ok = true;
    double wall_s = 0;
    sys_.run(
        [&] {
          try {
            setup();
            const auto wall0 = std::chrono::steady_clock::now();
            start_ = sc_core::sc_time_stamp();
            measure_from_ = start_ + sc_time(o_.warmup_us, sc_core::SC_US);
            end_ = start_ + sc_time(o_.duration_us, sc_core::SC_US);
            sc_core::sc_spawn([this] { measure(); }, "measure");
            if (o_.arrival == Arrival::pingpong)
              pingpong();
            else
              open_loop();
            drain();
            stop_ = sc_core::sc_time_stamp();
            for (int h = 0; h < 2; ++h) last_[h] = snapshot(h);
            wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
          } catch (const std::exception& e) {
            std::fprintf(stderr, "vhca-sim: %s\n", e.what());
            setup_ok = false;
          }
        },
        sc_time(o_.duration_us + 200000, sc_core::SC_US));
    TrafficResult r = result();
    r.ok = r.ok && setup_ok;
    r.wall_s = wall_s;
    if (timeline_.enabled() && !timeline_.write(o_.trace_path)) {
      std::fprintf(stderr, "vhca-sim: cannot write %s\n", o_.trace_path.c_str());
      r.ok = false;
    }
    return r;
  }

 private:
  struct Message {
    int qp = 0;
    uint64_t seq = 0;  // per QP
    uint8_t opcode = 0;
    uint32_t size = 0;
    sc_time posted;
    CqeDone done;
  };

  static SystemConfig system_config(const TrafficOptions& o) {
    SystemConfig cfg;
    cfg.hosts = 2;
    cfg.driver.num_comp_vectors = uint32_t(o.vectors);
    cfg.cpu = o.cpu;
    cfg.ib = o.link;
    cfg.ib.seed = o.seed;
    if (o.fault_flip_payload) cfg.ib.faults.push_back(LinkFault{LinkFault::Kind::flip_payload, 0, 100});
    if (o.rtl) {
      cfg.hca.cq.num_cqs = RtlCqWriter::kRtlNumCqs;
      cfg.hca.cq_engine = [](const CqeWriterConfig& c) { return std::make_unique<RtlCqWriter>(c); };
    }
    return cfg;
  }

  uint32_t max_size() const { return *std::max_element(o_.sizes.begin(), o_.sizes.end()); }
  uint64_t slot_offset(int q, uint64_t seq) const {
    return (uint64_t(q) * uint64_t(o_.depth) + seq % uint64_t(o_.depth)) * max_size();
  }
  bool measuring(const sc_time& posted) const { return posted >= measure_from_; }

  void setup() {
    for (Node* h : h_) {
      CommandResult r = h->driver.boot();
      if (!r.ok()) throw std::runtime_error("boot failed: " + r.message());
    }
    const CqModeration mod{o_.mod_count, o_.mod_period_us, o_.mode};
    for (int h = 0; h < 2; ++h) {
      pool_[h] = std::make_unique<CqPool>(h_[h]->driver);
      for (int i = 0; i < o_.cqs; ++i) {
        IbCq* cq = pool_[h]->alloc_cq(o_.cq_size, uint32_t(i % o_.vectors), o_.context, mod, o_.adaptive);
        if (!cq) throw std::runtime_error("alloc_cq: " + h_[h]->driver.last_error());
        cqs_[h].push_back(cq);
      }
      pd_[h] = fb::alloc_pd(h_[h]->driver);
      visible_[h].attach(h_[h]->link, timeline_, h);
      if (timeline_.enabled()) {
        h_[h]->cpu.on_handler_done = [this, h](uint32_t vector, const sc_time& begin) {
          timeline_.span(h, "IRQ handler, vector " + std::to_string(vector), "handler", begin);
        };
        pool_[h]->on_poll_done = [this, h](IbCq& cq, const sc_time& begin, int n) {
          timeline_.span(h, "CQ " + std::to_string(cq.cq->cqn), "poll", begin, n);
        };
      }
    }
    const uint64_t bytes = uint64_t(o_.qps) * uint64_t(o_.depth) * max_size();
    src_ = fb::reg_buffer(*pd_[0], bytes);
    read_dst_ = fb::reg_buffer(*pd_[0], bytes);
    pong_dst_ = fb::reg_buffer(*pd_[0], bytes);
    recv_buf_ = fb::reg_buffer(*pd_[1], bytes);
    write_buf_ = fb::reg_buffer(*pd_[1], bytes);
    read_src_ = fb::reg_buffer(*pd_[1], bytes);
    fb::RcParams rc;
    rc.path_mtu = o_.path_mtu;
    for (int q = 0; q < o_.qps; ++q) {
      Cq* c0 = cqs_[0][size_t(q % o_.cqs)]->cq;
      Cq* c1 = cqs_[1][size_t(q % o_.cqs)]->cq;
      qp_[0].push_back(fb::create_qp(*pd_[0], c0, c0, QpType::rc, uint32_t(o_.depth)));
      qp_[1].push_back(fb::create_qp(*pd_[1], c1, c1, QpType::rc, uint32_t(o_.depth)));
      fb::connect_rc(*qp_[0].back(), *qp_[1].back(), rc);
    }
    std::vector<uint8_t> data(max_size());
    for (int q = 0; q < o_.qps; ++q)
      for (int j = 0; j < o_.depth; ++j) {
        pattern(data, q, kReadTag + uint64_t(j));
        h_[1]->driver.memory().write(read_src_.addr + slot_offset(q, uint64_t(j)), data.data(), max_size());
      }
    next_seq_.assign(size_t(o_.qps), 0);
    next_done_.assign(size_t(o_.qps), 0);
    in_flight_[0].resize(size_t(o_.qps));
    in_flight_[1].resize(size_t(o_.qps));
    for (int h = 0; h < 2; ++h) {
      recv_done_[h] = std::vector<CqeDone>(size_t(o_.qps) * size_t(o_.depth));
      recv_posted_[h].assign(size_t(o_.qps), 0);
      for (int q = 0; q < o_.qps; ++q) {
        for (int j = 0; j < o_.depth; ++j) {
          CqeDone& d = recv_done_[h][size_t(q) * size_t(o_.depth) + size_t(j)];
          pool_[h]->track(d);
          d.done = [this, h, q, j](IbCq& cq, const Wc& wc) { on_receive(h, q, uint64_t(j), cq, wc); };
        }
        if (h == 1 || o_.arrival == Arrival::pingpong)
          for (int j = 0; j < o_.depth; ++j) post_receive(h, q);
      }
    }
  }

  void post_receive(int h, int q) {
    const uint64_t k = recv_posted_[h][size_t(q)]++;
    const uint64_t slot = uint64_t(q) * uint64_t(o_.depth) + k % uint64_t(o_.depth);
    const fb::Buffer& buf = h == 1 ? recv_buf_ : pong_dst_;
    fb::post_recv(*qp_[h][size_t(q)], RecvWr{CqPool::wr_id_of(recv_done_[h][slot]), {buf.sge(slot * max_size(), max_size())}});
  }

  void sample_occupancy(int h, IbCq& cq) {
    const uint32_t pi = h_[h]->hca.cq.context(cq.cq->cqn).pi;
    const uint32_t occupancy = (pi - cq.cq->ci) & 0xFFFFFF;
    occupancy_sum_[h] += occupancy;
    ++occupancy_samples_[h];
    occupancy_max_[h] = std::max(occupancy_max_[h], occupancy);
  }

  void check_data(int h, uint64_t addr, int q, uint64_t seq, uint32_t size) {
    expect_.resize(size);
    got_.resize(size);
    pattern(expect_, q, seq);
    h_[h]->driver.memory().read(addr, got_.data(), size);
    if (got_ != expect_) ++r_.data_errors;
  }

  // A receive completed on host h: on host 1 the data of the oldest SEND in flight on that QP
  // (answered by a pong in ping-pong); on host 0 a pong, which ends a round trip.
  void on_receive(int h, int q, uint64_t slot, IbCq& cq, const Wc& wc) {
    ++r_.recvs;
    const sc_time visible = visible_[h].take(cq.cq->cqn);
    sample_occupancy(h, cq);
    auto& flight = in_flight_[h][size_t(q)];
    if (wc.status != 0 || flight.empty()) {
      ++r_.errors;
      return;
    }
    Message* m = flight.front();
    flight.pop_front();
    const uint64_t addr = (h == 1 ? recv_buf_.addr : pong_dst_.addr) + (uint64_t(q) * uint64_t(o_.depth) + slot) * max_size();
    check_data(h, addr, q, m->seq, m->size);
    if (measuring(m->posted)) {
      Samples& s = h == 1 ? samples_["RECV"] : samples_["PINGPONG"];
      s.to_cqe_ns.push_back((visible - m->posted).to_seconds() * 1e9);
      s.to_handler_ns.push_back((sc_core::sc_time_stamp() - m->posted).to_seconds() * 1e9);
    }
    post_receive(h, q);
    if (o_.arrival != Arrival::pingpong) return;
    if (h == 1) {
      send_pong(q, *m, addr);
    } else if (sc_core::sc_time_stamp() < end_) {
      post_message(q, sqwqe::kSend, m->size);
    }
  }

  // Host 1 echoes a ping from the buffer it landed in (read by the HCA before the slot is
  // reused: the next ping on this QP waits for this pong).
  void send_pong(int q, const Message& ping, uint64_t addr) {
    pongs_.push_back(Message{q, ping.seq, sqwqe::kSend, ping.size, ping.posted, {}});
    Message& pong = pongs_.back();
    pong.done.done = [this, p = &pong](IbCq& cq, const Wc& wc) {
      visible_[1].take(cq.cq->cqn);
      sample_occupancy(1, cq);
      if (wc.status != 0) ++r_.errors;
      pool_[1]->untrack(p->done);
    };
    pool_[1]->track(pong.done);
    in_flight_[0][size_t(q)].push_back(&pong);
    SendWr wr;
    wr.wr_id = CqPool::wr_id_of(pong.done);
    wr.flags = kSendSignaled;
    wr.sg_list = {Sge{addr, ping.size, recv_buf_.mr->lkey}};
    fb::post_send(*qp_[1][size_t(q)], wr);
  }

  uint32_t draw_size(std::mt19937_64& rng) {
    if (o_.sizes.size() == 1) return o_.sizes[0];
    double total = 0;
    for (double w : o_.size_weights) total += w;
    double x = uniform(rng) * total;
    for (size_t i = 0; i < o_.sizes.size(); ++i)
      if ((x -= o_.size_weights[i]) < 0) return o_.sizes[i];
    return o_.sizes.back();
  }
  static double uniform(std::mt19937_64& rng) { return (double(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

  // Posts one message on QP q of host 0; false if its send queue is full.
  bool post_message(int q, uint8_t opcode, uint32_t size) {
    Qp& qp = *qp_[0][size_t(q)];
    if (uint16_t(qp.sq_pi - qp.sq_ci) >= qp.sq_depth) return false;
    messages_.push_back(Message{q, next_seq_[size_t(q)]++, opcode, size, sc_core::sc_time_stamp(), {}});
    Message& m = messages_.back();
    const uint64_t off = slot_offset(q, m.seq);
    if (opcode != sqwqe::kRdmaRead) {
      data_.resize(size);
      pattern(data_, q, m.seq);
      h_[0]->driver.memory().write(src_.addr + off, data_.data(), size);
    }
    m.done.done = [this, mp = &m](IbCq& cq, const Wc& wc) { on_send_done(*mp, cq, wc); };
    pool_[0]->track(m.done);
    SendWr wr;
    wr.wr_id = CqPool::wr_id_of(m.done);
    wr.opcode = opcode;
    wr.flags = kSendSignaled;
    wr.sg_list = {(opcode == sqwqe::kRdmaRead ? read_dst_ : src_).sge(off, size)};
    wr.remote_addr = (opcode == sqwqe::kRdmaRead ? read_src_ : write_buf_).addr + off;
    wr.rkey = (opcode == sqwqe::kRdmaRead ? read_src_ : write_buf_).mr->rkey;
    if (opcode == sqwqe::kSend) in_flight_[1][size_t(q)].push_back(&m);
    fb::post_send(qp, wr);
    ++r_.posted;
    return true;
  }

  void on_send_done(Message& m, IbCq& cq, const Wc& wc) {
    ++r_.completed;
    const sc_time visible = visible_[0].take(cq.cq->cqn);
    sample_occupancy(0, cq);
    if (wc.status != 0) ++r_.errors;
    if (m.seq != next_done_[size_t(m.qp)]) ++r_.misordered;
    next_done_[size_t(m.qp)] = m.seq + 1;
    const char* op = m.opcode == sqwqe::kRdmaWrite ? "RDMA_WRITE" : m.opcode == sqwqe::kRdmaRead ? "RDMA_READ" : "SEND";
    if (measuring(m.posted)) {
      samples_[op].to_cqe_ns.push_back((visible - m.posted).to_seconds() * 1e9);
      samples_[op].to_handler_ns.push_back((sc_core::sc_time_stamp() - m.posted).to_seconds() * 1e9);
    }
    const uint64_t off = slot_offset(m.qp, m.seq);
    if (m.opcode == sqwqe::kRdmaWrite) check_data(1, write_buf_.addr + off, m.qp, m.seq, m.size);
    if (m.opcode == sqwqe::kRdmaRead)
      check_data(0, read_dst_.addr + off, m.qp, kReadTag + m.seq % uint64_t(o_.depth), m.size);
    if (m.opcode == sqwqe::kRdmaWrite || m.opcode == sqwqe::kRdmaRead) ++one_sided_;
    pool_[0]->untrack(m.done);
  }

  // Arrivals from a fully specified generator (mt19937_64, inverse-CDF sampling), so that every
  // platform produces the same workload. An arrival that finds its send queue full is refused.
  void open_loop() {
    std::mt19937_64 rng(o_.seed);
    const double gap_ns = 1e6 / o_.rate_kmsg;
    const double cycle_ns = (o_.on_us + o_.off_us) * 1e3;
    double t = 0;
    for (;;) {
      t += o_.arrival == Arrival::poisson ? -std::log(uniform(rng)) * gap_ns : gap_ns;
      if (o_.arrival == Arrival::onoff && std::fmod(t, cycle_ns) >= o_.on_us * 1e3)
        t = (std::floor(t / cycle_ns) + 1) * cycle_ns;  // skip to the next burst
      const sc_time at = start_ + sc_time(t, sc_core::SC_NS);
      if (at >= end_) break;
      const int q = int(rng() % uint64_t(o_.qps));
      const double pick = uniform(rng);
      const uint8_t op = pick < o_.write_fraction                     ? sqwqe::kRdmaWrite
                         : pick < o_.write_fraction + o_.read_fraction ? sqwqe::kRdmaRead
                                                                      : sqwqe::kSend;
      const uint32_t size = draw_size(rng);
      if (at > sc_core::sc_time_stamp()) sc_core::wait(at - sc_core::sc_time_stamp());
      if (!post_message(q, op, size)) ++r_.refused;
    }
  }

  // Closed loop: each QP keeps `outstanding` pings in flight; host 1 answers each with a pong of
  // the same size, and the pong's arrival at host 0 posts the next ping.
  void pingpong() {
    std::mt19937_64 rng(o_.seed);
    for (int q = 0; q < o_.qps; ++q)
      for (int i = 0; i < o_.outstanding; ++i) post_message(q, sqwqe::kSend, draw_size(rng));
    if (end_ > sc_core::sc_time_stamp()) sc_core::wait(end_ - sc_core::sc_time_stamp());
  }

  void drain() {
    const sc_time limit = sc_core::sc_time_stamp() + sc_time(o_.mod_period_us + 2000, sc_core::SC_US);
    auto expected_recvs = [&] { return r_.posted - one_sided_ + (o_.arrival == Arrival::pingpong ? r_.posted : 0); };
    while ((r_.completed < r_.posted || r_.recvs < expected_recvs()) && sc_core::sc_time_stamp() < limit)
      sc_core::wait(sc_time(10, sc_core::SC_US));
    drained_ = r_.completed == r_.posted && r_.recvs == expected_recvs();
  }

  Snapshot snapshot(int h) const {
    Snapshot s;
    const auto& st = h_[h]->hca.cq.stats();
    s.cqes = st.cqes;
    s.events = st.events;
    s.interrupts = h_[h]->cpu.interrupts();
    for (int c = 0; c < 5; ++c) s.busy[c] = h_[h]->cpu.busy(CpuContext(c));
    s.at = sc_core::sc_time_stamp();
    return s;
  }

  void measure() {
    if (measure_from_ > sc_core::sc_time_stamp()) sc_core::wait(measure_from_ - sc_core::sc_time_stamp());
    for (int h = 0; h < 2; ++h) first_[h] = snapshot(h);
  }

  TrafficResult result() {
    TrafficResult& r = r_;
    const double measured_s = (last_[0].at - first_[0].at).to_seconds();
    r.measured_s = measured_s;
    const TransportStats& t0 = h_[0]->hca.transport.stats();
    const TransportStats& t1 = h_[1]->hca.transport.stats();
    r.packets_out = t0.packets_sent;
    r.packets_back = t1.packets_sent;
    r.packets_lost = sys_.ib.stats(0).dropped + sys_.ib.stats(1).dropped;
    r.retransmits = t0.retransmits + t1.retransmits;
    r.link_gbps = stop_ > start_ ? double(sys_.ib.stats(0).bytes) * 8 / (stop_ - start_).to_seconds() / 1e9 : 0;
    for (int h = 0; h < 2; ++h) {
      HostStats& hs = r.host[h];
      const Snapshot &a = first_[h], &b = last_[h];
      hs.cqes = b.cqes - a.cqes;
      hs.events = b.events - a.events;
      hs.interrupts = b.interrupts - a.interrupts;
      hs.overflows = h_[h]->hca.cq.stats().overflows;
      hs.interrupts_per_s = measured_s > 0 ? double(hs.interrupts) / measured_s : 0;
      hs.cqes_per_interrupt = hs.interrupts ? double(hs.cqes) / double(hs.interrupts) : 0;
      auto pct = [&](std::initializer_list<CpuContext> ctxs) {
        double s = 0;
        for (CpuContext c : ctxs) s += (b.busy[int(c)] - a.busy[int(c)]).to_seconds();
        return measured_s > 0 ? s / measured_s * 100 : 0;
      };
      hs.cpu_busy_pct = pct({CpuContext::hardirq, CpuContext::softirq, CpuContext::thread, CpuContext::workqueue,
                             CpuContext::app});
      hs.hardirq_pct = pct({CpuContext::hardirq});
      hs.poll_pct = pct({CpuContext::softirq, CpuContext::thread, CpuContext::workqueue});
      hs.cq_occupancy_mean = occupancy_samples_[h] ? double(occupancy_sum_[h]) / double(occupancy_samples_[h]) : 0;
      hs.cq_occupancy_max = occupancy_max_[h];
      for (IbCq* cq : cqs_[h])
        if (cq->dim) hs.dim_decisions += cq->dim->decisions(), hs.dim_changes += cq->dim->changes();
    }
    for (auto& [op, s] : samples_) r.latency[op] = s.stats();
    r.ok = drained_ && r.errors == 0 && r.misordered == 0 && r.data_errors == 0 && r.host[0].overflows == 0 &&
           r.host[1].overflows == 0;
    return r;
  }

  TrafficOptions o_;
  System sys_;
  Node* h_[2];
  std::unique_ptr<CqPool> pool_[2];
  std::vector<IbCq*> cqs_[2];
  Pd* pd_[2] = {};
  std::vector<Qp*> qp_[2];
  fb::Buffer src_, read_dst_, pong_dst_, recv_buf_, write_buf_, read_src_;
  Timeline timeline_;
  CqeVisibility visible_[2];
  std::deque<Message> messages_, pongs_;  // stable addresses: each holds the CqeDone its wr_id names
  std::vector<std::deque<Message*>> in_flight_[2];  // SENDs (and pongs) each host's receives await
  std::vector<CqeDone> recv_done_[2];
  std::vector<uint64_t> recv_posted_[2];
  std::vector<uint64_t> next_seq_, next_done_;
  std::map<std::string, Samples> samples_;
  std::vector<uint8_t> data_, expect_, got_;
  uint64_t one_sided_ = 0;
  uint64_t occupancy_sum_[2] = {}, occupancy_samples_[2] = {};
  uint32_t occupancy_max_[2] = {};
  sc_time start_, measure_from_, end_, stop_;
  Snapshot first_[2], last_[2];
  bool drained_ = false;
  TrafficResult r_;
};

}  // namespace

TrafficResult run_traffic(const TrafficOptions& o) { return TrafficRun(o).run(); }

void print_summary(const TrafficOptions& o, const TrafficResult& r) {
  std::string sizes;
  for (uint32_t s : o.sizes) sizes += (sizes.empty() ? "" : "/") + std::to_string(s);
  std::printf("vhca-sim %s%s: 2 HCAs, %d RC QPs on %d CQs per host (%d vectors), %s-byte messages, %.0f%% WRITE "
              "%.0f%% READ %.0f%% SEND, %s %.0f k msg/s for %.0f us (warm-up %.0f us), moderation %u CQEs / %u us "
              "(%s mode), %s polling%s, seed %llu\n",
              o.name.c_str(), o.rtl ? " (RTL CQ writers in the loop)" : "", o.qps, o.cqs, o.vectors, sizes.c_str(),
              o.write_fraction * 100, o.read_fraction * 100, (1 - o.write_fraction - o.read_fraction) * 100,
              arrival_name(o.arrival), o.rate_kmsg, o.duration_us, o.warmup_us, o.mod_count, o.mod_period_us,
              o.mode == PeriodMode::eqe ? "EQE" : "CQE", poll_context_name(o.context),
              o.adaptive ? ", adaptive (DIM)" : "", static_cast<unsigned long long>(o.seed));
  auto count = [](const char* name, uint64_t v) {
    std::printf("  %-44s %12llu\n", name, static_cast<unsigned long long>(v));
  };
  auto row = [](const char* name, double v, const char* unit) { std::printf("  %-44s %12.3f %s\n", name, v, unit); };
  count("messages posted", r.posted);
  count("arrivals refused (send queue full)", r.refused);
  count("send completions", r.completed);
  count("receive completions", r.recvs);
  count("completion errors", r.errors);
  count("out-of-order completions", r.misordered);
  count("messages with wrong data", r.data_errors);
  count("packets host0 -> host1", r.packets_out);
  count("packets host1 -> host0", r.packets_back);
  count("packets lost on the link", r.packets_lost);
  count("retransmissions (go-back-N)", r.retransmits);
  row("link utilisation host0 -> host1", r.link_gbps, "Gb/s");
  for (int h = 0; h < 2; ++h) {
    const HostStats& s = r.host[h];
    std::printf("  host%d: %llu CQEs, %llu events, %llu interrupts (%.1f k/s, %.2f CQEs each), CPU %.2f %% "
                "(hard-IRQ %.2f %%, polling %.2f %%), CQ occupancy mean %.2f max %u, overflows %llu%s\n",
                h, static_cast<unsigned long long>(s.cqes), static_cast<unsigned long long>(s.events),
                static_cast<unsigned long long>(s.interrupts), s.interrupts_per_s / 1e3, s.cqes_per_interrupt,
                s.cpu_busy_pct, s.hardirq_pct, s.poll_pct, s.cq_occupancy_mean, s.cq_occupancy_max,
                static_cast<unsigned long long>(s.overflows),
                o.adaptive ? (", DIM " + std::to_string(s.dim_decisions) + " decisions, " +
                              std::to_string(s.dim_changes) + " changes").c_str()
                           : "");
  }
  std::printf("  latency from post, us (CQE = landed in host memory, hdlr = done callback)\n");
  std::printf("  %-22s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "", "samples", "CQE p50", "CQE p99", "CQE p99.9",
              "hdlr p50", "hdlr p90", "hdlr p99", "hdlr p99.9", "hdlr max");
  for (const auto& [op, l] : r.latency)
    std::printf("  %-22s %8llu %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", op.c_str(),
                static_cast<unsigned long long>(l.samples), l.cqe_p50, l.cqe_p99, l.cqe_p999, l.hdl_p50, l.hdl_p90,
                l.hdl_p99, l.hdl_p999, l.hdl_max);
  row("measured (simulated) time", r.measured_s * 1e3, "ms");
  row("wall time", r.wall_s, "s");
  row("simulated messages per wall second", r.wall_s > 0 ? double(r.completed) / r.wall_s : 0.0, "");
  std::printf("  %-44s %12s\n", "every message intact, completed once, in order", r.ok ? "yes" : "NO");
}

namespace {
// The result fields in one order for JSON and CSV (name, value).
std::vector<std::pair<std::string, double>> result_fields(const TrafficOptions& o, const TrafficResult& r) {
  std::vector<std::pair<std::string, double>> f = {
      {"mod_count", o.mod_count}, {"mod_period_us", o.mod_period_us}, {"mode_cqe", o.mode == PeriodMode::cqe},
      {"adaptive", o.adaptive},
      {"posted", double(r.posted)}, {"refused", double(r.refused)}, {"completed", double(r.completed)},
      {"recvs", double(r.recvs)}, {"errors", double(r.errors)}, {"misordered", double(r.misordered)},
      {"data_errors", double(r.data_errors)}, {"packets_lost", double(r.packets_lost)},
      {"retransmits", double(r.retransmits)}, {"link_gbps", r.link_gbps}, {"measured_s", r.measured_s}};
  for (int h = 0; h < 2; ++h) {
    const HostStats& s = r.host[h];
    const std::string p = "host" + std::to_string(h) + "_";
    for (auto [k, v] : std::initializer_list<std::pair<const char*, double>>{
             {"cqes", double(s.cqes)}, {"interrupts", double(s.interrupts)}, {"interrupts_per_s", s.interrupts_per_s},
             {"cqes_per_interrupt", s.cqes_per_interrupt}, {"cpu_busy_pct", s.cpu_busy_pct},
             {"hardirq_pct", s.hardirq_pct}, {"poll_pct", s.poll_pct}, {"cq_occupancy_mean", s.cq_occupancy_mean},
             {"cq_occupancy_max", double(s.cq_occupancy_max)}, {"overflows", double(s.overflows)},
             {"dim_changes", double(s.dim_changes)}})
      f.push_back({p + k, v});
  }
  for (const char* op : {"SEND", "RDMA_WRITE", "RDMA_READ", "RECV", "PINGPONG"}) {
    auto it = r.latency.find(op);
    const LatencyStats l = it == r.latency.end() ? LatencyStats{} : it->second;
    const std::string p = std::string(op) + "_";
    for (auto [k, v] : std::initializer_list<std::pair<const char*, double>>{
             {"samples", double(l.samples)}, {"cqe_p50_us", l.cqe_p50}, {"cqe_p90_us", l.cqe_p90},
             {"cqe_p99_us", l.cqe_p99}, {"cqe_p999_us", l.cqe_p999}, {"cqe_max_us", l.cqe_max},
             {"hdl_p50_us", l.hdl_p50}, {"hdl_p90_us", l.hdl_p90}, {"hdl_p99_us", l.hdl_p99},
             {"hdl_p999_us", l.hdl_p999}, {"hdl_max_us", l.hdl_max}})
      f.push_back({p + k, v});
  }
  f.push_back({"ok", r.ok});
  return f;
}

std::string number(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}
}  // namespace

std::string results_json(const TrafficOptions& o, const TrafficResult& r) {
  std::ostringstream s;
  s << "{\n  \"scenario\": \"" << o.name << "\",\n  \"seed\": " << o.seed;
  for (const auto& [k, v] : result_fields(o, r)) s << ",\n  \"" << k << "\": " << number(v);
  s << "\n}\n";
  return s.str();
}

std::string results_csv_header() {
  std::string h = "scenario,seed";
  for (const auto& [k, v] : result_fields(TrafficOptions{}, TrafficResult{})) h += "," + k;
  return h + "\n";
}

std::string results_csv_row(const TrafficOptions& o, const TrafficResult& r) {
  std::string row = o.name + "," + std::to_string(o.seed);
  for (const auto& [k, v] : result_fields(o, r)) row += "," + number(v);
  return row + "\n";
}

}  // namespace vhca
