// The C-MOVE destination table (Destinations.h), no gateway: AET=HOST:PORT
// values parsed with DICOM's rules (AE titles without their insignificant
// spaces), each bad value refused with the value and what is allowed, an
// AE title given twice refused naming both values, a lookup of a request's
// padded Move Destination.
#include "Destinations.h"

#define BOOST_TEST_MODULE DestinationsTest
#include <boost/test/unit_test.hpp>

#include <blobstreaming/common/Error.h>

#include <string>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::dicom;

namespace {

std::string refusal(const std::string& value)
{
    try {
        parse_destination(value);
    } catch (const Error& e) {
        BOOST_CHECK(e.code() == Errc::invalid_argument);
        return e.what();
    }
    return "accepted";
}

}  // namespace

BOOST_AUTO_TEST_CASE(parses_ae_host_and_port)
{
    const Destination d = parse_destination("STORESCP=127.0.0.1:11113");
    BOOST_TEST(d.aetitle == "STORESCP");
    BOOST_TEST(d.host == "127.0.0.1");
    BOOST_TEST(d.port == 11113u);
    const Destination padded = parse_destination(" PACS 1 =pacs-1.radiology.example:104");
    BOOST_TEST(padded.aetitle == "PACS 1");
    BOOST_TEST(padded.host == "pacs-1.radiology.example");
    BOOST_TEST(parse_destination("SIXTEEN-CHARS-AE=h:65535").port == 65535u);
}

BOOST_AUTO_TEST_CASE(refuses_each_bad_value_naming_it)
{
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"PACS", "--destination \"PACS\": expected AET=HOST:PORT"},
        {"PACS=10.0.0.7", "--destination \"PACS=10.0.0.7\": expected AET=HOST:PORT: no port after the host"},
        {"=10.0.0.7:104", "AE title \"\": expected 1 to 16 characters, not only spaces"},
        {"   =10.0.0.7:104", "AE title \"   \": expected 1 to 16 characters, not only spaces"},
        {"SEVENTEEN-CHARS-X=h:104", "AE title \"SEVENTEEN-CHARS-X\": expected 1 to 16 characters"},
        {"BACK\\SLASH=h:104", "no backslash or control character"},
        {"TAB\tAE=h:104", "no backslash or control character"},
        {"PACS=:104", "host \"\": expected a host name or an IPv4 address"},
        {"PACS=bad_host:104", "host \"bad_host\": expected a host name or an IPv4 address"},
        {"PACS=-h:104", "host \"-h\""},
        {"PACS=h:0", "port \"0\": expected 1 to 65535"},
        {"PACS=h:65536", "port \"65536\": expected 1 to 65535"},
        {"PACS=h:104x", "port \"104x\": expected 1 to 65535"},
        {"PACS=h:", "port \"\": expected 1 to 65535"},
        {"PACS=h:99999999999999999999", "port \"99999999999999999999\": expected 1 to 65535"},
    };
    for (const auto& [value, expected] : cases) {
        const std::string got = refusal(value);
        BOOST_TEST_CONTEXT(value) { BOOST_TEST(got.find(expected) != std::string::npos, got); }
    }
}

BOOST_AUTO_TEST_CASE(refuses_an_ae_title_given_twice)
{
    try {
        parse_destinations({"PACS=h1:104", "WS=h2:104", " PACS=h3:105"});
        BOOST_FAIL("a duplicate AE title was accepted");
    } catch (const Error& e) {
        BOOST_TEST(std::string(e.what()) == "--destination \" PACS=h3:105\": AE title \"PACS\" is given twice (also "
                                            "\"PACS=h1:104\"): one address per move destination");
    }
}

BOOST_AUTO_TEST_CASE(finds_a_padded_move_destination)
{
    const std::vector<Destination> table = parse_destinations({"PACS=h1:104", "WS 1=h2:11112"});
    const Destination* d = find_destination(table, "WS 1            ");
    BOOST_REQUIRE(d != nullptr);
    BOOST_TEST(d->host == "h2");
    BOOST_TEST(find_destination(table, "  PACS") != nullptr);
    BOOST_TEST(find_destination(table, "pacs") == nullptr);  // AE titles are case-sensitive
    BOOST_TEST(find_destination(table, "") == nullptr);
}
