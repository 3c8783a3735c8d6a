// blob-dicomd's access decisions (DicomSecurity.h) without a gateway: the
// --peer and --peer-subject syntax and its errors, rights_of for AE titles,
// hosts (an address, a name resolved at construction, *) and certificate
// subjects, both lists combined, and the move destinations.
#include "DicomSecurity.h"

#include "GatewayOptions.h"

#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE DicomSecurityTest
#include <boost/test/unit_test.hpp>

#include <string>

using namespace blobstreaming;
using namespace blobstreaming::dicom;

namespace {

std::string error_of(const std::string& value, bool subject = false)
{
    try {
        if (subject) parse_subject_rule(value);
        else parse_peer_rule(value);
    } catch (const Error& e) {
        BOOST_CHECK(e.code() == Errc::invalid_argument);
        return e.what();
    }
    return "(accepted)";
}

bool contains(const std::string& text, const std::string& part)
{
    if (text.find(part) != std::string::npos) return true;
    BOOST_TEST_MESSAGE("\"" << part << "\" not in \"" << text << "\"");
    return false;
}

}  // namespace

BOOST_AUTO_TEST_CASE(peer_syntax)
{
    const PeerRule r = parse_peer_rule("CT1@10.1.2.3=store,query,move:PACS+WS1");
    BOOST_CHECK_EQUAL(r.ae, "CT1");
    BOOST_CHECK_EQUAL(r.host, "10.1.2.3");
    BOOST_CHECK(r.rights.store && r.rights.query && !r.rights.retrieve && r.rights.move);
    BOOST_CHECK_EQUAL(r.rights.text(), "store,query,move:PACS+WS1");
    BOOST_CHECK(r.rights.may_move_to("PACS") && r.rights.may_move_to("WS1 ") && !r.rights.may_move_to("OTHER"));
    // "move" alone: any destination, also when a list came first.
    BOOST_CHECK(parse_peer_rule("A@*=move:PACS,move").rights.may_move_to("ANY"));
    BOOST_CHECK(parse_peer_rule("A@*=move,move:PACS").rights.may_move_to("ANY"));
    BOOST_CHECK(!parse_peer_rule("A@*=store").rights.may_move_to("PACS"));

    BOOST_CHECK(contains(error_of("CT1"), "--peer CT1: no =RIGHTS (expected AE@HOST=RIGHTS"));
    BOOST_CHECK(contains(error_of("CT1=store"), "--peer CT1=store: no @HOST"));
    BOOST_CHECK(contains(error_of("CT1@=store"), "--peer CT1@=store: empty HOST"));
    BOOST_CHECK(contains(error_of("@h=store"), "AE title \"\": expected 1 to 16 characters"));
    BOOST_CHECK(contains(error_of("CT1@h=store,"), "unknown right \"\""));
    BOOST_CHECK(contains(error_of("CT1@h=Store"), "--peer CT1@h=Store: unknown right \"Store\"; expected a comma list "
                                                  "of store, query, retrieve, move"));
    BOOST_CHECK(contains(error_of("CT1@h=move:"), "move destination \"\": expected 1 to 16 characters"));
    BOOST_CHECK(contains(error_of("CT1@a b=store"), "host \"a b\" is not an address, a host name or *"));
    BOOST_CHECK(contains(error_of("store", true), "--peer-subject store: no SUBJECT=RIGHTS"));
    BOOST_CHECK(contains(error_of("modality1=store", true), "subject \"modality1\" has no attribute"));
    const SubjectRule s = parse_subject_rule("CN=modality1,O=Radiology=store");
    BOOST_CHECK_EQUAL(s.subject, "CN=modality1,O=Radiology");
    BOOST_CHECK_EQUAL(s.rights.text(), "store");
}

BOOST_AUTO_TEST_CASE(open_port)
{
    GatewayOptions o;
    const DicomSecurity security(o);
    BOOST_CHECK(security.open());
    BOOST_CHECK(!security.checks_called_ae());
    const auto r = security.rights_of("ANYONE", "10.9.9.9", "");
    BOOST_REQUIRE(r);
    BOOST_CHECK_EQUAL(r->text(), "store,query,retrieve,move");
}

BOOST_AUTO_TEST_CASE(ae_list)
{
    GatewayOptions o;
    o.peers = {parse_peer_rule("CT1@127.0.0.1=store"), parse_peer_rule("CT1@localhost=query"),
               parse_peer_rule("WS1@*=retrieve,move:WS1"), parse_peer_rule("FAR@10.0.0.3=store")};
    const DicomSecurity security(o);
    BOOST_CHECK(security.checks_called_ae());
    std::string why;
    const auto ct = security.rights_of("CT1 ", "127.0.0.1", "", &why);
    BOOST_REQUIRE(ct);
    BOOST_CHECK_EQUAL(ct->text(), "store,query");  // two rules of CT1 match 127.0.0.1
    BOOST_CHECK(!security.rights_of("CT1", "127.0.0.2", "", &why));
    BOOST_CHECK_EQUAL(why, "calling AE title \"CT1\" may not connect from 127.0.0.2 (--peer)");
    BOOST_CHECK(!security.rights_of("CT2", "127.0.0.1", "", &why));
    BOOST_CHECK_EQUAL(why, "calling AE title \"CT2\" is not in the allow-list (--peer)");
    const auto ws = security.rights_of("WS1", "192.168.7.7", "");
    BOOST_REQUIRE(ws);
    BOOST_CHECK(ws->retrieve && !ws->query && ws->may_move_to("WS1") && !ws->may_move_to("CT1"));
    BOOST_CHECK(!security.rights_of("ct1", "127.0.0.1", ""));  // AE titles are case-sensitive
    BOOST_CHECK(security.describe().find("CT1@localhost(127.0.0.1)=query") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(subjects_and_both_lists)
{
    GatewayOptions o;
    o.peer_subjects = {parse_subject_rule("CN=ct1=store,move:PACS+WS1"), parse_subject_rule("CN=viewer=query")};
    {
        const DicomSecurity security(o);
        std::string why;
        BOOST_CHECK(!security.rights_of("ANY", "127.0.0.1", "CN=other", &why));
        BOOST_CHECK_EQUAL(why, "certificate subject \"CN=other\" is not in the allow-list (--peer-subject)");
        BOOST_CHECK(!security.rights_of("ANY", "127.0.0.1", ""));
        BOOST_CHECK_EQUAL(security.rights_of("ANY", "127.0.0.1", "CN=viewer")->text(), "query");
    }
    o.peers = {parse_peer_rule("CT1@*=store,query,move:WS1+CT9")};
    const DicomSecurity security(o);
    // In both lists: what both allow.
    const auto both = security.rights_of("CT1", "127.0.0.1", "CN=ct1");
    BOOST_REQUIRE(both);
    BOOST_CHECK_EQUAL(both->text(), "store,move:WS1");
    // In one list only: rejected.
    BOOST_CHECK(!security.rights_of("CT1", "127.0.0.1", "CN=nobody"));
    BOOST_CHECK(!security.rights_of("CT2", "127.0.0.1", "CN=ct1"));
    // CN=viewer may query, and so may CT1: query.
    BOOST_CHECK_EQUAL(security.rights_of("CT1", "127.0.0.1", "CN=viewer")->text(), "query");
}

BOOST_AUTO_TEST_CASE(unresolvable_host)
{
    GatewayOptions o;
    o.peers = {parse_peer_rule("CT1@no-such-host.invalid=store")};
    try {
        const DicomSecurity security(o);
        BOOST_FAIL("an unresolvable host was accepted");
    } catch (const Error& e) {
        BOOST_CHECK(contains(e.what(), "--peer CT1@no-such-host.invalid=store: host \"no-such-host.invalid\" does "
                                       "not resolve to an IPv4 address"));
    }
}
