// The public value types of Transfer.h: where a push takes its bytes from
// and where a pull puts them.
#include <blobstreaming/client/Transfer.h>

namespace blobstreaming::client {

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

PushSource PushSource::stream(Producer producer)
{
    PushSource s;
    s.kind_ = Kind::stream;
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

PullSink PullSink::descriptor(int fd, std::string name)
{
    PullSink s;
    s.kind_ = Kind::descriptor;
    s.fd_ = fd;
    s.path_ = name.empty() ? "descriptor " + std::to_string(fd) : std::move(name);
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

PullSink PullSink::in_place(std::shared_ptr<const InPlaceBlob>* place, PullSink otherwise)
{
    otherwise.place_ = place;
    return otherwise;
}

}  // namespace blobstreaming::client
