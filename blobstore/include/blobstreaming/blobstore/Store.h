#pragma once

#include <blobstreaming/blobstore/BlobRange.h>
#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/common/BlobInfo.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace blobstreaming {

/// What reserve() does when a committed Blob of the same name exists.
enum class ReserveMode {
    create,   ///< Errc::already_exists
    replace,  ///< commit atomically replaces it; readers keep the old bytes
};

/// A place Blobs live: a handful of operations, implemented by FileStore,
/// MemoryStore and RadosStore alike, with the same semantics and errors.
///
/// - A Blob is visible (stat, list, read) only after a complete commit.
/// - At most one open reservation per name; a second reserve() of that name
///   fails with Errc::already_exists until the first is committed or aborted.
/// - Capacity counts committed bytes plus open reservations; replacing a Blob
///   needs room for both until the commit frees the old one.
/// - All member functions are thread-safe. Errors are thrown as `Error`.
class Store {
public:
    virtual ~Store() = default;

    /// "file", "memory" or "rados".
    virtual std::string_view kind() const noexcept = 0;

    /// Errc::invalid_name, Errc::no_such_blob.
    virtual BlobInfo stat(std::string_view name) const = 0;
    /// stat() whose "no such Blob" is a value, not an exception: nullopt
    /// where stat() throws Errc::no_such_blob (a push's admission asks it
    /// for every new name). Its other errors are thrown as stat()'s.
    /// The default catches stat()'s no_such_blob; every store kind and
    /// decorator here answers without throwing.
    virtual std::optional<BlobInfo> find(std::string_view name) const;
    bool contains(std::string_view name) const { return find(name).has_value(); }

    /// Committed Blobs, ordered by name.
    virtual std::vector<BlobInfo> list() const = 0;

    /// `end` value meaning "up to the end of the Blob, whatever its size".
    static constexpr std::uint64_t kToEnd = ~std::uint64_t{0};

    /// Bytes [start, end) of a committed Blob (start inclusive, end
    /// exclusive; kToEnd for the rest of the Blob). Errc::invalid_range
    /// unless start <= end <= size;
    /// Errc::invalid_name; Errc::no_such_blob (also while only a reservation
    /// of that name exists).
    virtual BlobRange read(std::string_view name, std::uint64_t start, std::uint64_t end) const = 0;

    /// read() of the committed Blob only: what a decorator that may serve
    /// something else first (ReadThroughStore: the version being filled)
    /// has committed. How the data plane serves a ticket issued for a
    /// committed version while a newer one arrives. By default read().
    virtual BlobRange read_committed(std::string_view name, std::uint64_t start, std::uint64_t end) const
    {
        return read(name, start, end);
    }

    /// Bytes [offset, offset + length); Errc::invalid_range also when the sum
    /// overflows 64 bits.
    BlobRange read_at(std::string_view name, std::uint64_t offset, std::uint64_t length) const;

    /// The whole Blob.
    BlobRange read_all(std::string_view name) const;

    /// Rereads every stored byte of the Blob and compares its checksum with
    /// the one recorded at commit, in the Blob's algorithm (bit rot, a
    /// damaged disk, a file changed behind the store's back). Returns the
    /// Blob's info when they agree. Errc::corrupt naming both when they
    /// differ; Errc::invalid_name,
    /// Errc::no_such_blob. Reads through a bounded buffer (file-backed and
    /// streamed Blobs) so that resident memory does not grow with the Blob;
    /// a streamed Blob's reader reports missing or short objects
    /// (Errc::corrupt) and a store that fails (Errc::io_error).
    BlobInfo verify(std::string_view name) const;

    /// Space for a new Blob of `size` bytes, whose bytes are checksummed
    /// with `checksum` as they arrive (the Blob keeps that algorithm).
    /// Errc::invalid_name, Errc::already_exists, Errc::out_of_space (with
    /// need and free bytes).
    virtual std::unique_ptr<Reservation> reserve(std::string_view name, std::uint64_t size,
                                                 ReserveMode mode = ReserveMode::create,
                                                 ChecksumAlgorithm checksum = kDefaultChecksum) = 0;

    /// Errc::invalid_name, Errc::no_such_blob. Readers of the Blob keep
    /// their views. Returns what was removed (for events: no stat() first,
    /// which could race with the removal or change what it reports).
    virtual BlobInfo remove(std::string_view name) = 0;
    /// remove() made to make room for another Blob (EvictingStore): the
    /// same, but a decorator underneath may tell the two apart
    /// (ObservedStore publishes "evicted").
    virtual BlobInfo evict(std::string_view name) { return remove(name); }

    virtual StoreUsage usage() const = 0;

    /// A reservation an earlier process of the store kept for a resume
    /// (Reservation::keep_for_resume()), reopened: resume_owner() says whose
    /// it is, written() how many bytes are there (the prefix whose journaled
    /// ranges still match the bytes on disk), `idle` how long ago its last
    /// byte arrived (its grace period goes on from there).
    struct Kept {
        std::unique_ptr<Reservation> reservation;
        std::chrono::seconds idle{0};
    };
    /// The kept reservations this store found when it opened, handed over
    /// once (later calls return none): the daemon parks them for their
    /// clients. None for a store that keeps nothing across a restart.
    virtual std::vector<Kept> take_kept() { return {}; }

    /// A committed Blob's bytes in a file of its own, for a reader on the
    /// same host (the same-host fast path): the file, the offset of byte 0
    /// in it, and the Blob as that file holds it.
    struct LocalFile {
        std::filesystem::path path;
        std::uint64_t data_offset = 0;
        BlobInfo info;
    };
    /// Where `name`'s bytes are in a file; nullopt for a kind that keeps no
    /// Blob in a file of its own (memory, object stores): the data port
    /// serves it. Errc::invalid_name, Errc::no_such_blob either way.
    virtual std::optional<LocalFile> local_file(std::string_view name) const;
    /// true when local_file() names its committed Blobs' files (a
    /// FileStore): a process on this host may read them there.
    virtual bool keeps_files() const noexcept { return false; }
    /// true when its reservations take bytes they did not write
    /// (Reservation::adopt: a MemoryStore holds a sealed image another
    /// store of the host made, mapped, instead of a copy).
    virtual bool adopts_images() const noexcept { return false; }

    /// true when read() may wait on another host (an object store reads
    /// its index over the network): the data plane then opens a pull's
    /// range off its reactor thread, so that a store that stops answering
    /// holds that pull only. false for stores that answer from memory or a
    /// local file system (opened in place: no thread hand-off per pull).
    virtual bool read_waits() const noexcept { return false; }
};

}  // namespace blobstreaming
