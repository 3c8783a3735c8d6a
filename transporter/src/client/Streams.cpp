#include <blobstreaming/transporter/client/Streams.h>

#include <blobstreaming/common/Error.h>

namespace blobstreaming::dataplane {

void Source::select(std::uint64_t, std::uint64_t)
{
    throw Error(Errc::invalid_argument, "this push source produces its bytes in order only: it cannot send a part");
}

void Source::hash_range(std::uint64_t, std::uint64_t, ChecksumState&)
{
    throw Error(Errc::invalid_argument, "this push source produces its bytes in order only: it cannot hash a part");
}

}  // namespace blobstreaming::dataplane
