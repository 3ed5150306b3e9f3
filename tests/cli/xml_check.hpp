// Test support: a small XML 1.0 well-formedness checker (prolog, one root element, balanced
// tags, quoted unique attributes, no raw '<' or '&' in text or attribute values, only the five
// predefined entities and character references, comments, no control characters), enough to
// prove junit.xml parses in any JUnit consumer. No XML library is among the dependencies.
#pragma once

#include <string>
#include <vector>

namespace divcheck::testing {

// "" when well-formed, else what is wrong and where (byte offset).
std::string xml_wellformedness_error(const std::string& doc);

// Number of start tags (including self-closing) named `name`.
int count_elements(const std::string& doc, const std::string& name);

}  // namespace divcheck::testing
