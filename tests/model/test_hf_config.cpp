#include <doctest/doctest.h>
// placeholder: tests arrive with the implementation
