// rtl/cq_context_table.v, Verilated, against a reference table (issue 13, item 1: the CQ
// context table in RAM with a registered read, cleared by a sweep instead of a reset loop). At 64
// entries and at 64 K: o_ready rises after exactly DEPTH edges once rst falls (one entry cleared per
// edge); every entry then reads zero; random writes and reads every cycle
// match the reference with the data one cycle after the address, a same-edge read of a written
// entry returning the old value; writes during the sweep are ignored.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include "Vcq_context_table_64.h"
#include "verilated.h"
#include "Vcq_context_table_64k.h"

namespace {
constexpr int kWords = 4;  // WIDTH 128 for the test: four 32-bit words

template <typename V>
struct Bench {
  V v;
  uint64_t cycle = 0;
  void edge() {
    v.clk = 0;
    v.eval();
    v.clk = 1;
    v.eval();
    ++cycle;
  }
  void write(uint32_t addr, const std::vector<uint32_t>& w) {
    v.i_we = 1;
    v.i_waddr = addr;
    for (int k = 0; k < kWords; ++k) v.i_wdata[k] = w[size_t(k)];
  }
  std::vector<uint32_t> rdata() const {
    std::vector<uint32_t> out(kWords);
    for (int k = 0; k < kWords; ++k) out[size_t(k)] = v.o_rdata[k];
    return out;
  }
};

// Reset, then count the edges until o_ready: DEPTH entries cleared, one per edge.
template <typename V>
uint64_t sweep(Bench<V>& b) {
  b.v.rst = 1;
  b.v.i_we = 0;
  b.v.i_re = 0;
  b.edge();
  b.edge();
  b.v.rst = 0;
  b.v.eval();
  CHECK(b.v.o_ready == 0);
  const uint64_t start = b.cycle;
  // A write during the sweep is ignored (the entry is cleared anyway, or was already).
  b.write(3, {0xDEAD, 0xBEEF, 1, 2});
  while (!b.v.o_ready && b.cycle - start < 1'000'000) {
    b.edge();
    b.v.i_we = 0;
  }
  return b.cycle - start;
}

template <typename V>
void check_table(uint32_t depth, int ops) {
  // The RAM starts with random contents (Verilated with --x-initial unique), as a RAM does: only
  // the sweep makes it read zero.
  Verilated::randReset(2);
  Bench<V> b;
  CHECK(sweep(b) == depth);
  // Every entry reads zero: address on cycle t, data after the edge.
  std::vector<std::vector<uint32_t>> ref(depth, std::vector<uint32_t>(kWords, 0));
  for (uint32_t a = 0; a < depth; a += depth > 4096 ? 97 : 1) {
    b.v.i_re = 1;
    b.v.i_raddr = a;
    b.edge();
    REQUIRE(b.rdata() == ref[a]);
  }
  // Random traffic: a write and a read on every edge, reads often of the entry being written.
  std::mt19937 rng(7);
  for (int i = 0; i < ops; ++i) {
    const uint32_t wa = rng() % depth;
    const uint32_t ra = rng() % 4 == 0 ? wa : rng() % depth;
    std::vector<uint32_t> w(kWords);
    for (auto& x : w) x = uint32_t(rng());
    b.write(wa, w);
    b.v.i_re = 1;
    b.v.i_raddr = ra;
    const std::vector<uint32_t> expect = ref[ra];  // read before write
    b.edge();
    ref[wa] = w;
    INFO("op " << i << " write " << wa << " read " << ra);
    REQUIRE(b.rdata() == expect);
  }
  // The read register holds its value while no read is asked.
  b.v.i_we = 0;
  b.v.i_re = 0;
  const std::vector<uint32_t> held = b.rdata();
  b.edge();
  CHECK(b.rdata() == held);
}
}  // namespace

TEST_CASE("the RTL CQ context table (64 entries): a DEPTH-cycle clearing sweep, then a registered read, read-before-write") {
  check_table<Vcq_context_table_64>(64, 20000);
}

TEST_CASE("the RTL CQ context table (65,536 entries): a DEPTH-cycle clearing sweep, then a registered read, read-before-write") {
  check_table<Vcq_context_table_64k>(65536, 20000);
}
