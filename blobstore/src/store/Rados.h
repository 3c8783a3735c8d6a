#pragma once
/// RadosStore's thin layer over librados' C API: the connection to one pool,
/// completions of asynchronous operations, compound writes and reads of one
/// object's omap, and the text of a negative errno. Nothing here knows about
/// Blobs. All of it is thread-safe as librados is: one connection serves
/// every thread of the store.

#include <rados/librados.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace blobstreaming::detail::rados {

/// "Connection timed out" for -110 (librados returns negative errnos).
std::string errno_text(int ret);

/// How to reach the cluster.
struct ConnectSettings {
    std::string conf_file;  ///< "" : librados' own search ($CEPH_CONF, /etc/ceph/ceph.conf, ...)
    std::string user;       ///< the id of client.ID
    /// client_mount_timeout, rados_mon_op_timeout and rados_osd_op_timeout:
    /// no call waits longer for an unreachable cluster or a stopped OSD.
    std::chrono::milliseconds timeout{10000};
};

/// A connection to the cluster and an I/O context on one pool; flushes the
/// asynchronous operations still in flight before it disconnects.
class Pool {
public:
    /// Connects. Throws Error naming `store` ("rados:POOL") and the reason:
    /// invalid_argument (an unreadable configuration, a missing pool),
    /// unreachable (no monitor answered within the timeout), refused (the
    /// cluster does not accept the user's key, or no keyring).
    Pool(std::string store, std::string pool, const ConnectSettings& settings);
    ~Pool();
    Pool(const Pool&) = delete;
    Pool& operator=(const Pool&) = delete;

    rados_ioctx_t io() const noexcept { return io_; }
    const std::string& name() const noexcept { return pool_; }
    /// "rados:POOL", for messages.
    const std::string& store() const noexcept { return store_; }
    /// "client.ID".
    const std::string& user() const noexcept { return user_; }

    /// A monitor command (JSON) and its JSON answer; 0 or a negative errno
    /// (`status` then holds the monitor's explanation).
    int mon_command(const std::string& command, std::string& answer, std::string& status) const;

private:
    std::string store_;
    std::string pool_;
    std::string user_;
    rados_t cluster_ = nullptr;
    rados_ioctx_t io_ = nullptr;
};

/// One asynchronous operation's completion. Waits for the operation before
/// it lets go of it (the buffers it reads or fills belong to its owner).
class Completion {
public:
    Completion() = default;
    ~Completion() { reset(); }
    Completion(Completion&& other) noexcept : c_(std::exchange(other.c_, nullptr)) {}
    Completion& operator=(Completion&& other) noexcept;

    /// A fresh completion for the next operation (waits for the previous);
    /// nullptr when none can be allocated. `on_complete` (with `arg`) runs
    /// once, on a librados thread, when the operation completes.
    rados_completion_t arm(rados_callback_t on_complete = nullptr, void* arg = nullptr) noexcept;
    /// An operation is (or was) in flight and not yet waited for.
    bool armed() const noexcept { return c_ != nullptr; }
    bool ready() const noexcept { return c_ == nullptr || rados_aio_is_complete(c_) != 0; }
    /// Waits; the operation's return value (bytes read, 0, or -errno), and
    /// the completion is free again. 0 when none was armed.
    int wait() noexcept;
    /// Waits and forgets the result.
    void reset() noexcept { (void)wait(); }

private:
    rados_completion_t c_ = nullptr;
};

/// Starts removing `oid` and forgets it (its completion is released at
/// once; Pool's destructor flushes it).
int remove_async(rados_ioctx_t io, const std::string& oid) noexcept;

/// A compound write on one object: every step is applied, or none.
class WriteOp {
public:
    WriteOp();
    ~WriteOp();
    WriteOp(const WriteOp&) = delete;
    WriteOp& operator=(const WriteOp&) = delete;

    /// Creates the object when it is missing (and no more).
    void create();
    /// The whole operation fails with -ECANCELED unless the value of `key`
    /// is `value` byte for byte; a missing key compares as "". Returns the
    /// index for failed().
    std::size_t expect(const std::string& key, const std::string& value);
    /// expect() for an operation that is submit()ted: nobody reads which
    /// comparison failed.
    void require(const std::string& key, const std::string& value);
    void set(const std::string& key, const std::string& value);
    void remove(const std::string& key);
    /// Runs it; 0 or a negative errno.
    int operate(rados_ioctx_t io, const std::string& oid);
    /// Submits it and returns at once (require(), not expect(): nobody
    /// reads the outcome).
    int submit(rados_ioctx_t io, const std::string& oid);
    /// Submits it; `done` completes with its outcome (0, -ECANCELED when a
    /// requirement failed, or another -errno).
    int submit(rados_ioctx_t io, const std::string& oid, Completion& done);
    /// After operate() returned -ECANCELED: whether expectation `i` failed.
    bool failed(std::size_t i) const { return results_.at(i) != 0; }

private:
    rados_write_op_t op_;
    /// Where librados writes each comparison's result: addresses that stay.
    std::deque<int> results_;
};

/// The omap values of `keys` of object `oid` that exist; 0 or -errno.
int omap_get(rados_ioctx_t io, const std::string& oid, const std::vector<std::string>& keys,
             std::map<std::string, std::string>& out);

/// Up to `max` omap entries of `oid` whose keys start with `prefix`, in key
/// order after `after` ("" from the first); `more` when there are more.
int omap_scan(rados_ioctx_t io, const std::string& oid, const std::string& prefix, const std::string& after,
              unsigned max, std::vector<std::pair<std::string, std::string>>& out, bool& more);

}  // namespace blobstreaming::detail::rados
