// A small streaming JSON writer for benchmark reports: objects, arrays,
// numbers, strings, booleans, with commas and indentation handled. Not for
// data paths (it builds a std::string).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mdcast::app::bench {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);  // inside an object, before its value
  JsonWriter& value(double v);          // non-finite numbers are written as null
  JsonWriter& value(uint64_t v);
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(unsigned v) { return value(static_cast<uint64_t>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& null();

  // key + value in one call.
  template <class T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  // key + an array of the values.
  template <class Range>
  JsonWriter& array(std::string_view k, const Range& values) {
    key(k).begin_array();
    for (const auto& v : values) value(v);
    return end_array();
  }

  [[nodiscard]] const std::string& str() const noexcept { return out_; }
  static std::string escape(std::string_view s);

 private:
  void before_value();
  JsonWriter& close(char c);
  void newline();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace mdcast::app::bench
