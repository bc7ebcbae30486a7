// The model's own containers, alone: the slot ring every stream and block queue stores its items
// in (walked in order since the transport keeps a QP's WQEs in one), and the object pool that
// keeps the reads in flight of the PCIe link and the receive-queue cache.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "model/common/object_pool.h"
#include "model/common/slot_ring.h"

using vhca::ObjectPool;
using vhca::SlotRing;

namespace {
std::vector<int> walked(const SlotRing<int>& ring) {
  std::vector<int> seen;
  for (const int& v : ring) seen.push_back(v);
  return seen;
}
}  // namespace

TEST_CASE("a slot ring walked from its head sees its items in order, across the wrap and after it grows") {
  SlotRing<int> ring(4);
  for (int i = 1; i <= 3; ++i) ring.push_back(i);
  ring.pop_front();
  ring.pop_front();
  for (int i = 4; i <= 6; ++i) ring.push_back(i);  // 3 4 5 6: the last two wrap to the start
  CHECK(walked(ring) == std::vector<int>{3, 4, 5, 6});
  CHECK(ring[0] == 3);
  CHECK(ring[3] == 6);
  for (int i = 7; i <= 9; ++i) ring.push_back(i);  // past 4 slots: it grows, the order kept
  CHECK(walked(ring) == std::vector<int>{3, 4, 5, 6, 7, 8, 9});
  for (int& v : ring) v *= 10;  // walked for update in place
  CHECK(walked(ring) == std::vector<int>{30, 40, 50, 60, 70, 80, 90});
  while (!ring.empty()) ring.pop_front();
  CHECK(walked(ring).empty());
  SlotRing<std::string> own(2);  // a slot of its own pushed as the ring grows: taken out first
  own.push_back("first, long enough to live outside the string's own storage");
  own.push_back("second");
  own.push_back(own.front());
  own.push_back(std::move(own[1]));
  REQUIRE(own.size() == 4);
  CHECK(own[2] == own[0]);
  CHECK(own[3] == "second");
  SlotRing<std::string> full(2);  // the slot just popped pushed back, the ring one short of full
  full.push_back("kept whole, long enough to live outside the string's own storage");
  full.push_back("tail");
  std::string& popped = full.front();
  full.pop_front();
  full.push_back(std::move(popped));  // goes into the very slot it is: left as it is
  REQUIRE(full.size() == 2);
  CHECK(full[1] == "kept whole, long enough to live outside the string's own storage");
  SlotRing<int> one(1);  // the smallest ring grows from one slot
  for (int i = 0; i < 5; ++i) one.push_back(i);
  CHECK(walked(one) == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("an object pool reuses what was given back, with what it held, and keeps every object it made alive") {
  ObjectPool<std::string> pool;
  std::string* a = pool.take();
  std::string* b = pool.take();
  CHECK(a != b);
  a->assign(100, 'x');  // a buffer of its own
  const char* storage = a->data();
  pool.give(a);
  std::string* again = pool.take();
  CHECK(again == a);  // the one given back, not a new one
  CHECK(again->data() == storage);
  CHECK(pool.made() == 2);
  *b = "held";
  for (int i = 0; i < 100; ++i) pool.take();  // many more made: one taken earlier stays valid
  CHECK(*b == "held");
  CHECK(pool.made() == 102);
}
