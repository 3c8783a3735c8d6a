// The resume journal (an internal of the stores) and a FileStore push kept
// across a crash of its process: what is reopened, what is received again.
#include "../src/store/ResumeJournal.h"

#define BOOST_TEST_MODULE ResumeJournal
#include "TestSupport.h"

#include <blobstreaming/blobstore/FileStore.h>

#include <csignal>
#include <fstream>
#include <iterator>

#include <sys/wait.h>
#include <unistd.h>

using namespace blobstreaming;
using namespace blobstreaming::detail;
using test::random_bytes;
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kStep = kResumeCheckpoint;

ResumeHeader header_of(std::uint64_t size)
{
    return {"MG.1", size, ChecksumAlgorithm::crc32c, ReserveMode::replace, "CN=modality-7"};
}

std::size_t count_files(const fs::path& dir)
{
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file()) ++n;
    return n;
}

fs::path only_file(const fs::path& dir, const std::string& suffix)
{
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string p = e.path().string();
        if (p.size() > suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0)
            return e.path();
    }
    return {};
}

/// A child process reserves `name` of `bytes.size()` bytes kept for
/// `owner`, writes its first `written` bytes, suspends it when `park`
/// (as a push that broke off), then dies by SIGKILL.
void crash_mid_push(const fs::path& dir, const std::string& name, const std::vector<std::uint8_t>& bytes,
                    std::size_t written, bool park, ChecksumAlgorithm checksum = ChecksumAlgorithm::crc32c,
                    const std::string& owner = "10.0.0.7")
{
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        FileStore store(dir);
        auto r = store.reserve(name, bytes.size(), ReserveMode::create, checksum);
        r->keep_for_resume(owner);
        // In pieces, as a data connection advances over its windows.
        for (std::size_t at = 0; at < written;) {
            const std::size_t n = std::min<std::size_t>(written - at, 300000);
            if (r->write(bytes.data() + at, n)) ::_exit(3);
            at += n;
        }
        if (park) r->suspend();
        ::raise(SIGKILL);
        ::_exit(4);
    }
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
    BOOST_REQUIRE(WIFSIGNALED(status));
}

/// Writes the rest of a kept reservation and commits it, checked against
/// the checksum of all of `bytes`.
BlobInfo finish(Reservation& r, const std::vector<std::uint8_t>& bytes)
{
    const std::size_t from = static_cast<std::size_t>(r.written());
    BOOST_REQUIRE(!r.write(bytes.data() + from, bytes.size() - from));
    const Checksum whole = ChecksumState::of(r.checksum_algorithm(), bytes.data(), bytes.size());
    return r.commit(&whole);
}

std::vector<std::uint8_t> read_blob(FileStore& store, const std::string& name)
{
    BlobRange range = store.read_all(name);
    return {range.data(), range.data() + range.size()};
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_journal_reads_back_its_header_and_ranges)
{
    const std::string j = encode_resume_header(header_of(3 * kStep)) + encode_resume_range({0, kStep, 0x11}) +
                          encode_resume_range({kStep, 2 * kStep, 0x22});
    std::string why;
    auto parsed = parse_resume_journal(j, why);
    BOOST_REQUIRE(parsed);
    BOOST_TEST(parsed->header.name == "MG.1");
    BOOST_TEST(parsed->header.size == 3 * kStep);
    BOOST_TEST(parsed->header.owner == "CN=modality-7");
    BOOST_TEST((parsed->header.mode == ReserveMode::replace));
    BOOST_TEST(parsed->ranges.size() == 2u);
    BOOST_TEST(parsed->ranges[1].crc == 0x22u);
    BOOST_TEST(parsed->received() == 2 * kStep);
    BOOST_TEST(parsed->stopped == "");
}

BOOST_AUTO_TEST_CASE(a_torn_or_changed_record_ends_the_journal_there)
{
    const std::string head = encode_resume_header(header_of(3 * kStep)) + encode_resume_range({0, kStep, 1});
    const std::string second = encode_resume_range({kStep, 2 * kStep, 2});
    std::string why;
    // Torn: the crash came in the middle of appending the second range.
    auto torn = parse_resume_journal(head + second.substr(0, 13), why);
    BOOST_REQUIRE(torn);
    BOOST_TEST(torn->received() == kStep);
    BOOST_TEST(torn->stopped.find("cut short") != std::string::npos);
    // Changed: a bit of the second record flipped.
    std::string changed = head + second;
    changed[head.size() + 12] ^= 1;
    auto flipped = parse_resume_journal(changed, why);
    BOOST_REQUIRE(flipped);
    BOOST_TEST(flipped->received() == kStep);
    BOOST_TEST(flipped->stopped == "a record does not match its CRC32C");
    // A range that does not follow the last one.
    auto gap = parse_resume_journal(head + encode_resume_range({2 * kStep, 3 * kStep, 3}), why);
    BOOST_REQUIRE(gap);
    BOOST_TEST(gap->received() == kStep);
    BOOST_TEST(gap->stopped.find("does not follow byte " + std::to_string(kStep)) != std::string::npos);
    // Past the Blob's end.
    auto past = parse_resume_journal(head + encode_resume_range({kStep, 4 * kStep, 3}), why);
    BOOST_REQUIRE(past);
    BOOST_TEST(past->received() == kStep);
}

BOOST_AUTO_TEST_CASE(a_journal_without_a_valid_header_is_unusable)
{
    std::string why;
    BOOST_TEST(!parse_resume_journal("", why));
    BOOST_TEST(why.find("cut short") != std::string::npos);
    std::string j = encode_resume_header(header_of(kStep));
    j[9] ^= 4;
    BOOST_TEST(!parse_resume_journal(j, why));
    BOOST_TEST(why == "a record does not match its CRC32C");
    BOOST_TEST(!parse_resume_journal(encode_resume_range({0, kStep, 1}), why));
    BOOST_TEST(why == "its first record is not a header");
    ResumeHeader bad = header_of(kStep);
    bad.name = "../etc/passwd";
    BOOST_TEST(!parse_resume_journal(encode_resume_header(bad), why));
    BOOST_TEST(why == "it names no valid blob");
}

BOOST_AUTO_TEST_CASE(a_file_store_push_killed_mid_way_resumes_after_its_last_journaled_range)
{
    test::TempDir dir;
    const auto bytes = random_bytes(5 * kStep + 1000);
    // 2.5 checkpoints written, the process killed in the push: the
    // journal holds two ranges, the half after them is received again.
    crash_mid_push(dir.path(), "MG.1", bytes, static_cast<std::size_t>(2 * kStep + kStep / 2), false);
    BOOST_TEST(count_files(dir.path() / "tmp") == 2u);  // the reservation and its journal

    FileStore store(dir.path());
    BOOST_TEST(store.list().empty());  // never visible before its commit
    BOOST_TEST(store.usage().reserved == bytes.size());
    auto kept = store.take_kept();
    BOOST_REQUIRE(kept.size() == 1u);
    BOOST_TEST(store.take_kept().empty());  // handed over once
    Reservation& r = *kept[0].reservation;
    BOOST_TEST(r.name() == "MG.1");
    BOOST_TEST(r.size() == bytes.size());
    BOOST_TEST(r.written() == 2 * kStep);
    BOOST_TEST(r.resume_owner() == "10.0.0.7");
    BOOST_TEST(kept[0].idle.count() < 60);
    BS_CHECK_ERROR(store.reserve("MG.1", 10), Errc::already_exists, "already being written");

    const BlobInfo info = finish(r, bytes);
    BOOST_TEST(info.size == bytes.size());
    BOOST_TEST((read_blob(store, "MG.1") == bytes));
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);  // journal gone with the commit
    BOOST_TEST(store.usage().reserved == 0u);
}

BOOST_AUTO_TEST_CASE(a_parked_push_journals_every_byte_it_received)
{
    test::TempDir dir;
    const auto bytes = random_bytes(3 * kStep);
    crash_mid_push(dir.path(), "MG.2", bytes, static_cast<std::size_t>(kStep + 12345), true, ChecksumAlgorithm::sha256);
    FileStore store(dir.path());
    auto kept = store.take_kept();
    BOOST_REQUIRE(kept.size() == 1u);
    BOOST_TEST(kept[0].reservation->written() == kStep + 12345);
    BOOST_TEST((kept[0].reservation->checksum_algorithm() == ChecksumAlgorithm::sha256));
    finish(*kept[0].reservation, bytes);
    BOOST_TEST((read_blob(store, "MG.2") == bytes));
}

BOOST_AUTO_TEST_CASE(a_range_changed_on_disk_is_received_again)
{
    test::TempDir dir;
    const auto bytes = random_bytes(4 * kStep);
    crash_mid_push(dir.path(), "MG.3", bytes, static_cast<std::size_t>(3 * kStep), false);
    const fs::path part = only_file(dir.path() / "tmp", ".part");
    BOOST_REQUIRE(!part.empty());
    {
        std::fstream f(part, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(FileStore::kHeaderSize + kStep + 77));
        const char flipped = static_cast<char>(bytes[kStep + 77] ^ 0x10);
        f.write(&flipped, 1);
    }
    // Reopened by a process that resumes the push, receives 1.5 ranges
    // again and is killed too: the journal was rewritten to its good range,
    // and the ranges appended since follow it.
    const pid_t child = ::fork();
    BOOST_REQUIRE(child >= 0);
    if (child == 0) {
        FileStore store(dir.path());
        auto kept = store.take_kept();
        if (kept.size() != 1u || kept[0].reservation->written() != kStep) ::_exit(5);
        if (kept[0].reservation->write(bytes.data() + kStep, kStep + kStep / 2)) ::_exit(6);
        ::raise(SIGKILL);
        ::_exit(4);
    }
    int status = 0;
    BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
    BOOST_REQUIRE(WIFSIGNALED(status));  // not 5: the changed range was found

    FileStore store(dir.path());
    auto kept = store.take_kept();
    BOOST_REQUIRE(kept.size() == 1u);
    BOOST_TEST(kept[0].reservation->written() == 2 * kStep);
    finish(*kept[0].reservation, bytes);
    BOOST_TEST((read_blob(store, "MG.3") == bytes));
}

BOOST_AUTO_TEST_CASE(a_commit_checks_the_whole_blob_against_the_client)
{
    // The kept bytes are reread into the checksum: a source that differs
    // from what was received before the restart fails the commit.
    test::TempDir dir;
    const auto bytes = random_bytes(3 * kStep);
    crash_mid_push(dir.path(), "MG.6", bytes, static_cast<std::size_t>(2 * kStep), false);
    FileStore store(dir.path());
    auto kept = store.take_kept();
    BOOST_REQUIRE(kept.size() == 1u);
    Reservation& r = *kept[0].reservation;
    auto other = bytes;
    other[10] ^= 1;  // the client's file changed in the part already received
    BOOST_REQUIRE(!r.write(other.data() + r.written(), other.size() - r.written()));
    const Checksum claimed = ChecksumState::of(ChecksumAlgorithm::crc32c, other.data(), other.size());
    BS_CHECK_ERROR(r.commit(&claimed), Errc::digest_mismatch, "");
    BOOST_TEST(store.list().empty());
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);
}

BOOST_AUTO_TEST_CASE(a_reservation_not_kept_or_with_a_broken_journal_is_removed)
{
    test::TempDir dir;
    const auto bytes = random_bytes(3 * kStep);
    crash_mid_push(dir.path(), "MG.4", bytes, static_cast<std::size_t>(2 * kStep), false, ChecksumAlgorithm::crc32c,
                   "");  // not kept: no journal
    BOOST_TEST(count_files(dir.path() / "tmp") == 1u);
    {
        FileStore store(dir.path());
        BOOST_TEST(store.take_kept().empty());
        BOOST_TEST(store.recovered_reservations() == 1u);
    }
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);

    crash_mid_push(dir.path(), "MG.4", bytes, static_cast<std::size_t>(2 * kStep), false);
    const fs::path journal = only_file(dir.path() / "tmp", ".resume");
    fs::resize_file(journal, 10);  // its header torn
    {
        FileStore store(dir.path());
        BOOST_TEST(store.take_kept().empty());
        BOOST_TEST(store.recovered_reservations() == 1u);
        BOOST_TEST(store.usage().reserved == 0u);
    }
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);

    // Killed before its first checkpoint: nothing journaled, nothing kept.
    crash_mid_push(dir.path(), "MG.4", bytes, static_cast<std::size_t>(kStep - 1), false);
    FileStore store(dir.path());
    BOOST_TEST(store.take_kept().empty());
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);
}

BOOST_AUTO_TEST_CASE(a_kept_reservation_aborted_takes_its_journal)
{
    test::TempDir dir;
    const auto bytes = random_bytes(3 * kStep);
    crash_mid_push(dir.path(), "MG.5", bytes, static_cast<std::size_t>(2 * kStep), true);
    FileStore store(dir.path());
    auto kept = store.take_kept();
    BOOST_REQUIRE(kept.size() == 1u);
    kept[0].reservation->abort();
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);
    BOOST_TEST(store.usage().reserved == 0u);
}

BOOST_AUTO_TEST_CASE(a_kept_push_committed_without_a_restart_takes_its_journal)
{
    // The journal this reservation made itself (past its first checkpoint)
    // goes with the commit; one that never reached a checkpoint had none.
    test::TempDir dir;
    const auto bytes = random_bytes(2 * kStep + 100);
    FileStore store(dir.path());
    auto r = store.reserve("MG.7", bytes.size());
    r->keep_for_resume("10.0.0.7");
    BOOST_REQUIRE(!r->write(bytes.data(), static_cast<std::size_t>(kStep + 10)));
    BOOST_TEST(!only_file(dir.path() / "tmp", ".resume").empty());
    BOOST_REQUIRE(!r->write(bytes.data() + kStep + 10, bytes.size() - kStep - 10));
    const Checksum whole = ChecksumState::of(r->checksum_algorithm(), bytes.data(), bytes.size());
    r->commit(&whole);
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);
    BOOST_TEST((read_blob(store, "MG.7") == bytes));

    auto small = store.reserve("MG.8", 1000);
    small->keep_for_resume("10.0.0.7");
    BOOST_REQUIRE(!small->write(bytes.data(), 1000));
    BOOST_TEST(only_file(dir.path() / "tmp", ".resume").empty());
    small->commit();
    BOOST_TEST(count_files(dir.path() / "tmp") == 0u);
}
