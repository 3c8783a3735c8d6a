// The index URL as messages show it, and the query terms refused for their
// text: a NUL, a list past kMaxListValues, control characters quoted.
#include "../StudyIndex.h"

#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE QueryText
#include <boost/test/unit_test.hpp>

#include <string>

using namespace blobstreaming;
using namespace blobstreaming::dicom;

namespace {

std::string refusal(const std::vector<std::string>& terms)
{
    try {
        parse_matches(terms);
    } catch (const Error& e) {
        BOOST_CHECK(e.code() == Errc::invalid_argument);
        return e.what();
    }
    return "accepted";
}

}  // namespace

BOOST_AUTO_TEST_CASE(index_url_passwords_are_redacted)
{
    BOOST_CHECK_EQUAL(redacted_index_url("sqlite:/var/lib/index.sqlite"), "sqlite:/var/lib/index.sqlite");
    BOOST_CHECK_EQUAL(redacted_index_url("postgresql://blob@db:5432/dicom"), "postgresql://blob@db:5432/dicom");
    BOOST_CHECK_EQUAL(redacted_index_url("postgresql://blob:pw@db/dicom"), "postgresql://blob:***@db/dicom");
    BOOST_CHECK_EQUAL(redacted_index_url("postgres://blob:p@ss@db/dicom"), "postgres://blob:***@db/dicom");
    BOOST_CHECK_EQUAL(redacted_index_url("postgresql://db/dicom?user=blob&password=pw&sslmode=require"),
                      "postgresql://db/dicom?user=blob&password=***&sslmode=require");
    BOOST_CHECK_EQUAL(redacted_index_url("postgresql://db/dicom?sslpassword=pw"), "postgresql://db/dicom?sslpassword=***");
    BOOST_CHECK_EQUAL(redacted_index_url("host=db password='a b\\' c' user=blob"), "host=db password=*** user=blob");
    BOOST_CHECK_EQUAL(redacted_index_url("host=db PASSWORD = pw"), "host=db PASSWORD = ***");
}

BOOST_AUTO_TEST_CASE(terms_are_refused_for_their_text)
{
    BOOST_CHECK_EQUAL(refusal({std::string("PatientID=PAT1\0ZZZ", 18)}),
                      "find: PatientID: a NUL byte at position 4 of the value (not allowed)");
    std::string list = "CT";
    for (std::size_t i = 1; i < kMaxListValues; ++i) list += "\\MR";
    BOOST_CHECK_EQUAL(refusal({"ModalitiesInStudy=" + list}), "accepted");
    BOOST_CHECK_EQUAL(refusal({"ModalitiesInStudy=" + list + "\\OT"}),
                      "find: ModalitiesInStudy: 4097 values, at most 4096 allowed in a list");
    const std::string key = refusal({"Bogus\n=1"}), date = refusal({"StudyDate=2026\x1b[2J"});
    BOOST_CHECK_MESSAGE(key.rfind("find: unknown key \"Bogus\\n\" (keys: ", 0) == 0, key);
    BOOST_CHECK_MESSAGE(date.rfind("find: StudyDate=2026\\x1b[2J: expected a date", 0) == 0, date);
}
