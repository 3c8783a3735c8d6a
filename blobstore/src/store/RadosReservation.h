#pragma once
/// A RadosStore reservation: the push's bytes written into fresh data
/// objects from two buffers in turn (RADOS writes one while the next
/// fills), committed by one compound write on the index object.

#include "RadosStoreState.h"
#include "ResumeJournal.h"

#include <blobstreaming/blobstore/Reservation.h>
#include <blobstreaming/blobstore/Store.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::detail {

/// The reservation of `size` bytes for Blob `name`, already recorded in the
/// index as `record` (the encoded ReservationRecord) under data id `id`,
/// and among the store's open reservations.
std::unique_ptr<Reservation> make_rados_reservation(std::shared_ptr<RadosStore::State> state, std::string name,
                                                    std::uint64_t size, ReserveMode mode, ChecksumAlgorithm checksum,
                                                    std::string id, std::string record);

/// A reservation kept across a restart (Reservation::keep_for_resume()),
/// adopted: its data objects (of `chunk` bytes each) hold its first
/// `written` bytes, checked against its journal, whose checksum state is
/// `checksum`; recorded in the index as `record` (owned by this store now)
/// and among the store's open reservations.
std::unique_ptr<Reservation> make_kept_rados_reservation(std::shared_ptr<RadosStore::State> state,
                                                         const ResumeHeader& kept, std::string id, std::string record,
                                                         std::uint32_t chunk, std::uint64_t written,
                                                         ChecksumState checksum);

/// RadosStore's open (RadosKept.cpp): the reservations kept for a resume
/// whose store instance is gone (its process, on this host, died), adopted
/// and reread; those of which nothing usable remains go to the trash.
std::vector<Store::Kept> adopt_kept(const std::shared_ptr<RadosStore::State>& state);

}  // namespace blobstreaming::detail
