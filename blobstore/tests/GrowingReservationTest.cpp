#include <blobstreaming/blobstore/Reservation.h>

#define BOOST_TEST_MODULE GrowingReservation
#include "TestSupport.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/MemoryStore.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include <sys/stat.h>

using namespace blobstreaming;
using test::random_bytes;

// Open-ended reservations (a push whose length is known only at its end),
// the same checks on each store kind that grows them.

namespace {

constexpr std::uint64_t kStep = Reservation::kGrowStep;

/// A store of `capacity` bytes (0: unlimited, where the kind allows it).
struct MemoryKind {
    std::unique_ptr<Store> open(std::uint64_t capacity)
    {
        return std::make_unique<MemoryStore>(MemoryStore::Options{capacity});
    }
};
struct FileKind {
    test::TempDir dir;
    std::unique_ptr<Store> open(std::uint64_t capacity)
    {
        FileStore::Options o;
        o.capacity = capacity;
        o.sync = false;
        return std::make_unique<FileStore>(dir.path(), o);
    }
};

/// Reserves the first step of an open-ended push of at most `max` bytes.
std::unique_ptr<Reservation> open_ended(Store& store, const std::string& name, std::uint64_t max,
                                        ChecksumAlgorithm algorithm = ChecksumAlgorithm::crc32c)
{
    auto r = store.reserve(name, std::min(kStep, max), ReserveMode::create, algorithm);
    std::string why;
    BOOST_REQUIRE_MESSAGE(r->make_open_ended(max, why), why);
    return r;
}

/// Writes `bytes` in pieces of `piece` through window()/advance(); the
/// first error.
std::error_code fill(Reservation& r, const std::vector<std::uint8_t>& bytes, std::size_t piece)
{
    std::size_t at = 0;
    while (at < bytes.size()) {
        std::error_code ec;
        const auto w = r.window(std::min(piece, bytes.size() - at), ec);
        if (ec) return ec;
        if (w.size == 0) return Errc::transfer_failed;
        std::memcpy(w.data, bytes.data() + at, w.size);
        if (auto e = r.advance(w.size)) return e;
        at += w.size;
    }
    return {};
}

template <class Kind>
void grows_then_commits_what_was_received(ChecksumAlgorithm algorithm)
{
    Kind kind;
    auto store = kind.open(1ULL << 30);
    const auto bytes = random_bytes(static_cast<std::size_t>(2 * kStep + 12345));
    auto r = open_ended(*store, "cine.1", 1ULL << 30, algorithm);
    BOOST_TEST(r->open_ended());
    BOOST_TEST(r->size() == kStep);
    BOOST_TEST(store->usage().reserved == kStep);  // one step at a time, not the maximum
    BOOST_REQUIRE(!fill(*r, bytes, 1 << 20));
    BOOST_TEST(r->size() == 3 * kStep);  // grown twice
    BOOST_TEST(store->usage().reserved == 3 * kStep);
    BOOST_TEST(r->written() == bytes.size());
    // Not visible, and not committable, before its end.
    BS_CHECK_ERROR(store->stat("cine.1"), Errc::no_such_blob, "being written");
    BS_CHECK_ERROR(r->commit(), Errc::incomplete,
                   "the push of unknown length has not ended (" + std::to_string(bytes.size()) +
                       " bytes received so far)");
    BOOST_TEST(r->is_open());
    BOOST_REQUIRE(!r->end_stream());
    BOOST_TEST(!r->open_ended());
    BOOST_TEST(r->size() == bytes.size());
    BOOST_TEST(store->usage().reserved == bytes.size());
    const Checksum expected = ChecksumState::of(algorithm, bytes.data(), bytes.size());
    const BlobInfo info = r->commit(&expected);
    BOOST_TEST(info.size == bytes.size());
    BOOST_TEST(store->usage().reserved == 0u);
    BOOST_TEST(store->usage().used == bytes.size());
    const BlobRange range = store->read("cine.1", 0, Store::kToEnd);
    BOOST_REQUIRE(range.size() == bytes.size());
    BOOST_TEST(std::memcmp(range.data(), bytes.data(), bytes.size()) == 0);
    BOOST_TEST((store->verify("cine.1").checksum == expected));
}

template <class Kind>
void a_full_store_stops_the_stream_and_keeps_nothing()
{
    Kind kind;
    const std::uint64_t capacity = kStep + kStep / 2;
    auto store = kind.open(capacity);
    const auto bytes = random_bytes(static_cast<std::size_t>(2 * kStep));
    auto r = open_ended(*store, "cine.2", 1ULL << 40);
    const std::error_code ec = fill(*r, bytes, 1 << 20);
    BOOST_TEST(ec == make_error_code(Errc::out_of_space));
    // The last step is what was left, not refused for being smaller.
    BOOST_TEST(r->written() == capacity);
    BOOST_TEST(r->error_message() == "no room for blob \"cine.2\": the store is full after " +
                                         std::to_string(capacity) + " bytes of a push of unknown length (capacity " +
                                         std::to_string(capacity) + ": 0 used, " + std::to_string(capacity) +
                                         " reserved)");
    r->abort();
    BOOST_TEST(store->usage().reserved == 0u);
    BOOST_TEST(store->list().empty());
}

template <class Kind>
void the_maximum_is_a_limit_too()
{
    Kind kind;
    auto store = kind.open(1ULL << 30);
    const auto bytes = random_bytes(5000);
    auto r = open_ended(*store, "cine.3", 4096);
    BOOST_TEST(r->size() == 4096u);
    BOOST_TEST(fill(*r, bytes, 1000) == make_error_code(Errc::out_of_space));
    BOOST_TEST(r->written() == 4096u);
    BOOST_TEST(r->error_message() ==
               "no room for blob \"cine.3\": a push of unknown length may take at most 4096 bytes here, and all of "
               "them were received");
    r->abort();
    BOOST_TEST(store->usage().reserved == 0u);
}

template <class Kind>
void an_aborted_stream_leaves_nothing()
{
    Kind kind;
    auto store = kind.open(1ULL << 30);
    const auto bytes = random_bytes(static_cast<std::size_t>(kStep + 1));
    {
        auto r = open_ended(*store, "cine.4", 1ULL << 30);
        BOOST_REQUIRE(!fill(*r, bytes, 1 << 20));
        BOOST_TEST(store->usage().reserved == 2 * kStep);
    }  // destroyed open: aborted
    BOOST_TEST(store->usage().reserved == 0u);
    BOOST_TEST(store->list().empty());
    // The name is free again.
    auto again = open_ended(*store, "cine.4", 1ULL << 30);
    BOOST_REQUIRE(!again->end_stream());
    BOOST_TEST(again->commit().size == 0u);  // an empty stream is an empty Blob
}

}  // namespace

BOOST_AUTO_TEST_CASE(memory_store_grows_then_commits_what_was_received)
{
    grows_then_commits_what_was_received<MemoryKind>(ChecksumAlgorithm::crc32c);
    grows_then_commits_what_was_received<MemoryKind>(ChecksumAlgorithm::sha256);
}

BOOST_AUTO_TEST_CASE(file_store_grows_then_commits_what_was_received)
{
    grows_then_commits_what_was_received<FileKind>(ChecksumAlgorithm::crc32c);
    grows_then_commits_what_was_received<FileKind>(ChecksumAlgorithm::sha256);
}

BOOST_AUTO_TEST_CASE(file_store_file_holds_only_the_bytes_received_after_the_end)
{
    FileKind kind;
    auto store = kind.open(0);
    const auto bytes = random_bytes(100000);
    auto r = open_ended(*store, "cine.5", 1ULL << 40);
    BOOST_REQUIRE(!fill(*r, bytes, 4096));
    BOOST_REQUIRE(!r->end_stream());
    r->commit();
    const auto path = dynamic_cast<FileStore&>(*store).locate("cine.5").path;
    BOOST_TEST(std::filesystem::file_size(path) == FileStore::kHeaderSize + bytes.size());
    struct stat st {};
    BOOST_REQUIRE(::stat(path.c_str(), &st) == 0);
    // The blocks of the steps beyond the end were given back.
    BOOST_TEST(static_cast<std::uint64_t>(st.st_blocks) * 512 < kStep);
}

BOOST_AUTO_TEST_CASE(memory_store_full_stops_the_stream)
{
    a_full_store_stops_the_stream_and_keeps_nothing<MemoryKind>();
}
BOOST_AUTO_TEST_CASE(file_store_full_stops_the_stream) { a_full_store_stops_the_stream_and_keeps_nothing<FileKind>(); }
BOOST_AUTO_TEST_CASE(memory_store_maximum) { the_maximum_is_a_limit_too<MemoryKind>(); }
BOOST_AUTO_TEST_CASE(file_store_maximum) { the_maximum_is_a_limit_too<FileKind>(); }
BOOST_AUTO_TEST_CASE(memory_store_abort) { an_aborted_stream_leaves_nothing<MemoryKind>(); }
BOOST_AUTO_TEST_CASE(file_store_abort) { an_aborted_stream_leaves_nothing<FileKind>(); }

BOOST_AUTO_TEST_CASE(only_an_untouched_reservation_becomes_open_ended)
{
    MemoryStore store({1 << 20});
    auto r = store.reserve("x", 10);
    BOOST_REQUIRE(!r->write("abc", 3));
    std::string why;
    BOOST_TEST(!r->make_open_ended(1000, why));
    BOOST_TEST(why == "reservation for \"x\" cannot become open-ended: bytes were written to it");
    BOOST_TEST(r->end_stream() == make_error_code(Errc::invalid_argument));
    // An open-ended reservation is filled in order, never in parts.
    auto s = store.reserve("y", 10);
    BOOST_REQUIRE(s->make_open_ended(1000, why));
    BOOST_TEST(!s->takes_parts());
}

namespace {

/// A reservation of a store that writes in order and cannot grow (as a
/// RadosStore's): the base class's defaults.
class FixedReservation final : public Reservation {
public:
    FixedReservation() : Reservation("fixed", 10, ChecksumAlgorithm::crc32c) {}
    ~FixedReservation() override { abort(); }

private:
    Window do_window(std::uint64_t offset, std::size_t max, std::error_code&) override
    {
        return {bytes_ + offset, max};
    }
    BlobInfo do_commit(const Checksum& checksum) override { return {name(), size(), checksum, {}}; }
    void do_abort() noexcept override {}
    std::uint8_t bytes_[10]{};
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_store_that_cannot_grow_refuses_at_once)
{
    FixedReservation r;
    std::string why;
    BOOST_TEST(!r.make_open_ended(1000, why));
    BOOST_TEST(why == "its store cannot grow a reservation as the bytes arrive: give the Blob's size");
    BOOST_TEST(!r.open_ended());
    BOOST_TEST(r.size() == 10u);  // still the reservation it was
}
