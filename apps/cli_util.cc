#include "apps/cli_util.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <iostream>

namespace devplace::cli {

void Check(const Status& status) {
  if (!status.ok()) throw CliError(status.error().message);
}

void PrintJson(const nlohmann::json& object) { std::cout << object.dump(2) << std::endl; }

std::string ShortenNumbers(const std::string& text) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t end = i;
    while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
    if (end == i) {
      out += text[i++];
      continue;
    }
    const std::string number = text.substr(i, end - i);
    if (number.size() > 15) {
      char shortened[32];
      std::snprintf(shortened, sizeof shortened, "%.6g", std::strtod(number.c_str(), nullptr));
      out += shortened;
    } else {
      out += number;
    }
    i = end;
  }
  return out;
}

}  // namespace devplace::cli
