#pragma once
/// raw-c-durable's receiver: every pushed blob becomes a file that is on
/// disk before the Ack, with the promise a FileStore push makes (write,
/// fdatasync, rename into place, fsync of that directory), so that FileStore
/// pushes can be compared with a bare socket loop that keeps it too.

#include "WireSession.h"

#include <cstdint>
#include <string>
#include <vector>

namespace blobstreaming::bench {

class DurableFiles : public wire::PushSink {
public:
    /// Creates a fresh directory `parent`/bsbench-durable.XXXXXX with tmp/
    /// and blobs/ in it. Throws Error(io_error) naming the path and why.
    explicit DurableFiles(const std::string& parent);
    /// Removes that directory and everything in it.
    ~DurableFiles() override;
    DurableFiles(const DurableFiles&) = delete;
    DurableFiles& operator=(const DurableFiles&) = delete;

    /// Writes tmp/INDEX.part, fdatasync()s it, renames it to blobs/INDEX and
    /// fsync()s blobs/. Throws Error(io_error) naming the file and the call.
    void store(std::uint32_t index, const std::uint8_t* data, std::uint64_t size) override;
    /// Reads blobs/0..count-1 back (untimed), then removes them.
    std::vector<Digest> digests_then_clear(std::uint32_t count) override;
    const char* name() const noexcept override { return "raw-c-durable"; }

    const std::string& root() const noexcept { return root_; }

private:
    std::string root_;
    std::string tmp_;
    std::string blobs_;
};

}  // namespace blobstreaming::bench
