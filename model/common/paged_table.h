// A fixed-size table whose memory grows with what is touched: entries live in pages allocated on
// first write, so a 64 K-entry CQ context table with four CQs in use costs a few pages, not 7.5
// MiB, and starting an HCA does not zero the whole table. Reading an entry never touched gives a
// default-constructed one without allocating.
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <vector>

namespace vhca {

template <typename T, size_t kPageEntries = 256>
class PagedTable {
 public:
  explicit PagedTable(size_t size) : size_(size), pages_((size + kPageEntries - 1) / kPageEntries) {}

  size_t size() const { return size_; }
  // Read access: an untouched entry reads as T{}.
  const T& operator[](size_t i) const {
    const auto& page = pages_[i / kPageEntries];
    return page ? (*page)[i % kPageEntries] : empty();
  }
  const T& at(size_t i) const {
    check(i);
    return (*this)[i];
  }
  // Write access: allocates the entry's page on first use.
  T& touch(size_t i) {
    auto& page = pages_[i / kPageEntries];
    if (!page) page = std::make_unique<Page>();
    return (*page)[i % kPageEntries];
  }
  T& touch_at(size_t i) {
    check(i);
    return touch(i);
  }
  void clear() {
    for (auto& page : pages_) page.reset();
  }
  size_t pages_in_use() const {
    size_t n = 0;
    for (const auto& page : pages_) n += page != nullptr;
    return n;
  }

 private:
  using Page = std::array<T, kPageEntries>;
  static const T& empty() {
    static const T e{};
    return e;
  }
  void check(size_t i) const {
    if (i >= size_) throw std::out_of_range("table index " + std::to_string(i) + " >= " + std::to_string(size_));
  }
  size_t size_;
  std::vector<std::unique_ptr<Page>> pages_;
};

}  // namespace vhca
