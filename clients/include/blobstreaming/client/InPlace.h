#pragma once
/// A Blob read in place from the file of a store on this host
/// (PullSink::in_place): no byte copied into the process, the file held
/// open and the range mapped read-only, for a server that sends it on with
/// sendfile(2) or from the mapping.

#include <cstddef>
#include <cstdint>
#include <string>

namespace blobstreaming::client {

/// The range of a committed Blob in its store's file. It is the version the
/// store described when the pull asked for the file: a file store never
/// writes a committed file in place (a replacement is a new file renamed
/// over it, a removal unlinks it), so the bytes stay that version's for as
/// long as this object lives, whatever happens to the Blob meanwhile. A
/// pull with PullOptions::verify has checked them against the whole Blob's
/// checksum before completing. Immutable; any thread.
class InPlaceBlob {
public:
    virtual ~InPlaceBlob() = default;
    /// The range's first byte, mapped read-only (nullptr when it is empty).
    virtual const std::uint8_t* data() const noexcept = 0;
    virtual std::size_t size() const noexcept = 0;
    /// The store's file, open for reading (for sendfile(2)): the range
    /// starts at byte file_offset() of it. Never to be closed by the caller.
    virtual int fd() const noexcept = 0;
    virtual std::uint64_t file_offset() const noexcept = 0;
    /// The file's path, for messages.
    virtual const std::string& path() const noexcept = 0;
};

}  // namespace blobstreaming::client
