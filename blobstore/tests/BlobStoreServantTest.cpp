#include "servants/BlobStore_i.h"

#define BOOST_TEST_MODULE BlobStoreServant
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
    explicit Fixture(bool enforce = false) : Daemon(enforce), servant(new BlobStore_i(*context)) {}
    PortableServer::Servant_var<BlobStore_i> servant;
};

BlobStreaming::BlobChecksum zero_crc32c()
{
    BlobStreaming::BlobChecksum c;
    c.algorithm = BlobStreaming::CHECKSUM_CRC32C;
    c.value.length(4);
    for (CORBA::ULong i = 0; i < 4; ++i) c.value[i] = 0;
    return c;
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(the_index_answers_and_raises_its_declared_exceptions, Fixture)
{
    put("CT.1", 10);
    BlobStreaming::BlobInfo_var info = servant->stat("CT.1");
    BOOST_CHECK_EQUAL(info->size, 10u);
    BOOST_CHECK(servant->contains("CT.1"));
    BlobStreaming::BlobInfoSeq_var all = servant->list();
    BOOST_CHECK_EQUAL(all->length(), 1u);
    BOOST_CHECK_EQUAL(idl_message<BlobStreaming::NoSuchBlob>([&] { servant->stat("CT.2"); }),
                      "blob \"CT.2\" not found");
    BOOST_CHECK(idl_message<BlobStreaming::InvalidName>([&] { servant->stat(".x"); }).find("invalid blob name") == 0);
    BOOST_CHECK(!idl_message<BlobStreaming::InvalidName>([&] { servant->contains(""); }).empty());
    BOOST_CHECK(!idl_message<BlobStreaming::NoSuchBlob>([&] { servant->remove("CT.2"); }).empty());
    BOOST_CHECK(!idl_message<BlobStreaming::NoSuchBlob>([&] { servant->verify("CT.2"); }).empty());
    servant->remove("CT.1");
    BOOST_CHECK(!store.contains("CT.1"));
    BlobStreaming::StoreStatus_var status = servant->status();
    BOOST_CHECK_EQUAL(std::string(status->name.in()), "s1");
    BOOST_CHECK_EQUAL(std::string(status->kind.in()), "memory");
    BOOST_CHECK(!status->localFiles);
}

BOOST_FIXTURE_TEST_CASE(reservations_raise_their_declared_exceptions, Fixture)
{
    put("CT.1", 10);
    BOOST_CHECK(!idl_message<BlobStreaming::AlreadyExists>([&] { servant->reserve("CT.1", 5, false); }).empty());
    try {
        servant->reserve("CT.2", 2u << 20, false);
        BOOST_ERROR("no OutOfSpace");
    } catch (const BlobStreaming::OutOfSpace& e) {
        BOOST_CHECK_EQUAL(std::string(e.store.in()), "s1");
        BOOST_CHECK_EQUAL(e.requested, 2u << 20);
    }
    BOOST_CHECK(!idl_message<BlobStreaming::InvalidName>([&] { servant->reserve("", 5, false); }).empty());
    try {
        servant->commit(777, zero_crc32c());
        BOOST_ERROR("no NoSuchReservation");
    } catch (const BlobStreaming::NoSuchReservation& e) {
        BOOST_CHECK_EQUAL(e.id, 777u);
    }
    BOOST_CHECK(!idl_message<BlobStreaming::NoSuchReservation>([&] { servant->abort(777); }).empty());
    BOOST_CHECK(!idl_message<BlobStreaming::NoSuchReservation>([&] { servant->resumable("CT.3"); }).empty());
    BlobStreaming::Reservation_var r = servant->reserve("CT.3", 0, false);
    BOOST_CHECK_EQUAL(std::string(r->name.in()), "CT.3");
    // A checksum of no algorithm (the "store's default" of requests) is
    // refused as TransferFailed, naming it.
    BlobStreaming::BlobChecksum none = zero_crc32c();
    none.algorithm = BlobStreaming::CHECKSUM_STORE_DEFAULT;
    BOOST_CHECK_EQUAL(idl_message<BlobStreaming::TransferFailed>([&] {
                          servant->commit(r->id, none);
                      }).find("commit reservation " + std::to_string(r->id) + ": the checksum names no algorithm"),
                      0u);
    // The empty Blob's CRC32C is 0.
    BlobStreaming::BlobInfo_var committed = servant->commit(r->id, zero_crc32c());
    BOOST_CHECK_EQUAL(std::string(committed->name.in()), "CT.3");
}

BOOST_FIXTURE_TEST_CASE(batches_raise_limit_reached, Fixture)
{
    BlobStreaming::NameSeq names;
    names.length(1025);
    for (CORBA::ULong i = 0; i < names.length(); ++i) names[i] = "CT.1";
    BOOST_CHECK_EQUAL(idl_message<BlobStreaming::LimitReached>([&] { servant->shareImages(names); }),
                      "shareImages: 1025 names; at most 1024 per call");
    BOOST_CHECK_EQUAL(idl_message<BlobStreaming::LimitReached>([&] { servant->findLocalFiles(names); }),
                      "findLocalFiles: 1025 names; at most 1024 per call");
    BlobStreaming::TicketIdSeq grants;
    grants.length(1025);
    BOOST_CHECK_EQUAL(idl_message<BlobStreaming::LimitReached>([&] { servant->shareGrantedImages(grants); }),
                      "shareGrantedImages: 1025 grants; at most 1024 per call");
    // A memory store without a shelf offers no image and no file.
    put("CT.1", 3);
    names.length(1);
    BlobStreaming::SharedImageSeq_var images = servant->shareImages(names);
    BOOST_CHECK_EQUAL(images[0].fd, -1);
    BlobStreaming::LocalFile_var file;
    BOOST_CHECK(!servant->findLocalFile("CT.1", file.out()));
    BOOST_CHECK(!idl_message<BlobStreaming::NoSuchBlob>([&] {
                     BlobStreaming::LocalFile_var f;
                     servant->findLocalFile("CT.2", f.out());
                 }).empty());
    // In one call: an entry per name, none with a file (a missing Blob, an
    // invalid name included: no exception for one name).
    names.length(3);
    names[1] = "CT.2";
    names[2] = "../x";
    BlobStreaming::LocalFileSeq_var files = servant->findLocalFiles(names);
    BOOST_REQUIRE_EQUAL(files->length(), 3u);
    for (CORBA::ULong i = 0; i < files->length(); ++i) BOOST_CHECK_EQUAL(std::string(files[i].path.in()), "");
}

BOOST_FIXTURE_TEST_CASE(a_grant_of_no_ticket_is_refused_as_transfer_failed, Fixture)
{
    BlobStreaming::TicketId unknown{};
    BlobStreaming::LocalFile_var file;
    BOOST_CHECK(idl_message<BlobStreaming::TransferFailed>([&] {
                    servant->findGrantedFile(unknown, file.out());
                }).find("findGrantedFile: unknown ticket") == 0);
}

BOOST_AUTO_TEST_CASE(a_refused_permission_is_no_permission_with_its_minor_code)
{
    Fixture f(true);
    const CORBA::ULong read = kNoPermissionMinor + 1 + static_cast<unsigned>(server::Permission::read);
    const CORBA::ULong write = kNoPermissionMinor + 1 + static_cast<unsigned>(server::Permission::write);
    const CORBA::ULong remove = kNoPermissionMinor + 1 + static_cast<unsigned>(server::Permission::remove);
    BOOST_CHECK_EQUAL(no_permission_minor([&] { f.servant->stat("CT.1"); }), read);
    BOOST_CHECK_EQUAL(no_permission_minor([&] { f.servant->list(); }), read);
    BOOST_CHECK_EQUAL(no_permission_minor([&] { f.servant->contains("CT.1"); }), read);
    BOOST_CHECK_EQUAL(no_permission_minor([&] { f.servant->reserve("CT.1", 1, false); }), write);
    BOOST_CHECK_EQUAL(no_permission_minor([&] { f.servant->commit(1, zero_crc32c()); }), write);
    BOOST_CHECK_EQUAL(no_permission_minor([&] { f.servant->abort(1); }), write);
    BOOST_CHECK_EQUAL(no_permission_minor([&] { f.servant->remove("CT.1"); }), remove);
    BlobStreaming::NameSeq names;
    names.length(2000);  // the permission before the batch limit
    BOOST_CHECK_EQUAL(no_permission_minor([&] { f.servant->shareImages(names); }), read);
    // Who needs only a verified certificate still gets an answer.
    CORBA::String_var name = f.servant->name();
    BOOST_CHECK_EQUAL(std::string(name.in()), "s1");
    BlobStreaming::DataEndpoint_var data = f.servant->dataAddress();
    BOOST_CHECK_EQUAL(data->port, 4242);
}
