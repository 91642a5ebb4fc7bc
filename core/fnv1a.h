// FNV-1a, 64-bit (Fowler, Noll, Vo): a hash that is the same on every machine and build
// (std::hash is not), for fingerprints that are compared across processes or kept in files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace relpos {

struct Fnv1a {
  uint64_t value = 0xcbf29ce484222325ull;

  // Folds `bytes` bytes at `data` into the hash.
  void add(const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < bytes; ++i) value = (value ^ p[i]) * 0x100000001b3ull;
  }
  void add(std::string_view text) { add(text.data(), text.size()); }
};

}  // namespace relpos
