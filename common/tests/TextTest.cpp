#include <blobstreaming/common/Text.h>

#define BOOST_TEST_MODULE Text
#include "TestSupport.h"

using namespace blobstreaming;

BOOST_AUTO_TEST_CASE(utf8_is_kept_and_other_bytes_are_escaped)
{
    BOOST_CHECK(valid_utf8("M\xc3\xbcller \xe5\xb1\xb1\xe7\x94\xb0 \xf0\x9f\x98\x80"));
    BOOST_CHECK_EQUAL(utf8_escaped("M\xc3\xbcller"), "M\xc3\xbcller");
    BOOST_CHECK_EQUAL(utf8_escaped("M\xfcller"), "M\\xFCller");             // Latin-1
    BOOST_CHECK_EQUAL(utf8_escaped("\xc0\xaf"), "\\xC0\\xAF");               // overlong '/'
    BOOST_CHECK_EQUAL(utf8_escaped("\xed\xa0\x80"), "\\xED\\xA0\\x80");      // a surrogate
    BOOST_CHECK_EQUAL(utf8_escaped("\xf4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // above U+10FFFF
    BOOST_CHECK_EQUAL(utf8_escaped("ab\xe5\xb1"), "ab\\xE5\\xB1");          // cut short
    BOOST_CHECK(valid_utf8(utf8_escaped("\xff\xfe\x80")));
}

BOOST_AUTO_TEST_CASE(printable_shows_control_characters)
{
    BOOST_CHECK_EQUAL(printable("Chest\nFORGED\tROW\r"), "Chest\\nFORGED\\tROW\\r");
    BOOST_CHECK_EQUAL(printable("\x1b[2J\x07\x7f"), "\\x1b[2J\\x07\\x7f");
    BOOST_CHECK_EQUAL(printable(std::string("a\0b", 3)), "a\\x00b");
    BOOST_CHECK_EQUAL(printable("\xc2\x9b" "31m"), "\\u009b31m");  // C1 CSI
    BOOST_CHECK_EQUAL(printable("CT\\MR \xc3\xbc\xc2\xa0"), "CT\\MR \xc3\xbc\xc2\xa0");  // kept: '\', ü, NBSP
    BOOST_CHECK_EQUAL(printable("M\xfcller"), "M\\xFCller");
}
