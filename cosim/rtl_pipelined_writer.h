// The Verilated pipelined CQ writer (rtl/cq_writer_pipelined.v, C++ mode) behind the
// CqWriterEngine interface: the same streams as the C++ pipeline model (CqWriterPipeline), clocked
// every cycle (act(now) first clocks the cycles since its last call). Built at three sizes,
// 64, 4,096 and 65,536 CQs (the configured num_cqs picks one), each with CYCLES_PER_US = 500.
//
// The CQ contexts are read through a backdoor (the context RAM's array, as a verification
// environment reads a memory): the design has no query port, and reading one costs no cycle.
#pragma once
#include <memory>
#include <vector>

#include "cosim/rtl_engine.h"

namespace vhca {

// The CQ counts the pipelined RTL is built for.
const std::vector<uint32_t>& rtl_pipelined_sizes();

// The pipelined RTL writer for cfg.num_cqs, which must be one of rtl_pipelined_sizes()
// (std::invalid_argument names them otherwise). With init_seed non-zero every register and RAM
// word starts with a random value drawn from that seed (else zero) before reset.
std::unique_ptr<RtlEngine> make_rtl_pipelined_writer(const CqeWriterConfig& cfg, const RtlFaults& faults = {},
                                                     uint32_t init_seed = 0);

}  // namespace vhca
