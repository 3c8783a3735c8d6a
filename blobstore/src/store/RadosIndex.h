#pragma once
/// RadosStore's objects in its pool and the records of its index
/// (docs/STORES.md, "The RADOS tier").
///
/// One index object, `blobstreaming.index`, whose omap holds every record,
/// so that one compound write on it (a commit, a removal, a cleanup) changes
/// several of them atomically, and its comparisons coordinate the daemons
/// that share the pool:
///
///   b:NAME  a committed Blob:  "1 size=N chunk=C data=ID committed=NS checksum=ALG:HEX"
///   r:ID    an open reservation: "1 size=N chunk=C owner=OWNER created=MS grace=MS [client=CLIENT] name=NAME"
///   u:ID    when its owner last vouched for it: "MS"
///   t:ID    data objects to delete: "1 chunks=K deadline=MS name=NAME"
///
/// (MS: milliseconds, NS: nanoseconds since the Unix epoch.) The bytes of a
/// Blob are in data objects `blobstreaming.data.ID.XXXXXXXX`: object i
/// holds bytes [i*C, (i+1)*C). ID is random, fresh for every reservation,
/// never the Blob's name: a version's objects are never written again once
/// committed, and a push that dies leaves objects nobody lists.
///
/// A reservation kept for a resume across a restart (its r:ID names the
/// client, percent-encoded) journals the ranges written so far in object
/// `blobstreaming.resume.ID` (ResumeJournal.h's records; RadosJournal.h).

#include <blobstreaming/common/BlobInfo.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace blobstreaming::detail::rados_index {

inline constexpr const char* kIndexObject = "blobstreaming.index";
inline constexpr const char* kBlobPrefix = "b:";
inline constexpr const char* kReservationPrefix = "r:";
inline constexpr const char* kTouchPrefix = "u:";
inline constexpr const char* kTrashPrefix = "t:";

inline std::string blob_key(std::string_view name) { return kBlobPrefix + std::string(name); }
inline std::string reservation_key(const std::string& id) { return kReservationPrefix + id; }
inline std::string touch_key(const std::string& id) { return kTouchPrefix + id; }
inline std::string trash_key(const std::string& id) { return kTrashPrefix + id; }

/// `blobstreaming.data.ID.XXXXXXXX` (chunk in hex).
std::string data_object(const std::string& id, std::uint64_t chunk);
/// `blobstreaming.resume.ID`: the resume journal of reservation ID.
std::string resume_object(const std::string& id);
/// Data objects of a Blob of `size` bytes in chunks of `chunk` bytes.
std::uint64_t chunk_count(std::uint64_t size, std::uint32_t chunk) noexcept;
/// 32 random hex digits.
std::string new_id();
std::int64_t now_ms() noexcept;

struct BlobRecord {
    BlobInfo info;
    std::string data;  ///< ID of its data objects
    std::uint32_t chunk = 0;
};
std::string encode(const BlobRecord& record);
/// The record of Blob `name`; nullopt with `why` when `text` is none.
std::optional<BlobRecord> decode_blob(std::string_view name, std::string_view text, std::string& why);

struct ReservationRecord {
    std::string name;
    std::uint64_t size = 0;
    std::uint32_t chunk = 0;
    std::string owner;  ///< the store instance that writes it (RadosStore::instance())
    std::int64_t created_ms = 0;
    /// The owner's grace: nobody gives it up sooner, whatever their own.
    std::int64_t grace_ms = 0;
    /// Kept for a resume across a restart (Reservation::keep_for_resume()):
    /// the client that may resume it, once its journal holds a range; "" when
    /// not kept.
    std::string client;
};
std::string encode(const ReservationRecord& record);
std::optional<ReservationRecord> decode_reservation(std::string_view text, std::string& why);

struct TrashRecord {
    std::string name;  ///< whose bytes they were, for the log
    std::uint64_t chunks = 0;
    std::int64_t deadline_ms = 0;  ///< not deleted before (readers may still read them)
};
std::string encode(const TrashRecord& record);
std::optional<TrashRecord> decode_trash(std::string_view text, std::string& why);

}  // namespace blobstreaming::detail::rados_index
