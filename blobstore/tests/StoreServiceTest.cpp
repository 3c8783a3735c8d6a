#include "service/StoreService.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/MemoryStore.h>
#include <blobstreaming/common/Error.h>

#define BOOST_TEST_MODULE StoreService
#include <boost/test/unit_test.hpp>

#include "ServerTestSupport.h"
#include "TestSupport.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

using namespace blobstreaming;
using namespace blobstreaming::service;
using namespace std::chrono_literals;

using blobstreaming::server::test::code_of;
using blobstreaming::server::test::message_of;
using blobstreaming::test::random_bytes;
using blobstreaming::test::TempDir;

namespace {

/// The store, the tables and the access list a daemon gives its service;
/// alice may read, write and delete, bob and the store s2 only read, carol
/// nothing.
struct Fixture {
    explicit Fixture(server::ReservationLimits limits = {}, bool enforce = true)
        : reservations(60s, {}, limits), access(access_list(enforce))
    {}

    static server::AccessList access_list(bool enforce)
    {
        server::AccessList list;
        list.allow(server::Permission::read, "CN=alice", "allow-read");
        list.allow(server::Permission::write, "CN=alice", "allow-write");
        list.allow(server::Permission::remove, "CN=alice", "allow-delete");
        list.allow(server::Permission::read, "CN=bob", "allow-read");
        list.allow(server::Permission::read, "CN=s2", "allow-read");
        list.enforce(enforce);
        return list;
    }

    StoreServiceOptions options()
    {
        StoreServiceOptions o;
        o.store_name = "s1";
        o.access = &access;
        return o;
    }

    /// A committed Blob of `bytes`, written straight into the store.
    BlobInfo put(const std::string& name, const std::vector<std::uint8_t>& bytes)
    {
        auto r = store.reserve(name, bytes.size());
        BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
        return r->commit();
    }

    MemoryStore store{MemoryStore::Options{1u << 20}};
    server::ReservationTable reservations;
    server::TicketRegistry tickets{30s};
    server::LiveAccessList access;
    StoreService service{store, reservations, tickets, options()};
    const Caller alice{"CN=alice", "CN=alice"};
    const Caller bob{"CN=bob", "CN=bob"};
    const Caller carol{"CN=carol", "CN=carol"};
};

/// The permission `f` was refused, or nullopt when it was not.
template <class F>
std::optional<server::Permission> refused(F f)
{
    try {
        f();
    } catch (const PermissionDenied& e) {
        BOOST_CHECK(e.code() == Errc::refused);
        return e.permission();
    } catch (const std::exception& e) {
        BOOST_TEST_MESSAGE("not a refusal: " << e.what());
    }
    return std::nullopt;
}

constexpr auto kRead = server::Permission::read;
constexpr auto kWrite = server::Permission::write;
constexpr auto kRemove = server::Permission::remove;

}  // namespace

BOOST_FIXTURE_TEST_CASE(each_operation_asks_for_its_own_permission, Fixture)
{
    put("CT.1", random_bytes(10));
    const auto id = service.reserve(alice, "CT.2", 10, false).id;
    BOOST_CHECK(refused([&] { service.contains(carol, "CT.1"); }) == kRead);
    BOOST_CHECK(refused([&] { service.stat(carol, "CT.1"); }) == kRead);
    BOOST_CHECK(refused([&] { service.list(carol); }) == kRead);
    BOOST_CHECK(refused([&] { service.verify(carol, "CT.1"); }) == kRead);
    BOOST_CHECK(refused([&] { service.send(carol, "CT.1", 0, 0, {}); }) == kRead);
    BOOST_CHECK(refused([&] { service.grant_read(carol, "CT.1", "CN=s2", {}); }) == kRead);
    BOOST_CHECK(refused([&] {
                    service.grant_reads(carol, {"CT.1"}, "CN=s2", [] { return StoreService::TransferOptions{}; });
                }) == kRead);
    BOOST_CHECK(refused([&] { service.local_file(carol, "CT.1"); }) == kRead);
    BOOST_CHECK(refused([&] { service.image(carol, "CT.1"); }) == kRead);
    BOOST_CHECK(refused([&] { service.images(carol, {"CT.1"}); }) == kRead);
    // bob reads but does not write or delete.
    BOOST_CHECK(!refused([&] { service.stat(bob, "CT.1"); }));
    BOOST_CHECK(refused([&] { service.reserve(bob, "CT.3", 1, false); }) == kWrite);
    BOOST_CHECK(refused([&] { service.commit(bob, id, [] { return Checksum{}; }); }) == kWrite);
    BOOST_CHECK(refused([&] { service.abort(bob, id); }) == kWrite);
    BOOST_CHECK(refused([&] { service.resumable(bob, "CT.2"); }) == kWrite);
    std::string name;
    BOOST_CHECK(refused([&] { service.recv(bob, id, 0, 0, {}, name); }) == kWrite);
    BOOST_CHECK(refused([&] { service.push(bob, "CT.3", 1, false, std::nullopt, {}); }) == kWrite);
    BOOST_CHECK(refused([&] { service.reserve_parts(bob, "CT.3", 1, false, std::nullopt); }) == kWrite);
    BOOST_CHECK(refused([&] { service.recv_part(bob, id, 0, 1, {}, name); }) == kWrite);
    BOOST_CHECK(refused([&] { service.remove(bob, "CT.1"); }) == kRemove);
    BOOST_CHECK(store.contains("CT.1"));
    // The refusal says who may not do what.
    BOOST_CHECK_EQUAL(message_of([&] { service.remove(bob, "CT.1"); }, Errc::refused, "none"),
                      "permission denied: client \"CN=bob\" may not delete");
    BOOST_CHECK(service.access_enforced());
}

BOOST_AUTO_TEST_CASE(without_an_enforced_list_everything_is_permitted)
{
    Fixture f({}, false);
    BOOST_CHECK(!f.service.access_enforced());
    f.put("CT.1", random_bytes(3));
    BOOST_CHECK_EQUAL(f.service.stat(f.carol, "CT.1").size, 3u);
    f.service.remove(f.carol, "CT.1");
    BOOST_CHECK(!f.store.contains("CT.1"));
}

BOOST_FIXTURE_TEST_CASE(another_client_cannot_use_a_reservation, Fixture)
{
    const Caller alice_elsewhere{"CN=alice", "CN=alice"};
    const Caller mallory{"CN=alice", "10.0.0.9"};  // same subject, another client (no TLS identity)
    const auto id = service.reserve(alice, "CT.1", 0, false).id;
    const std::string expected = "commit reservation " + std::to_string(id) +
                                 ": it was reserved by another client; only the client that reserved it may "
                                 "commit, abort, fill or resume it";
    BOOST_CHECK_EQUAL(
        message_of([&] { service.commit(mallory, id, [] { return Checksum{}; }); }, Errc::no_such_reservation, "none"),
        expected);
    BOOST_CHECK_EQUAL(message_of([&] { service.abort(mallory, id); }, Errc::no_such_reservation, "none"),
                      "abort reservation " + std::to_string(id) +
                          ": it was reserved by another client; only the client that reserved it may commit, "
                          "abort, fill or resume it");
    std::string name;
    BOOST_CHECK(code_of([&] { service.recv(mallory, id, 0, 0, {}, name); }) == Errc::no_such_reservation);
    BOOST_CHECK(name.empty());  // nothing of the other client's reservation is told
    BOOST_CHECK(code_of([&] { service.recv_part(mallory, id, 0, 0, {}, name); }) == Errc::no_such_reservation);
    BOOST_CHECK(code_of([&] { service.resumable(mallory, "CT.1"); }) == Errc::no_such_reservation);
    // Still there for its owner.
    BOOST_CHECK_EQUAL(reservations.open(), 1u);
    service.abort(alice_elsewhere, id);
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
    BOOST_CHECK(code_of([&] { service.abort(alice, id); }) == Errc::no_such_reservation);
}

BOOST_FIXTURE_TEST_CASE(commit_checks_the_caller_before_the_checksum, Fixture)
{
    const auto id = service.reserve(alice, "CT.1", 0, false).id;
    bool looked = false;
    const Caller other{"CN=alice", "elsewhere"};
    BOOST_CHECK(code_of([&] {
                    service.commit(other, id, [&] {
                        looked = true;
                        return Checksum{};
                    });
                }) == Errc::no_such_reservation);
    BOOST_CHECK(!looked);
    // The owner's commit of the empty Blob with its checksum.
    const BlobInfo empty = put("empty", {});
    const BlobInfo info = service.commit(alice, id, [&] { return empty.checksum; });
    BOOST_CHECK_EQUAL(info.name, "CT.1");
    BOOST_CHECK_EQUAL(info.checksum.text(), empty.checksum.text());
    BOOST_CHECK(store.contains("CT.1"));
}

BOOST_AUTO_TEST_CASE(reservations_are_bounded_per_client)
{
    server::ReservationLimits limits;
    limits.per_client = 1;
    Fixture f(limits);
    f.service.reserve(f.alice, "CT.1", 1, false);
    const std::string msg =
        message_of([&] { f.service.reserve(f.alice, "CT.2", 1, false); }, Errc::limit_reached, "none");
    BOOST_CHECK_MESSAGE(msg.find("reserve \"CT.2\"") == 0, msg);
    // push opens a reservation as reserve does.
    BOOST_CHECK(code_of([&] { f.service.push(f.alice, "CT.3", 1, false, std::nullopt, {}); }) == Errc::limit_reached);
    BOOST_CHECK_EQUAL(f.reservations.open(), 1u);
}

BOOST_FIXTURE_TEST_CASE(reserve_creates_or_overwrites, Fixture)
{
    put("CT.1", random_bytes(10));
    BOOST_CHECK(code_of([&] { service.reserve(alice, "CT.1", 5, false); }) == Errc::already_exists);
    const auto opened = service.reserve(alice, "CT.1", 5, true);
    BOOST_CHECK_EQUAL(opened.name, "CT.1");
    BOOST_CHECK_EQUAL(opened.size, 5u);
    BOOST_CHECK_EQUAL(opened.received, 0u);
    BOOST_CHECK_EQUAL(opened.client, "CN=alice");
    BOOST_CHECK(opened.checksum == kDefaultChecksum);
    BOOST_CHECK(code_of([&] { service.reserve(alice, "bad/../name", 5, false); }) == Errc::invalid_name);
    BOOST_CHECK(code_of([&] { service.reserve(alice, "CT.9", 2u << 20, false); }) == Errc::out_of_space);
}

BOOST_FIXTURE_TEST_CASE(a_pull_ticket_is_bound_to_the_version_and_the_caller, Fixture)
{
    const BlobInfo info = put("CT.1", random_bytes(100));
    auto control = std::make_shared<server::TransferControl>();
    StoreService::TransferOptions options;
    options.inactivity_timeout = 1500ms;
    options.control = control;
    const auto issued = service.send(bob, "CT.1", 10, 0, options);
    BOOST_CHECK(issued.binding.direction == protocol::FrameType::pull);
    BOOST_CHECK_EQUAL(issued.binding.offset, 10u);
    BOOST_CHECK_EQUAL(issued.binding.length, 90u);
    BOOST_REQUIRE(issued.binding.version);
    BOOST_CHECK(same_version(*issued.binding.version, info));
    BOOST_CHECK_EQUAL(issued.binding.client, "CN=bob");
    BOOST_CHECK(issued.binding.control == control);
    BOOST_CHECK(issued.binding.inactivity_timeout == 1500ms);
    const auto registered = tickets.inspect(issued.id);
    BOOST_CHECK_EQUAL(registered.client, "CN=bob");
    BOOST_CHECK(same_version(*registered.version, info));
    BOOST_CHECK(service.withdraw(issued.id));
    BOOST_CHECK(!service.withdraw(issued.id));
}

BOOST_FIXTURE_TEST_CASE(range_errors_say_what_is_allowed, Fixture)
{
    put("CT.1", random_bytes(5));
    BOOST_CHECK_EQUAL(message_of([&] { service.send(bob, "CT.1", 10, 10, {}); }, Errc::invalid_range, "none"),
                      "send \"CT.1\": range [10, 20) is outside the blob of 5 bytes");
    BOOST_CHECK_EQUAL(
        message_of([&] { service.send(bob, "CT.1", 1, ~std::uint64_t{0}, {}); }, Errc::invalid_range, "none"),
        "send \"CT.1\": range [1, beyond 2^64) is outside the blob of 5 bytes");
    BOOST_CHECK_EQUAL(message_of([&] { service.send(bob, "CT.2", 0, 0, {}); }, Errc::no_such_blob, "none").empty(),
                      false);
    BOOST_CHECK(code_of([&] { service.send(bob, "", 0, 0, {}); }) == Errc::invalid_name);
    // A push continues where the reservation stands, to the end.
    const auto id = service.reserve(alice, "CT.3", 8, false).id;
    std::string name;
    BOOST_CHECK_EQUAL(message_of([&] { service.recv(alice, id, 2, 6, {}, name); }, Errc::invalid_range, "none"),
                      "recv into reservation " + std::to_string(id) +
                          " (\"CT.3\", 8 bytes, 0 received): a push continues at offset 0 to the end of the Blob "
                          "(length 8), not [2, 8)");
    BOOST_CHECK_EQUAL(name, "CT.3");
    const auto issued = service.recv(alice, id, 0, 0, {}, name);
    BOOST_CHECK(issued.binding.direction == protocol::FrameType::push);
    BOOST_CHECK_EQUAL(issued.binding.reservation, id);
    BOOST_CHECK_EQUAL(issued.binding.length, 8u);
    BOOST_CHECK_EQUAL(issued.binding.client, "CN=alice");
}

BOOST_FIXTURE_TEST_CASE(a_read_grant_is_bound_to_its_reader, Fixture)
{
    const BlobInfo info = put("CT.1", random_bytes(7));
    const auto granted = service.grant_read(bob, "CT.1", "CN=s2", {});
    BOOST_CHECK_EQUAL(granted.binding.client, "CN=s2");
    BOOST_CHECK_EQUAL(granted.binding.length, 7u);
    BOOST_CHECK_EQUAL(message_of([&] { service.grant_read(bob, "CT.1", "", {}); }, Errc::invalid_argument, "none"),
                      "grantRead \"CT.1\": no reader named (the certificate subject of the store that copies, its "
                      "BlobStore::identity)");
    // Without TLS nobody has a subject: the ticket is the capability.
    const Caller plain{"", "127.0.0.1"};
    Fixture open({}, false);
    open.put("CT.1", random_bytes(7));
    BOOST_CHECK_EQUAL(open.service.grant_read(plain, "CT.1", "CN=s2", {}).binding.client, "");
    // Only the reader may use the grant.
    std::string name;
    const Caller reader{"CN=s2", "CN=s2"};
    BOOST_CHECK(!service.granted_file(reader, granted.id, name));  // a memory store keeps no files
    BOOST_CHECK_EQUAL(name, "CT.1");
    const std::string tag = protocol::ticket_tag(granted.id);
    BOOST_CHECK_EQUAL(message_of([&] { service.granted_file(bob, granted.id, name); }, Errc::refused, "none"),
                      "findGrantedFile: ticket " + tag + " was issued to another client");
    // A pull ticket of a part is no grant.
    const auto part = service.send(reader, "CT.1", 1, 2, {});
    BOOST_CHECK_EQUAL(message_of([&] { service.granted_file(reader, part.id, name); }, Errc::refused, "none"),
                      "findGrantedFile: ticket " + protocol::ticket_tag(part.id) +
                          " is not a read grant of a whole Blob");
    const auto images = service.granted_images(reader, {granted.id, part.id});
    BOOST_CHECK(!images.at(0) && !images.at(1));
    (void)info;
}

BOOST_FIXTURE_TEST_CASE(batches_are_bounded, Fixture)
{
    put("CT.1", random_bytes(3));
    const std::vector<std::string> many(kMaxBatch + 1, "CT.1");
    const auto options = [] { return StoreService::TransferOptions{}; };
    BOOST_CHECK_EQUAL(
        message_of([&] { service.grant_reads(bob, many, "CN=s2", options); }, Errc::limit_reached, "none"),
        "grantReads: 1025 names; at most 1024 per call");
    BOOST_CHECK_EQUAL(message_of([&] { service.images(bob, many); }, Errc::limit_reached, "none"),
                      "shareImages: 1025 names; at most 1024 per call");
    BOOST_CHECK_EQUAL(message_of([&] { service.granted_images(bob, std::vector<protocol::TicketId>(1025)); },
                                 Errc::limit_reached, "none"),
                      "shareGrantedImages: 1025 grants; at most 1024 per call");
    // Each name of a batch has its own outcome.
    const auto outcomes = service.grant_reads(bob, {"CT.1", "CT.2", "bad name"}, "CN=s2", options);
    BOOST_REQUIRE_EQUAL(outcomes.size(), 3u);
    BOOST_CHECK(outcomes[0].issued && outcomes[0].code == Errc::ok);
    BOOST_CHECK(!outcomes[1].issued && outcomes[1].code == Errc::no_such_blob);
    BOOST_CHECK(!outcomes[2].issued && outcomes[2].code == Errc::invalid_name);
    BOOST_CHECK_MESSAGE(outcomes[2].message.find("grantRead \"bad name\": ") == 0, outcomes[2].message);
    BOOST_CHECK_EQUAL(tickets.pending(), 1u);
}

BOOST_FIXTURE_TEST_CASE(push_opens_and_tickets_in_one_and_leaves_nothing_on_failure, Fixture)
{
    auto control = std::make_shared<server::TransferControl>();
    StoreService::TransferOptions options;
    options.control = control;
    const auto pushed = service.push(alice, "CT.1", 9, false, ChecksumAlgorithm::sha256, options);
    BOOST_CHECK(pushed.reservation.checksum == ChecksumAlgorithm::sha256);
    BOOST_CHECK_EQUAL(pushed.ticket.binding.reservation, pushed.reservation.id);
    BOOST_CHECK(pushed.ticket.binding.checksum == ChecksumAlgorithm::sha256);
    BOOST_CHECK_EQUAL(pushed.ticket.binding.length, 9u);
    // abort() reaches the push through its control.
    service.abort(alice, pushed.reservation.id);
    BOOST_CHECK(!control->cancelled);  // still waiting: aborted, not cancelled
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
    BOOST_CHECK(code_of([&] { service.push(alice, "CT.2", 2u << 20, false, std::nullopt, {}); }) == Errc::out_of_space);
    BOOST_CHECK_EQUAL(reservations.open(), 0u);
}

BOOST_FIXTURE_TEST_CASE(parts_are_checked_with_crc32c_only, Fixture)
{
    BOOST_CHECK_EQUAL(message_of([&] { service.reserve_parts(alice, "CT.1", 10, false, ChecksumAlgorithm::sha256); },
                                 Errc::invalid_argument, "none"),
                      "reserveParts \"CT.1\": a Blob filled in parts is checked with CRC32C, which combines from "
                      "the parts; sha256 does not (push it over one stream)");
    const auto opened = service.reserve_parts(alice, "CT.1", 10, false, ChecksumAlgorithm::crc32c);
    std::string name;
    const auto part = service.recv_part(alice, opened.id, 4, 6, {}, name);
    BOOST_CHECK_EQUAL(name, "CT.1");
    BOOST_CHECK(part.binding.part);
    BOOST_CHECK_EQUAL(part.binding.offset, 4u);
    BOOST_CHECK_EQUAL(part.binding.length, 6u);
    BOOST_CHECK(code_of([&] { service.recv_part(alice, opened.id, 8, 6, {}, name); }) == Errc::invalid_range);
}

BOOST_FIXTURE_TEST_CASE(resumable_finds_the_callers_interrupted_push, Fixture)
{
    const auto id = service.reserve(alice, "CT.1", 10, false).id;
    auto r = reservations.claim(id);
    BOOST_REQUIRE(!r->write("abcd", 4));
    reservations.park(id, std::move(r));
    const auto resumed = service.resumable(alice, "CT.1");
    BOOST_CHECK_EQUAL(resumed.id, id);
    BOOST_CHECK_EQUAL(resumed.received, 4u);
    std::string name;
    const auto rest = service.recv(alice, id, 4, 6, {}, name);
    BOOST_CHECK_EQUAL(rest.binding.offset, 4u);
    BOOST_CHECK_EQUAL(rest.binding.length, 6u);
}

BOOST_AUTO_TEST_CASE(a_file_store_offers_committed_files_but_not_empty_ones)
{
    TempDir dir;
    FileStore store(dir.path());
    server::ReservationTable reservations(60s);
    server::TicketRegistry tickets(30s);
    StoreServiceOptions options;
    options.store_name = "f1";
    StoreService service(store, reservations, tickets, options);
    const Caller caller{"", "local"};
    auto r = store.reserve("CT.1", 4);
    BOOST_REQUIRE(!r->write("abcd", 4));
    const BlobInfo info = r->commit();
    store.reserve("empty", 0)->commit();
    const auto local = service.local_file(caller, "CT.1");
    BOOST_REQUIRE(local);
    BOOST_CHECK(same_version(local->info, info));
    BOOST_CHECK(std::filesystem::exists(local->path));
    BOOST_CHECK(!service.local_file(caller, "empty"));
    BOOST_CHECK(code_of([&] { service.local_file(caller, "CT.2"); }) == Errc::no_such_blob);
    BOOST_CHECK(code_of([&] { service.local_file(caller, "a b"); }) == Errc::invalid_name);
    BOOST_CHECK(!service.image(caller, "CT.1"));  // no image shelf
    const auto status = service.status();
    BOOST_CHECK(status.local_files);
    BOOST_CHECK(!status.read_through);
    BOOST_CHECK_EQUAL(status.kind, "file");
    BOOST_CHECK_EQUAL(status.usage.blob_count, 2u);

    // --no-local: nothing offered, but a missing name is still missing.
    options.local_fast_path = false;
    StoreService closed(store, reservations, tickets, options);
    BOOST_CHECK(!closed.local_file(caller, "CT.1"));
    BOOST_CHECK(code_of([&] { closed.local_file(caller, "CT.2"); }) == Errc::no_such_blob);
    BOOST_CHECK(!closed.status().local_files);
}
