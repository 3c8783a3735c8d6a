#pragma once
/// A FileStore reservation: a file in tmp/ filled with pwrite from a small
/// reused buffer (its writeback started as the bytes arrive), committed by
/// writing its header, fdatasync, rename into blobs/ and a directory fsync
/// shared with concurrent commits.

#include "FileStoreState.h"
#include "ResumeJournal.h"

#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/blobstore/Store.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace blobstreaming::detail {

/// The reservation of `size` bytes for blob `name` in the file at `path`,
/// already created at its full size (and counted in the index). `sparse`:
/// the file system could not allocate the file's blocks at reserve time;
/// its header and bytes are already counted in State::promised.
std::unique_ptr<Reservation> make_file_reservation(std::shared_ptr<FileStore::State> state, std::string name,
                                                   std::uint64_t size, ReserveMode mode, ChecksumAlgorithm checksum,
                                                   std::filesystem::path path, bool sparse);

/// A reservation kept across a restart (Reservation::keep_for_resume()),
/// reopened: the file at `path` holds its first `written` bytes (checked
/// against the journal `<path>.resume`), whose checksum state is
/// `checksum`; counted in the index by the caller.
std::unique_ptr<Reservation> make_kept_file_reservation(std::shared_ptr<FileStore::State> state,
                                                        const ResumeHeader& kept, std::filesystem::path path,
                                                        std::uint64_t written, ChecksumState checksum);

/// FileStore's open: the kept reservations that recover() left in tmp/
/// (State::journaled) reread and checked against their journals; those of
/// which nothing usable remains are removed with their journal.
std::vector<Store::Kept> reopen_kept(const std::shared_ptr<FileStore::State>& state);

}  // namespace blobstreaming::detail
