#include "Streams.h"

#include <blobstreaming/blobstore/Error.h>
#include <blobstreaming/blobstore/UniqueFd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace blobstreaming::client {

namespace {

constexpr std::size_t kChunk = 1 << 20;

/// A read-only mapping of a whole file.
class Mapping {
public:
    Mapping(int fd, std::size_t size) : size_(size)
    {
        if (size_ == 0) return;
        void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) throw_io_error("mmap", errno);
        data_ = static_cast<const std::uint8_t*>(p);
        ::madvise(p, size_, MADV_SEQUENTIAL);
    }
    ~Mapping()
    {
        if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    const std::uint8_t* data() const noexcept { return data_; }

private:
    const std::uint8_t* data_ = nullptr;
    std::size_t size_;
};

/// sendfile(2) from the file (TLS: SSL_write from the mapping, sendfile
/// cannot encrypt); the digest is taken from the mapping.
class FileSource final : public Source {
public:
    FileSource(const std::string& path, const std::string& what)
    {
        fd_.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        if (!fd_) throw Error(Errc::io_error, what + ": cannot open " + path + ": " + std::strerror(errno));
        struct stat st {};
        if (::fstat(fd_.get(), &st) != 0)
            throw Error(Errc::io_error, what + ": cannot stat " + path + ": " + std::strerror(errno));
        if (!S_ISREG(st.st_mode)) throw Error(Errc::io_error, what + ": " + path + " is not a regular file");
        size_ = static_cast<std::uint64_t>(st.st_size);
        try {
            map_ = std::make_unique<Mapping>(fd_.get(), size_);
        } catch (const Error& e) {
            throw Error(Errc::io_error, what + ": " + path + ": " + e.what());
        }
    }
    std::uint64_t size() const noexcept override { return size_; }
    long send(Channel& channel, std::size_t max, HashPipeline& hash) override
    {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(max, size_ - offset_));
        off_t off = static_cast<off_t>(offset_);
        const long n = channel.tls() ? channel.write(map_->data() + offset_, want)
                                     : ::sendfile(channel.fd(), fd_.get(), &off, want);
        if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
        hash.update(map_->data() + offset_, static_cast<std::size_t>(n));
        offset_ += static_cast<std::uint64_t>(n);
        return n;
    }
    void skip(std::uint64_t offset, Sha256& hash) override
    {
        hash.update(map_->data(), static_cast<std::size_t>(offset));
        offset_ = offset;
    }
    bool stable() const noexcept override { return true; }  // the mapped file

private:
    UniqueFd fd_;
    std::uint64_t size_ = 0;
    std::uint64_t offset_ = 0;
    std::unique_ptr<Mapping> map_;
};

long send_bytes(Channel& channel, const std::uint8_t* data, std::size_t size)
{
    const long n = channel.write(data, size);
    if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
    return n;
}

class MemorySource final : public Source {
public:
    MemorySource(const std::uint8_t* data, std::uint64_t size) : data_(data), size_(size) {}
    std::uint64_t size() const noexcept override { return size_; }
    long send(Channel& channel, std::size_t max, HashPipeline& hash) override
    {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(max, size_ - offset_));
        const long n = send_bytes(channel, data_ + offset_, want);
        if (n > 0) {
            hash.update(data_ + offset_, static_cast<std::size_t>(n));
            offset_ += static_cast<std::uint64_t>(n);
        }
        return n;
    }
    void skip(std::uint64_t offset, Sha256& hash) override
    {
        hash.update(data_, static_cast<std::size_t>(offset));
        offset_ = offset;
    }
    bool stable() const noexcept override { return true; }  // the caller's buffer

private:
    const std::uint8_t* data_;
    std::uint64_t size_;
    std::uint64_t offset_ = 0;
};

class ProducerSource final : public Source {
public:
    ProducerSource(std::uint64_t size, PushSource::Producer producer, std::string what)
        : size_(size), producer_(std::move(producer)), what_(std::move(what)),
          buffer_(static_cast<std::size_t>(std::min<std::uint64_t>(size, kChunk)))
    {
    }
    std::uint64_t size() const noexcept override { return size_; }
    long send(Channel& channel, std::size_t max, HashPipeline& hash) override
    {
        if (begin_ == end_) {
            end_ = produce(buffer_.size());
            hash.update(buffer_.data(), end_);
            begin_ = 0;
        }
        const long n = send_bytes(channel, buffer_.data() + begin_, std::min(max, end_ - begin_));
        if (n > 0) begin_ += static_cast<std::size_t>(n);
        return n;
    }
    /// The producer has no random access: the bytes before `offset` are
    /// produced again and only hashed.
    void skip(std::uint64_t offset, Sha256& hash) override
    {
        while (produced_ < offset) {
            const std::size_t got =
                produce(static_cast<std::size_t>(std::min<std::uint64_t>(buffer_.size(), offset - produced_)));
            hash.update(buffer_.data(), got);
        }
    }

private:
    /// Fills the buffer with up to `limit` next bytes.
    std::size_t produce(std::size_t limit)
    {
        const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(limit, size_ - produced_));
        const std::size_t got = producer_(buffer_.data(), want);
        if (got == 0 || got > want)
            throw Error(Errc::io_error, what_ + ": the producer returned " + std::to_string(got) + " bytes after " +
                                            std::to_string(produced_) + " of " + std::to_string(size_) +
                                            " (asked for up to " + std::to_string(want) + ")");
        produced_ += got;
        return got;
    }

    std::uint64_t size_;
    PushSource::Producer producer_;
    std::string what_;
    std::vector<std::uint8_t> buffer_;
    std::uint64_t produced_ = 0;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
};

/// Writes through a bounce buffer to a file or standard output.
class FileSink final : public Sink {
public:
    FileSink(std::string path, std::string what, std::optional<std::uint64_t> resume_at)
        : path_(std::move(path)), what_(std::move(what)), resume_at_(resume_at)
    {
    }
    ~FileSink() override
    {
        if (fd_ && path_ == "-") fd_.release();  // never close stdout
    }
    void open(std::uint64_t length) override
    {
        buffer_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(length, 1), kChunk)));
        if (path_ == "-") {
            fd_.reset(STDOUT_FILENO);
            return;
        }
        if (resume_at_) {
            // Appends after the bytes a previous pull left; whatever arrives
            // stays on failure, for the next resume.
            fd_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
            if (!fd_ || ::ftruncate(fd_.get(), static_cast<off_t>(*resume_at_)) != 0 ||
                ::lseek(fd_.get(), static_cast<off_t>(*resume_at_), SEEK_SET) < 0)
                throw Error(Errc::io_error, what_ + ": cannot continue " + path_ + " at byte " +
                                                std::to_string(*resume_at_) + ": " + std::strerror(errno));
            return;
        }
        fd_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (!fd_) throw Error(Errc::io_error, what_ + ": cannot create " + path_ + ": " + std::strerror(errno));
        created_ = true;
    }
    std::pair<std::uint8_t*, std::size_t> window() override { return {buffer_.data(), buffer_.size()}; }
    void commit(std::size_t n) override
    {
        std::size_t done = 0;
        while (done < n) {
            const ssize_t w = ::write(fd_.get(), buffer_.data() + done, n - done);
            if (w < 0 && errno == EINTR) continue;
            if (w < 0)
                throw Error(Errc::io_error, what_ + ": cannot write " + (path_ == "-" ? "standard output" : path_) +
                                                ": " + std::strerror(errno));
            done += static_cast<std::size_t>(w);
        }
    }
    void finish() override
    {
        if (path_ == "-") {
            fd_.release();
            return;
        }
        if (::close(fd_.release()) != 0)
            throw Error(Errc::io_error, what_ + ": cannot write " + path_ + ": " + std::strerror(errno));
        created_ = false;
    }
    void abandon() noexcept override
    {
        if (created_) ::unlink(path_.c_str());
        created_ = false;
    }

private:
    std::string path_;
    std::string what_;
    std::optional<std::uint64_t> resume_at_;
    UniqueFd fd_;
    bool created_ = false;
    std::vector<std::uint8_t> buffer_;
};

/// Receives straight into contiguous memory (the caller's vector or buffer).
class MemorySink final : public Sink {
public:
    MemorySink(std::vector<std::uint8_t>* vector, std::uint8_t* data, std::size_t capacity, std::string what)
        : vector_(vector), data_(data), capacity_(capacity), what_(std::move(what))
    {
    }
    void open(std::uint64_t length) override
    {
        if (vector_ != nullptr) {
            vector_->resize(static_cast<std::size_t>(length));
            data_ = vector_->data();
        } else if (length > capacity_) {
            throw Error(Errc::invalid_range, what_ + ": the range has " + std::to_string(length) +
                                                 " bytes, the destination buffer only " + std::to_string(capacity_));
        }
        length_ = static_cast<std::size_t>(length);
    }
    std::pair<std::uint8_t*, std::size_t> window() override { return {data_ + done_, length_ - done_}; }
    void commit(std::size_t n) override { done_ += n; }
    void finish() override {}
    bool stable() const noexcept override { return true; }

private:
    std::vector<std::uint8_t>* vector_;
    std::uint8_t* data_;
    std::size_t capacity_;
    std::string what_;
    std::size_t length_ = 0;
    std::size_t done_ = 0;
};

class ConsumerSink final : public Sink {
public:
    explicit ConsumerSink(PullSink::Consumer consumer) : consumer_(std::move(consumer)) {}
    void open(std::uint64_t length) override
    {
        buffer_.resize(static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(length, 1), kChunk)));
    }
    std::pair<std::uint8_t*, std::size_t> window() override { return {buffer_.data(), buffer_.size()}; }
    void commit(std::size_t n) override
    {
        consumer_(buffer_.data(), n, offset_);
        offset_ += n;
    }
    void finish() override {}

private:
    PullSink::Consumer consumer_;
    std::vector<std::uint8_t> buffer_;
    std::uint64_t offset_ = 0;
};

}  // namespace

std::unique_ptr<Source> open_source(const PushSource& source, const std::string& what)
{
    switch (source.kind()) {
    case PushSource::Kind::file: return std::make_unique<FileSource>(source.path(), what);
    case PushSource::Kind::memory: return std::make_unique<MemorySource>(source.data(), source.size());
    case PushSource::Kind::producer:
        return std::make_unique<ProducerSource>(source.size(), source.producer_function(), what);
    }
    throw Error(Errc::invalid_argument, what + ": unknown source kind");
}

std::unique_ptr<Sink> make_sink(const PullSink& sink, const std::string& what, std::optional<std::uint64_t> resume_at)
{
    switch (sink.kind()) {
    case PullSink::Kind::file: return std::make_unique<FileSink>(sink.path(), what, resume_at);
    case PullSink::Kind::memory: return std::make_unique<MemorySink>(sink.vector(), nullptr, 0, what);
    case PullSink::Kind::buffer: return std::make_unique<MemorySink>(nullptr, sink.data(), sink.capacity(), what);
    case PullSink::Kind::consumer: return std::make_unique<ConsumerSink>(sink.consumer_function());
    }
    throw Error(Errc::invalid_argument, what + ": unknown sink kind");
}

std::pair<std::uint64_t, Sha256> hash_existing_file(const std::string& path, const std::string& what)
{
    std::pair<std::uint64_t, Sha256> out{0, Sha256()};
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
        if (errno == ENOENT) return out;
        throw Error(Errc::io_error, what + ": cannot open " + path + " to resume: " + std::strerror(errno));
    }
    std::vector<std::uint8_t> buffer(kChunk);
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error(Errc::io_error, what + ": cannot read " + path + " to resume: " + std::strerror(errno));
        if (n == 0) return out;
        out.second.update(buffer.data(), static_cast<std::size_t>(n));
        out.first += static_cast<std::uint64_t>(n);
    }
}

// ---- the public value types ------------------------------------------------

PushSource PushSource::file(std::string path)
{
    PushSource s;
    s.kind_ = Kind::file;
    s.path_ = std::move(path);
    return s;
}

PushSource PushSource::memory(const void* data, std::size_t size)
{
    PushSource s;
    s.kind_ = Kind::memory;
    s.data_ = static_cast<const std::uint8_t*>(data);
    s.size_ = size;
    return s;
}

PushSource PushSource::owned(std::vector<std::uint8_t> bytes)
{
    PushSource s;
    s.kind_ = Kind::memory;
    s.owned_ = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
    s.data_ = s.owned_->data();
    s.size_ = s.owned_->size();
    return s;
}

PushSource PushSource::producer(std::uint64_t size, Producer producer)
{
    PushSource s;
    s.kind_ = Kind::producer;
    s.size_ = size;
    s.producer_ = std::move(producer);
    return s;
}

PullSink PullSink::file(std::string path)
{
    PullSink s;
    s.kind_ = Kind::file;
    s.path_ = std::move(path);
    return s;
}

PullSink PullSink::memory(std::vector<std::uint8_t>* out)
{
    PullSink s;
    s.kind_ = Kind::memory;
    s.vector_ = out;
    return s;
}

PullSink PullSink::buffer(void* data, std::size_t capacity)
{
    PullSink s;
    s.kind_ = Kind::buffer;
    s.data_ = static_cast<std::uint8_t*>(data);
    s.capacity_ = capacity;
    return s;
}

PullSink PullSink::consumer(Consumer consumer)
{
    PullSink s;
    s.kind_ = Kind::consumer;
    s.consumer_ = std::move(consumer);
    return s;
}

}  // namespace blobstreaming::client
