#pragma once
/// Which clients may do what with a store: the daemon's allow-read,
/// allow-write and allow-delete lists of certificate subjects
/// (docs/SECURITY.md). Enforced only when TLS is on; then whatever is not
/// listed is denied.

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace blobstreaming::server {

enum class Permission {
    read,    ///< stat, list, contains, pull (send), the local fast path
    write,   ///< reserve, push (recv), commit, abort
    remove,  ///< remove ("delete" in the configuration)
};

/// "read", "write", "delete".
const char* permission_name(Permission p) noexcept;

class AccessList {
public:
    /// Adds `subject` (an RFC 2253 subject such as "CN=ws1,O=Radiology", or
    /// "*" for every client with a verified certificate). Throws
    /// Error(invalid_argument) naming `option` when the entry is not of that
    /// form.
    void allow(Permission p, const std::string& subject, const std::string& option);

    /// Off (the default): everything is permitted (plain TCP, no identities).
    void enforce(bool on) noexcept { enforced_ = on; }
    bool enforced() const noexcept { return enforced_; }
    bool empty() const noexcept;

    bool permits(const std::string& subject, Permission p) const;
    /// Throws Error(refused, "permission denied: client "CN=ws1" may not
    /// write") unless permitted.
    void require(const std::string& subject, Permission p) const;

    /// One line for the log: "read: CN=a, *; write: CN=b; delete: none".
    std::string describe() const;

private:
    bool enforced_ = false;
    std::array<std::vector<std::string>, 3> allowed_;
};

/// The access list in force: read by the servants on omniORB's threads,
/// replaced as a whole on the daemon's main thread (a SIGHUP reload). A
/// check uses one list from start to end.
class LiveAccessList {
public:
    explicit LiveAccessList(AccessList list = {}) : current_(std::make_shared<const AccessList>(std::move(list))) {}

    std::shared_ptr<const AccessList> get() const { return std::atomic_load(&current_); }
    void replace(AccessList list) { std::atomic_store(&current_, std::make_shared<const AccessList>(std::move(list))); }

private:
    std::shared_ptr<const AccessList> current_;
};

}  // namespace blobstreaming::server
