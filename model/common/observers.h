// A list of observers: every party that registers is told, in the order they registered. It
// replaces single std::function slots, where a second user silently replaced the first.
#pragma once
#include <functional>
#include <utility>
#include <vector>

namespace vhca {

template <typename... Args>
class Observers {
 public:
  using Fn = std::function<void(Args...)>;
  // Registers an observer; returns its position (for remove()).
  size_t add(Fn fn) {
    fns_.push_back(std::move(fn));
    return fns_.size() - 1;
  }
  void remove(size_t id) { fns_.at(id) = nullptr; }
  void operator()(Args... args) const {
    for (const Fn& fn : fns_)
      if (fn) fn(args...);
  }
  bool empty() const {
    for (const Fn& fn : fns_)
      if (fn) return false;
    return true;
  }
  explicit operator bool() const { return !empty(); }
  // Whether any observer was ever registered (one removed leaves its slot): a check for hot paths
  // that would otherwise build the arguments of a call with no one to tell.
  bool registered() const { return !fns_.empty(); }

 private:
  std::vector<Fn> fns_;
};

}  // namespace vhca
