// write_file_atomic: the whole file or nothing, failures that name the file and the reason, links
// followed, and no rename over what is not a regular file.
#include <sys/stat.h>
#include <unistd.h>

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

// A process killed while writing leaves "<file>.tmp.<its pid>" (a ListOps train split: 635 MB);
// the next write of the file removes it, and leaves a live process's write under way alone.
TEST_CASE("file write: removes the temporaries a killed writer left, not a live one's") {
  test::ScratchDir dir;
  const std::string path = dir.file("basic_train.tsv");
  const std::string dead = path + ".tmp.999999999";  // above any pid_max: no such process
  const std::string live = path + ".tmp." + std::to_string(::getppid());
  const std::string other = dir.file("basic_val.tsv.tmp.999999999");
  for (const std::string& file : {dead, live, other}) std::ofstream(file) << "half";
  CHECK(temporary_of(path) == path + ".tmp." + std::to_string(::getpid()));
  write_file_atomic("data", path, "whole");
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));  // another file's: removed when that file is written
}

TEST_CASE("file write: a link's file is replaced, the link kept; no regular file is refused") {
  test::ScratchDir dir;
  const auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string file = dir.file("real.json"), link = dir.file("link.json");
  write_file_atomic("train", file, "old");
  fs::create_symlink(file, link);
  write_file_atomic("train", link, "new");
  CHECK(fs::is_symlink(link));
  CHECK(read(file) == "new");
  // A link to nothing: the write leaves a file where it was.
  const std::string dangling = dir.file("dangling.json");
  fs::create_symlink(dir.file("gone.json"), dangling);
  write_file_atomic("train", dangling, "made");
  CHECK(read(dangling) == "made");

  // `relpos eval --predictions /dev/full`, as root, renamed a regular file over the device. A
  // FIFO stands in for the device here: the same check, and nothing of the system's at stake.
  const std::string fifo = dir.file("pipe");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(test::error_of([&] { write_file_atomic("predictions", fifo, "x"); }) ==
        "[predictions] cannot write '" + fifo + "': it is a FIFO, not a regular file");
  CHECK(fs::is_fifo(fifo));
  const std::string folder = dir.file("folder");
  fs::create_directory(folder);
  CHECK(test::error_of([&] { (void)atomic_write_target("checkpoint", folder); }) ==
        "[checkpoint] cannot write '" + folder + "': it is a folder, not a regular file");
  if (fs::is_character_file("/dev/null"))  // only read: the refusal happens before any write
    CHECK(test::error_of([] { (void)atomic_write_target("predictions", "/dev/null"); }) ==
          "[predictions] cannot write '/dev/null': it is a character device, not a regular file");
  for (const auto& entry : fs::directory_iterator(dir.path))
    CHECK_MESSAGE(entry.path().filename().string().find(".tmp.") == std::string::npos,
                  entry.path());
}

TEST_CASE("check_write refuses what a later write would, before the work, and makes nothing") {
  namespace fs = std::filesystem;
  test::ScratchDir dir;
  check_write("bench", dir.file("a/b/out.json"));  // folders to be made: accepted
  CHECK_FALSE(fs::exists(dir.file("a")));
  const std::string plain = dir.write("plain", "x");
  CHECK(test::error_of([&] { check_write("predictions", dir.file("plain/sub/p.h5")); }) ==
        "[predictions] cannot create the folder '" + dir.file("plain/sub") + "': Not a directory");
  CHECK(test::error_of([&] { check_write("predictions", dir.file("plain/p.h5")); }) ==
        "[predictions] cannot create the folder '" + plain + "': Not a directory");
  fs::create_directory(dir.file("folder"));
  CHECK(test::error_of([&] { check_write("bench", dir.file("folder")); }) ==
        "[bench] cannot write '" + dir.file("folder") + "': it is a folder, not a regular file");
  check_write("bench", "relative_name_without_folder.json");  // in the working folder
  CHECK_FALSE(fs::exists("relative_name_without_folder.json"));
  if (::geteuid() == 0) MESSAGE("SKIPPED: the permission cases (root may write anywhere)");
  if (::geteuid() != 0) {
    fs::create_directory(dir.file("locked"));
    fs::permissions(dir.file("locked"), fs::perms::owner_read | fs::perms::owner_exec);
    CHECK(test::error_of([&] { check_write("bench", dir.file("locked/new/x.json")); }) ==
          "[bench] cannot create the folder '" + dir.file("locked/new") + "': Permission denied");
    CHECK(test::error_of([&] { check_write("bench", dir.file("locked/x.json")); }) ==
          "[bench] cannot write '" + dir.file("locked/x.json") + "': Permission denied");
    fs::permissions(dir.file("locked"), fs::perms::owner_all);
  }
}

TEST_CASE("make_file_folder makes a file's folder, and refuses a file on the way") {
  test::ScratchDir dir;
  make_file_folder("export", dir.file("a/b/state.h5"));
  CHECK(fs::is_directory(dir.file("a/b")));
  CHECK_FALSE(fs::exists(dir.file("a/b/state.h5")));
  CHECK_NOTHROW(make_file_folder("export", "name_without_folder.h5"));  // the working folder
  dir.write("plain", "x");
  CHECK(test::error_of([&] { make_file_folder("export", dir.file("plain/sub/x.h5")); }) ==
        "[export] cannot create the folder '" + dir.file("plain/sub") + "': Not a directory");
}
