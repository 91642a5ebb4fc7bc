// The HDF5 file format relpos writes and reads (hdf5_handle.h).
#include "datasets/hdf5_handle.h"

#include <array>
#include <cstring>
#include <fstream>
#include <string_view>

#include "core/error.h"

namespace relpos {

namespace {

// HDF5 1.10 leaks a free-list block on some of its error paths (a damaged object header, a failed
// write), and at exit its cleanup then prints "infinite loop closing library" after a run that
// reported the error properly. relpos closes every id it opens (H5Handle), so HDF5's own exit
// cleanup has nothing to do: it is switched off before the library starts.
[[maybe_unused]] const bool kNoHdf5AtExit = H5dont_atexit() >= 0;

}  // namespace

H5Handle checksummed_file_access(const std::string& who) {
  H5Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!access.valid() ||
      H5Pset_libver_bounds(access.get(), H5F_LIBVER_V110, H5F_LIBVER_LATEST) < 0 ||
      H5Pset_fclose_degree(access.get(), H5F_CLOSE_STRONG) < 0)
    fail(who, "HDF5 cannot set up file access in the 1.10 format");
  return access;
}

std::string hdf5_system_error() {
  std::string reason;
  const auto visit = [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
    constexpr std::string_view kKey = "error message = '";
    const std::string_view desc = e->desc != nullptr ? e->desc : "";
    const size_t at = desc.find(kKey);
    if (at == std::string_view::npos) return 0;
    const size_t begin = at + kKey.size(), end = desc.find('\'', begin);
    *static_cast<std::string*>(out) = ": " + std::string(desc.substr(begin, end - begin));
    return 1;  // the innermost one is enough
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, visit, &reason);
  return reason;
}

std::optional<std::string> unchecksummed_format(const std::string& path) {
  // The format signature, then the superblock version (HDF5 file format specification §II.A).
  constexpr std::array<char, 8> kSignature = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::array<char, 9> head{};
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot be opened for reading";
  in.read(head.data(), head.size());
  if (in.gcount() < static_cast<std::streamsize>(head.size()) ||
      std::memcmp(head.data(), kSignature.data(), kSignature.size()) != 0)
    return "not an HDF5 file (no HDF5 signature at byte 0)";
  const int version = static_cast<unsigned char>(head[8]);
  if (version < 2)
    return "an HDF5 file in the format of before HDF5 1.10 (superblock version " +
           std::to_string(version) +
           "), whose metadata has no checksums; relpos reads the checksummed format it writes "
           "(from h5py: h5py.File(path, 'w', libver='latest'))";
  return std::nullopt;
}

}  // namespace relpos
