// Checks that the generated stubs compile and that the contract keeps the
// properties the rest of the system relies on: 64-bit sizes, typed
// exceptions carrying their context, Any support (-Wba) for exceptions, and
// the study-stable event's fields.
#include <BlobStreaming.hh>

#define BOOST_TEST_MODULE IdlContract
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

BOOST_AUTO_TEST_CASE(sizes_and_offsets_are_64_bit)
{
    static_assert(sizeof(BlobStreaming::ByteCount) == 8);
    static_assert(sizeof(BlobStreaming::ByteOffset) == 8);
    static_assert(std::is_unsigned_v<BlobStreaming::ByteCount>);
    BlobStreaming::Reservation r;
    r.size = std::uint64_t{5} << 32;  // a 20 GiB cine loop
    BOOST_TEST(r.size == 21474836480ULL);
    BlobStreaming::InvalidRange e("range", "x", std::numeric_limits<std::uint64_t>::max(), 1);
    BOOST_TEST(e.offset == std::numeric_limits<std::uint64_t>::max());
}

BOOST_AUTO_TEST_CASE(exceptions_carry_their_context)
{
    try {
        throw BlobStreaming::OutOfSpace("no room", "central", 268435456ULL);
    } catch (const BlobStreaming::OutOfSpace& e) {
        BOOST_TEST(std::string(e.store) == "central");
        BOOST_TEST(std::string(e.message) == "no room");
        BOOST_TEST(e.requested == 268435456ULL);
    }
    try {
        throw BlobStreaming::InvalidName("contains '/'", "../x");
    } catch (const CORBA::UserException& e) {
        BOOST_TEST(std::string(e._name()) == "InvalidName");
    }
}

BOOST_AUTO_TEST_CASE(exceptions_travel_in_an_any)
{
    CORBA::Any any;
    any <<= BlobStreaming::NoSuchBlob("not found", "CT.1.2.840.10008.1");
    const BlobStreaming::NoSuchBlob* out = nullptr;
    BOOST_REQUIRE(any >>= out);
    BOOST_TEST(std::string(out->name) == "CT.1.2.840.10008.1");
}

BOOST_AUTO_TEST_CASE(ticket_has_a_fixed_size_and_checksums_are_bounded)
{
    BlobStreaming::TransferTicket t;
    static_assert(sizeof(t.id) == 16);
    BlobStreaming::BlobInfo info;
    BOOST_TEST(info.checksum.value.maximum() == 32u);
    t.direction = BlobStreaming::PULL;
    BOOST_TEST(t.direction == BlobStreaming::PULL);
}

BOOST_AUTO_TEST_CASE(study_stable_events_carry_what_a_consumer_acts_on)
{
    // The store events' kinds are unchanged: study-stable is a gateway's
    // event of its own (StudyEvents, StudyEventSubscriber).
    static_assert(BlobStreaming::EVENT_REMOVED == 1);
    BlobStreaming::StudyStableEvent e;
    e.timeNs = e.lastInstanceNs = std::uint64_t{1795753190895511217};  // ns since 1970 need 64 bits
    static_assert(sizeof(e.timeNs) == 8 && sizeof(e.lastInstanceNs) == 8 && sizeof(e.seqNo) == 8);
    e.studyInstanceUid = "1.2.3";
    e.patientId = "PAT1";
    e.accessionNumber = "A17";
    e.series = 2;
    e.instances = 240;
    e.stores.length(1);
    e.stores[0] = "ws1";
    BOOST_TEST(std::string(e.stores[0].in()) == "ws1");
    BOOST_TEST(e.lastInstanceNs == 1795753190895511217ULL);
}
