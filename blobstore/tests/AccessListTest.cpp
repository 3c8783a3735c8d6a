#include "server/AccessList.h"

#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE AccessListTest
#include <boost/test/unit_test.hpp>

#include "ServerTestSupport.h"

#include <string>

using namespace blobstreaming;
using server::AccessList;
using server::Permission;
using server::test::message_of;

namespace {

std::string refusal(const AccessList& acl, const std::string& subject, Permission p)
{
    return message_of([&] { acl.require(subject, p); }, Errc::refused, "");
}

std::string bad_entry(const std::string& subject)
{
    AccessList acl;
    return message_of([&] { acl.allow(Permission::read, subject, "--allow-read"); }, Errc::invalid_argument, "");
}

}  // namespace

BOOST_AUTO_TEST_CASE(not_enforced_permits_everything)
{
    AccessList acl;
    BOOST_CHECK(acl.permits("", Permission::remove));
    BOOST_CHECK(acl.permits("CN=anyone", Permission::write));
}

BOOST_AUTO_TEST_CASE(enforced_denies_what_is_not_listed)
{
    AccessList acl;
    acl.allow(Permission::read, "CN=ws1", "--allow-read");
    acl.allow(Permission::write, "CN=modality1", "--allow-write");
    acl.enforce(true);
    BOOST_CHECK(acl.permits("CN=ws1", Permission::read));
    BOOST_CHECK(!acl.permits("CN=ws1", Permission::write));
    BOOST_CHECK(!acl.permits("CN=ws1", Permission::remove));
    BOOST_CHECK(acl.permits("CN=modality1", Permission::write));
    BOOST_CHECK(!acl.permits("CN=modality1", Permission::read));
    BOOST_CHECK(!acl.permits("CN=ws2", Permission::read));
    BOOST_CHECK_EQUAL(refusal(acl, "CN=ws1", Permission::write), "permission denied: client \"CN=ws1\" may not write");
    BOOST_CHECK_EQUAL(refusal(acl, "CN=ws1", Permission::remove),
                      "permission denied: client \"CN=ws1\" may not delete");
    BOOST_CHECK_EQUAL(refusal(acl, "", Permission::read),
                      "permission denied: a client without a verified certificate may not read");
    BOOST_CHECK_EQUAL(refusal(acl, "CN=ws1", Permission::read), "");
}

BOOST_AUTO_TEST_CASE(matching_is_exact_on_the_whole_subject)
{
    AccessList acl;
    acl.allow(Permission::read, "O=Radiology,CN=ws1", "--allow-read");
    acl.enforce(true);
    BOOST_CHECK(acl.permits("O=Radiology,CN=ws1", Permission::read));
    BOOST_CHECK(!acl.permits("CN=ws1", Permission::read));
    BOOST_CHECK(!acl.permits("O=Radiology,CN=ws1,OU=x", Permission::read));
    BOOST_CHECK(!acl.permits("o=radiology,cn=ws1", Permission::read));
}

BOOST_AUTO_TEST_CASE(wildcard_is_every_verified_client)
{
    AccessList acl;
    acl.allow(Permission::read, "*", "--allow-read");
    acl.enforce(true);
    BOOST_CHECK(acl.permits("CN=anyone", Permission::read));
    BOOST_CHECK(!acl.permits("", Permission::read));
    BOOST_CHECK(!acl.permits("CN=anyone", Permission::write));
}

BOOST_AUTO_TEST_CASE(bad_entries_are_refused_with_the_rule)
{
    const std::string rule = "is not a certificate subject (RFC 2253, e.g. CN=workstation1 or CN=ws1,O=Radiology) "
                             "nor * (every verified client)";
    BOOST_CHECK_EQUAL(bad_entry("workstation1"), "--allow-read: \"workstation1\" " + rule);
    BOOST_CHECK_EQUAL(bad_entry(""), "--allow-read: \"\" " + rule);
    BOOST_CHECK_EQUAL(bad_entry("=ws1"), "--allow-read: \"=ws1\" " + rule);
    BOOST_CHECK_EQUAL(bad_entry("CN="), "--allow-read: \"CN=\" " + rule);
    BOOST_CHECK_EQUAL(bad_entry("CN=a\nCN=b"), "--allow-read: a subject is one line of at most 1024 characters");
    BOOST_CHECK_EQUAL(bad_entry("CN=" + std::string(2000, 'x')),
                      "--allow-read: a subject is one line of at most 1024 characters");
}

BOOST_AUTO_TEST_CASE(describe_lists_every_permission)
{
    AccessList acl;
    BOOST_CHECK_EQUAL(acl.describe(), "read: none; write: none; delete: none");
    acl.allow(Permission::read, "CN=a", "x");
    acl.allow(Permission::read, "*", "x");
    acl.allow(Permission::read, "CN=a", "x");  // duplicates are kept once
    acl.allow(Permission::remove, "CN=admin", "x");
    BOOST_CHECK_EQUAL(acl.describe(), "read: CN=a, *; write: none; delete: CN=admin");
}

BOOST_AUTO_TEST_CASE(a_live_list_is_replaced_as_a_whole_and_a_held_one_stays_valid)
{
    AccessList readers;
    readers.allow(Permission::read, "CN=ws1", "--allow-read");
    readers.enforce(true);
    server::LiveAccessList live(readers);
    const auto before = live.get();
    AccessList writers;
    writers.allow(Permission::write, "CN=ws1", "--allow-write");
    writers.enforce(true);
    live.replace(writers);  // a SIGHUP reload
    BOOST_CHECK(!live.get()->permits("CN=ws1", Permission::read));
    BOOST_CHECK(live.get()->permits("CN=ws1", Permission::write));
    BOOST_CHECK(before->permits("CN=ws1", Permission::read));  // a check in progress keeps its list
}
