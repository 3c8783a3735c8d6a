#pragma once
/// Checksums between the library's type (common/Checksum.h) and the IDL's
/// (BlobStreaming::BlobChecksum, ChecksumAlgorithm): the one conversion both the
/// servants and the client library use.

#include <blobstreaming/common/Checksum.h>
#include <blobstreaming/common/Error.h>

#include <BlobStreaming.hh>

#include <optional>
#include <string>

namespace blobstreaming::corba {

inline BlobStreaming::ChecksumAlgorithm to_idl(ChecksumAlgorithm algorithm) noexcept
{
    return algorithm == ChecksumAlgorithm::sha256 ? BlobStreaming::CHECKSUM_SHA256 : BlobStreaming::CHECKSUM_CRC32C;
}

/// nullopt for CHECKSUM_STORE_DEFAULT (or a value this release does not know).
inline std::optional<ChecksumAlgorithm> algorithm_of(BlobStreaming::ChecksumAlgorithm algorithm) noexcept
{
    switch (algorithm) {
    case BlobStreaming::CHECKSUM_CRC32C: return ChecksumAlgorithm::crc32c;
    case BlobStreaming::CHECKSUM_SHA256: return ChecksumAlgorithm::sha256;
    default: return std::nullopt;
    }
}

inline void to_idl(const Checksum& in, BlobStreaming::BlobChecksum& out)
{
    out.algorithm = to_idl(in.algorithm);
    out.value.length(static_cast<CORBA::ULong>(in.size()));
    for (CORBA::ULong i = 0; i < out.value.length(); ++i) out.value[i] = in.value[i];
}

/// Errc::invalid_argument naming `what` when the algorithm is not a concrete
/// one or the value's length does not match it.
inline Checksum checksum_of(const BlobStreaming::BlobChecksum& in, const std::string& what)
{
    const auto algorithm = algorithm_of(in.algorithm);
    if (!algorithm)
        throw Error(Errc::invalid_argument,
                    what + ": the checksum names no algorithm (allowed: " + kChecksumAlgorithmNames + ")");
    Checksum out;
    out.algorithm = *algorithm;
    if (in.value.length() != out.size())
        throw Error(Errc::invalid_argument, what + ": a " + std::string(to_string(*algorithm)) + " checksum has " +
                                                std::to_string(out.size()) + " bytes, not " +
                                                std::to_string(in.value.length()));
    for (CORBA::ULong i = 0; i < in.value.length(); ++i) out.value[i] = in.value[i];
    return out;
}

}  // namespace blobstreaming::corba
