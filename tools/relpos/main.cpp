// relpos: the command line (DESIGN §7): train, eval, generate, reproduce, bench, data prepare,
// list (tools/relpos/app.cpp). Exit status: 0 on success, 2 on a user error (one clear line on
// stderr), never a stack dump.
#include <cstdio>
#include <filesystem>
#include <new>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/filesystem_error.h"
#include "tools/relpos/commands.h"

int main(int argc, char** argv) {
  try {
    return relpos::cli::run_relpos({argv + 1, argv + argc});
  } catch (const relpos::Error& e) {
    std::fprintf(stderr, "relpos: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {  // not a bug: a size larger than the memory there is
    std::fprintf(stderr, "relpos: %s\n", relpos::kHostOutOfMemory);
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {  // a path the system refuses
    std::fprintf(stderr, "relpos: %s\n", relpos::describe_filesystem_error(e).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "relpos: internal error: %s\n", e.what());
    return 1;
  }
}
