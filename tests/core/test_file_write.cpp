// write_file_atomic: the whole file or nothing, and failures that name the file and the reason.
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/file_write.h"
#include "tests/harness.h"

using namespace relpos;
namespace fs = std::filesystem;

TEST_CASE("file write: replaces the file whole; failures name the file and the system's reason") {
  test::ScratchDir dir;
  const std::string path = dir.file("summary.json");
  write_file_atomic("train", path, "old");
  write_file_atomic("train", path, std::string(100000, 'x'));
  std::ifstream in(path, std::ios::binary);
  const std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(back == std::string(100000, 'x'));

  // (A full disk gives "No space left on device": tests/cli/test_bad_input.sh on a tmpfs.)
  const std::string nowhere = dir.file("missing_folder/summary.json");
  CHECK(test::error_of([&] { write_file_atomic("train", nowhere, "x"); }) ==
        "[train] cannot write '" + nowhere + "': No such file or directory");
  for (const auto& entry : fs::directory_iterator(dir.path))
    CHECK_MESSAGE(entry.path().filename().string().find(".tmp.") == std::string::npos,
                  entry.path());
}
