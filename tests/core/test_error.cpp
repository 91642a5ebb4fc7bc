// naming_origin: a check's error names the file whose contents failed it, once, keeping the
// component; errors that name it already, or are not "[component] ..." errors, pass unchanged.
#include "tests/harness.h"

using namespace relpos;

TEST_CASE("naming_origin: names the origin after the component, once") {
  const auto message = [](const std::function<void()>& f) {
    try {
      naming_origin("ck.h5", f);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message([] { fail("checkpoint", "parameter 'w' is missing"); }) ==
        "[checkpoint] 'ck.h5': parameter 'w' is missing");
  CHECK(message([] { fail("lm", "'ck.h5' was trained on other symbols"); }) ==
        "[lm] 'ck.h5' was trained on other symbols");
  CHECK(message([] { throw Error("no component here"); }) == "no component here");
  CHECK(message([] {}) == "no error");
  CHECK(naming_origin("x", [] { return 7; }) == 7);
  // Other exceptions are not relpos's checks: they pass untouched.
  CHECK_THROWS_AS(naming_origin("x", [] { throw std::out_of_range("map::at"); }),
                  std::out_of_range);
}
