#include <blobstreaming/common/BlobName.h>

#define BOOST_TEST_MODULE BlobName
#include "TestSupport.h"

using namespace blobstreaming;

BOOST_AUTO_TEST_CASE(dicom_style_names_are_valid)
{
    for (const char* name : {"CT.1.2.840.10008.5.1.4.1.1.2", "a", "study_42-series-7", "X.dcm"})
        BOOST_CHECK_NO_THROW(validate_blob_name(name));
    BOOST_CHECK_NO_THROW(validate_blob_name(std::string(kMaxBlobNameLength, 'x')));
}

BOOST_AUTO_TEST_CASE(empty_name_is_rejected)
{
    BS_CHECK_ERROR(validate_blob_name(""), Errc::invalid_name,
                   "invalid blob name \"\": the name is empty (allowed: 1 to 200 characters of "
                   "A-Z a-z 0-9 '.' '_' '-', not starting with '.')");
}

BOOST_AUTO_TEST_CASE(parent_directory_path_is_rejected)
{
    BS_CHECK_ERROR(validate_blob_name("../x"), Errc::invalid_name,
                   "invalid blob name \"../x\": the name starts with '.'");
    BS_CHECK_ERROR(validate_blob_name("a/../x"), Errc::invalid_name, "character '/' at position 1 is not allowed");
}

BOOST_AUTO_TEST_CASE(absolute_path_is_rejected)
{
    BS_CHECK_ERROR(validate_blob_name("/etc/passwd"), Errc::invalid_name,
                   "invalid blob name \"/etc/passwd\": character '/' at position 0 is not allowed");
}

BOOST_AUTO_TEST_CASE(dot_and_dotdot_are_rejected)
{
    BS_CHECK_ERROR(validate_blob_name("."), Errc::invalid_name, "the name starts with '.'");
    BS_CHECK_ERROR(validate_blob_name(".."), Errc::invalid_name, "the name starts with '.'");
    BS_CHECK_ERROR(validate_blob_name(".hidden"), Errc::invalid_name, "the name starts with '.'");
}

BOOST_AUTO_TEST_CASE(nul_byte_is_rejected_and_shown_escaped)
{
    const std::string name("abc\0def", 7);
    BS_CHECK_ERROR(validate_blob_name(name), Errc::invalid_name,
                   "invalid blob name \"abc\\x00def\": byte 0x00 at position 3 is not allowed");
}

BOOST_AUTO_TEST_CASE(name_over_the_limit_is_rejected)
{
    BS_CHECK_ERROR(validate_blob_name(std::string(kMaxBlobNameLength + 1, 'x')), Errc::invalid_name,
                   "the name is 201 characters long (allowed: 1 to 200 characters");
}

BOOST_AUTO_TEST_CASE(backslash_space_and_non_ascii_are_rejected)
{
    BS_CHECK_ERROR(validate_blob_name("a\\b"), Errc::invalid_name, "character '\\' at position 1");
    BS_CHECK_ERROR(validate_blob_name("a b"), Errc::invalid_name, "character ' ' at position 1");
    BS_CHECK_ERROR(validate_blob_name("caf\xc3\xa9"), Errc::invalid_name, "byte 0xc3 at position 3");
}

BOOST_AUTO_TEST_CASE(long_names_are_shortened_in_messages)
{
    const std::string q = quote_name(std::string(300, 'y'));
    BOOST_TEST(q.size() == 80 + 5);
    BOOST_TEST(q.substr(q.size() - 4) == "...\"");
}
