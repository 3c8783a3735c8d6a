#pragma once
/// A RadosStore reservation: the push's bytes written into fresh data
/// objects from two buffers in turn (RADOS writes one while the next
/// fills), committed by one compound write on the index object.

#include "RadosStoreState.h"

#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/blobstore/Store.h>

#include <cstdint>
#include <memory>
#include <string>

namespace blobstreaming::detail {

/// The reservation of `size` bytes for Blob `name`, already recorded in the
/// index as `record` (the encoded ReservationRecord) under data id `id`,
/// and among the store's open reservations.
std::unique_ptr<Reservation> make_rados_reservation(std::shared_ptr<RadosStore::State> state, std::string name,
                                                    std::uint64_t size, ReserveMode mode, ChecksumAlgorithm checksum,
                                                    std::string id, std::string record);

}  // namespace blobstreaming::detail
