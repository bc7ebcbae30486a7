// Objects made once and reused: take() hands out a free one (made if none is free), give() puts
// it back. An object keeps what it held last (its buffers' storage), and lives as long as the
// pool, so a pointer handed out stays valid while the object is out (a read in flight) and the
// steady state allocates nothing.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

namespace vhca {

template <typename T>
class ObjectPool {
 public:
  T* take() {
    if (free_.empty()) return made_.emplace_back(std::make_unique<T>()).get();
    T* t = free_.back();
    free_.pop_back();
    return t;
  }
  void give(T* t) { free_.push_back(t); }
  size_t made() const { return made_.size(); }

 private:
  std::vector<std::unique_ptr<T>> made_;
  std::vector<T*> free_;
};

}  // namespace vhca
