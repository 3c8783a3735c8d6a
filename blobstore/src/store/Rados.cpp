/// RadosStore's layer over librados (Rados.h): connecting with bounded
/// timeouts and specific errors, completions, omap operations.
#include "Rados.h"

#include <blobstreaming/common/Error.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace blobstreaming::detail::rados {

std::string errno_text(int ret) { return std::strerror(ret < 0 ? -ret : ret); }

namespace {

std::string conf_value(rados_t cluster, const char* option)
{
    char buffer[1024] = {};
    if (rados_conf_get(cluster, option, buffer, sizeof buffer - 1) != 0) return {};
    return buffer;
}

/// "10", "2.5": seconds as Ceph's options take them.
std::string seconds_text(std::chrono::milliseconds ms)
{
    return fmt::format("{:g}", static_cast<double>(ms.count()) / 1000.0);
}

}  // namespace

Pool::Pool(std::string store, std::string pool, const ConnectSettings& settings)
    : store_(std::move(store)), pool_(std::move(pool)), user_("client." + settings.user)
{
    int rc = rados_create2(&cluster_, "ceph", user_.c_str(), 0);
    if (rc < 0) {
        cluster_ = nullptr;
        throw Error(Errc::io_error, store_ + ": cannot create a Ceph client for " + user_ + ": " + errno_text(rc));
    }
    const std::string conf = settings.conf_file.empty() ? "the default Ceph configuration" : settings.conf_file;
    rc = rados_conf_read_file(cluster_, settings.conf_file.empty() ? nullptr : settings.conf_file.c_str());
    if (rc < 0) {
        rados_shutdown(cluster_);
        throw Error(Errc::invalid_argument,
                    store_ + ": cannot read the Ceph configuration " + conf + ": " + errno_text(rc) +
                        (settings.conf_file.empty() ? " (give it with --ceph-conf, or set CEPH_CONF)" : ""));
    }
    // After the file: a configuration that asks for no timeout (Ceph's
    // default for OSD operations) must not hang a store forever.
    const std::string timeout = seconds_text(settings.timeout);
    for (const char* option : {"client_mount_timeout", "rados_mon_op_timeout", "rados_osd_op_timeout"})
        rados_conf_set(cluster_, option, timeout.c_str());
    rc = rados_connect(cluster_);
    if (rc < 0) {
        const std::string mons = conf_value(cluster_, "mon_host");
        const std::string keyring = conf_value(cluster_, "keyring");
        rados_shutdown(cluster_);
        cluster_ = nullptr;
        const std::string as = " as " + user_ + " (configuration " + conf + ")";
        if (rc == -ETIMEDOUT)
            throw Error(Errc::unreachable, store_ + ": no Ceph monitor answered within " + timeout + " s at " +
                                               (mons.empty() ? "(no mon_host)" : mons) + as);
        if (rc == -EACCES || rc == -EPERM)
            throw Error(Errc::refused, store_ + ": the Ceph cluster refused " + user_ +
                                           ": wrong key, or no such user (keyring " + keyring +
                                           "; check --ceph-user and the keyring): " + errno_text(rc));
        if (rc == -ENOENT && mons.empty())
            throw Error(Errc::invalid_argument, store_ + ": the Ceph configuration " + conf +
                                                    " names no monitor (mon_host): " + errno_text(rc));
        if (rc == -ENOENT)
            throw Error(Errc::refused, store_ + ": no key for " + user_ + " in its keyring (" + keyring +
                                           "): the cluster requires authentication (check --ceph-user "
                                           "and the keyring named in " +
                                           conf + "): " + errno_text(rc));
        throw Error(Errc::unreachable, store_ + ": cannot connect to the Ceph cluster at " +
                                           (mons.empty() ? "(no mon_host)" : mons) + as + ": " + errno_text(rc));
    }
    rc = rados_ioctx_create(cluster_, pool_.c_str(), &io_);
    if (rc < 0) {
        rados_shutdown(cluster_);
        cluster_ = nullptr;
        io_ = nullptr;
        if (rc == -ENOENT)
            throw Error(Errc::invalid_argument,
                        store_ + ": the Ceph cluster has no pool \"" + pool_ +
                            "\" (the store does not create pools; create it with `ceph osd pool create " + pool_ +
                            "` and `ceph osd pool application enable " + pool_ + " blobstreaming`)");
        throw Error(Errc::io_error, store_ + ": cannot open pool \"" + pool_ + "\": " + errno_text(rc));
    }
}

Pool::~Pool()
{
    if (io_) {
        rados_aio_flush(io_);  // removals and trash records sent without waiting
        rados_ioctx_destroy(io_);
    }
    if (cluster_) rados_shutdown(cluster_);
}

int Pool::mon_command(const std::string& command, std::string& answer, std::string& status) const
{
    const char* cmd[] = {command.c_str()};
    char* out = nullptr;
    char* outs = nullptr;
    std::size_t out_len = 0, outs_len = 0;
    const int rc = rados_mon_command(cluster_, cmd, 1, "", 0, &out, &out_len, &outs, &outs_len);
    answer.assign(out ? out : "", out ? out_len : 0);
    status.assign(outs ? outs : "", outs ? outs_len : 0);
    if (out) rados_buffer_free(out);
    if (outs) rados_buffer_free(outs);
    return rc;
}

Completion& Completion::operator=(Completion&& other) noexcept
{
    if (this != &other) {
        reset();
        c_ = std::exchange(other.c_, nullptr);
    }
    return *this;
}

rados_completion_t Completion::arm(rados_callback_t on_complete, void* arg) noexcept
{
    reset();
    if (rados_aio_create_completion2(arg, on_complete, &c_) < 0) c_ = nullptr;
    return c_;
}

int Completion::wait() noexcept
{
    if (!c_) return 0;
    rados_aio_wait_for_complete(c_);
    const int rc = rados_aio_get_return_value(c_);
    rados_aio_release(c_);
    c_ = nullptr;
    return rc;
}

int remove_async(rados_ioctx_t io, const std::string& oid) noexcept
{
    rados_completion_t c = nullptr;
    if (rados_aio_create_completion2(nullptr, nullptr, &c) < 0) return -ENOMEM;
    const int rc = rados_aio_remove(io, oid.c_str(), c);
    rados_aio_release(c);
    return rc;
}

WriteOp::WriteOp() : op_(rados_create_write_op())
{
    if (!op_) throw std::bad_alloc();
}

WriteOp::~WriteOp() { rados_release_write_op(op_); }

void WriteOp::create() { rados_write_op_create(op_, LIBRADOS_CREATE_IDEMPOTENT, nullptr); }

std::size_t WriteOp::expect(const std::string& key, const std::string& value)
{
    results_.push_back(0);
    rados_write_op_omap_cmp(op_, key.c_str(), LIBRADOS_CMPXATTR_OP_EQ, value.data(), value.size(), &results_.back());
    return results_.size() - 1;
}

void WriteOp::require(const std::string& key, const std::string& value)
{
    rados_write_op_omap_cmp(op_, key.c_str(), LIBRADOS_CMPXATTR_OP_EQ, value.data(), value.size(), nullptr);
}

void WriteOp::set(const std::string& key, const std::string& value)
{
    const char* keys[] = {key.c_str()};
    const char* values[] = {value.data()};
    const std::size_t lengths[] = {value.size()};
    rados_write_op_omap_set(op_, keys, values, lengths, 1);
}

void WriteOp::remove(const std::string& key)
{
    const char* keys[] = {key.c_str()};
    rados_write_op_omap_rm_keys(op_, keys, 1);
}

int WriteOp::operate(rados_ioctx_t io, const std::string& oid)
{
    return rados_write_op_operate(op_, io, oid.c_str(), nullptr, 0);
}

int WriteOp::submit(rados_ioctx_t io, const std::string& oid)
{
    rados_completion_t c = nullptr;
    if (rados_aio_create_completion2(nullptr, nullptr, &c) < 0) return -ENOMEM;
    const int rc = rados_aio_write_op_operate(op_, io, c, oid.c_str(), nullptr, 0);
    rados_aio_release(c);
    return rc;
}

int WriteOp::submit(rados_ioctx_t io, const std::string& oid, Completion& done)
{
    rados_completion_t c = done.arm();
    if (!c) return -ENOMEM;
    const int rc = rados_aio_write_op_operate(op_, io, c, oid.c_str(), nullptr, 0);
    if (rc < 0) done.reset();
    return rc;
}

namespace {

/// Appends the entries of `it` to `out` (and ends the iterator).
void drain(rados_omap_iter_t it, std::vector<std::pair<std::string, std::string>>& out)
{
    char* key = nullptr;
    char* value = nullptr;
    std::size_t key_len = 0, value_len = 0;
    while (rados_omap_get_next2(it, &key, &value, &key_len, &value_len) == 0 && key)
        out.emplace_back(std::string(key, key_len), std::string(value ? value : "", value ? value_len : 0));
    rados_omap_get_end(it);
}

/// A read operation, released on every path.
struct ReadOp {
    rados_read_op_t op = rados_create_read_op();
    ~ReadOp() { rados_release_read_op(op); }
};

/// An omap iterator that an operation allocates when it is set up: ended
/// on every path, also when the operation fails (drain() ends it itself).
struct OmapIter {
    rados_omap_iter_t it = nullptr;
    ~OmapIter()
    {
        if (it) rados_omap_get_end(it);
    }
    rados_omap_iter_t take() noexcept { return std::exchange(it, nullptr); }
};

}  // namespace

int omap_get(rados_ioctx_t io, const std::string& oid, const std::vector<std::string>& keys,
             std::map<std::string, std::string>& out)
{
    std::vector<const char*> names;
    names.reserve(keys.size());
    for (const auto& k : keys) names.push_back(k.c_str());
    ReadOp read;
    OmapIter iter;
    int result = 0;
    rados_read_op_omap_get_vals_by_keys(read.op, names.data(), names.size(), &iter.it, &result);
    const int rc = rados_read_op_operate(read.op, io, oid.c_str(), 0);
    if (rc < 0) return rc;
    if (result < 0) return result;
    std::vector<std::pair<std::string, std::string>> entries;
    drain(iter.take(), entries);
    for (auto& [k, v] : entries) out[std::move(k)] = std::move(v);
    return 0;
}

int omap_scan(rados_ioctx_t io, const std::string& oid, const std::string& prefix, const std::string& after,
              unsigned max, std::vector<std::pair<std::string, std::string>>& out, bool& more)
{
    ReadOp read;
    OmapIter iter;
    unsigned char has_more = 0;
    int result = 0;
    rados_read_op_omap_get_vals2(read.op, after.c_str(), prefix.c_str(), max, &iter.it, &has_more, &result);
    const int rc = rados_read_op_operate(read.op, io, oid.c_str(), 0);
    if (rc < 0) return rc;
    if (result < 0) return result;
    drain(iter.take(), out);
    more = has_more != 0;
    return 0;
}

}  // namespace blobstreaming::detail::rados
