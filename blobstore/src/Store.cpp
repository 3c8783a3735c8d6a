#include <blobstreaming/blobstore/Store.h>

#include <blobstreaming/blobstore/BlobName.h>
#include <blobstreaming/blobstore/Error.h>

#include <limits>

namespace blobstreaming {

bool Store::contains(std::string_view name) const
{
    try {
        stat(name);
        return true;
    } catch (const Error& e) {
        if (e.code() == Errc::no_such_blob) return false;
        throw;
    }
}

BlobRange Store::read_at(std::string_view name, std::uint64_t offset, std::uint64_t length) const
{
    if (length > std::numeric_limits<std::uint64_t>::max() - offset) {
        validate_blob_name(name);
        throw Error(Errc::invalid_range, "read " + quote_name(name) + ": offset " +
                                             std::to_string(offset) + " + length " +
                                             std::to_string(length) + " overflows 64 bits");
    }
    return read(name, offset, offset + length);
}

BlobRange Store::read_all(std::string_view name) const
{
    return read(name, 0, kToEnd);
}

}  // namespace blobstreaming
