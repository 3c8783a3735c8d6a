#pragma once
/// What a RadosStore, its reservations and its readers share: the
/// connection, this store's open reservations, the cached usage, and the
/// cleanup thread. The index itself lives in the cluster (RadosIndex.h).

#include "Rados.h"
#include "RadosIndex.h"

#include <blobstreaming/blobstore/RadosStore.h>
#include <blobstreaming/common/Error.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace blobstreaming {

struct RadosStore::State {
    /// Connects (rados::Pool's errors) and makes sure the index object exists.
    State(const std::string& pool_name, const Options& options);
    /// Stops the cleanup thread should ~RadosStore not have (a constructor
    /// that failed after starting it).
    ~State();
    State(const State&) = delete;
    State& operator=(const State&) = delete;

    Options options;
    detail::rados::Pool pool;
    std::string instance;  ///< RadosStore::instance()

    /// This store's open reservations (by data id) and their names: the
    /// cleanup thread vouches for them; at most one per name.
    struct Open {
        std::string name;
        std::uint64_t size = 0;
    };
    mutable std::mutex mutex;
    std::map<std::string, Open> open;
    std::set<std::string, std::less<>> reserving;
    std::uint64_t reserved = 0;
    /// Usage as of the last refresh, adjusted by this store's own commits
    /// and removals since.
    std::uint64_t used = 0;
    std::uint64_t blob_count = 0;
    /// What the pool can still take (quota, else `ceph df`'s max_avail),
    /// when known, and the quota (0: none).
    std::optional<std::uint64_t> pool_room;
    std::uint64_t quota = 0;

    const std::string& store() const noexcept { return pool.store(); }
    rados_ioctx_t io() const noexcept { return pool.io(); }

    /// Whether `instance` is a RadosStore open in this process now: a
    /// store of this process never adopts another's reservations.
    static bool open_here(const std::string& instance);

    /// Up to `max` index entries whose keys start with `prefix`, the
    /// prefix cut off the keys. Throws Error(io_error) naming `what`.
    std::vector<std::pair<std::string, std::string>> scan(const char* prefix, std::size_t max,
                                                          const std::string& what) const;

    /// The record of Blob `name` and its encoded text (`raw`), nullopt when
    /// not committed. Throws Error(io_error) when the index cannot be read,
    /// Error(corrupt) when the record is not one.
    std::optional<detail::rados_index::BlobRecord> find(std::string_view name, std::string* raw = nullptr) const;
    /// find(), or Error(no_such_blob) (saying when it is being written here).
    detail::rados_index::BlobRecord get(std::string_view name, std::string* raw = nullptr) const;

    /// Error(out_of_space) for a full pool or quota (-ENOSPC, -EDQUOT),
    /// else Error(io_error): "WHAT: rados:POOL: REASON".
    [[noreturn]] void fail(const std::string& what, int rc) const;
    /// The same as an Errc, for the data path.
    static Errc errc_of(int rc) noexcept;

    /// A committed Blob changed by this store: usage at once.
    void count_commit(std::uint64_t size, const std::optional<std::uint64_t>& replaced);
    void count_remove(std::uint64_t size);
    /// A reservation of this store closed (committed or aborted).
    void close_reservation(const std::string& id);

    // The cleanup thread (RadosStore::collect() rounds; RadosKeeper.cpp).
    void start_keeper();
    void stop_keeper() noexcept;
    Cleanup collect();
    /// Every grace / 4, at most 30 s, at least 10 ms.
    std::chrono::milliseconds keeper_period() const noexcept;

private:
    void keeper_loop() noexcept;
    void vouch();
    std::size_t abandon_stale();
    void purge_trash(Cleanup& out);
    void refresh_usage();

    std::mutex keeper_mutex_;
    std::condition_variable keeper_wake_;
    bool keeper_stopping_ = false;
    std::thread keeper_;
};

}  // namespace blobstreaming
