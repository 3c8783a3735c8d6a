#include "servants/BlobTransporter_i.h"

#define BOOST_TEST_MODULE BlobTransporterServant
#include <boost/test/unit_test.hpp>

#include "ServantTestSupport.h"

#include <blobstreaming/transporter/corba/Exceptions.h>

#include <string>

using namespace blobstreaming;
using namespace blobstreaming::corba;
using namespace blobstreaming::corba::test;

BOOST_TEST_GLOBAL_FIXTURE(Orb);

namespace {

struct Fixture : Daemon {
    explicit Fixture(bool enforce = false) : Daemon(enforce), servant(new BlobTransporter_i(*context, nullptr)) {}
    PortableServer::Servant_var<BlobTransporter_i> servant;
    const BlobStreaming::TimeValue no_timeout{0, 0};
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(send_issues_a_ticket_of_the_version_or_raises, Fixture)
{
    put("CT.1", 100);
    BlobStreaming::TransferTicket_var ticket =
        servant->send("CT.1", 0, 40, true, BlobStreaming::TimeValue{2, 0}, BlobStreaming::QUEUE_NOTIFICATIONS);
    BOOST_CHECK_EQUAL(ticket->offset, 40u);
    BOOST_CHECK_EQUAL(ticket->length, 60u);
    BOOST_CHECK_EQUAL(ticket->version.size, 100u);
    BOOST_CHECK_EQUAL(std::string(ticket->endpoint.host.in()), "127.0.0.1");
    BOOST_CHECK_EQUAL(ticket->endpoint.port, 4242);
    BOOST_CHECK_EQUAL(ticket->lifetime.seconds, 30u);
    BOOST_CHECK_EQUAL(tickets.pending(), 1u);
    try {
        servant->send("CT.1", 10, 95, false, no_timeout, BlobStreaming::IGNORE_NOTIFICATIONS);
        BOOST_ERROR("no InvalidRange");
    } catch (const BlobStreaming::InvalidRange& e) {
        BOOST_CHECK_EQUAL(std::string(e.message.in()),
                          "send \"CT.1\": range [95, 105) is outside the blob of 100 bytes");
        BOOST_CHECK_EQUAL(std::string(e.name.in()), "CT.1");
        BOOST_CHECK_EQUAL(e.offset, 95u);
        BOOST_CHECK_EQUAL(e.length, 10u);
    }
    BOOST_CHECK(!idl_message<BlobStreaming::NoSuchBlob>([&] {
                     servant->send("CT.2", 0, 0, false, no_timeout, BlobStreaming::IGNORE_NOTIFICATIONS);
                 }).empty());
    BOOST_CHECK(!idl_message<BlobStreaming::InvalidName>([&] {
                     servant->send(".x", 0, 0, false, no_timeout, BlobStreaming::IGNORE_NOTIFICATIONS);
                 }).empty());
    // Cancelling withdraws it; close() is left to the POA tests (test_transporter_reclaim).
    servant->cancel(ticket->id);
    BOOST_CHECK_EQUAL(tickets.pending(), 0u);
}

BOOST_FIXTURE_TEST_CASE(pushes_raise_their_declared_exceptions, Fixture)
{
    put("CT.1", 10);
    BOOST_CHECK(!idl_message<BlobStreaming::AlreadyExists>([&] {
                     servant->push("CT.1", 5, false, BlobStreaming::CHECKSUM_STORE_DEFAULT, false, no_timeout,
                                   BlobStreaming::IGNORE_NOTIFICATIONS);
                 }).empty());
    BOOST_CHECK(!idl_message<BlobStreaming::OutOfSpace>([&] {
                     servant->push("CT.2", 2u << 20, false, BlobStreaming::CHECKSUM_STORE_DEFAULT, false, no_timeout,
                                   BlobStreaming::IGNORE_NOTIFICATIONS);
                 }).empty());
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
    BlobStreaming::PushGrant_var grant = servant->push("CT.2", 8, false, BlobStreaming::CHECKSUM_SHA256, false,
                                                       no_timeout, BlobStreaming::IGNORE_NOTIFICATIONS);
    BOOST_CHECK_EQUAL(grant->ticket.length, 8u);
    BOOST_CHECK(grant->ticket.direction == BlobStreaming::PUSH);
    BOOST_CHECK(grant->space.checksum == BlobStreaming::CHECKSUM_SHA256);
    // recv of that reservation past where it stands.
    try {
        servant->recv(grant->space.id, 4, 4, false, no_timeout, BlobStreaming::IGNORE_NOTIFICATIONS);
        BOOST_ERROR("no InvalidRange");
    } catch (const BlobStreaming::InvalidRange& e) {
        BOOST_CHECK_EQUAL(std::string(e.name.in()), "CT.2");
        BOOST_CHECK_EQUAL(std::string(e.message.in()),
                          "recv into reservation " + std::to_string(grant->space.id) +
                              " (\"CT.2\", 8 bytes, 0 received): a push continues at offset 0 to the end of the "
                              "Blob (length 8), not [4, 8)");
    }
    try {
        servant->recv(999, 0, 0, false, no_timeout, BlobStreaming::IGNORE_NOTIFICATIONS);
        BOOST_ERROR("no NoSuchReservation");
    } catch (const BlobStreaming::NoSuchReservation& e) {
        BOOST_CHECK_EQUAL(e.id, 999u);
    }
    BOOST_CHECK(!idl_message<BlobStreaming::NoSuchReservation>([&] {
                     servant->recvPart(999, 1, 0, false, no_timeout);
                 }).empty());
    BOOST_CHECK_EQUAL(idl_message<BlobStreaming::TransferFailed>(
                          [&] { servant->reserveParts("CT.3", 8, false, BlobStreaming::CHECKSUM_SHA256); }),
                      "reserveParts \"CT.3\": a Blob filled in parts is checked with CRC32C, which combines from the "
                      "parts; sha256 does not (push it over one stream)");
}

BOOST_FIXTURE_TEST_CASE(grants_raise_or_report_per_name, Fixture)
{
    put("CT.1", 10);
    BlobStreaming::TransferTicket_var grant = servant->grantRead("CT.1", "");
    BOOST_CHECK_EQUAL(grant->length, 10u);
    BOOST_CHECK(!idl_message<BlobStreaming::NoSuchBlob>([&] { servant->grantRead("CT.2", ""); }).empty());
    BlobStreaming::NameSeq names;
    names.length(2);
    names[0] = "CT.1";
    names[1] = "CT.2";
    BlobStreaming::GrantOutcomeSeq_var outcomes = servant->grantReads(names, "");
    BOOST_CHECK_EQUAL(outcomes[0].code, 0);
    BOOST_CHECK_EQUAL(outcomes[1].code, static_cast<CORBA::UShort>(Errc::no_such_blob));
    names.length(1025);
    BOOST_CHECK_EQUAL(idl_message<BlobStreaming::LimitReached>([&] { servant->grantReads(names, ""); }),
                      "grantReads: 1025 names; at most 1024 per call");
}

BOOST_AUTO_TEST_CASE(a_refused_permission_is_no_permission_with_its_minor_code)
{
    Fixture f(true);
    const CORBA::ULong read = kNoPermissionMinor + 1 + static_cast<unsigned>(server::Permission::read);
    const CORBA::ULong write = kNoPermissionMinor + 1 + static_cast<unsigned>(server::Permission::write);
    const BlobStreaming::TimeValue t{0, 0};
    BOOST_CHECK_EQUAL(
        no_permission_minor([&] { f.servant->send("CT.1", 0, 0, false, t, BlobStreaming::IGNORE_NOTIFICATIONS); }),
        read);
    BOOST_CHECK_EQUAL(no_permission_minor([&] { f.servant->grantRead("CT.1", ""); }), read);
    BOOST_CHECK_EQUAL(no_permission_minor([&] {
                          f.servant->push("CT.1", 1, false, BlobStreaming::CHECKSUM_STORE_DEFAULT, false, t,
                                          BlobStreaming::IGNORE_NOTIFICATIONS);
                      }),
                      write);
    BOOST_CHECK_EQUAL(
        no_permission_minor([&] { f.servant->recv(1, 0, 0, false, t, BlobStreaming::IGNORE_NOTIFICATIONS); }), write);
    BOOST_CHECK_EQUAL(
        no_permission_minor([&] { f.servant->reserveParts("CT.1", 1, false, BlobStreaming::CHECKSUM_CRC32C); }), write);
    BOOST_CHECK_EQUAL(no_permission_minor([&] { f.servant->recvPart(1, 1, 0, false, t); }), write);
}
