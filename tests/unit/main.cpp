// The doctest runner for tests/unit: every other .cpp in this folder adds test cases.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
