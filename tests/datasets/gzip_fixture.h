// gzip_bytes: a test fixture compressor (zlib, gzip framing), for the readers' .gz paths.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <vector>

#include "tests/harness.h"

namespace relpos::test {

inline std::vector<uint8_t> gzip_bytes(const std::vector<uint8_t>& in) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::vector<uint8_t> out(deflateBound(&z, in.size()) + 64);
  z.next_in = const_cast<Bytef*>(in.data());
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

}  // namespace relpos::test
