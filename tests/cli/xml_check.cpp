// Recursive-descent XML well-formedness checker for the subset of XML report writers emit.
#include "tests/cli/xml_check.hpp"

#include <cctype>
#include <set>
#include <string>

namespace divcheck::testing {

namespace {

class Checker {
 public:
  explicit Checker(const std::string& d) : d_(d) {}

  std::string run() {
    if (d_.compare(0, 5, "<?xml") == 0) {
      const auto end = d_.find("?>");
      if (end == std::string::npos) return fail("unterminated XML declaration");
      i_ = end + 2;
    }
    if (!misc()) return error_;
    if (!at('<')) return fail("no root element");
    if (!element()) return error_;
    if (!misc()) return error_;
    if (i_ != d_.size()) return fail("content after the root element");
    return "";
  }

 private:
  bool at(char c) const { return i_ < d_.size() && d_[i_] == c; }
  bool starts(const char* s) const { return d_.compare(i_, std::char_traits<char>::length(s), s) == 0; }
  bool fail_b(const std::string& why) {
    fail(why);
    return false;
  }
  std::string fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at byte " + std::to_string(i_);
    return error_;
  }
  void spaces() {
    while (i_ < d_.size() && (d_[i_] == ' ' || d_[i_] == '\n' || d_[i_] == '\t' || d_[i_] == '\r')) ++i_;
  }
  // Whitespace and comments outside the root.
  bool misc() {
    while (true) {
      spaces();
      if (starts("<!--")) {
        if (!comment()) return false;
      } else {
        return true;
      }
    }
  }
  bool comment() {
    const auto end = d_.find("-->", i_ + 4);
    if (end == std::string::npos) return fail_b("unterminated comment");
    i_ = end + 3;
    return true;
  }
  static bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
  static bool name_char(char c) {
    return name_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  }
  bool name(std::string& out) {
    if (i_ >= d_.size() || !name_start(d_[i_])) return fail_b("expected a name");
    const std::size_t s = i_;
    while (i_ < d_.size() && name_char(d_[i_])) ++i_;
    out = d_.substr(s, i_ - s);
    return true;
  }
  bool reference() {  // at '&'
    const auto semi = d_.find(';', i_);
    if (semi == std::string::npos || semi - i_ > 12) return fail_b("bare '&'");
    const std::string ref = d_.substr(i_ + 1, semi - i_ - 1);
    static const std::set<std::string> predefined{"amp", "lt", "gt", "quot", "apos"};
    bool ok = predefined.count(ref) > 0;
    if (!ok && ref.size() > 1 && ref[0] == '#') {
      ok = true;
      const bool hex = ref[1] == 'x';
      for (std::size_t k = hex ? 2 : 1; k < ref.size(); ++k)
        ok = ok && (hex ? std::isxdigit(static_cast<unsigned char>(ref[k])) : std::isdigit(static_cast<unsigned char>(ref[k])));
      ok = ok && ref.size() > (hex ? 2u : 1u);
    }
    if (!ok) return fail_b("unknown entity &" + ref + ";");
    i_ = semi + 1;
    return true;
  }
  bool char_ok(char c) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\t' && c != '\r') return fail_b("control character");
    return true;
  }
  bool attribute_value() {
    if (!at('"') && !at('\'')) return fail_b("unquoted attribute value");
    const char q = d_[i_++];
    while (i_ < d_.size() && d_[i_] != q) {
      if (d_[i_] == '<') return fail_b("'<' in an attribute value");
      if (d_[i_] == '&') {
        if (!reference()) return false;
        continue;
      }
      if (!char_ok(d_[i_])) return false;
      ++i_;
    }
    if (!at(q)) return fail_b("unterminated attribute value");
    ++i_;
    return true;
  }
  bool element() {  // at '<'
    ++i_;
    std::string tag;
    if (!name(tag)) return false;
    std::set<std::string> attrs;
    while (true) {
      const std::size_t before = i_;
      spaces();
      if (starts("/>")) {
        i_ += 2;
        return true;
      }
      if (at('>')) {
        ++i_;
        break;
      }
      if (i_ == before) return fail_b("expected whitespace before an attribute");
      std::string attr;
      if (!name(attr)) return false;
      if (!attrs.insert(attr).second) return fail_b("duplicate attribute " + attr);
      spaces();
      if (!at('=')) return fail_b("expected '=' after attribute " + attr);
      ++i_;
      spaces();
      if (!attribute_value()) return false;
    }
    // Content until the matching end tag.
    while (true) {
      if (i_ >= d_.size()) return fail_b("unclosed element <" + tag + ">");
      if (starts("</")) {
        i_ += 2;
        std::string end;
        if (!name(end)) return false;
        if (end != tag) return fail_b("</" + end + "> closes <" + tag + ">");
        spaces();
        if (!at('>')) return fail_b("expected '>'");
        ++i_;
        return true;
      }
      if (starts("<!--")) {
        if (!comment()) return false;
        continue;
      }
      if (at('<')) {
        if (!element()) return false;
        continue;
      }
      if (at('&')) {
        if (!reference()) return false;
        continue;
      }
      if (!char_ok(d_[i_])) return false;
      ++i_;
    }
  }

  const std::string& d_;
  std::size_t i_ = 0;
  std::string error_;
};

}  // namespace

std::string xml_wellformedness_error(const std::string& doc) { return Checker(doc).run(); }

int count_elements(const std::string& doc, const std::string& name) {
  int n = 0;
  for (std::size_t i = doc.find('<' + name); i != std::string::npos; i = doc.find('<' + name, i + 1)) {
    const char next = i + 1 + name.size() < doc.size() ? doc[i + 1 + name.size()] : '\0';
    if (next == ' ' || next == '>' || next == '/' || next == '\n') ++n;
  }
  return n;
}

}  // namespace divcheck::testing
