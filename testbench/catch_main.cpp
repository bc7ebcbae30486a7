// Catch2's own main for the tests that need no SystemC kernel (the Verilated RTL blocks alone),
// compiled once and shared by them.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
