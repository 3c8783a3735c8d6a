#pragma once
/// What makes two data sets one instance, and the checks that keep a
/// value read from data out of paths and out of another patient's study
/// (docs/DICOM.md, "One data set per SOP Instance UID"):
///
/// - UIDs are checked against PS3.5 9.1 before they are stored, indexed or
///   made into a file name.
/// - Two data sets under one SOP Instance UID are the same instance when
///   their identifying attributes (kIdentifying) are equal and so are the
///   data sets themselves, the bytes after the File Meta Information
///   (data_set_checksum()); their Blobs' checksums may differ (the gateway
///   writes its own meta header before the data set it received, `blob
///   push` stores the file as it is). Otherwise they conflict: both are
///   kept and the instance is flagged.
/// - A retrieved object's own attributes, read from the bytes delivered,
///   must be those the index promised.

#include <blobstreaming/common/Checksum.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

class DcmItem;

namespace blobstreaming::dicom {

/// The attributes that identify an instance's place: whose it is and where
/// it belongs. Equal in two data sets with one SOP Instance UID: copies of
/// one instance; different: a conflict.
inline constexpr std::array<const char*, 4> kIdentifying = {"PatientID", "StudyInstanceUID", "SeriesInstanceUID",
                                                            "SOPClassUID"};

/// The UIDs checked wherever a data set comes in (C-STORE, the indexer).
inline constexpr std::array<const char*, 3> kInstanceUids = {"SOPInstanceUID", "StudyInstanceUID",
                                                             "SeriesInstanceUID"};

/// Whether `uid` is a UID (PS3.5 9.1): components of digits separated by
/// single dots, no leading zero in a component but "0" itself, 1 to 64
/// characters.
bool valid_uid(std::string_view uid) noexcept;

/// `value` for a message: printable ASCII as it is (a backslash doubled,
/// a quote escaped), every other byte as \xNN, at most `limit` bytes of
/// the value shown ("..." after them).
std::string escaped(std::string_view value, std::size_t limit = 80);

/// Why `values` (keyword -> value, as read_header() fills it) holds a UID of
/// kInstanceUids that is not valid, e.g. `SOPInstanceUID "1.2.840.ABC.1" is
/// not a valid UID (...)`; "" when each is valid or empty.
std::string invalid_uid(const std::map<std::string, std::string>& values);

/// The identifying attributes of `a` that differ in `b`, e.g. `PatientID
/// "PAT-B" (not "PAT-A"), StudyInstanceUID "1.2.4" (not "1.2.3")`; "" when
/// they are the same instance.
std::string identity_difference(const std::map<std::string, std::string>& a,
                                const std::map<std::string, std::string>& b);

/// Where the data set starts in a DICOM file's bytes (after the preamble and
/// the meta group, from its group length), or 0 when that cannot be told
/// (no DICM at byte 128, no group length first, or the meta group is longer
/// than `size`).
std::size_t data_set_offset(const std::uint8_t* bytes, std::size_t size);

/// The CRC32C of a Blob's data set (the bytes after its File Meta
/// Information), "crc32c:XXXXXXXX", from the Blob's own checksum `blob`
/// (of all its `blob_size` bytes) and its first `size` bytes `head` (which
/// must hold the meta group), without reading the rest: CRC32C is linear,
/// so crc(meta || data set) = crc_combine(crc(meta), crc(data set), n) =
/// crc_combine(crc(meta), 0, n) XOR crc(data set), n the data set's length.
/// "" when it cannot be told: `blob` is not a CRC32C (a SHA-256 Blob), or
/// the meta group is not found in `head` (data_set_offset()).
std::string data_set_checksum(const Checksum& blob, std::uint64_t blob_size, const std::uint8_t* head,
                              std::size_t size);

/// Reads the identifying attributes and the SOP Instance UID of the DICOM
/// file at `path` (its header only, DCMTK) and compares them with
/// `expected`'s (those of `expected` that are not empty). Returns "" or why
/// the file is not the object expected (it does not parse, or e.g.
/// `its PatientID is "PAT-A", the index says "PAT-B"`).
std::string delivered_mismatch(const std::string& path, const std::map<std::string, std::string>& expected);
/// As above, of a data set already parsed.
std::string delivered_mismatch(DcmItem& data_set, const std::map<std::string, std::string>& expected);

}  // namespace blobstreaming::dicom
