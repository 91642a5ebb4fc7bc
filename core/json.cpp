// JSON on one line, JSON files read back (core/json.h).
#include "core/json.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>

#include "core/error.h"

namespace relpos {

std::string json_line(const Json& value) {
  const auto joined = [&](char open, char close, const auto& item) {
    std::string out(1, open);
    for (auto it = value.begin(); it != value.end(); ++it)
      out += (it == value.begin() ? "" : ", ") + item(it);
    return out + close;
  };
  if (value.is_object())
    return joined('{', '}', [](const auto& it) {
      return Json(it.key()).dump(-1, ' ', false, Json::error_handler_t::replace) + ": " +
             json_line(it.value());
    });
  if (value.is_array()) return joined('[', ']', [](const auto& it) { return json_line(*it); });
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string utf8_error(const std::string& text) {
  try {
    (void)Json(text).dump(-1, ' ', false, Json::error_handler_t::strict);
  } catch (const Json::type_error& e) {
    const std::string_view what = e.what();  // "[json.exception.type_error.316] invalid ..."
    return std::string(what.substr(what.find(']') + 2));
  }
  return {};
}

Json read_json_file(const std::string& who, const std::string& path) {
  // A folder, FIFO or device is refused before it is opened (a FIFO would block the read).
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  RELPOS_CHECK(error || std::filesystem::is_regular_file(status), who,
               "{}: cannot read: not a regular file", path);
  std::ifstream in(path);
  RELPOS_CHECK(in.good(), who, "{}: cannot open: {}", path, std::strerror(errno));
  try {
    return Json::parse(in);
  } catch (const Json::exception& e) {
    // nlohmann's text starts with its own id, "[json.exception.parse_error.101] ".
    const std::string_view what = e.what();
    const size_t id_end = what.find("] ");
    fail(who, "{}: not valid JSON: {}", path,
         id_end == std::string_view::npos ? what : what.substr(id_end + 2));
  }
}

}  // namespace relpos
