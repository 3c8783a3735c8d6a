#pragma once
/// A spool file (Spool.h) of the DICOMweb side: a STOW-RS part, an instance
/// on its way to a WADO-RS response, an instance's first bytes; removed
/// when the object goes. Numbered apart from the DIMSE side's files.

#include "Spool.h"

#include <atomic>
#include <cstdio>
#include <string>

namespace blobstreaming::dicom::web {

class SpoolFile {
public:
    explicit SpoolFile(const std::string& dir) : path_(spool_file(dir, kBase + ++counter())) {}
    ~SpoolFile() { std::remove(path_.c_str()); }
    SpoolFile(const SpoolFile&) = delete;
    SpoolFile& operator=(const SpoolFile&) = delete;
    const std::string& path() const noexcept { return path_; }
    /// A new file name of the same numbering, for a user that removes the
    /// file itself (Retrieval).
    static std::string next_path(const std::string& dir) { return spool_file(dir, kBase + ++counter()); }

private:
    /// Above the DIMSE side's numbers and the HTTP request bodies' (HttpServer.cpp).
    static constexpr unsigned long kBase = 2ul << 40;
    static std::atomic<unsigned long>& counter()
    {
        static std::atomic<unsigned long> n{0};
        return n;
    }
    std::string path_;
};

}  // namespace blobstreaming::dicom::web
