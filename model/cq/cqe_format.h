// Formats a completion record as the 64-byte big-endian CQE of docs/formats.md.
#pragma once
#include <cstdint>

#include "model/cq/cq_types.h"

namespace vhca {

// `pi` is the producer index the CQE is written at; it sets the owner bit for a CQ of
// 2^log_size entries. On error only wr_id, qpn, syndromes, opcode and owner are defined (S16).
void format_cqe(const CompletionRecord& r, uint32_t pi, uint8_t log_size, uint64_t timestamp, uint8_t* out);

}  // namespace vhca
