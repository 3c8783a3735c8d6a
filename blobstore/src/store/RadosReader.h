#pragma once
/// The BlobReader of a RadosStore range: reads a Blob's data objects a piece
/// (up to one chunk) at a time, the next piece already on its way while the
/// caller takes the current one.

#include "RadosStoreState.h"

#include <blobstreaming/blobstore/BlobReader.h>

#include <cstdint>
#include <memory>

namespace blobstreaming::detail {

/// A reader of bytes [start, end) of the version `record` describes.
std::shared_ptr<BlobReader> make_rados_reader(std::shared_ptr<RadosStore::State> state, rados_index::BlobRecord record,
                                              std::uint64_t start, std::uint64_t end);

}  // namespace blobstreaming::detail
