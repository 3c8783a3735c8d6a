// ReadThroughStore over a MemoryStore and a FileStore alike, with an upstream
// played in-process (it fills the store as the daemon's copier does, its
// bytes let through by the test): a missing Blob is filled and readable
// while in flight, concurrent readers share one fill, a failed fill fails
// its readers and leaves nothing, a committed Blob is not fetched again, and
// a read of a Blob being replaced follows the new version.
#include <blobstreaming/blobstore/ReadThroughStore.h>

#define BOOST_TEST_MODULE ReadThroughStore
#include "TestSupport.h"

#include <blobstreaming/blobstore/FileStore.h>
#include <blobstreaming/blobstore/MemoryStore.h>

#include <boost/mpl/list.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

using namespace blobstreaming;
using test::random_bytes;

namespace {

constexpr auto kDeadline = std::chrono::seconds(10);

struct OverMemory {
    std::unique_ptr<Store> make() { return std::make_unique<MemoryStore>(MemoryStore::Options{16u << 20}); }
};

struct OverFiles {
    test::TempDir dir;
    std::unique_ptr<Store> make()
    {
        return std::make_unique<FileStore>(dir.path() / "store", FileStore::Options{16u << 20, false});
    }
};

using Kinds = boost::mpl::list<OverMemory, OverFiles>;

Checksum crc_of(const std::vector<std::uint8_t>& bytes)
{
    return ChecksumState::of(ChecksumAlgorithm::crc32c, bytes.data(), bytes.size());
}

/// Farther tiers in-process: holds Blobs, and fills the store with one as
/// the daemon's copier does, landing only the bytes the test lets through.
class FakeUpstream final : public Upstream {
public:
    explicit FakeUpstream(ReadThroughStore& store) : store_(store) {}

    std::map<std::string, std::vector<std::uint8_t>> held;
    std::atomic<int> fills{0};

    /// The first `n` bytes of every fill may land.
    void allow(std::uint64_t n)
    {
        {
            std::lock_guard lock(mutex_);
            allowed_ = n;
        }
        changed_.notify_all();
    }
    /// Every fill fails now, with `why`.
    void fail(std::string why)
    {
        {
            std::lock_guard lock(mutex_);
            failure_ = std::move(why);
        }
        changed_.notify_all();
    }

    BlobInfo fill(const std::string& name, FlightTable::Flight& flight) override
    {
        ++fills;
        const auto it = held.find(name);
        if (it == held.end()) throw Error(Errc::no_such_blob, "no farther store holds " + name);
        const std::vector<std::uint8_t>& bytes = it->second;
        const Checksum sum = crc_of(bytes);
        auto reservation = store_.reserve(name, bytes.size(), ReserveMode::replace, ChecksumAlgorithm::crc32c);
        const auto progress = std::make_shared<BlobInFlight>(BlobInfo{name, bytes.size(), sum, {}});
        progress->attach(reservation.get());
        store_.flights().begun(flight, progress);
        try {
            std::uint64_t landed = 0;
            while (landed < bytes.size()) {
                std::unique_lock lock(mutex_);
                if (!changed_.wait_for(lock, kDeadline, [&] { return allowed_ > landed || failure_; }))
                    throw Error(Errc::timeout, "the test let no more bytes through");
                if (failure_) throw Error(Errc::unreachable, *failure_);
                const std::uint64_t n = std::min<std::uint64_t>(allowed_, bytes.size()) - landed;
                lock.unlock();
                BOOST_REQUIRE(!reservation->write(bytes.data() + landed, n));
                landed += n;
                progress->landed(landed);
            }
            progress->detach();
            const BlobInfo info = reservation->commit(&sum);
            progress->finish(info);
            return info;
        } catch (const Error& e) {
            progress->detach();
            progress->fail(e.code(), e.what());
            throw;
        }
    }

private:
    ReadThroughStore& store_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::uint64_t allowed_ = 0;
    std::optional<std::string> failure_;
};

template <typename Kind>
struct Fixture {
    Kind kind;
    ReadThroughStore store{kind.make()};
    FakeUpstream upstream{store};
    Fixture() { store.read_through(&upstream); }
    ~Fixture() { store.stop(); }
};

/// Every byte of `range` through its reader (waiting while they arrive),
/// or the reader's error.
std::vector<std::uint8_t> read_through(const BlobRange& range, std::error_code& ec, std::string* message = nullptr)
{
    BOOST_REQUIRE_MESSAGE(range.reader(), "a range that follows a fill");
    std::vector<std::uint8_t> out(range.size());
    std::uint64_t done = 0;
    while (done < range.size()) {
        const std::size_t n =
            range.reader()->read(range.start() + done, out.data() + done, static_cast<std::size_t>(range.size() - done), ec);
        if (ec) {
            if (message) *message = range.reader()->error_message();
            break;
        }
        done += n;
    }
    out.resize(done);
    return out;
}

/// Waits (bounded) until `ready`.
template <typename F>
bool eventually(F ready)
{
    const auto until = std::chrono::steady_clock::now() + kDeadline;
    while (!ready()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

Errc code_of(const std::function<void()>& f)
{
    try {
        f();
    } catch (const Error& e) {
        return e.code();
    }
    return Errc::ok;
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(a_missing_blob_is_filled_and_readable_while_in_flight, Kind, Kinds)
{
    Fixture<Kind> f;
    const auto bytes = random_bytes(100000, 7);
    f.upstream.held["RT.1"] = bytes;
    f.upstream.allow(40000);

    const BlobRange range = f.store.read_all("RT.1");
    BOOST_REQUIRE(range.reader() != nullptr);
    BOOST_TEST(range.size() == bytes.size());
    BOOST_TEST((range.blob().checksum == crc_of(bytes)));
    // Nothing of it is visible before the commit.
    BOOST_TEST(code_of([&] { f.store.stat("RT.1"); }) == Errc::no_such_blob);
    BOOST_TEST(f.store.list().empty());
    BOOST_TEST(f.store.filling("RT.1"));
    BOOST_TEST(f.store.holding("RT.1").in_flight);

    // Bytes past those landed: pending, woken when more land.
    BOOST_REQUIRE(eventually([&] { return f.store.holding("RT.1").in_flight; }));
    std::vector<std::uint8_t> buffer(100000);
    std::error_code ec;
    std::uint64_t got = 0;
    while (got < 40000) {
        const std::size_t n = range.reader()->read(got, buffer.data() + got, 40000 - got, ec);
        BOOST_REQUIRE(!ec);
        got += n;
    }
    bool pending = false;
    std::atomic<int> wakes{0};
    BOOST_TEST(range.reader()->read_or_wait(40000, buffer.data(), 1000, ec, pending, [&] { ++wakes; }) == 0u);
    BOOST_TEST(pending);
    BOOST_TEST(!ec);
    f.upstream.allow(bytes.size());
    BOOST_TEST(eventually([&] { return wakes.load() == 1; }));

    // The rest, partly from the committed Blob once the fill commits.
    while (got < bytes.size()) {
        const std::size_t n = range.reader()->read(got, buffer.data() + got, bytes.size() - got, ec);
        BOOST_REQUIRE(!ec);
        got += n;
    }
    BOOST_TEST((buffer == bytes));
    BOOST_REQUIRE(eventually([&] { return f.store.contains("RT.1"); }));
    BOOST_TEST((f.store.stat("RT.1").checksum == crc_of(bytes)));
    BOOST_TEST(!f.store.holding("RT.1").in_flight);
    BOOST_TEST(f.upstream.fills.load() == 1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(concurrent_readers_share_one_fill, Kind, Kinds)
{
    Fixture<Kind> f;
    const auto bytes = random_bytes(50000, 8);
    f.upstream.held["RT.2"] = bytes;

    std::vector<std::thread> readers;
    std::vector<std::vector<std::uint8_t>> seen(4);
    std::vector<std::error_code> errors(4);
    std::atomic<int> opened{0};
    for (std::size_t i = 0; i < seen.size(); ++i)
        readers.emplace_back([&, i] {
            const BlobRange range = f.store.read_at("RT.2", 1000, 30000);
            ++opened;
            seen[i] = read_through(range, errors[i]);
        });
    // Every reader has its range of the fill before a byte lands.
    BOOST_TEST(eventually([&] { return opened.load() == 4; }));
    f.upstream.allow(bytes.size());
    for (auto& t : readers) t.join();
    for (std::size_t i = 0; i < seen.size(); ++i) {
        BOOST_TEST(!errors[i]);
        BOOST_TEST(std::equal(seen[i].begin(), seen[i].end(), bytes.begin() + 1000, bytes.begin() + 31000));
        BOOST_TEST(seen[i].size() == 30000u);
    }
    BOOST_TEST(f.upstream.fills.load() == 1);
    BOOST_REQUIRE(eventually([&] { return f.store.contains("RT.2"); }));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_failed_fill_fails_its_readers_and_leaves_nothing, Kind, Kinds)
{
    Fixture<Kind> f;
    f.upstream.held["RT.3"] = random_bytes(20000, 9);
    f.upstream.allow(5000);
    const BlobRange range = f.store.read_all("RT.3");
    f.upstream.fail("the source store is gone");
    std::error_code ec;
    std::string message;
    const auto got = read_through(range, ec, &message);
    BOOST_TEST(got.size() <= 5000u);
    BOOST_TEST(ec == make_error_code(Errc::unreachable));
    BOOST_TEST(message.find("the source store is gone") != std::string::npos, message);

    BOOST_TEST(code_of([&] { f.store.stat("RT.3"); }) == Errc::no_such_blob);
    BOOST_TEST(f.store.list().empty());
    // A read a moment later gets the fill's reason, not another fill.
    BOOST_REQUIRE(eventually([&] { return code_of([&] { f.store.holding("RT.3"); }) == Errc::unreachable; }));
    BOOST_TEST(code_of([&] { f.store.read_all("RT.3"); }) == Errc::unreachable);
    BOOST_TEST(eventually([&] { return f.store.usage().reserved == 0u; }));  // the fill's reservation goes
    BOOST_TEST(f.upstream.fills.load() == 1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_committed_blob_is_not_fetched_again, Kind, Kinds)
{
    Fixture<Kind> f;
    const auto bytes = random_bytes(3000, 10);
    {
        auto r = f.store.reserve("RT.4", bytes.size(), ReserveMode::create, ChecksumAlgorithm::crc32c);
        BOOST_REQUIRE(!r->write(bytes.data(), bytes.size()));
        r->commit();
    }
    f.upstream.held["RT.4"] = random_bytes(3000, 11);
    const BlobRange range = f.store.read_all("RT.4");
    BOOST_TEST(range.reader() == nullptr);  // the store's own view
    BOOST_TEST((range.blob().checksum == crc_of(bytes)));
    BOOST_TEST(!f.store.holding("RT.4").in_flight);
    BOOST_TEST(f.upstream.fills.load() == 0);
    // Nobody holds it farther away: the stores asked say so.
    BOOST_TEST(code_of([&] { f.store.read_all("RT.none"); }) == Errc::no_such_blob);

    // Without an upstream a missing Blob is just missing.
    f.store.read_through(nullptr);
    BOOST_TEST(code_of([&] { f.store.read_all("RT.5"); }) == Errc::no_such_blob);
    BOOST_TEST(code_of([&] { f.store.holding("RT.5"); }) == Errc::no_such_blob);
    BOOST_TEST(f.upstream.fills.load() == 1);  // RT.none's
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_read_of_a_blob_being_replaced_follows_the_new_version, Kind, Kinds)
{
    Fixture<Kind> f;
    f.store.read_through(nullptr);  // a copy to this store, not read-through
    const auto old_bytes = random_bytes(500, 12);
    {
        auto r = f.store.reserve("RT.6", old_bytes.size(), ReserveMode::create, ChecksumAlgorithm::crc32c);
        BOOST_REQUIRE(!r->write(old_bytes.data(), old_bytes.size()));
        r->commit();
    }
    const auto new_bytes = random_bytes(80000, 13);
    f.upstream.held["RT.6"] = new_bytes;
    bool first = false;
    const auto flight = f.store.flights().join("RT.6", first);
    BOOST_REQUIRE(first);
    std::thread copy([&] {
        std::optional<BlobInfo> info;
        std::exception_ptr error;
        try {
            info = f.upstream.fill("RT.6", *flight);
        } catch (...) {
            error = std::current_exception();
        }
        f.store.flights().land("RT.6", *flight, info, error);
    });
    BOOST_REQUIRE(eventually([&] { return f.store.filling("RT.6"); }));

    const auto held = f.store.holding("RT.6");
    BOOST_TEST(held.in_flight);
    BOOST_TEST(held.version.size == new_bytes.size());
    BOOST_TEST(f.store.stat("RT.6").size == old_bytes.size());  // the old version until the commit
    BOOST_TEST(!f.store.local_file("RT.6"));                    // nothing to offer meanwhile
    BOOST_TEST(f.store.read_committed("RT.6", 0, Store::kToEnd).size() == old_bytes.size());
    const BlobRange range = f.store.read_all("RT.6");
    BOOST_TEST(range.size() == new_bytes.size());
    f.upstream.allow(new_bytes.size());
    std::error_code ec;
    BOOST_TEST((read_through(range, ec) == new_bytes));
    BOOST_TEST(!ec);
    copy.join();
    BOOST_TEST(f.store.stat("RT.6").size == new_bytes.size());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_reader_of_the_file_waits_for_the_whole_fill, Kind, Kinds)
{
    Fixture<Kind> f;
    const auto bytes = random_bytes(30000, 14);
    f.upstream.held["RT.7"] = bytes;
    std::thread let_through([&] {
        // Let the bytes through once the fill has begun.
        BOOST_TEST(eventually([&] { return f.store.filling("RT.7"); }));
        f.upstream.allow(bytes.size());
    });
    f.store.fill_and_wait("RT.7");
    let_through.join();
    BOOST_TEST(f.store.stat("RT.7").size == bytes.size());  // committed when it returns
    BOOST_TEST(f.upstream.fills.load() == 1);
    f.store.fill_and_wait("RT.7");  // committed: nothing to do
    BOOST_TEST(f.upstream.fills.load() == 1);
    BOOST_TEST(code_of([&] { f.store.fill_and_wait("RT.none"); }) == Errc::no_such_blob);
}
