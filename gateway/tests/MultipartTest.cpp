// multipart/related (Multipart.h): media type parameters as DICOMweb clients
// write them, and the parts of a STOW-RS body: opening with its delimiter or
// with a CRLF before it (dicomweb-client), parts without headers, a close
// delimiter without a CRLF, bodies that are not whole, a part limit.
#include "web/Multipart.h"

#define BOOST_TEST_MODULE MultipartTest
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace blobstreaming::dicom::web;

BOOST_AUTO_TEST_CASE(media_type_parameters)
{
    const std::string t = "Multipart/Related; type=\"application/dicom\"; boundary=\"0f3c-41ef\"; start=x";
    BOOST_TEST(media_type(t) == "multipart/related");
    BOOST_TEST(media_parameter(t, "type") == "application/dicom");
    BOOST_TEST(media_parameter(t, "BOUNDARY") == "0f3c-41ef");
    BOOST_TEST(media_parameter(t, "start") == "x");
    BOOST_TEST(media_parameter(t, "charset") == "");
    BOOST_TEST(media_parameter("multipart/related;boundary=abc", "boundary") == "abc");
    BOOST_TEST(media_parameter("application/dicom", "type") == "");
}

BOOST_AUTO_TEST_CASE(parts_of_a_body)
{
    for (const std::string opening : {"", "\r\n", "preamble\r\n"}) {
        const std::string body = opening + "--B\r\nContent-Type: application/dicom\r\n\r\nfirst\r\n--B\r\n\r\n"
                                           "second part\r\n--B--";
        std::vector<Part> parts;
        bool too_many = true;
        BOOST_TEST(split_parts(body.data(), body.size(), "B", 10, parts, too_many) == "");
        BOOST_TEST(!too_many);
        BOOST_TEST_REQUIRE(parts.size() == 2u);
        BOOST_TEST(parts[0].content_type == "application/dicom");
        BOOST_TEST(std::string(parts[0].data, parts[0].size) == "first");
        BOOST_TEST(parts[1].content_type == "");
        BOOST_TEST(std::string(parts[1].data, parts[1].size) == "second part");
    }
}

BOOST_AUTO_TEST_CASE(bodies_that_are_not_whole_and_the_part_limit)
{
    std::vector<Part> parts;
    bool too_many = false;
    const std::string none = "no delimiter here";
    BOOST_TEST(split_parts(none.data(), none.size(), "B", 10, parts, too_many) ==
               "no delimiter \"--B\" in the body (the boundary of Content-Type)");
    const std::string cut = "--B\r\n\r\nbytes without an end";
    BOOST_TEST(split_parts(cut.data(), cut.size(), "B", 10, parts, too_many) ==
               "part 1: no delimiter after it (the body is cut short)");
    const std::string headers = "--B\r\nContent-Type: application/dicom\r\n";
    parts.clear();
    BOOST_TEST(split_parts(headers.data(), headers.size(), "B", 10, parts, too_many) ==
               "part 1: no blank line after its headers");
    const std::string three = "--B\r\n\r\n1\r\n--B\r\n\r\n2\r\n--B\r\n\r\n3\r\n--B--\r\n";
    parts.clear();
    BOOST_TEST(split_parts(three.data(), three.size(), "B", 2, parts, too_many) == "");
    BOOST_TEST(too_many);
    BOOST_TEST(parts.size() == 2u);
}

BOOST_AUTO_TEST_CASE(response_delimiters)
{
    const std::string b = new_boundary();
    BOOST_TEST(b.size() == 12u + 32u);
    BOOST_TEST(b != new_boundary());
    BOOST_TEST(part_header("X", "application/dicom", true) == "--X\r\nContent-Type: application/dicom\r\n\r\n");
    BOOST_TEST(part_header("X", "application/dicom", false) == "\r\n--X\r\nContent-Type: application/dicom\r\n\r\n");
    BOOST_TEST(close_delimiter("X") == "\r\n--X--\r\n");
}
