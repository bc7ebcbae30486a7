// Big-endian field access for the hardware formats (CQE, EQE, command blocks, doorbell records).
#pragma once
#include <cstdint>
#include <cstring>

namespace vhca {

inline uint16_t get_be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
inline uint32_t get_be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
inline uint64_t get_be64(const uint8_t* p) { return uint64_t(get_be32(p)) << 32 | get_be32(p + 4); }
inline void put_be16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
inline void put_be32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 24);
  p[1] = uint8_t(v >> 16);
  p[2] = uint8_t(v >> 8);
  p[3] = uint8_t(v);
}
inline void put_be64(uint8_t* p, uint64_t v) {
  put_be32(p, uint32_t(v >> 32));
  put_be32(p + 4, uint32_t(v));
}

// A big-endian number of `size` bytes (up to 8): 1, 2, 4 and 8 bytes are one access each (the
// compiler turns the helpers above into a load or store and a byte swap), others byte by byte.
inline __attribute__((always_inline)) uint64_t get_be(const uint8_t* p, unsigned size) {
  switch (size) {
    case 1: return p[0];
    case 2: return get_be16(p);
    case 4: return get_be32(p);
    case 8: return get_be64(p);
    default: break;
  }
  uint64_t word = 0;
  for (unsigned i = 0; i < size; ++i) word = word << 8 | p[i];
  return word;
}
inline __attribute__((always_inline)) void put_be(uint8_t* p, unsigned size, uint64_t word) {
  switch (size) {
    case 1: p[0] = uint8_t(word); return;
    case 2: return put_be16(p, uint16_t(word));
    case 4: return put_be32(p, uint32_t(word));
    case 8: return put_be64(p, word);
    default: break;
  }
  for (int i = int(size) - 1; i >= 0; --i, word >>= 8) p[i] = uint8_t(word);
}

// Little-endian helpers for the register interface (BAR accesses are little-endian like PCIe).
inline uint32_t get_le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline void put_le32(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
  p[2] = uint8_t(v >> 16);
  p[3] = uint8_t(v >> 24);
}

// 24-bit wrapping index arithmetic (producer / consumer counters of CQs and EQs).
constexpr uint32_t kIndexMask = 0xFFFFFF;
inline uint32_t index_distance(uint32_t from, uint32_t to) { return (to - from) & kIndexMask; }

// Whether the byte ranges [a, a + a_len) and [b, b + b_len) share a byte.
inline bool ranges_overlap(uint64_t a, uint64_t a_len, uint64_t b, uint64_t b_len) {
  return a < b + b_len && b < a + a_len;
}

}  // namespace vhca
